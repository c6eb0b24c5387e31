/* A STREAM-style bandwidth reference for benchmarks/membw_vs_stream.py.
 *
 * Three arrays of doubles, each BYTES long, first touched in parallel so pages land where the
 * threads run. Each repetition times copy (c = a) and triad (a = b + s*c) with the monotonic
 * clock; bytes are counted the STREAM way (copy 2n, triad 3n). Prints one line per repetition:
 * "copy <seconds> <GB/s>" and "triad <seconds> <GB/s>". Threads: OMP_NUM_THREADS.
 *
 * usage: stream BYTES REPS
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s BYTES REPS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]) / (long)sizeof(double);
    int reps = atoi(argv[2]);
    double *a = aligned_alloc(64, n * sizeof(double) + 64);
    double *b = aligned_alloc(64, n * sizeof(double) + 64);
    double *c = aligned_alloc(64, n * sizeof(double) + 64);
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    const double s = 3.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        a[i] = 1.0 + (double)(i % 7);
        b[i] = 2.0;
        c[i] = 0.5;
    }
    for (int r = 0; r < reps; r++) {
        double t = now();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            c[i] = a[i];
        t = now() - t;
        printf("copy %.9f %.4f\n", t, 2.0 * n * sizeof(double) / t / 1e9);
        t = now();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        t = now() - t;
        printf("triad %.9f %.4f\n", t, 3.0 * n * sizeof(double) / t / 1e9);
        fflush(stdout);
    }
    /* Keep the results observable so the loops cannot be dropped. */
    double check = 0;
    for (long i = 0; i < n; i += 4096)
        check += a[i] + c[i];
    fprintf(stderr, "check %g\n", check);
    free(a);
    free(b);
    free(c);
    return 0;
}
