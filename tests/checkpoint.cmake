# SPDX-License-Identifier: MIT
# Checkpoints: the multi-rank round trip, bit-for-bit resume and resharding tests, and the
# end-to-end script (kill mid-write, damaged files, resharding between jobs, fsdp-ckpt).
fsdp_add_mpi_test(test_checkpoint ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_checkpoint.cpp)
target_include_directories(test_checkpoint PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint)

add_executable(ckpt_tamper ${CMAKE_CURRENT_SOURCE_DIR}/checkpoint/ckpt_tamper.cpp)
target_link_libraries(ckpt_tamper PRIVATE fsdp)

fsdp_add_e2e_test(e2e_checkpoint checkpoint.sh)
set_property(TEST e2e_checkpoint APPEND PROPERTY ENVIRONMENT "CKPT_TAMPER=$<TARGET_FILE:ckpt_tamper>")
