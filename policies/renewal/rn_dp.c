/* Backward induction for the renewal policy: see rn_dp.h for the problem. */
#include "rn_dp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The most grid points a table may have (a bound, not a target: the
 * policy sizes its grids far below it). */
#define RN_MAX_POINTS (1u << 24)

static void mat_mul(double a[RN_PHASES][RN_PHASES],
                    double b[RN_PHASES][RN_PHASES],
                    double out[RN_PHASES][RN_PHASES])
{
    double r[RN_PHASES][RN_PHASES];
    for (int x = 0; x < RN_PHASES; x++)
        for (int y = 0; y < RN_PHASES; y++) {
            double s = 0;
            for (int z = 0; z < RN_PHASES; z++)
                s += a[x][z] * b[z][y];
            r[x][y] = s;
        }
    memcpy(out, r, sizeof(r));
}

/* exp(Q * hours) by scaling and squaring: Q scaled until its largest
 * exit rate times the span is under 1/8, a Taylor series to 12 terms
 * (error far below float precision), then squared back. */
void rn_chain(const struct rn_params *p, double hours,
              double m[RN_PHASES][RN_PHASES])
{
    double q[RN_PHASES][RN_PHASES] = {{0}};
    double su = p->to_short_up, sd = p->to_short_down;
    for (int c = 0; c < RN_UP_PHASES; c++) {
        q[c][2] = p->rate[c] * sd;
        q[c][3] = p->rate[c] * (1 - sd);
        q[c][c] = -p->rate[c];
    }
    for (int c = RN_UP_PHASES; c < RN_PHASES; c++) {
        q[c][0] = p->rate[c] * su;
        q[c][1] = p->rate[c] * (1 - su);
        q[c][c] = -p->rate[c];
    }
    double top = 0;
    for (int c = 0; c < RN_PHASES; c++)
        top = fmax(top, p->rate[c]);
    int squarings = 0;
    double t = hours > 0 ? hours : 0;
    while (top * t > 0.125 && squarings < 60) {
        t /= 2;
        squarings++;
    }
    double term[RN_PHASES][RN_PHASES], a[RN_PHASES][RN_PHASES];
    for (int x = 0; x < RN_PHASES; x++)
        for (int y = 0; y < RN_PHASES; y++) {
            m[x][y] = x == y;
            term[x][y] = x == y;
            a[x][y] = q[x][y] * t;
        }
    for (int n = 1; n <= 12; n++) {
        mat_mul(term, a, term);
        for (int x = 0; x < RN_PHASES; x++)
            for (int y = 0; y < RN_PHASES; y++) {
                term[x][y] /= n;
                m[x][y] += term[x][y];
            }
    }
    for (int s = 0; s < squarings; s++)
        mat_mul(m, m, m);
}

static const float *at(const struct rn_table *t, int i, int j)
{
    return t->row[i] + (size_t)j * RN_VALUES;
}

static int is_up(int c)
{
    return c < RN_UP_PHASES;
}

/* The two below are the inner loop of a solve: written out, without
 * branches, over rows whose entries are >= 0 (rn_solve clears the
 * rounding's negative ones), summed in phase order. */

/* After a spot step or start: on spot where the chain stays up, idle
 * where it went down. */
static float spot_next(const float *v, const double row[RN_PHASES])
{
    double s = row[0] * v[RN_SPOT(0)] + row[1] * v[RN_SPOT(1)] + row[2] * v[RN_IDLE(2)] +
               row[3] * v[RN_IDLE(3)];
    return s < RN_BIG ? (float)s : RN_BIG;
}

static float mix(const float *v, const double row[RN_PHASES], int base)
{
    double s = row[0] * v[base] + row[1] * v[base + 1] + row[2] * v[base + 2] +
               row[3] * v[base + 3];
    return s < RN_BIG ? (float)s : RN_BIG;
}

/* A transition matrix's entries that rounding left under 0, as 0. */
static void clear_negative(double m[RN_PHASES][RN_PHASES])
{
    for (int x = 0; x < RN_PHASES; x++)
        for (int y = 0; y < RN_PHASES; y++)
            m[x][y] = fmax(m[x][y], 0);
}

