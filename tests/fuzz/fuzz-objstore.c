/* Fuzz target: S3's and OSS's XML answers as the object-store client reads
 * them (src/objstore/objstore_xml.c over base/xml.c and expat): error
 * documents, InitiateMultipartUpload and CompleteMultipartUpload answers,
 * ListObjectsV2 pages. Every input goes to all four.
 *
 * Invariants: an error document's strings are NUL-terminated within their
 * buffers, and a document read as an error never reads as a completed
 * upload; an upload id or ETag is returned only with success and is never
 * empty; a listing taken twice holds twice the entries, each with a key
 * and a size >= 0, and a truncated one carries its token. */
#include <stdlib.h>

#include "fuzz.h"
#include "objstore/objstore_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *xml = (const char *)data;
    struct ebb__os_error e;
    int is_error = ebb__os_parse_error(xml, size, &e) == 0;
    FUZZ_CHECK(memchr(e.code, '\0', sizeof(e.code)) != NULL);
    FUZZ_CHECK(memchr(e.message, '\0', sizeof(e.message)) != NULL);
    FUZZ_CHECK(memchr(e.ec, '\0', sizeof(e.ec)) != NULL);

    char *id = NULL;
    if (ebb__os_parse_upload_id(xml, size, &id) == 0)
        FUZZ_CHECK(id != NULL && id[0] != '\0');
    else
        FUZZ_CHECK(id == NULL);
    free(id);

    char *etag = NULL;
    int rc = ebb__os_parse_complete(xml, size, &etag, &e);
    FUZZ_CHECK(rc == 0 ? etag != NULL && etag[0] != '\0' && !is_error : etag == NULL);
    FUZZ_CHECK(rc != EBB_EIO || is_error);
    free(etag);

    struct ebb__os_list_page page = {0};
    if (ebb__os_parse_list(xml, size, &page) == 0) {
        size_t n = page.n;
        FUZZ_CHECK(!page.truncated || (page.next_token != NULL && page.next_token[0]));
        FUZZ_CHECK(ebb__os_parse_list(xml, size, &page) == 0 && page.n == 2 * n);
        for (size_t i = 0; i < page.n; i++)
            FUZZ_CHECK(page.v[i].key != NULL && page.v[i].size >= 0);
    }
    ebb__os_list_page_free(&page);
    if (ebb__os_parse_uploads(xml, size, &page) == 0) {
        FUZZ_CHECK(!page.truncated || (page.next_key_marker != NULL && page.next_key_marker[0]));
        for (size_t i = 0; i < page.n; i++)
            FUZZ_CHECK(page.v[i].key != NULL && page.v[i].upload_id != NULL &&
                       page.v[i].upload_id[0] != '\0');
    }
    ebb__os_list_page_free(&page);
    return 0;
}
