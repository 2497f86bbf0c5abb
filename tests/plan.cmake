# SPDX-License-Identifier: MIT
# The planner: its unit tests (tests/unit/test_plan.cpp) join the serial binary by the glob in
# tests/CMakeLists.txt; the comparison with the memory tracker of real runs is an MPI test.
fsdp_add_mpi_test(test_plan_vs_tracker ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_plan_vs_tracker.cpp)
fsdp_add_e2e_test(e2e_plan_golden plan_golden.sh)
