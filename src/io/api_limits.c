/* What the API socket's limits (ebb__api_server_set_limits) do: the cap
 * on connections (half of them for one user), checked at accept, and one
 * deadline per connection that ebb__api_conn_watch() re-arms as it moves
 * between waiting, receiving a message, working and writing.
 */
#include "io/internal.h"

#include "base/log.h"

/* Sets the deadline `after` wall-clock ms from now (none for 0). */
static void arm(struct ebb__api_conn *conn, ebb_dur_ms after)
{
    struct ebb__clock *clock = conn->server->limits.clock;
    if (clock == NULL)
        return;
    if (after <= 0) {
        ebb__timer_stop(clock, &conn->deadline);
        return;
    }
    ebb__timer_start(clock, &conn->deadline,
                     ebb__clock_now(clock) + ebb__clock_from_real_ms(clock, after));
}

/* Re-arms the deadline when the connection's phase changed: a message has
 * request_timeout from its first byte (or the accept) to its newline, more
 * bytes do not move that; a connection with nothing open may stay idle
 * idle_timeout; answers not taken by the client get idle_timeout from the
 * last write that completed. While ebbd works on calls there is none. */
void ebb__api_conn_watch(struct ebb__api_conn *conn)
{
    const struct ebb__api_limits *l = &conn->server->limits;
    if (conn->closing || l->clock == NULL)
        return;
    enum ebb__api_phase p;
    if (conn->pending_writes > 0)
        p = EBB__API_WRITING;
    else if (conn->pending_calls > 0)
        p = EBB__API_WORKING;
    else if (conn->in.len > 0 || conn->discarding)
        p = EBB__API_PARTIAL;
    else
        p = conn->phase == EBB__API_NEW ? EBB__API_NEW : EBB__API_IDLE;
    enum ebb__api_phase was = conn->phase;
    conn->phase = p;
    if ((p == was && p != EBB__API_WRITING) ||
        (p == EBB__API_PARTIAL && was == EBB__API_NEW))
        return;
    if (p == EBB__API_NEW || p == EBB__API_PARTIAL)
        arm(conn, l->request_timeout);
    else if (p == EBB__API_WORKING)
        arm(conn, 0);
    else
        arm(conn, l->idle_timeout);
}

/* A deadline passed: the connection reads no more and closes; answers a
 * client does not take are dropped. */
static void on_deadline(struct ebb__timer *t)
{
    struct ebb__api_conn *conn = t->data;
    conn->server->stats.timed_out++;
    conn->read_done = 1;
    if (conn->reading) {
        uv_read_stop((uv_stream_t *)&conn->pipe);
        conn->reading = 0;
    }
    conn->aborted = conn->phase == EBB__API_WRITING;
    ebb__api_conn_maybe_close(conn);
}

/* Why `conn` may not be served: NULL when it may. One user may hold at
 * most half of the connections, so that no one user can shut the others
 * out; it is O(connections), at most max_connections. */
static const char *over_cap(const struct ebb__api_conn *conn)
{
    const struct ebb__api_server *s = conn->server;
    unsigned max = s->limits.max_connections;
    if (max == 0)
        return NULL;
    if (s->stats.open >= max)
        return "ebbd has as many API connections open as it allows "
               "(api.max_connections); try again";
    unsigned mine = 0;
    const struct ebb_list *pos;
    ebb_list_foreach(pos, &s->conns) {
        const struct ebb__api_conn *c = ebb_list_entry(pos, struct ebb__api_conn, node);
        mine += c->counted && c->uid == conn->uid;
    }
    if (mine >= (max / 2 > 0 ? max / 2 : 1))
        return "this user has half of the API connections ebbd allows open "
               "(api.max_connections); close some and try again";
    return NULL;
}

/* Over a cap a connection gets one "busy" answer and is closed: the
 * client says why instead of that ebbd is not running. */
bool ebb__api_refuse_over_cap(struct ebb__api_conn *conn)
{
    const char *why = over_cap(conn);
    if (why == NULL)
        return false;
    struct ebb__api_server *s = conn->server;
    s->stats.refused++;
    uint64_t held = 0;
    if (ebb__ratelimit_allow(&s->refusals, (ebb_time_ms)uv_now(s->loop), &held))
        ebb__warn("api: refused a connection from uid %ld pid %ld: %s (%u open; "
                  "and %llu more refused since the last such line)",
                  (long)conn->uid, (long)conn->pid, why, s->stats.open,
                  (unsigned long long)held);
    ebb__api_conn_send(conn, json_pack("{s:n,s:{s:s,s:s}}", "id", "error", "code",
                                       "busy", "message", why));
    conn->read_done = 1;
    ebb__api_conn_maybe_close(conn);
    return true;
}

void ebb__api_deadline_init(struct ebb__api_conn *conn)
{
    ebb__timer_init(&conn->deadline, on_deadline, conn);
    conn->phase = EBB__API_NEW;
}

void ebb__api_deadline_start(struct ebb__api_conn *conn)
{
    arm(conn, conn->server->limits.request_timeout);
}

void ebb__api_deadline_stop(struct ebb__api_conn *conn)
{
    arm(conn, 0);
}

int ebb__api_server_set_limits(struct ebb__api_server *server,
                               const struct ebb__api_limits *lim)
{
    if (lim->clock == NULL && (lim->request_timeout > 0 || lim->idle_timeout > 0))
        return EBB_EINVAL;
    server->limits = *lim;
    return 0;
}

struct ebb__api_stats ebb__api_server_stats(const struct ebb__api_server *server)
{
    return server->stats;
}