static float add(double a, float b)
{
    double v = a + b;
    return b >= RN_BIG || !(v < RN_BIG) ? RN_BIG : (float)v;
}

/* Every action's value at (i, j), i >= 1, from points already solved:
 * (i - 1, j), (i, j - 1) and (i, j - k); with k = 0 a start is the
 * continuation itself. */
struct rn_cell {
    float wait[RN_PHASES];
    float run_spot[RN_UP_PHASES];
    float run_od[RN_PHASES];
    float start_spot[RN_UP_PHASES];
    float start_od[RN_PHASES];
};

static void cell(const struct rn_table *t, int i, int j, struct rn_cell *x)
{
    const struct rn_params *p = &t->p;
    double h = p->step_ms / 3600000.0;
    double cs = p->spot_price * h, co = p->od_price * h;
    const float *prev = at(t, i - 1, j);
    const float *left = j >= 1 ? at(t, i, j - 1) : NULL;
    const float *back = p->k > 0 && j >= p->k ? at(t, i, j - p->k) : NULL;
    for (int c = 0; c < RN_PHASES; c++) {
        x->wait[c] = left != NULL ? mix(left, t->one[c], RN_IDLE(0)) : RN_BIG;
        x->run_od[c] = add(co, mix(prev, t->one[c], RN_OD(0)));
        if (p->k == 0)
            x->start_od[c] = x->run_od[c];
        else
            x->start_od[c] = back != NULL
                                 ? add(p->k * co, mix(back, t->over[c], RN_OD(0)))
                                 : RN_BIG;
        if (!is_up(c))
            continue;
        x->run_spot[c] = add(cs, spot_next(prev, t->one[c]));
        if (p->k == 0)
            x->start_spot[c] = x->run_spot[c];
        else
            x->start_spot[c] = back != NULL
                                   ? add(p->k * cs, spot_next(back, t->over[c]))
                                   : RN_BIG;
    }
}

static float min2(float a, float b)
{
    return b < a ? b : a;
}

static int params_ok(const struct rn_params *p)
{
    double sum = 0;
    for (int c = 0; c < RN_PHASES; c++) {
        if (!(p->rate[c] >= 0))
            return 0;
        sum += p->rate[c];
    }
    return isfinite(sum) && p->step_ms > 0 && isfinite(p->step_ms) &&
           p->k >= 0 && p->nw >= 0 && p->ns >= 0 &&
           p->to_short_up >= 0 && p->to_short_up <= 1 &&
           p->to_short_down >= 0 && p->to_short_down <= 1 &&
           p->spot_price >= 0 && p->od_price >= 0 &&
           isfinite(p->spot_price + p->od_price) &&
           (uint64_t)(p->nw + 1) * (uint64_t)(p->ns + 1) <= RN_MAX_POINTS;
}

/* The values at (i, j) from the points below and left of it. */
static void solve_point(const struct rn_table *t, int i, int j, float *v)
{
    if (i == 0) {
        for (int q = 0; q < RN_VALUES; q++)
            v[q] = 0; /* done */
        return;
    }
    struct rn_cell x;
    cell(t, i, j, &x);
    for (int c = 0; c < RN_PHASES; c++) {
        float idle = min2(x.wait[c], x.start_od[c]);
        if (is_up(c))
            idle = min2(idle, x.start_spot[c]);
        v[RN_IDLE(c)] = idle;
        v[RN_OD(c)] = min2(min2(x.run_od[c], idle),
                           is_up(c) ? x.start_spot[c] : RN_BIG);
        if (is_up(c))
            v[RN_SPOT(c)] = min2(x.run_spot[c], x.start_od[c]);
    }
}

size_t rn_extend_points(const struct rn_table *t, int nw, int ns)
{
    size_t grow = 0;
    for (int i = 0; i <= nw; i++) {
        int old = t->row != NULL && i <= t->p.nw ? t->ext[i] : -1;
        if (ns > old)
            grow += (size_t)(ns - old);
    }
    return grow;
}

int rn_covers(const struct rn_table *t, int nw, int ns)
{
    return t->row != NULL && nw <= t->p.nw && ns <= t->ext[nw];
}

