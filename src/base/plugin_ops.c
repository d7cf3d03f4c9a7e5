#include "base/plugin_ops.h"

#include <stdlib.h>

void ebb__op_add(struct ebb__ops *set, struct ebb__op *op,
                 void (*cancel)(struct ebb__op *op))
{
    op->set = set;
    op->cancel = cancel;
    op->prev = NULL;
    op->next = set->head;
    if (set->head != NULL)
        set->head->prev = op;
    set->head = op;
}

void ebb__op_remove(struct ebb__op *op)
{
    struct ebb__ops *set = op->set;
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

void ebb__ops_cancel_all(struct ebb__ops *set)
{
    while (set->head != NULL)
        set->head->cancel(set->head);
}

struct ebb__call {
    struct ebb__call *prev, *next;
    struct ebb__calls *set; /* NULL once detached */
    ebb__call_cb cb;
    void *arg;
};

static void unlink_call(struct ebb__call *c)
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
    struct ebb__call *c = arg;
    if (c->set != NULL) {
        unlink_call(c);
        c->cb(c->arg, res);
    }
    free(c);
}

struct ebb__call *ebb__call_start(struct ebb__calls *set,
                                  const struct ebb_host *host,
                                  const struct ebb_http_request *req,
                                  ebb__call_cb cb, void *arg, int *err)
{
    struct ebb__call *c = calloc(1, sizeof(*c));
    int rc = c != NULL ? 0 : EBB_ENOMEM;
    if (c != NULL) {
        *c = (struct ebb__call){.next = set->head, .set = set, .cb = cb, .arg = arg};
        rc = host->http(host->ctx, req, on_answer, c);
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

void ebb__call_detach(struct ebb__call *c)
{
    if (c->set == NULL)
        return;
    unlink_call(c);
    c->set = NULL;
}

void ebb__calls_detach(struct ebb__calls *set)
{
    for (struct ebb__call *c = set->head; c != NULL; c = c->next)
        c->set = NULL;
    set->head = NULL;
}
