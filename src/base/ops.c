
#include <stdlib.h>

#include <ebb/ops.h>

void ebb_op_add(struct ebb_ops *set, struct ebb_op *op,
                 void (*cancel)(struct ebb_op *op))
{
    op->set = set;
    op->cancel = cancel;
    op->prev = NULL;
    op->next = set->head;
    if (set->head != NULL)
        set->head->prev = op;
    set->head = op;
}

void ebb_op_remove(struct ebb_op *op)
{
    struct ebb_ops *set = op->set;
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        set->head = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
    if (op->timer != 0)
        set->host->timer_stop(set->host->ctx, op->timer);
    op->timer = 0;
}

void ebb_ops_cancel_all(struct ebb_ops *set)
{
    while (set->head != NULL)
        set->head->cancel(set->head);
}

struct ebb_call {
    struct ebb_call *prev, *next;
    struct ebb_calls *set; /* NULL once detached */
    ebb_call_cb cb;
    void *arg;
    /* The request's own hooks, run only while the call is attached. */
    ebb_http_prepare_fn prepare;
    ebb_http_classify_fn classify;
    void *hook_arg;
};

/* A detached call's owner may be gone: its next attempt is not made. */
static int call_prepare(void *arg, struct ebb_http_attempt *a)
{
    struct ebb_call *c = arg;
    if (c->set == NULL)
        return EBB_ECANCELED;
    return c->prepare != NULL ? c->prepare(c->hook_arg, a) : 0;
}

/* ... nor retried. */
static int call_classify(void *arg, const struct ebb_http_response *res)
{
    struct ebb_call *c = arg;
    if (c->set == NULL)
        return 0;
    return c->classify != NULL ? c->classify(c->hook_arg, res) : -1;
}

static void unlink_call(struct ebb_call *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        c->set->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
}

static void on_answer(const struct ebb_http_response *res, void *arg)
{
    struct ebb_call *c = arg;
    if (c->set != NULL) {
        unlink_call(c);
        c->cb(c->arg, res);
    }
    free(c);
}

struct ebb_call *ebb_call_start(struct ebb_calls *set,
                                  const struct ebb_host *host,
                                  const struct ebb_http_request *req,
                                  ebb_call_cb cb, void *arg, int *err)
{
    struct ebb_call *c = calloc(1, sizeof(*c));
    int rc = c != NULL ? 0 : EBB_ENOMEM;
    if (c != NULL) {
        *c = (struct ebb_call){.next = set->head, .set = set, .cb = cb, .arg = arg,
                               .prepare = req->prepare, .classify = req->classify,
                               .hook_arg = req->hook_arg};
        struct ebb_http_request hooked = *req;
        if (req->prepare != NULL || req->classify != NULL) {
            hooked.prepare = call_prepare;
            hooked.classify = call_classify;
            hooked.hook_arg = c;
        }
        rc = host->http(host->ctx, &hooked, on_answer, c);
    }
    if (rc != 0) {
        free(c);
        if (err != NULL)
            *err = rc;
        return NULL;
    }
    if (set->head != NULL)
        set->head->prev = c;
    set->head = c;
    return c;
}

void ebb_call_detach(struct ebb_call *c)
{
    if (c->set == NULL)
        return;
    unlink_call(c);
    c->set = NULL;
}

void ebb_calls_detach(struct ebb_calls *set)
{
    for (struct ebb_call *c = set->head; c != NULL; c = c->next)
        c->set = NULL;
    set->head = NULL;
}
