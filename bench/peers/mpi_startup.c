/* mpi_startup.c: the least an MPI program does to start and end (bench/mpi_target.py
 * times it beside an etc program doing nothing, on many ranks). */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