/* Rows are extended in order of i: the new points of row i need row i - 1
 * up to the same j, which ext's staircase guarantees (ext[i - 1] >=
 * ext[i] before and after). */
int rn_extend(struct rn_table *t, int nw, int ns)
{
    if (t->row == NULL || nw < 0 || ns < 0)
        return -1;
    if (t->points + rn_extend_points(t, nw, ns) > RN_MAX_POINTS)
        goto fail;
    if (nw > t->p.nw) {
        float **row = realloc(t->row, (size_t)(nw + 1) * sizeof(*row));
        if (row == NULL)
            goto fail;
        t->row = row;
        int *ext = realloc(t->ext, (size_t)(nw + 1) * sizeof(*ext));
        if (ext == NULL)
            goto fail;
        t->ext = ext;
        for (int i = t->p.nw + 1; i <= nw; i++) {
            t->row[i] = NULL;
            t->ext[i] = -1;
        }
        t->p.nw = nw;
    }
    for (int i = 0; i <= nw; i++) {
        if (ns <= t->ext[i])
            continue;
        float *r = realloc(t->row[i], (size_t)(ns + 1) * RN_VALUES * sizeof(*r));
        if (r == NULL)
            goto fail;
        t->row[i] = r;
        for (int j = t->ext[i] + 1; j <= ns; j++)
            solve_point(t, i, j, r + (size_t)j * RN_VALUES);
        t->points += (size_t)(ns - t->ext[i]);
        t->ext[i] = ns;
    }
    t->p.ns = t->ext[0];
    return 0;
fail:
    rn_table_free(t);
    return -1;
}

int rn_solve(const struct rn_params *p, struct rn_table *t)
{
    t->row = NULL;
    t->ext = NULL;
    t->points = 0;
    t->p = *p;
    if (!params_ok(p))
        return -1;
    double h = p->step_ms / 3600000.0;
    rn_chain(p, h, t->one);
    rn_chain(p, h * p->k, t->over);
    clear_negative(t->one);
    clear_negative(t->over);
    t->row = malloc(sizeof(*t->row));
    t->ext = malloc(sizeof(*t->ext));
    if (t->row == NULL || t->ext == NULL) {
        rn_table_free(t);
        return -1;
    }
    t->row[0] = NULL;
    t->ext[0] = -1;
    t->p.nw = 0;
    return rn_extend(t, p->nw, p->ns);
}

void rn_table_free(struct rn_table *t)
{
    if (t->row != NULL)
        for (int i = 0; i <= t->p.nw; i++)
            free(t->row[i]);
    free(t->row);
    free(t->ext);
    t->row = NULL;
    t->ext = NULL;
    t->points = 0;
}

static int clampi(int x, int hi)
{
    return x < 0 ? 0 : x > hi ? hi : x;
}

float rn_value(const struct rn_table *t, int i, int j, int slot)
{
    if (i <= 0)
        return 0;
    if (j < 0)
        return RN_BIG;
    i = clampi(i, t->p.nw);
    return at(t, i, clampi(j, t->ext[i]))[slot];
}

/* One phase's value of action a from state s (see rn_action_value). */
static float phase_value(const struct rn_table *t, const struct rn_cell *x,
                         int i, int j, enum rn_job_state s, int c,
                         enum rn_action a)
{
    switch (a) {
    case RN_WAIT:
        /* Stopping a running instance is worth it only to wait: to start
         * another one, start it instead. */
        return x->wait[c];
    case RN_RUN_SPOT:
        if (!is_up(c))
            return RN_BIG;
        return s == RN_JOB_SPOT ? x->run_spot[c] : x->start_spot[c];
    case RN_RUN_OD:
        return s == RN_JOB_OD ? x->run_od[c] : x->start_od[c];
    }
    return RN_BIG;
}

/* Where a query lands: 0 done, -1 infeasible, else 1 with i and j
 * clamped into the grid and the cell's action values in *x. */
static int locate(const struct rn_table *t, int *i, int *j, struct rn_cell *x)
{
    if (*i <= 0)
        return 0;
    if (*j < 0)
        return -1;
    *i = clampi(*i, t->p.nw);
    *j = clampi(*j, t->ext[*i]);
    if (*i == 0)
        return 0;
    cell(t, *i, *j, x);
    return 1;
}

