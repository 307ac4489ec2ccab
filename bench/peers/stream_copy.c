/* stream_copy.c: memory bandwidth, STREAM's "copy" kernel (c[i] = a[i]) over
 * arrays far larger than the last-level cache, for bench/apps.py: matmul on
 * this machine streams its B matrix from memory once per row, so its two-way
 * speedup is bounded by what two copies of this get from memory at once.
 *
 * Usage: stream_copy MIB PASSES. Prints the median pass's MB/s (bytes read plus
 * bytes written, as STREAM counts them): two copies run at once overlap in
 * their middle passes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stream_copy MIB PASSES\n");
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) * (1u << 20) / sizeof(double);
    int passes = atoi(argv[2]);
    double *a = malloc(n * sizeof *a), *c = malloc(n * sizeof *c);
    if (!a || !c || passes < 1) {
        fprintf(stderr, "stream_copy: out of memory or bad arguments\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) { /* touch every page before timing */
        a[i] = (double)i;
        c[i] = 0.0;
    }
    double *mbs = malloc((size_t)passes * sizeof *mbs);
    if (!mbs)
        return 1;
    for (int p = 0; p < passes; p++) {
        double t0 = now();
        for (size_t i = 0; i < n; i++)
            c[i] = a[i];
        double dt = now() - t0;
        __asm__ volatile("" : : "r"(c) : "memory"); /* the copy is not dead */
        double v = 2.0 * (double)(n * sizeof *a) / dt / 1e6;
        int k = p; /* insertion sort: a few passes */
        while (k > 0 && mbs[k - 1] > v) {
            mbs[k] = mbs[k - 1];
            k--;
        }
        mbs[k] = v;
    }
    if (c[n / 2] != a[n / 2])
        return 1;
    printf("%.0f\n", mbs[passes / 2]);
    free(mbs);
    free(a);
    free(c);
    return 0;
}
