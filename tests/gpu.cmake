# SPDX-License-Identifier: MIT
# The CUDA/NCCL communicators (only with FSDP_BUILD_CUDA_COMM). test_device_select always runs
# (detector and backend choice, no GPU needed); test_nccl needs a GPU and reports itself
# skipped (exit 77) without one: NCCL at 1 rank, the host-staged MPI path at 2 ranks sharing it.
if(NOT FSDP_BUILD_CUDA_COMM)
  return()
endif()

add_executable(test_device_select ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_device_select.cpp)
target_link_libraries(test_device_select PRIVATE fsdp_mpi_test_main)
add_executable(test_nccl ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_nccl.cpp)
target_link_libraries(test_nccl PRIVATE fsdp Catch2::Catch2)

foreach(np 1 2)
  add_test(NAME test_device_select_np${np}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:test_device_select> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(test_device_select_np${np} PROPERTIES TIMEOUT 120 PROCESSORS ${np}
    LABELS "mpi;gpu-cpu" ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1")
  add_test(NAME test_nccl_np${np}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
            $<TARGET_FILE:test_nccl> ${MPIEXEC_POSTFLAGS})
  # 77: no GPU here; CTest then says "Skipped", not "Failed".
  set_tests_properties(test_nccl_np${np} PROPERTIES TIMEOUT 300 PROCESSORS ${np} LABELS gpu
    SKIP_RETURN_CODE 77 ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1")
endforeach()
