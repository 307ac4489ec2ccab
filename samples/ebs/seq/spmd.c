/* seq/spmd.c: sequential reference for ../spmd.tc (same arguments, same output line):
 * the phases one after the other, each tree walked depth-first.
 * Usage: spmd [phases] [n] [k] [r] [grain] (defaults 10 3 4 0 500). */
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

static unsigned long long fold(unsigned long long state, long long checksum)
{
    unsigned long long z = state + 0x9e3779b97f4a7c15ULL + (unsigned long long)checksum;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

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
    int phases = argc > 1 ? atoi(argv[1]) : 10;
    int n = argc > 2 ? atoi(argv[2]) : 3;
    int k = argc > 3 ? atoi(argv[3]) : 4;
    int r = argc > 4 ? atoi(argv[4]) : 0;
    int grain = argc > 5 ? atoi(argv[5]) : 500;
    long long nodes = 0;
    unsigned long long state = 1;
    int phase;

    if (phases < 0 || n < 1 || k < 1 || k > MAXK || r < 0 || r > k || grain < 0) {
        fprintf(stderr, "spmd: usage: spmd [phases >= 0] [n >= 1] [k (1..%d)] [r (0..k)] "
                "[grain >= 0]\n", MAXK);
        return 1;
    }
    clock_t t0 = clock();
    for (phase = 0; phase < phases; phase++) {
        long long sum = 0;
        knary(n, k, grain, state, &nodes, &sum);
        state = fold(state, sum);
    }
    printf("spmd(%d,%d,%d,%d) = %lld nodes, state %016llx\n", phases, n, k, r, nodes, state);
    fprintf(stderr, "spmd: %.3f s (sequential)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return 0;
}
