# SPDX-License-Identifier: MIT
# The communication layer's multi-rank tests (np 1..4).
fsdp_add_mpi_test(test_comm ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_comm.cpp)
