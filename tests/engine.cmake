# SPDX-License-Identifier: MIT
fsdp_add_mpi_test(test_engine ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_engine.cpp)
fsdp_add_mpi_test(test_memory ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_memory.cpp)
fsdp_add_mpi_test(test_memory_features ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_memory_features.cpp)
fsdp_add_mpi_test(test_deterministic ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_deterministic.cpp)
fsdp_add_mpi_test(test_nonfinite ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_nonfinite.cpp)
fsdp_add_mpi_test(test_mixed_precision ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mixed_precision.cpp)
target_compile_definitions(test_mixed_precision PRIVATE FSDP_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
