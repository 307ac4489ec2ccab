/* manual.c: the five-point stencil of stencil.tc, hand-contracted: one loop nest
 * over the grid per iteration, the same arithmetic in the same order, so it
 * prints the same checksum. Usage: manual SIDE ITERS K */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    int side = argc > 1 ? atoi(argv[1]) : 40, iters = argc > 2 ? atoi(argv[2]) : 100;
    int k = argc > 3 ? atoi(argv[3]) : 25, points = side * side;
    double *val = malloc(sizeof(double) * 2 * (size_t)points * (size_t)k);
#define AT(g, p) (val + ((size_t)((g) & 1) * (size_t)points + (size_t)(p)) * (size_t)k)
    for (int p = 0; p < points; p++)
        for (int q = 0; q < k; q++)
            AT(0, p)[q] = (double)((p * 7 + q * 13) % 101);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < side; i++) {
            for (int j = 0; j < side; j++) {
                int p = i * side + j, n = 0;
                const double *self = AT(it, p), *in[4];
                if (i > 0) in[n++] = AT(it, p - side);
                if (i < side - 1) in[n++] = AT(it, p + side);
                if (j > 0) in[n++] = AT(it, p - 1);
                if (j < side - 1) in[n++] = AT(it, p + 1);
                for (int q = n; q < 4; q++)
                    in[q] = self;
                double *out = AT(it + 1, p);
                for (int q = 0; q < k; q++)
                    out[q] = (in[0][q] + in[1][q] + in[2][q] + in[3][q] + self[q]) * 0.2;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    fprintf(stderr, "time: %.6f s\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    double sum = 0;
    for (int p = 0; p < points; p++)
        for (int q = 0; q < k; q++)
            sum += AT(iters, p)[q];
    printf("stencil %dx%d, %d iterations, %d unknowns: checksum %.6e\n", side, side, iters, k, sum);
    return 0;
}
