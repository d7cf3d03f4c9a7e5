/* ebb — one intrusive doubly linked list for the core and plugins alike.
 *
 * A list is a `struct ebb_list` head; each element embeds a `struct
 * ebb_list` node and is found from it with ebb_list_entry() (the node may
 * sit anywhere in the element). The list is circular through its head, so
 * insertion and removal never test for the ends, and a removed node points
 * at itself: ebb_list_remove() on it again is harmless, and
 * ebb_list_linked() says whether an element is on a list. The same shape as
 * libuv's queue.h and Linux's list.h.
 *
 * Nothing is allocated; the caller owns every element. Remove an element
 * from its list before freeing it. Iterate with ebb_list_foreach(), or
 * ebb_list_foreach_safe() when the body may remove the element it is on.
 */
#ifndef EBB_LIST_H
#define EBB_LIST_H

#include <stddef.h>

struct ebb_list {
    struct ebb_list *prev, *next;
};

/* A head (or a node) that is on no list: it points at itself. */
#define EBB_LIST_INIT(name) {&(name), &(name)}

static inline void ebb_list_init(struct ebb_list *l)
{
    l->prev = l;
    l->next = l;
}

static inline int ebb_list_empty(const struct ebb_list *head)
{
    return head->next == head;
}

/* Whether `node` (initialised, or once inserted) is on a list now. */
static inline int ebb_list_linked(const struct ebb_list *node)
{
    return node->next != node;
}

/* Puts `node` between `prev` and `next`. */
static inline void ebb_list_splice_in(struct ebb_list *node,
                                      struct ebb_list *prev,
                                      struct ebb_list *next)
{
    node->prev = prev;
    node->next = next;
    prev->next = node;
    next->prev = node;
}

static inline void ebb_list_insert_head(struct ebb_list *head,
                                        struct ebb_list *node)
{
    ebb_list_splice_in(node, head, head->next);
}

static inline void ebb_list_insert_tail(struct ebb_list *head,
                                        struct ebb_list *node)
{
    ebb_list_splice_in(node, head->prev, head);
}

/* Takes `node` off its list and leaves it pointing at itself. */
static inline void ebb_list_remove(struct ebb_list *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    ebb_list_init(node);
}

/* The first node, or NULL when the list is empty. */
static inline struct ebb_list *ebb_list_first(const struct ebb_list *head)
{
    return ebb_list_empty(head) ? NULL : head->next;
}

/* The element of `type` whose `member` is the node `ptr`. */
#define ebb_list_entry(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define ebb_list_foreach(pos, head) \
    for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* As ebb_list_foreach(), keeping the next node in `tmp` so that the body
 * may remove (and free) the element at `pos`. */
#define ebb_list_foreach_safe(pos, tmp, head)                        \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