static float belief_value(const struct rn_table *t, const struct rn_cell *x,
                          int i, int j, enum rn_job_state state,
                          const double *belief, enum rn_action a)
{
    double s = 0;
    for (int c = 0; c < RN_PHASES; c++)
        if (belief[c] > 0)
            s += belief[c] * phase_value(t, x, i, j, state, c, a);
    return s < RN_BIG ? (float)s : RN_BIG;
}

/* The next horizon wait_down_value weighs after tau: every step up to
 * 16, then a quarter further each time (the value is smooth in tau). */
static int next_tau(int tau)
{
    return tau < 16 ? tau + 1 : tau + tau / 4;
}

/* Waiting while spot is down, valued without learning the phase. The
 * table's wait values are those of a job that would know after one step
 * whether the down period is a short or a long one, so with any belief
 * in a short one waiting looks nearly free, and the job would wait to
 * the safety net's floor. Here: the least, over horizons tau >= 1, of
 * "wait up to tau steps for spot, then start on-demand", under the
 * chain from the belief (a down phase c lasts a step with probability
 * e^(-rate_c step); spot returns in an up phase drawn as the chain draws
 * it, valued at the step that ends the stretch it falls in, the later
 * end: less slack). RN_BIG when there is no slack to wait. */
static float wait_down_value(const struct rn_table *t, int i, int j,
                             const double *belief, int *horizon)
{
    const struct rn_params *p = &t->p;
    double h = p->step_ms / 3600000.0, su = p->to_short_up;
    double b[RN_PHASES] = {0};
    double mass = belief[RN_UP_PHASES] + belief[RN_UP_PHASES + 1];
    if (!(mass > 0))
        return RN_BIG;
    double got = 0, best = RN_BIG, before = 1;
    for (int tau = 1; tau <= j; tau = next_tau(tau)) {
        double rest = 0;
        for (int c = RN_UP_PHASES; c < RN_PHASES; c++) {
            b[c] = belief[c] / mass * exp(-p->rate[c] * h * tau);
            rest += b[c];
        }
        if (before - rest > 0) {
            double up = su * rn_value(t, i, j - tau, RN_IDLE(0)) +
                        (1 - su) * rn_value(t, i, j - tau, RN_IDLE(1));
            got += (before - rest) * up;
        }
        before = rest;
        double od = 0;
        if (rest > 0) {
            for (int c = RN_UP_PHASES; c < RN_PHASES; c++)
                b[c] /= rest;
            od = rn_action_value(t, i, j - tau, RN_JOB_IDLE, b, RN_RUN_OD);
        }
        double v = got + rest * od;
        if (v < best) {
            best = v;
            if (horizon != NULL)
                *horizon = tau;
        }
        if (rest < 1e-6)
            break;
    }
    return best < RN_BIG ? (float)best : RN_BIG;
}

/* Staying on on-demand while spot is up, valued without learning the
 * phase: the same flaw as waiting's (wait_down_value) on the other side.
 * The table's value of staying is that of a job told after one step
 * whether the up period is a short or a long one, so a job that believes
 * in short ones stays on on-demand until the up period's age has made a
 * long one likely, paying on-demand's price for spot that was there.
 * Here: the least, over horizons tau >= 1, of "stay on on-demand tau
 * steps, then start spot if it is still up" under the chain from the
 * belief (an up phase c lasts a step with probability e^(-rate_c step);
 * spot that goes meanwhile leaves the job on on-demand in a down phase
 * drawn as the chain draws it, valued at the end of the stretch it
 * falls in). Every horizon pays on-demand's price for its steps; at its
 * end the job starts spot or finishes on on-demand, the cheaper. */
