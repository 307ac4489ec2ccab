/* fib_seq.c: plain recursive C, the baseline of every fib comparison.
 * Usage: fib_seq N -> "fib(N) = F" on stdout, seconds on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
    volatile int n = argc > 1 ? atoi(argv[1]) : 30; /* not a compile-time constant */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int r = fib(n);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("fib(%d) = %d\n", (int)n, r);
    fprintf(stderr, "time: %.6f s\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    return 0;
}
