/* seq/paraffins.c: sequential reference for ../paraffins.tc (same arguments, same
 * output line): the same radicals, the same enumeration, size after size.
 * Usage: paraffins [n] (default 16). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAXN 40
#define MAXR (MAXN / 2)

/* ---- radicals (identical to paraffins.tc) */

typedef struct {
    int sub[3];                /* ids of the three sub-radicals, nondecreasing */
} radical;

static radical *rads;          /* all radicals, by size then by index */
static int first[MAXR + 2];    /* id of the first radical of each size */
static long long nrad[MAXR + 1];

static void out_of_memory(void)
{
    fprintf(stderr, "paraffins: out of memory\n");
    exit(1);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

/* Every radical (a carbon with three sub-radicals, hydrogen being the radical of
 * size 0) of size 0 .. maxr, each once: sub-radicals in nondecreasing order of
 * (size, index). nrad[s] is the number generated of size s. */
static void make_radicals(int maxr)
{
    int s, sa, sb, sc, x, y, z, k, capacity = 64;

    rads = xmalloc(sizeof(radical) * (size_t)capacity);
    rads[0].sub[0] = rads[0].sub[1] = rads[0].sub[2] = -1;   /* hydrogen */
    first[0] = 0;
    nrad[0] = 1;
    k = 1;
    for (s = 1; s <= maxr; s++) {
        first[s] = k;
        /* sizes sa <= sb <= sc of the sub-radicals, then the sub-radicals */
        for (sa = 0; 3 * sa <= s - 1; sa++)
            for (sb = sa; sa + 2 * sb <= s - 1; sb++) {
                sc = s - 1 - sa - sb;
                for (x = first[sa]; x < first[sa] + nrad[sa]; x++)
                    for (y = sb == sa ? x : first[sb]; y < first[sb] + nrad[sb]; y++)
                        for (z = sc == sb ? y : first[sc]; z < first[sc] + nrad[sc]; z++) {
                            if (k == capacity) {
                                capacity *= 2;
                                rads = realloc(rads, sizeof(radical) * (size_t)capacity);
                                if (!rads)
                                    out_of_memory();
                            }
                            rads[k].sub[0] = x;
                            rads[k].sub[1] = y;
                            rads[k].sub[2] = z;
                            k++;
                        }
            }
        nrad[s] = k - first[s];
    }
    first[maxr + 1] = k;
}

static void free_radicals(void)
{
    free(rads);
    rads = NULL;
}

/* ---- paraffins (identical to paraffins.tc)
 * A paraffin of size m has a centre: either a bond between two radicals of size
 * m / 2 (BCP, m even), or a carbon with four radicals of sizes s1 <= s2 <= s3 <= s4,
 * s1 + s2 + s3 + s4 = m - 1 and s4 <= (m - 1) / 2 (CCP). Each isomer is one
 * multiset of radicals: radicals of equal size are taken in nondecreasing index
 * order. */

/* The CCPs of one size partition whose largest radical has index r4 in [lo, hi):
 * the three outer radicals are enumerated, the smallest one counted. */
static long long ccp_count(int s1, int s2, int s3, int s4, long long lo, long long hi)
{
    long long count = 0, r4, r3, r2;

    for (r4 = lo; r4 < hi; r4++) {
        long long n3 = s3 == s4 ? r4 + 1 : nrad[s3];
        for (r3 = 0; r3 < n3; r3++) {
            long long n2 = s2 == s3 ? r3 + 1 : nrad[s2];
            for (r2 = 0; r2 < n2; r2++)
                count += s1 == s2 ? r2 + 1 : nrad[s1];
        }
    }
    return count;
}

static long long bcp_count(int m)
{
    long long count = 0, r1;

    if (m % 2)
        return 0;
    for (r1 = 0; r1 < nrad[m / 2]; r1++)
        count += nrad[m / 2] - r1;          /* the second radical: index >= r1 */
    return count;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 16;
    long long counts[MAXN + 1];
    int m, s1, s2, s3, s4;

    if (n < 1 || n > MAXN) {
        fprintf(stderr, "paraffins: usage: paraffins [n (1..%d)]\n", MAXN);
        return 1;
    }
    clock_t t0 = clock();
    make_radicals(n / 2);
    for (m = 1; m <= n; m++) {
        counts[m] = bcp_count(m);
        for (s4 = 0; 2 * s4 <= m - 1; s4++)
            for (s3 = 0; s3 <= s4; s3++)
                for (s2 = 0; s2 <= s3; s2++) {
                    s1 = m - 1 - s4 - s3 - s2;
                    if (s1 < 0 || s1 > s2)
                        continue;
                    counts[m] += ccp_count(s1, s2, s3, s4, 0, nrad[s4]);
                }
    }
    printf("paraffins(%d) =", n);
    for (m = 1; m <= n; m++)
        printf(" %lld", counts[m]);
    printf("\n");
    fprintf(stderr, "paraffins: %.3f s (sequential), %d radicals\n",
            (double)(clock() - t0) / CLOCKS_PER_SEC, first[n / 2 + 1]);
    free_radicals();
    return 0;
}
