#include <ebb/backoff.h>

static ebb_dur_ms clamp(ebb_dur_ms d, ebb_dur_ms cap)
{
    if (d < 0)
        d = 0;
    return d < cap ? d : cap;
}

void ebb_backoff_init(struct ebb_backoff *b, ebb_dur_ms initial, ebb_dur_ms cap)
{
    b->cap = cap > 0 ? cap : 0;
    b->initial = clamp(initial, b->cap);
    b->next = b->initial;
}

ebb_dur_ms ebb_backoff_next(struct ebb_backoff *b)
{
    ebb_dur_ms wait = b->next;
    /* Doubling stops at the cap, so it cannot overflow. */
    b->next = wait > b->cap / 2 ? b->cap : wait * 2;
    return wait;
}

void ebb_backoff_reset(struct ebb_backoff *b)
{
    b->next = b->initial;
}

ebb_dur_ms ebb_backoff_after(ebb_dur_ms initial, ebb_dur_ms cap, unsigned failures)
{
    struct ebb_backoff b;
    ebb_backoff_init(&b, initial, cap);
    ebb_dur_ms wait = ebb_backoff_next(&b);
    for (unsigned i = 1; i < failures && wait < b.cap; i++)
        wait = ebb_backoff_next(&b);
    return wait;
}
