/* seq/knary.c: sequential reference for ../knary.tc (same arguments, same output
 * line). The tree is walked depth-first; r only appears in the output.
 * Usage: knary [n] [k] [r] [grain] (defaults 5 4 1 200). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXK 64

static long long work(unsigned long long id, int grain)
{
    unsigned long long x = id;
    int i;

    for (i = 0; i < grain; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (long long)(x >> 48);
}

/* Adds the subtree's node count and checksum to *nodes and *sum. */
static void knary(int n, int k, int grain, unsigned long long id, long long *nodes,
                  long long *sum)
{
    int i;

    *sum += work(id, grain);
    *nodes += 1;
    if (n <= 1)
        return;
    for (i = 0; i < k; i++)
        knary(n - 1, k, grain, id * k + i, nodes, sum);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 5;
    int k = argc > 2 ? atoi(argv[2]) : 4;
    int r = argc > 3 ? atoi(argv[3]) : 1;
    int grain = argc > 4 ? atoi(argv[4]) : 200;
    long long nodes = 0, sum = 0;

    if (n < 1 || k < 1 || k > MAXK || r < 0 || r > k || grain < 0) {
        fprintf(stderr, "knary: usage: knary [n >= 1] [k (1..%d)] [r (0..k)] [grain >= 0]\n",
                MAXK);
        return 1;
    }
    clock_t t0 = clock();
    knary(n, k, grain, 0, &nodes, &sum);
    printf("knary(%d,%d,%d) = %lld nodes, checksum %lld\n", n, k, r, nodes, sum);
    fprintf(stderr, "knary: %.3f s (sequential)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return 0;
}
