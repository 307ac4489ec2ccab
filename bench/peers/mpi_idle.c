/* mpi_idle.c: the least CPU an MPI rank that must poll for its messages spends
 * waiting (MPI has no wait that sleeps): rank 0 computes for SECONDS, then sends
 * rank 1 a message; rank 1 tests for it every millisecond, sleeping in between,
 * and prints the CPU time it used waiting (s). bench/mpi_target.py sets it beside
 * an idle etc rank. Usage: mpi_idle SECONDS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds_of(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    double busy = argc > 1 ? atof(argv[1]) : 1.0;
    char byte = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        double end = seconds_of(CLOCK_MONOTONIC) + busy;
        volatile unsigned long spins = 0;
        while (seconds_of(CLOCK_MONOTONIC) < end)
            spins++;
        MPI_Send(&byte, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    } else if (me == 1) {
        double cpu0 = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
        MPI_Request req;
        MPI_Irecv(&byte, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &req);
        for (int done = 0;;) {
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (done)
                break;
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        printf("%.4f\n", seconds_of(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
    }
    MPI_Finalize();
    return 0;
}
