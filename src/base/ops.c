
#include <stdlib.h>

#include <ebb/ops.h>

/* The sets are documented as zero-initialised, the way plugins calloc()
 * their state; a zeroed head is not yet a circular list, so it becomes an
 * empty one on first use. */
static struct ebb_list *list_of(struct ebb_list *head)
{
    if (head->next == NULL)
        ebb_list_init(head);
    return head;
}

void ebb_op_add(struct ebb_ops *set, struct ebb_op *op,
                 void (*cancel)(struct ebb_op *op))
{
    op->set = set;
    op->cancel = cancel;
    ebb_list_insert_tail(list_of(&set->head), &op->node);
}

void ebb_op_remove(struct ebb_op *op)
{
    struct ebb_ops *set = op->set;
    ebb_list_remove(&op->node);
    if (op->timer != 0)
        set->host->timer_stop(set->host->ctx, op->timer);
    op->timer = 0;
}

void ebb_ops_cancel_all(struct ebb_ops *set)
{
    struct ebb_list *head = list_of(&set->head);
    while (!ebb_list_empty(head)) {
        struct ebb_op *op = ebb_list_entry(ebb_list_first(head), struct ebb_op, node);
        op->cancel(op);
    }
}

struct ebb_call {
    struct ebb_list node;  /* in set->head while attached */
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

static void on_answer(const struct ebb_http_response *res, void *arg)
{
    struct ebb_call *c = arg;
    if (c->set != NULL) {
        ebb_list_remove(&c->node);
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
        *c = (struct ebb_call){.set = set, .cb = cb, .arg = arg,
                               .prepare = req->prepare, .classify = req->classify,
                               .hook_arg = req->hook_arg};
        ebb_list_init(&c->node);
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
    ebb_list_insert_head(list_of(&set->head), &c->node);
    return c;
}

void ebb_call_detach(struct ebb_call *c)
{
    if (c->set == NULL)
        return;
    ebb_list_remove(&c->node);
    c->set = NULL;
}

void ebb_calls_detach(struct ebb_calls *set)
{
    struct ebb_list *pos, *tmp;
    ebb_list_foreach_safe(pos, tmp, list_of(&set->head)) {
        struct ebb_call *c = ebb_list_entry(pos, struct ebb_call, node);
        ebb_list_remove(&c->node);
        c->set = NULL;
    }
}
