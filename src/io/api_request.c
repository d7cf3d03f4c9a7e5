/* One request line of the API socket (see api_request.h). */
#include "io/api_request.h"

#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

int ebb__api_request_parse(const char *line, size_t len,
                           struct ebb__api_request *r, struct ebb_diag *d)
{
    *r = (struct ebb__api_request){0};
    json_error_t jerr;
    json_t *req = json_loadb(line, len, 0, &jerr);
    const char *method = json_string_value(json_object_get(req, "method"));
    json_t *params = json_object_get(req, "params");
    r->id = json_incref(json_object_get(req, "id"));
    r->method = strdup(method != NULL ? method : "");
    r->params = json_is_object(params) ? json_incref(params) : json_object();
    int parsed = req != NULL, is_object = json_is_object(req);
    json_decref(req); /* `method` pointed into req */
    if (r->method == NULL || r->params == NULL) {
        ebb__api_request_free(r);
        ebb_diag_set(d, NULL, 0, "out of memory");
        return EBB_ENOMEM;
    }
    if (!is_object) {
        ebb_diag_set(d, NULL, 0, "request is not a JSON object: %s",
                     parsed ? "wrong type" : jerr.text);
        return EBB_EINVAL;
    }
    if (method == NULL) {
        ebb_diag_set(d, NULL, 0, "request has no \"method\"");
        return EBB_EINVAL;
    }
    return 0;
}

void ebb__api_request_free(struct ebb__api_request *r)
{
    json_decref(r->id);
    json_decref(r->params);
    free(r->method);
    *r = (struct ebb__api_request){0};
}
