/* seq/tomcatv.c: sequential reference for ../tomcatv.tc (same arguments, same output
 * line): the same mesh, the same row kernel, the whole mesh swept row by row.
 * The row-block size is accepted and checked but does not change the computation.
 * Usage: tomcatv [m] [iters] [rows] (defaults 65 20 8). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ---- the mesh and the row kernel (identical to tomcatv.tc) */

typedef struct {
    double sum, errx, erry;
} rowres;

/* Row i of the initial m x m mesh: X[0..m-1] then Y[0..m-1]. The boundary is a
 * unit grid; interior points are displaced by a fixed pattern. */
static void init_row(int m, int i, double *row)
{
    int j;

    for (j = 0; j < m; j++) {
        int inside = i > 0 && i < m - 1 && j > 0 && j < m - 1;
        row[j] = j + (inside ? ((i * 37 + j * 91 + 17) % 23 - 11) * 0.03 : 0.0);
        row[m + j] = i + (inside ? ((i * 53 + j * 29 + 5) % 19 - 9) * 0.035 : 0.0);
    }
}

static double absval(double v)
{
    return v < 0 ? -v : v;
}

/* One row of one iteration (after SPEC tomcatv): the residuals of the mesh
 * equations at row `mid` from its old neighbours `up` and `down`, then an
 * implicit correction along the row (a tridiagonal solve, whose forward and
 * backward sweeps carry a dependence from column to column). Writes the new
 * row to `out` (columns 1..m-2), the largest residuals to *errx and *erry.
 * `work` holds 5 * m doubles. */
static void relax_row(int m, const double *up, const double *mid, const double *down,
                      double *out, double *work, double *errx, double *erry)
{
    const double *xu = up, *yu = up + m, *xm = mid, *ym = mid + m;
    const double *xd = down, *yd = down + m;
    double *rx = work, *ry = work + m, *aa = work + 2 * m, *dd = work + 3 * m;
    double *d = work + 4 * m;
    double ex = 0.0, ey = 0.0;
    int j;

    for (j = 1; j < m - 1; j++) {
        double xx = xm[j + 1] - xm[j - 1], yx = ym[j + 1] - ym[j - 1];
        double xy = xd[j] - xu[j], yy = yd[j] - yu[j];
        double a = 0.25 * (xy * xy + yy * yy);
        double b = 0.25 * (xx * xx + yx * yx);
        double c = 0.125 * (xx * xy + yx * yy);
        double pxx = xm[j + 1] - 2.0 * xm[j] + xm[j - 1];
        double qxx = ym[j + 1] - 2.0 * ym[j] + ym[j - 1];
        double pyy = xd[j] - 2.0 * xm[j] + xu[j];
        double qyy = yd[j] - 2.0 * ym[j] + yu[j];
        double pxy = xd[j + 1] - xd[j - 1] - xu[j + 1] + xu[j - 1];
        double qxy = yd[j + 1] - yd[j - 1] - yu[j + 1] + yu[j - 1];
        rx[j] = a * pxx + b * pyy - c * pxy;
        ry[j] = a * qxx + b * qyy - c * qxy;
        aa[j] = -a;
        dd[j] = 2.0 * (a + b);
        if (absval(rx[j]) > ex)
            ex = absval(rx[j]);
        if (absval(ry[j]) > ey)
            ey = absval(ry[j]);
    }
    *errx = ex;
    *erry = ey;
    /* tridiagonal solve along the row: forward elimination ... */
    d[1] = dd[1];
    for (j = 2; j < m - 1; j++) {
        double w = aa[j] / d[j - 1];
        d[j] = dd[j] - w * aa[j - 1];
        rx[j] -= w * rx[j - 1];
        ry[j] -= w * ry[j - 1];
    }
    /* ... and back substitution */
    rx[m - 2] /= d[m - 2];
    ry[m - 2] /= d[m - 2];
    for (j = m - 3; j >= 1; j--) {
        rx[j] = (rx[j] - aa[j] * rx[j + 1]) / d[j];
        ry[j] = (ry[j] - aa[j] * ry[j + 1]) / d[j];
    }
    for (j = 1; j < m - 1; j++) {
        out[j] = xm[j] + rx[j];
        out[m + j] = ym[j] + ry[j];
    }
}

static double row_sum(int m, const double *row)
{
    double s = 0.0;
    int j;

    for (j = 0; j < 2 * m; j++)
        s += row[j];
    return s;
}

/* ---- the sequential driver */

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "tomcatv: out of memory\n");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    int m = argc > 1 ? atoi(argv[1]) : 65;
    int iters = argc > 2 ? atoi(argv[2]) : 20;
    int rows = argc > 3 ? atoi(argv[3]) : 8;
    int i, t;
    double errx = 0.0, erry = 0.0, checksum = 0.0;

    if (m < 3 || m > 8192 || iters < 0 || rows < 1) {
        fprintf(stderr, "tomcatv: usage: tomcatv [m (3..8192)] [iters >= 0] [rows >= 1]\n");
        return 1;
    }
    size_t rowlen = 2 * (size_t)m;
    double *buf[2], *work = xmalloc(sizeof(double) * 5 * (size_t)m);
    rowres *res = xmalloc(sizeof(rowres) * (size_t)m);
    clock_t t0 = clock();
    for (t = 0; t < 2; t++) {
        buf[t] = xmalloc(sizeof(double) * rowlen * (size_t)m);
        for (i = 0; i < m; i++)
            init_row(m, i, buf[t] + i * rowlen);
    }
    for (i = 1; i < m - 1; i++)
        res[i].errx = res[i].erry = 0.0;
    for (t = 1; t <= iters; t++) {
        const double *old = buf[(t - 1) % 2];
        double *new_ = buf[t % 2];
        for (i = 1; i < m - 1; i++)
            relax_row(m, old + (i - 1) * rowlen, old + i * rowlen, old + (i + 1) * rowlen,
                      new_ + i * rowlen, work, &res[i].errx, &res[i].erry);
    }
    for (i = 1; i < m - 1; i++)
        res[i].sum = row_sum(m, buf[iters % 2] + i * rowlen);
    /* the combination tomcatv.tc's MAIN does: rows in order */
    for (i = 1; i < m - 1; i++) {
        if (res[i].errx > errx)
            errx = res[i].errx;
        if (res[i].erry > erry)
            erry = res[i].erry;
        checksum += res[i].sum;
    }
    printf("tomcatv(%d,%d) = errx %.6e erry %.6e checksum %.10e\n", m, iters, errx, erry,
           checksum);
    fprintf(stderr, "tomcatv: %.3f s (sequential)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    free(buf[0]);
    free(buf[1]);
    free(work);
    free(res);
    return 0;
}
