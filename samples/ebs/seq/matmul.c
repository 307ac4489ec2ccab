/* seq/matmul.c: sequential reference for ../matmul.tc (same arguments, same output
 * line): the same matrices, the same loop order (i, k, j).
 * Usage: matmul [n] (default 64). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "matmul: out of memory\n");
        exit(1);
    }
    return p;
}

static void row_times_b(int n, const double *a_row, const double *b, double *c_row)
{
    int j, k;

    for (j = 0; j < n; j++)
        c_row[j] = 0.0;
    for (k = 0; k < n; k++) {
        double aik = a_row[k];
        const double *b_row = b + (size_t)k * n;
        for (j = 0; j < n; j++)
            c_row[j] += aik * b_row[j];
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 64;
    int i, j;
    long long trace = 0, checksum = 0;

    if (n < 1 || n > 8192) {
        fprintf(stderr, "matmul: usage: matmul [n (1..8192)]\n");
        return 1;
    }
    double *A = xmalloc(sizeof(double) * (size_t)n * n);
    double *B = xmalloc(sizeof(double) * (size_t)n * n);
    double *C = xmalloc(sizeof(double) * (size_t)n * n);
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            A[(size_t)i * n + j] = (double)((i * 7 + j * 13) % 17 - 8);
            B[(size_t)i * n + j] = (double)((i * 5 + j * 11) % 19 - 9);
        }
    clock_t t0 = clock();
    for (i = 0; i < n; i++)
        row_times_b(n, A + (size_t)i * n, B, C + (size_t)i * n);
    fprintf(stderr, "matmul: %.3f s (sequential)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    for (i = 0; i < n; i++) {
        trace += (long long)C[(size_t)i * n + i];
        for (j = 0; j < n; j++)
            checksum += (long long)C[(size_t)i * n + j] * ((i * 31 + j * 7) % 101 + 1);
    }
    printf("matmul(%d) = trace %lld, checksum %lld\n", n, trace, checksum);
    free(A);
    free(B);
    free(C);
    return 0;
}
