/* seq/tsp.c: sequential reference for ../tsp.tc (same arguments, same output line):
 * the same instance, the same initial bound, the same depth-first branch and bound.
 * The throttling depth is accepted and checked but does not change the search.
 * Usage: tsp [n] [seed] [depth] (defaults 10 1 4). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXC 31

static int ncities;
static int dist[MAXC][MAXC];
static int minout[MAXC];
static int order[MAXC][MAXC];
static int best;
static long long searched; /* partial tours examined: the search's work */

/* ---- the instance (identical to tsp.tc) */

static int isqrt_round(int v)
{
    int lo = 0, hi = 46341;

    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (mid * mid <= v)
            lo = mid;
        else
            hi = mid;
    }
    return v - lo * lo > lo ? lo + 1 : lo;
}

static void make_instance(int n, unsigned seed)
{
    unsigned long long s = seed * 0x9e3779b97f4a7c15ULL + 1;
    int x[MAXC], y[MAXC], i, j;

    for (i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (int)((s >> 33) % 1000);
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        y[i] = (int)((s >> 33) % 1000);
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            dist[i][j] = isqrt_round((x[i] - x[j]) * (x[i] - x[j]) +
                                     (y[i] - y[j]) * (y[i] - y[j]));
}

static int nearest_neighbour_tour(int n)
{
    int city = 0, len = 0, step, j;
    unsigned visited = 1;

    for (step = 1; step < n; step++) {
        int next = -1;
        for (j = 0; j < n; j++)
            if (!(visited & (1u << j)) && (next < 0 || dist[city][j] < dist[city][next]))
                next = j;
        len += dist[city][next];
        visited |= 1u << next;
        city = next;
    }
    return len + dist[city][0];
}

static void prepare(int n)
{
    int c, i, j;

    ncities = n;
    for (c = 0; c < n; c++) {
        int k = 0;
        minout[c] = INT_MAX;
        for (j = 0; j < n; j++)
            if (j != c) {
                if (dist[c][j] < minout[c])
                    minout[c] = dist[c][j];
                /* insertion sort: the other cities, nearest first */
                for (i = k++; i > 0 && dist[c][order[c][i - 1]] > dist[c][j]; i--)
                    order[c][i] = order[c][i - 1];
                order[c][i] = j;
            }
        if (n == 1)
            minout[c] = 0;
    }
}

/* ---- the search (identical to tsp.tc) */

static int search(int city, unsigned visited, int len, int rest, int count)
{
    int found = INT_MAX, k;

    searched++;
    if (count == ncities) {
        int total = len + dist[city][0];
        if (total < best) {
            best = total;
            found = total;
        }
        return found;
    }
    for (k = 0; k < ncities - 1; k++) {
        int next = order[city][k];
        if (visited & (1u << next))
            continue;
        int nlen = len + dist[city][next];
        int nrest = rest - minout[next];
        if (nlen + minout[next] + nrest >= best)
            continue;
        int f = search(next, visited | (1u << next), nlen, nrest, count + 1);
        if (f < found)
            found = f;
    }
    return found;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int seed = argc > 2 ? atoi(argv[2]) : 1;
    int depth = argc > 3 ? atoi(argv[3]) : 4;
    int bound, rest, c, found, length;

    if (n < 1 || n > MAXC || seed < 0 || depth < 1) {
        fprintf(stderr, "tsp: usage: tsp [n (1..%d)] [seed >= 0] [depth >= 1]\n", MAXC);
        return 1;
    }
    clock_t t0 = clock();
    make_instance(n, (unsigned)seed);
    prepare(n);
    bound = nearest_neighbour_tour(n);
    best = bound;
    rest = 0;
    for (c = 1; c < n; c++)
        rest += minout[c];
    found = search(0, 1u, 0, rest, 1);
    length = found < bound ? found : bound;
    printf("tsp(%d,%d) = %d\n", n, seed, length);
    fprintf(stderr, "tsp: %.3f s (sequential), initial bound %d\n",
            (double)(clock() - t0) / CLOCKS_PER_SEC, bound);
    fprintf(stderr, "tsp: %lld partial tours searched\n", searched);
    return 0;
}
