/* fib_omp.c: fib with an OpenMP task per call (gcc's libgomp), the peer of
 * etc's fib with every call a TOKEN. Usage: OMP_NUM_THREADS=T fib_omp N */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int fib(int n)
{
    int x, y;
    if (n < 2)
        return n;
#pragma omp task shared(x)
    x = fib(n - 1);
#pragma omp task shared(y)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30, r = 0;
    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    r = fib(n);
    fprintf(stderr, "time: %.6f s on %d thread(s)\n", omp_get_wtime() - t0, omp_get_max_threads());
    printf("fib(%d) = %d\n", n, r);
    return 0;
}
