/* seq/queens.c: sequential reference for ../queens.tc (same arguments, same output
 * line). The throttling depth is accepted and checked but does not change the
 * sequential search. Usage: queens [n] [depth] (defaults 10, 4). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXN 20

static long long count_seq(unsigned all, unsigned cols, unsigned ldiag, unsigned rdiag)
{
    long long count = 0;
    unsigned free_ = all & ~(cols | ldiag | rdiag);

    if (cols == all)
        return 1;
    while (free_) {
        unsigned bit = free_ & -free_;
        free_ -= bit;
        count += count_seq(all, cols | bit, (ldiag | bit) << 1, (rdiag | bit) >> 1);
    }
    return count;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int depth = argc > 2 ? atoi(argv[2]) : 4;
    if (n < 1 || n > MAXN || depth < 0) {
        fprintf(stderr, "queens: usage: queens [n (1..%d)] [depth >= 0]\n", MAXN);
        return 1;
    }
    clock_t t0 = clock();
    long long r = count_seq((1u << n) - 1, 0, 0, 0);
    printf("queens(%d) = %lld\n", n, r);
    fprintf(stderr, "queens: %.3f s (sequential)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return 0;
}