static float stay_up_value(const struct rn_table *t, int i, int j,
                           const double *belief, int *horizon)
{
    const struct rn_params *p = &t->p;
    double h = p->step_ms / 3600000.0, sd = p->to_short_down;
    double co = p->od_price * h;
    double b[RN_PHASES] = {0};
    double mass = belief[0] + belief[1];
    if (!(mass > 0))
        return RN_BIG;
    double got = 0, best = RN_BIG, before = 1;
    for (int tau = 1; tau <= i; tau = next_tau(tau)) {
        double rest = 0;
        for (int c = 0; c < RN_UP_PHASES; c++) {
            b[c] = belief[c] / mass * exp(-p->rate[c] * h * tau);
            rest += b[c];
        }
        if (before - rest > 0) {
            double down = sd * rn_value(t, i - tau, j, RN_OD(RN_UP_PHASES)) +
                          (1 - sd) * rn_value(t, i - tau, j, RN_OD(RN_UP_PHASES + 1));
            got += (before - rest) * (tau * co + down);
        }
        before = rest;
        /* Then spot, or on-demand to the end where a return no longer
         * pays (or is no longer feasible: slack does not grow there). */
        double then = (i - tau) * co;
        if (rest > 0) {
            for (int c = 0; c < RN_UP_PHASES; c++)
                b[c] /= rest;
            then = fmin(then, rn_action_value(t, i - tau, j, RN_JOB_OD, b, RN_RUN_SPOT));
        }
        double v = got + rest * (tau * co + then);
        if (v < best) {
            best = v;
            if (horizon != NULL)
                *horizon = tau;
        }
        if (rest < 1e-6)
            break;
    }
    return best < RN_BIG ? (float)best : RN_BIG;
}

/* The actions valued without learning the phase: waiting for spot that
 * is down (wait_down_value) and staying on on-demand while spot is up
 * (stay_up_value). For those, their value into *v and the horizon of the
 * plan that gives it into *horizon (may be NULL), and 1; else 0. */
static int blind_value(const struct rn_table *t, int i, int j,
                       enum rn_job_state state, const double *belief,
                       enum rn_action a, float *v, int *horizon)
{
    int down = !(belief[0] > 0) && !(belief[1] > 0);
    if (a == RN_WAIT && down)
        *v = wait_down_value(t, i, j, belief, horizon);
    else if (a == RN_RUN_OD && state == RN_JOB_OD && !down)
        *v = stay_up_value(t, i, j, belief, horizon);
    else
        return 0;
    return 1;
}

/* The value of a under the belief: by blind_value where it applies, the
 * rest by the table. */
static float choice_value(const struct rn_table *t, const struct rn_cell *x,
                          int i, int j, enum rn_job_state state,
                          const double *belief, enum rn_action a)
{
    float v;
    if (blind_value(t, i, j, state, belief, a, &v, NULL))
        return v;
    return belief_value(t, x, i, j, state, belief, a);
}

float rn_action_value(const struct rn_table *t, int i, int j,
                      enum rn_job_state state, const double *belief,
                      enum rn_action a)
{
    struct rn_cell x;
    int where = locate(t, &i, &j, &x);
    if (where <= 0)
        return where == 0 ? 0 : RN_BIG;
    return choice_value(t, &x, i, j, state, belief, a);
}

enum rn_action rn_best(const struct rn_table *t, int i, int j,
                       enum rn_job_state state, const double *belief,
                       unsigned allowed, float *value)
{
    static const enum rn_action order[] = {RN_RUN_SPOT, RN_WAIT, RN_RUN_OD};
    enum rn_action best = RN_RUN_OD;
    float bv = RN_BIG;
    struct rn_cell x;
    int where = locate(t, &i, &j, &x);
    for (size_t q = 0; q < sizeof(order) / sizeof(order[0]); q++) {
        if (!(allowed & (1u << order[q])))
            continue;
        float v = where == 0   ? 0
                  : where < 0 ? RN_BIG
                              : choice_value(t, &x, i, j, state, belief, order[q]);
        if (v < bv) {
            bv = v;
            best = order[q];
        }
    }
    if (value != NULL)
        *value = bv;
    return best;
}

int rn_horizon(const struct rn_table *t, int i, int j, enum rn_job_state state,
               const double *belief, enum rn_action a)
{
    struct rn_cell x;
    int h = 0;
    float v;
    if (locate(t, &i, &j, &x) > 0)
        blind_value(t, i, j, state, belief, a, &v, &h);
    return h;
}
