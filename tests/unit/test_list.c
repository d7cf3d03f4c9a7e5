/* The intrusive list of include/ebb/list.h: order, removal during
 * iteration, and removed nodes that point at themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ebb/list.h>

struct item {
    int value;
    struct ebb_list node;
};

/* The values on `head`, front to back, into `out`; returns how many. */
static int values(struct ebb_list *head, int *out, int max)
{
    int n = 0;
    struct ebb_list *pos;
    ebb_list_foreach(pos, head) {
        assert_true(n < max);
        out[n++] = ebb_list_entry(pos, struct item, node)->value;
    }
    return n;
}

static void keeps_insertion_order(void **state)
{
    (void)state;
    struct ebb_list head = EBB_LIST_INIT(head);
    struct item a = {1, {0}}, b = {2, {0}}, c = {3, {0}};
    assert_true(ebb_list_empty(&head));
    assert_null(ebb_list_first(&head));
    ebb_list_insert_tail(&head, &b.node);
    ebb_list_insert_tail(&head, &c.node);
    ebb_list_insert_head(&head, &a.node);
    int got[4];
    assert_int_equal(values(&head, got, 4), 3);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 2);
    assert_int_equal(got[2], 3);
    assert_ptr_equal(ebb_list_first(&head), &a.node);
    assert_false(ebb_list_empty(&head));
}

static void removal_leaves_the_node_alone(void **state)
{
    (void)state;
    struct ebb_list head;
    ebb_list_init(&head);
    struct item a = {1, {0}}, b = {2, {0}};
    ebb_list_insert_tail(&head, &a.node);
    ebb_list_insert_tail(&head, &b.node);
    assert_true(ebb_list_linked(&a.node));
    ebb_list_remove(&a.node);
    assert_false(ebb_list_linked(&a.node));
    ebb_list_remove(&a.node); /* a second removal changes nothing */
    int got[4];
    assert_int_equal(values(&head, got, 4), 1);
    assert_int_equal(got[0], 2);
    ebb_list_remove(&b.node);
    assert_true(ebb_list_empty(&head));
}

static void safe_iteration_may_remove(void **state)
{
    (void)state;
    struct ebb_list head = EBB_LIST_INIT(head);
    struct item items[5];
    for (int i = 0; i < 5; i++) {
        items[i].value = i;
        ebb_list_insert_tail(&head, &items[i].node);
    }
    struct ebb_list *pos, *tmp;
    ebb_list_foreach_safe(pos, tmp, &head) {
        if (ebb_list_entry(pos, struct item, node)->value % 2 == 0)
            ebb_list_remove(pos);
    }
    int got[5];
    assert_int_equal(values(&head, got, 5), 2);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keeps_insertion_order),
        cmocka_unit_test(removal_leaves_the_node_alone),
        cmocka_unit_test(safe_iteration_may_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
