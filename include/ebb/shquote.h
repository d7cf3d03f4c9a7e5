/* Quoting for /bin/sh: the boot scripts cloud providers run (Alibaba
 * UserData, vast.ai onstart) carry URLs and tokens that must reach the
 * agent as they are. Plugins link this with base. */
#ifndef EBB_SHQUOTE_H
#define EBB_SHQUOTE_H

#include "buf.h"

/* Appends `s` as one single-quoted shell word: 'it'\''s'. */
void ebb_buf_sh_quote(struct ebb_buf *b, const char *s);

#endif
