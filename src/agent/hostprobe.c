/* The host probe: nvidia-smi run as a child process on the loop
 * (capture.c), twice: the GPU query, then plain nvidia-smi for its
 * header's CUDA version. */
#include "agent/hostprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebb/common.h>

#include "agent/capture.h"
#include "base/log.h"
#include "base/str.h"

struct probe {
    struct agent_host host;
    uv_loop_t *loop;
    int64_t timeout_ms;
    bool header;         /* the second run: plain nvidia-smi */
    uv_idle_t idle;      /* completes an absent nvidia-smi on a later turn */
    char *path;
    agent_hostprobe_cb cb;
    void *arg;
};

/* The probe is over: its outcome to the caller. */
static void done(struct probe *pr)
{
    pr->cb(pr->arg, &pr->host);
    free(pr->path);
    free(pr);
}

/* Trims blanks at both ends in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* A number, or 0 for "[N/A]" and other words nvidia-smi prints instead. */
static int64_t field_number(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    return end != s && *end == '\0' && v > 0 ? v : 0;
}

int agent_hostprobe_parse(const char *csv, struct agent_gpu *gpus, size_t max)
{
    char *copy = ebb_strfmt("%s", csv);
    if (copy == NULL)
        return EBB_ENOMEM;
    size_t n = 0;
    int rc = 0;
    char *line = copy;
    while (line != NULL && *line != '\0') {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        line = trim(line);
        if (*line == '\0') {
            line = nl != NULL ? nl + 1 : NULL;
            continue;
        }
        /* nvidia-smi's model names contain no comma, so the line splits on
         * every comma into exactly five fields. */
        char *fields[5];
        size_t nf = 0;
        for (char *p = line;;) {
            fields[nf++] = p;
            char *comma = strchr(p, ',');
            if (comma == NULL)
                break;
            if (nf == 5) {
                nf++; /* a sixth field */
                break;
            }
            *comma = '\0';
            p = comma + 1;
        }
        if (nf != 5) {
            rc = EBB_EINVAL;
            break;
        }
        if (n < max) {
            struct agent_gpu *g = &gpus[n++];
            ebb__strlcpy(g->model, trim(fields[0]), sizeof(g->model));
            g->memory_mb = field_number(trim(fields[1]));
            g->pcie_width = (int)field_number(trim(fields[2]));
            g->pcie_gen = (int)field_number(trim(fields[3]));
            const char *driver = trim(fields[4]);
            ebb__strlcpy(g->driver, driver[0] == '[' ? "" : driver, sizeof(g->driver));
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    free(copy);
    return rc != 0 ? rc : (int)n;
}

void agent_hostprobe_cuda(const char *text, char *out, size_t size)
{
    static const char label[] = "CUDA Version:";
    out[0] = '\0';
    const char *p = strstr(text, label);
    if (p == NULL)
        return;
    p += strlen(label);
    p += strspn(p, " ");
    size_t n = strspn(p, "0123456789.");
    if (n > 0 && n < size) {
        memcpy(out, p, n);
        out[n] = '\0';
    }
}

static void run(struct probe *pr);

/* A run of nvidia-smi is over: the next one, or the end. */
static void ran(void *arg, bool ok, const char *out)
{
    struct probe *pr = arg;
    struct agent_host *h = &pr->host;
    bool more = false;
    if (!pr->header) {
        int n = -1;
        if (ok) {
            n = agent_hostprobe_parse(out, h->gpus, AGENT_MAX_GPUS);
            if (n < 0)
                ebb__warn("cannot read nvidia-smi's output: \"%s\"", out);
        }
        h->ok = n >= 0;
        h->n = n >= 0 ? (size_t)n : 0;
        if (!h->ok)
            ebb__warn("reporting no GPUs");
        more = h->ok;
    } else {
        if (ok)
            agent_hostprobe_cuda(out, h->cuda, sizeof(h->cuda));
        if (h->cuda[0] == '\0')
            ebb__warn("nvidia-smi's header gave no CUDA version; reporting it unknown");
    }
    if (more) {
        pr->header = true;
        run(pr);
        return;
    }
    done(pr);
}

/* Starts one run of nvidia-smi: the query, or plain for the header. */
static void run(struct probe *pr)
{
    char *query[] = {pr->path, AGENT_NVIDIA_SMI_QUERY, "--format=csv,noheader,nounits",
                     NULL};
    char *plain[] = {pr->path, NULL};
    if (agent_capture_start(pr->loop, pr->header ? plain : query, pr->timeout_ms,
                            pr->header ? "nvidia-smi (its header)" : "nvidia-smi", ran,
                            pr) != 0) {
        ebb__warn("out of memory running nvidia-smi; reporting no GPUs");
        pr->host.ok = false;
        pr->host.n = 0;
        done(pr);
    }
}

static void on_idle_closed(uv_handle_t *h)
{
    done(h->data);
}

static void on_idle(uv_idle_t *idle)
{
    uv_idle_stop(idle);
    uv_close((uv_handle_t *)idle, on_idle_closed);
}

int agent_hostprobe_start(uv_loop_t *loop, int64_t timeout_ms,
                          agent_hostprobe_cb cb, void *arg)
{
    struct probe *pr = calloc(1, sizeof(*pr));
    if (pr == NULL)
        return EBB_ENOMEM;
    pr->loop = loop;
    pr->timeout_ms = timeout_ms;
    pr->cb = cb;
    pr->arg = arg;
    pr->path = agent_find_program("nvidia-smi");
    pr->host.have_smi = pr->path != NULL;
    if (pr->path == NULL) {
        uv_idle_init(loop, &pr->idle);
        pr->idle.data = pr;
        uv_idle_start(&pr->idle, on_idle);
        return 0;
    }
    run(pr);
    return 0;
}
