/* A pointer-chase latency reference in the manner of lmbench's lat_mem_rd, for
 * benchmarks/latency_vs_lmbench.py.
 *
 * The working set is split into STRIDE-byte slots linked into one random ring (the slots are
 * shuffled, then each points to the next in shuffled order, the last back to the first). The
 * chase `p = *p` is unrolled 100 times per loop trip; each repetition times LOADS loads with the
 * monotonic clock and prints the average ns per load (total time / loads, as lat_mem_rd does).
 * PAGES is "base" (madvise NOHUGEPAGE) or "thp" (madvise HUGEPAGE) on a 2 MiB-aligned mapping.
 * The page size is checked, not assumed: after the ring is written, the program reads the
 * mapping's AnonHugePages from /proc/self/smaps and reports it on stderr as
 * "huge_bytes N of M" (M is the working set), so the caller can tell whether THP was granted.
 *
 * usage: lat_mem_rd BYTES STRIDE PAGES LOADS REPS
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE (2UL << 20)
#define L10 p = *(char **)p; p = *(char **)p; p = *(char **)p; p = *(char **)p; p = *(char **)p; \
            p = *(char **)p; p = *(char **)p; p = *(char **)p; p = *(char **)p; p = *(char **)p;
#define L100 L10 L10 L10 L10 L10 L10 L10 L10 L10 L10

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* AnonHugePages (bytes) of the mapping containing addr, from /proc/self/smaps; -1 if unreadable. */
static long long anon_huge_bytes(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0;
    long long found = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        long long kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') != NULL &&
            strchr(line, '-') < strchr(line, ' '))
            inside = lo <= (uintptr_t)addr && (uintptr_t)addr < hi;
        else if (inside && sscanf(line, "AnonHugePages: %lld kB", &kb) == 1) {
            found = kb * 1024;
            break;
        }
    }
    fclose(f);
    return found;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next_random(void)
{ /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s BYTES STRIDE PAGES LOADS REPS\n", argv[0]);
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10), stride = strtoull(argv[2], NULL, 10);
    int thp = strcmp(argv[3], "thp") == 0;
    long loads = atol(argv[4]) / 100 * 100;
    int reps = atoi(argv[5]);
    size_t slots = bytes / stride;
    size_t span = (bytes + HUGE - 1) / HUGE * HUGE;
    char *raw = mmap(NULL, span + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(raw, span + HUGE, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    char *buf = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1));
    size_t *order = malloc(slots * sizeof(size_t));
    for (size_t i = 0; i < slots; i++)
        order[i] = i;
    for (size_t i = slots - 1; i > 0; i--) { /* Fisher-Yates shuffle of the visiting order */
        size_t j = next_random() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < slots; k++)
        *(char **)(buf + order[k] * stride) = buf + order[(k + 1) % slots] * stride;
    free(order);
    char *p = buf;
    for (size_t k = 0; k < slots; k++) /* one full turn to warm caches and TLBs */
        p = *(char **)p;
    fprintf(stderr, "huge_bytes %lld of %zu\n", anon_huge_bytes(buf), bytes);
    for (int r = 0; r < reps; r++) {
        double t = now();
        for (long i = 0; i < loads; i += 100) {
            L100
        }
        t = now() - t;
        printf("%.4f\n", t / loads * 1e9);
        fflush(stdout);
    }
    fprintf(stderr, "end %p\n", (void *)p);
    munmap(raw, span + HUGE);
    return 0;
}
