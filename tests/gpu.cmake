# SPDX-License-Identifier: MIT
# What nvcc refuses and g++ accepts, checked everywhere in about a second (tests/nvcc_rules.py:
# device lambdas in private members, constructors, generic lambdas...), on the sources and on a
# fixture of bad cases that must all be reported (the check can fail).
find_program(FSDP_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME nvcc_rules COMMAND ${FSDP_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/nvcc_rules.py
  ${PROJECT_SOURCE_DIR})
add_test(NAME nvcc_rules_self_test COMMAND ${FSDP_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/nvcc_rules.py
  --self-test ${PROJECT_SOURCE_DIR}/tests/nvcc_rules/bad_lambdas.cpp)
set_tests_properties(nvcc_rules nvcc_rules_self_test PROPERTIES TIMEOUT 60 LABELS lint)

# The GPU build compiles (tests/gpu_build.sh): incrementally, in a persistent folder outside the
# clone, against the CUDA Kokkos of scripts/cuda_kokkos.sh; SKIPPED where there is none. Seconds
# when nothing changed, ~30 s for a changed source, ~22 min the first time (docs/testing.md).
# Two compiles at a time: it takes both slots of the suite's -j2 while it runs.
if(NOT FSDP_ENABLE_CUDA)  # a GPU build is this check's product, not its runner
  add_test(NAME gpu_build_compiles COMMAND bash ${PROJECT_SOURCE_DIR}/tests/gpu_build.sh
    ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(gpu_build_compiles PROPERTIES TIMEOUT 3600 PROCESSORS 2
    RESOURCE_LOCK fsdp_gpu_build SKIP_REGULAR_EXPRESSION "SKIPPED: " LABELS gpu-build)
endif()

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
