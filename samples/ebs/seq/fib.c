/* seq/fib.c: sequential reference for ../fib.tc (same arguments, same output line).
 * Usage: fib [n] (default 25). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 25;
    if (n < 0 || n > 90) {
        fprintf(stderr, "fib: n must be between 0 and 90\n");
        return 1;
    }
    clock_t t0 = clock();
    long long r = fib(n);
    printf("fib(%d) = %lld\n", n, r);
    fprintf(stderr, "fib: %.3f s (sequential)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return 0;
}
