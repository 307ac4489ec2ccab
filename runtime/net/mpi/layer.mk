# The mpi layer is compiled with the MPI compiler wrapper (Open MPI's or MPICH's
# mpicc), which etcc also links mpi programs with (etcpre/toolchain.py). Without
# mpicc and mpiexec (the launcher every MPI names so) the layer is skipped.
MPICC_PATH := $(shell command -v mpicc 2>/dev/null)
MPIEXEC_PATH := $(shell command -v mpiexec 2>/dev/null)
ifeq ($(MPICC_PATH),)
LAYER_MISSING := mpicc is not installed (apt-get install openmpi-bin libopenmpi-dev)
else ifeq ($(MPIEXEC_PATH),)
LAYER_MISSING := mpiexec is not installed (apt-get install openmpi-bin)
else
LAYER_CC := mpicc
endif
