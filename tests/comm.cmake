# SPDX-License-Identifier: MIT
# The communication layer's multi-rank tests (np 1..4).
fsdp_add_mpi_test(test_comm ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_comm.cpp)

# fsdp-bench comm counts wrong elements on an exact integer pattern and exits non-zero on any:
# every path (staged, single-copy, streaming, the MPI fallback) at np 2 and 3, with the
# iteration count sized from the warm-up as by default.
foreach(np 2 3)
  add_test(NAME bench_comm_np${np}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:fsdp-bench> comm --min-bytes 1K --max-bytes 8M --factor 8
            --min-time 0.002 --warmup 2 --fallback)
  set_tests_properties(bench_comm_np${np} PROPERTIES TIMEOUT 120 PROCESSORS 2 LABELS mpi
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endforeach()
