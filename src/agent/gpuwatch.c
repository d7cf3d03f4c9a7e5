/* GPU utilisation samples (see gpuwatch.h). */
#include "agent/gpuwatch.h"

#include <stdlib.h>
#include <string.h>

#include "agent/capture.h"
#include "base/log.h"

/* A sample that nvidia-smi has not answered by then is killed: a GPU
 * whose driver hangs is reported as no sample, not as idle. */
#define SAMPLE_TIMEOUT_MS 10000

int agent_gpuwatch_parse(const char *csv)
{
    long sum = 0, n = 0;
    for (const char *line = csv; *line != '\0';) {
        size_t len = strcspn(line, "\n");
        char *end;
        long v = strtol(line, &end, 10);
        /* "87", "87\r": a number; anything else on the line is not one
         * (strtol skips blanks, newlines too: a number on a later line
         * is that line's). */
        size_t used = (size_t)(end - line);
        if (end != line && used <= len && used + strspn(end, " \r") >= len && v >= 0 &&
            v <= 100) {
            sum += v;
            n++;
        }
        line += len;
        if (*line == '\n')
            line++;
    }
    return n > 0 ? (int)((sum + n / 2) / n) : -1;
}

void agent_gpuwatch_init(struct agent_gpuwatch *w, uv_loop_t *loop)
{
    *w = (struct agent_gpuwatch){.loop = loop, .latest = -1};
}

void agent_gpuwatch_enable(struct agent_gpuwatch *w)
{
    free(w->path);
    w->path = agent_find_program("nvidia-smi");
}

static void sampled(void *arg, bool ok, const char *output)
{
    struct agent_gpuwatch *w = arg;
    w->sampling = false;
    int mean = ok ? agent_gpuwatch_parse(output) : -1;
    if (ok && mean < 0)
        ebb__warn("nvidia-smi gave no GPU utilisation: \"%.80s\"", output);
    w->latest = mean;
}

int agent_gpuwatch_take(struct agent_gpuwatch *w)
{
    int latest = w->latest;
    w->latest = -1;
    if (w->path != NULL && !w->sampling) {
        char *argv[] = {w->path, AGENT_NVIDIA_SMI_UTIL_QUERY, "--format=csv,noheader,nounits",
                        NULL};
        w->sampling = agent_capture_start(w->loop, argv, SAMPLE_TIMEOUT_MS,
                                          "nvidia-smi (GPU utilisation)", sampled, w) == 0;
    }
    return latest;
}

void agent_gpuwatch_free(struct agent_gpuwatch *w)
{
    free(w->path);
    w->path = NULL;
}
