/* queens_omp.c: the n-queens count of samples/ebs/queens.tc with OpenMP tasks:
 * a task per safe square down to the throttling depth, then the same sequential
 * bit-mask search. Usage: OMP_NUM_THREADS=T queens_omp N DEPTH */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "queens_count.h"

static long long queens(unsigned all, int depth, int placed, unsigned cols, unsigned ld,
                        unsigned rd)
{
    if (placed >= depth || cols == all)
        return count_seq(all, cols, ld, rd);
    long long counts[32] = {0}, total = 0;
    unsigned free_ = all & ~(cols | ld | rd);
    int children = 0;
    while (free_) {
        unsigned bit = free_ & -free_;
        free_ -= bit;
        long long *slot = &counts[children++];
#pragma omp task firstprivate(bit, slot)
        *slot = queens(all, depth, placed + 1, cols | bit, (ld | bit) << 1, (rd | bit) >> 1);
    }
#pragma omp taskwait
    for (int i = 0; i < children; i++)
        total += counts[i];
    return total;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10, depth = argc > 2 ? atoi(argv[2]) : 4;
    long long r = 0;
    double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    r = queens((1u << n) - 1, depth, 0, 0, 0, 0);
    fprintf(stderr, "time: %.6f s on %d thread(s)\n", omp_get_wtime() - t0, omp_get_max_threads());
    printf("queens(%d) = %lld\n", n, r);
    return 0;
}
