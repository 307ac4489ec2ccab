# The mpi layer is compiled with the MPI compiler wrapper, ETC_MPICC (from the
# environment, e.g. mpicc.mpich where Open MPI and MPICH are both installed) or
# mpicc, which etcc also links mpi programs with (etcpre/toolchain.py). Without it
# or without mpiexec (the launcher every MPI names so) the layer is skipped.
MPI_CC := $(or $(strip $(ETC_MPICC)),mpicc)
MPI_CC_PATH := $(shell command -v $(firstword $(MPI_CC)) 2>/dev/null)
MPIEXEC_PATH := $(shell command -v mpiexec 2>/dev/null)
ifeq ($(MPI_CC_PATH),)
LAYER_MISSING := $(firstword $(MPI_CC)) is not installed (apt-get install openmpi-bin libopenmpi-dev)
else ifeq ($(MPIEXEC_PATH),)
LAYER_MISSING := mpiexec is not installed (apt-get install openmpi-bin)
else
LAYER_CC := $(MPI_CC)
endif
