/* mpi_pingpong.c: raw MPI baselines for the mpi target's benchmarks (bench/mpi_target.py),
 * on 2 ranks:
 *   mpi_pingpong pingpong COUNT BYTES   mean round trip of COUNT ping-pongs (ns), then
 *                                       that of the median batch of BATCH (as
 *                                       bench/ops/ops.tc's TEST_batches)
 *   mpi_pingpong stream COUNT BYTES     rank 1 MPI_Sends COUNT blocks to rank 0 (MB/s)
 * Rank 0 prints the figure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 500 /* round trips: bench/ops/ops.tc's RTT_BATCH */

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per round trip of the median batch; at[] holds when each batch ended, from
 * the start at at[0] */
static double median_batch(double *at, long n)
{
    for (long k = 0; k < n; k++)
        at[k] = at[k + 1] - at[k];
    qsort(at, (size_t)n, sizeof *at, by_value);
    return at[n / 2] * 1e9 / BATCH;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4 || n != 2) {
        if (me == 0)
            fprintf(stderr,
                    "usage: mpirun -n 2 mpi_pingpong pingpong|stream COUNT BYTES\n");
        MPI_Finalize();
        return 2;
    }
    long count = atol(argv[2]);
    size_t bytes = (size_t)atol(argv[3]);
    char *buf = malloc(bytes ? bytes : 1);
    double *batch_at = malloc((size_t)(count / BATCH + 1) * sizeof *batch_at);
    long batches = 0;
    if (!buf || !batch_at) {
        fprintf(stderr, "mpi_pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 1, bytes);
    int ping = strcmp(argv[1], "pingpong") == 0;
    for (int round = 0; round < 2; round++) { /* a warm-up round, then the measured one */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        batches = 0;
        batch_at[batches++] = t0;
        for (long i = 0; i < count; i++) {
            if (ping) {
                if (me == 0) {
                    MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            } else if (me == 1) {
                MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            } else {
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (ping && (i + 1) % BATCH == 0)
                batch_at[batches++] = MPI_Wtime();
        }
        if (!ping) /* the last block has arrived when rank 1 hears so */
            MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime() - t0;
        if (round == 1 && me == 0 && ping && batches > 1)
            printf("%.1f %.1f\n", s / (double)count * 1e9, median_batch(batch_at, batches - 1));
        else if (round == 1 && me == 0)
            printf("%.1f\n", ping ? s / (double)count * 1e9 : (double)count * (double)bytes / s / 1e6);
    }
    free(batch_at);
    free(buf);
    MPI_Finalize();
    return 0;
}
