# SPDX-License-Identifier: MIT
fsdp_add_mpi_test(test_engine ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_engine.cpp)
fsdp_add_mpi_test(test_memory ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_memory.cpp)
fsdp_add_mpi_test(test_memory_features ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_memory_features.cpp)
fsdp_add_mpi_test(test_deterministic ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_deterministic.cpp)
fsdp_add_mpi_test(test_nonfinite ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_nonfinite.cpp)
