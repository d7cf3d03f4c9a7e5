/* The in-flight operation tracker of include/ebb/ops.h: destroy() ends
 * every operation once, oldest first (the sim and local providers promise
 * their callbacks that order), also those started while it runs, and an
 * operation that leaves the set stops its pending host timer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ebb/ops.h>

/* The host's timers, as far as ebb_op_remove uses them. */
struct fake_host {
    int64_t stopped[8];
    int n_stopped;
};

static void timer_stop(void *ctx, int64_t id)
{
    struct fake_host *h = ctx;
    assert_true(h->n_stopped < 8);
    h->stopped[h->n_stopped++] = id;
}

struct item {
    struct ebb_op op;
    int value;
    int *order; /* the values cancelled, in order */
    int *n;
    struct item *spawn; /* added to the set by this one's cancel */
};

static void cancel(struct ebb_op *op)
{
    struct item *it = ebb_list_entry(op, struct item, op);
    ebb_op_remove(op);
    it->order[(*it->n)++] = it->value;
    if (it->spawn != NULL)
        ebb_op_add(op->set, &it->spawn->op, cancel);
}

static void cancels_oldest_first(void **state)
{
    (void)state;
    struct fake_host fh = {0};
    struct ebb_host host = {.ctx = &fh, .timer_stop = timer_stop};
    struct ebb_ops set = {.host = &host};
    int order[4], n = 0;
    struct item late = {.value = 4, .order = order, .n = &n};
    struct item a = {.value = 1, .order = order, .n = &n, .spawn = &late};
    struct item b = {.value = 2, .order = order, .n = &n};
    struct item c = {.value = 3, .order = order, .n = &n};
    ebb_op_add(&set, &a.op, cancel);
    ebb_op_add(&set, &b.op, cancel);
    ebb_op_add(&set, &c.op, cancel);
    ebb_ops_cancel_all(&set);
    assert_int_equal(n, 4);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 3);
    assert_int_equal(order[3], 4);
    assert_true(ebb_list_empty(&set.head));
    assert_int_equal(fh.n_stopped, 0);
}

static void removal_stops_the_timer(void **state)
{
    (void)state;
    struct fake_host fh = {0};
    struct ebb_host host = {.ctx = &fh, .timer_stop = timer_stop};
    struct ebb_ops set = {.host = &host};
    int order[2], n = 0;
    struct item a = {.value = 1, .order = order, .n = &n};
    struct item b = {.value = 2, .order = order, .n = &n};
    ebb_op_add(&set, &a.op, cancel);
    ebb_op_add(&set, &b.op, cancel);
    a.op.timer = 17;
    ebb_op_remove(&a.op);
    assert_int_equal(fh.n_stopped, 1);
    assert_int_equal(fh.stopped[0], 17);
    assert_int_equal(a.op.timer, 0);
    ebb_ops_cancel_all(&set);
    assert_int_equal(n, 1);
    assert_int_equal(order[0], 2);
    assert_int_equal(fh.n_stopped, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cancels_oldest_first),
        cmocka_unit_test(removal_stops_the_timer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
