/* The element path over expat's callbacks (include/ebb/xml.h). */
#include <ebb/xml.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#include <ebb/buf.h>
#include <ebb/common.h>

/* Element names are kept in place, not allocated: an answer of a million
 * prices opens six million elements. EC2's and S3's names are far shorter than
 * NAME_MAX_LEN; a longer one is cut and so matches nothing. */
#define NAME_MAX_LEN 64

struct state {
    XML_Parser parser;
    const struct ebb_xml_handler *h;
    void *ud;
    struct ebb_xml_path path;
    char names[EBB_XML_MAX_DEPTH][NAME_MAX_LEN];
    struct ebb_buf text;
    int rc;
};

const char *ebb_xml_up(const struct ebb_xml_path *p, int up)
{
    int i = p->depth - 1 - up;
    return i >= 0 ? p->name[i] : "";
}

static void stop(struct state *s, int rc)
{
    if (s->rc == 0)
        s->rc = rc;
    XML_StopParser(s->parser, XML_FALSE);
}

static void on_start(void *arg, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct state *s = arg;
    if (s->rc != 0)
        return;
    if (s->path.depth == EBB_XML_MAX_DEPTH) {
        stop(s, EBB_EPROTO);
        return;
    }
    char *copy = s->names[s->path.depth];
    size_t len = strlen(name);
    if (len >= NAME_MAX_LEN)
        len = NAME_MAX_LEN - 1;
    memcpy(copy, name, len);
    copy[len] = '\0';
    s->path.name[s->path.depth] = copy;
    s->path.depth++;
    s->text.len = 0;
    if (s->text.data != NULL)
        s->text.data[0] = '\0';
    if (s->h->start != NULL)
        s->h->start(s->ud, &s->path);
    if (*s->h->failed != 0)
        stop(s, *s->h->failed);
}

static void on_end(void *arg, const XML_Char *name)
{
    (void)name;
    struct state *s = arg;
    if (s->rc != 0)
        return;
    ebb_buf_append(&s->text, "", 0);
    if (s->text.failed) {
        stop(s, EBB_ENOMEM);
        return;
    }
    s->h->end(s->ud, &s->path, s->text.data, s->text.len);
    /* Text belongs to leaf elements only: a parent's closing tag must not
     * see its children's text. */
    s->text.len = 0;
    s->text.data[0] = '\0';
    s->path.depth--;
    if (*s->h->failed != 0)
        stop(s, *s->h->failed);
}

static void on_text(void *arg, const XML_Char *t, int len)
{
    struct state *s = arg;
    if (s->rc == 0)
        ebb_buf_append(&s->text, t, (size_t)len);
}

int ebb_xml_parse(const char *xml, size_t len, const struct ebb_xml_handler *h,
                  void *ud)
{
    if (len > INT_MAX)
        return EBB_EPROTO;
    struct state s = {.h = h, .ud = ud};
    s.parser = XML_ParserCreate("UTF-8");
    if (s.parser == NULL)
        return EBB_ENOMEM;
    XML_SetUserData(s.parser, &s);
    XML_SetElementHandler(s.parser, on_start, on_end);
    XML_SetCharacterDataHandler(s.parser, on_text);
    int ok = XML_Parse(s.parser, xml, (int)len, XML_TRUE) == XML_STATUS_OK;
    int rc = s.rc;
    if (rc == 0 && !ok)
        rc = EBB_EPROTO;
    XML_ParserFree(s.parser);
    ebb_buf_free(&s.text);
    return rc;
}
