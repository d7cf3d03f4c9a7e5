/* Quoting for /bin/sh: the boot scripts cloud providers run (Alibaba
 * UserData, vast.ai onstart) carry URLs and tokens that must reach the
 * agent as they are. Plugins link this through libebb_pic. */
#ifndef EBB_SHQUOTE_H
#define EBB_SHQUOTE_H

#include "base/str.h"

/* Appends `s` as one single-quoted shell word: 'it'\''s'. */
void ebb__buf_sh_quote(struct ebb__buf *b, const char *s);

#endif
