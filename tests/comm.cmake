# SPDX-License-Identifier: MIT
# The communication layer's multi-rank tests (np 1..4).
fsdp_add_mpi_test(test_comm ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_comm.cpp)
fsdp_add_mpi_test(test_all_to_all_v ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_all_to_all_v.cpp)

# Bad all-to-all-v arguments end the job with one line naming the problem, never a corrupted
# buffer or a hang: each hidden case runs at 2 ranks and must print its line (the exit status is
# MPI_Abort's, so the line is what is checked). No ';' or brackets in a line: they would
# change how the list splits ('.' stands for them).
set(_a2a_errors
  "negative|send count for rank 1 is negative: -1"
  "range|recv block for rank 1 .3, 5. is outside the recv buffer of 4 elements"
  "overlap|recv blocks for ranks 0 .0, 4. and 1 .2, 6. overlap"
  "bf16_odd|send block for rank 0 has count 3 at 0.*so both must be even"
  "mismatch_shm|rank 0 sends rank 1 12 bytes but rank 1 expects 8"
  "mismatch_mpi|rank 0 sends rank 1 more than the 8 bytes it expects"
  "mismatch_checked|rank 0 sends rank 1 2 elements but rank 1 expects 3")
foreach(entry ${_a2a_errors})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 tag)
  list(GET parts 1 line)
  add_test(NAME test_all_to_all_v_error_${tag}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:test_all_to_all_v> ${MPIEXEC_POSTFLAGS} "[${tag}]")
  set_tests_properties(test_all_to_all_v_error_${tag} PROPERTIES TIMEOUT 60 PROCESSORS 2
    LABELS mpi PASS_REGULAR_EXPRESSION "comm::all_to_all_v[^\n]*${line}"
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endforeach()

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
