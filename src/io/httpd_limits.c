/* What the HTTP server's limits (ebb__httpd_set_limits) do: the cap on
 * open connections, checked at accept, and one deadline per connection
 * that ebb__httpd_conn_watch() re-arms as the connection moves between
 * waiting for a request, reading one, and answering.
 */
#include "io/internal.h"

#include <stdlib.h>

static void refused_closed(uv_handle_t *handle)
{
    struct ebb__httpd *s = handle->data;
    free(handle);
    ebb__httpd_handle_closed(s);
}

/* Over the cap, a connection is accepted and closed at once: the client
 * learns at once, and neither the kernel's backlog nor ebbd's descriptors
 * fill with connections nobody serves. */
bool ebb__httpd_refuse_over_cap(struct ebb__httpd *s)
{
    if (s->limits.max_connections == 0 || s->stats.open < s->limits.max_connections)
        return false;
    uv_tcp_t *t = malloc(sizeof(*t));
    if (t == NULL)
        return true;
    uv_tcp_init(s->loop, t);
    t->data = s;
    s->handles++;
    s->stats.refused++;
    uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)t);
    uv_close((uv_handle_t *)t, refused_closed);
    return true;
}

/* Sets the deadline `after` wall-clock ms from now (none for 0). */
static void arm(struct ebb__httpd_conn *c, ebb_dur_ms after)
{
    struct ebb__clock *clock = c->s->limits.clock;
    if (clock == NULL)
        return;
    if (after <= 0) {
        ebb__timer_stop(clock, &c->deadline);
        return;
    }
    ebb_time_ms due = ebb__clock_now(clock) + ebb__clock_from_real_ms(clock, after);
    if (ebb__timer_start(clock, &c->deadline, due) != 0)
        ebb__httpd_conn_close(c);
}

/* Re-arms the deadline when the connection's phase changed. A head's
 * deadline is not moved by its bytes (a client sending one byte a second
 * still has only header_timeout for all of it, counted from the accept or
 * from the end of the last answer); a body's is moved by each read. */
void ebb__httpd_conn_watch(struct ebb__httpd_conn *c)
{
    if (c->closing || c->s->limits.clock == NULL)
        return;
    enum ebb__httpd_phase p;
    if (c->pending != NULL)
        p = EBB__HTTPD_DELAYED;
    else if (c->busy)
        p = EBB__HTTPD_ANSWER;
    else if (c->in_len > c->in_off)
        p = c->need > 0 ? EBB__HTTPD_BODY : EBB__HTTPD_HEAD;
    else
        p = c->phase == EBB__HTTPD_NEW ? EBB__HTTPD_NEW : EBB__HTTPD_IDLE;
    enum ebb__httpd_phase was = c->phase;
    c->phase = p;
    if (p == was && p != EBB__HTTPD_BODY)
        return;
    const struct ebb__httpd_limits *l = &c->s->limits;
    if (p == EBB__HTTPD_HEAD && was == EBB__HTTPD_NEW)
        return; /* the accept started the header timeout */
    if (p == EBB__HTTPD_HEAD || p == EBB__HTTPD_NEW)
        arm(c, l->header_timeout);
    else if (p == EBB__HTTPD_DELAYED)
        arm(c, 0);
    else
        arm(c, l->idle_timeout);
}

/* A deadline passed: a request that is late gets 408 and the connection
 * closes; an idle connection, or one whose client does not take its
 * answer, is closed. */
static void on_deadline(struct ebb__timer *t)
{
    struct ebb__httpd_conn *c = t->data;
    c->s->stats.timed_out++;
    if ((c->phase == EBB__HTTPD_HEAD || c->phase == EBB__HTTPD_BODY) && !c->busy) {
        c->need = 0;
        c->in_off = c->in_len = 0; /* what came of it is not parsed */
        ebb__httpd_answer_error(c, 408);
        return;
    }
    ebb__httpd_conn_close(c);
}

void ebb__httpd_deadline_init(struct ebb__httpd_conn *c)
{
    ebb__timer_init(&c->deadline, on_deadline, c);
    c->phase = EBB__HTTPD_NEW;
}

void ebb__httpd_deadline_start(struct ebb__httpd_conn *c)
{
    arm(c, c->s->limits.header_timeout);
}

void ebb__httpd_deadline_stop(struct ebb__httpd_conn *c)
{
    arm(c, 0);
}

int ebb__httpd_set_limits(struct ebb__httpd *s, const struct ebb__httpd_limits *lim)
{
    if (lim->clock == NULL && (lim->header_timeout > 0 || lim->idle_timeout > 0))
        return EBB_EINVAL;
    s->limits = *lim;
    return 0;
}

struct ebb__httpd_stats ebb__httpd_stats(const struct ebb__httpd *s)
{
    return s->stats;
}
