/* Replays every file in the directories given on the command line through
 * LLVMFuzzerTestOneInput, so checked-in corpora run as ordinary tests (and
 * under the sanitizers) without libFuzzer. Exits non-zero if a directory is
 * missing or empty; a crash in the target crashes the run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap == 0 ? 4096 : cap * 2;
            uint8_t *p = realloc(buf, cap);
            if (p == NULL) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = p;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    fclose(f);
    /* Copy into an exactly sized block so ASan catches reads past the
     * input's end, as it would under libFuzzer. */
    uint8_t *exact = malloc(len > 0 ? len : 1);
    if (exact == NULL) {
        free(buf);
        return -1;
    }
    if (len > 0)
        memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
        return 2;
    }
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay(argv[i]) != 0)
                return 1;
            count++;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        if (dir == NULL) {
            perror(argv[i]);
            return 1;
        }
        for (;;) {
            struct dirent *e = readdir(dir);
            if (e == NULL)
                break;
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            if (replay(path) != 0) {
                closedir(dir);
                return 1;
            }
            count++;
        }
        closedir(dir);
    }
    printf("replayed %d inputs\n", count);
    return count > 0 ? 0 : 1;
}
