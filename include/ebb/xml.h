/* A small streaming layer over expat for the XML answers of AWS and
 * S3-shaped services (EC2, S3, OSS): it keeps the path of open elements
 * and hands each element's text to the caller at its end tag, so parsers
 * are state machines over paths and no tree is built. Plugins link it
 * with base.
 */
#ifndef EBB_XML_H
#define EBB_XML_H

#include <stddef.h>

#define EBB_XML_MAX_DEPTH 24

struct ebb_xml_path {
    const char *name[EBB_XML_MAX_DEPTH]; /* name[0] is the root */
    int depth;                           /* elements open, this one included */
};

/* The name `up` levels above the current element (0: the element itself),
 * or "" above the root. */
const char *ebb_xml_up(const struct ebb_xml_path *p, int up);

struct ebb_xml_handler {
    /* An element opened; `p` includes it. May be NULL. */
    void (*start)(void *ud, const struct ebb_xml_path *p);
    /* An element closed with `text` (its own character data, NUL-terminated);
     * `p` still includes it. */
    void (*end)(void *ud, const struct ebb_xml_path *p, const char *text,
                size_t len);
    /* Set by the handler's callbacks to stop with that code (<0). */
    int *failed;
};

/* Parses `len` bytes of `xml`. Returns 0; EBB_EPROTO for malformed XML,
 * a document nested deeper than EBB_XML_MAX_DEPTH, or none at all; the code
 * a callback left in *h->failed; or EBB_ENOMEM. */
int ebb_xml_parse(const char *xml, size_t len, const struct ebb_xml_handler *h,
                  void *ud);

#endif
