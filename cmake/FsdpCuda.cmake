# SPDX-License-Identifier: MIT
# The GPU side of the build, included once the `fsdp` target exists.
#   FSDP_ENABLE_CUDA      the compute runs on GPUs: needs a Kokkos built with CUDA (ON by default
#                         exactly when the Kokkos found has it); implies FSDP_BUILD_CUDA_COMM.
#   FSDP_BUILD_CUDA_COMM  compile the NCCL / CUDA communicators (src/comm/cuda/*.cu) into the
#                         object library `fsdp_cuda_comm`, linked into `fsdp`. Needs the CUDA
#                         toolkit and NCCL, not a GPU, and not a CUDA Kokkos: with a host-only
#                         Kokkos the sources are compiled by nvcc (CMake's CUDA language).
# Kokkos' variables are read here, never set.

set(_fsdp_kokkos_cuda OFF)
if(Kokkos_ENABLE_CUDA OR "CUDA" IN_LIST Kokkos_DEVICES)
  set(_fsdp_kokkos_cuda ON)
endif()
option(FSDP_ENABLE_CUDA "Build for GPUs (needs a Kokkos with the CUDA backend)" ${_fsdp_kokkos_cuda})
option(FSDP_BUILD_CUDA_COMM "Build the NCCL/CUDA communicators (needs CUDA and NCCL, not a GPU)" OFF)

if(FSDP_ENABLE_CUDA)
  if(NOT _fsdp_kokkos_cuda)
    message(FATAL_ERROR "FSDP_ENABLE_CUDA=ON needs a Kokkos built with CUDA, but the Kokkos found "
      "(${Kokkos_DIR}) has devices '${Kokkos_DEVICES}'. Point CMAKE_PREFIX_PATH or Kokkos_ROOT at "
      "a Kokkos 4 with Kokkos_ENABLE_CUDA=ON (docs/gpu.md), or configure with FSDP_ENABLE_CUDA=OFF.")
  endif()
  if(NOT FSDP_BUILD_CUDA_COMM)
    message(STATUS "fsdp: FSDP_ENABLE_CUDA=ON turns FSDP_BUILD_CUDA_COMM on")
    set(FSDP_BUILD_CUDA_COMM ON CACHE BOOL "Build the NCCL/CUDA communicators" FORCE)
  endif()
  target_compile_definitions(fsdp PUBLIC FSDP_ENABLE_CUDA=1)
  # Sources that hold no Kokkos and no kernels go to the host compiler: nvcc's front end
  # rejects toml++ 3.x (an internal '__T0' in table.h's visitor), and g++ is faster anyway.
  # nvcc_wrapper's --host-only does exactly that; other CUDA compilers (clang) take them as is.
  if(CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper")
    set_source_files_properties(${PROJECT_SOURCE_DIR}/src/config/load_config.cpp
      PROPERTIES COMPILE_OPTIONS --host-only)
  endif()
endif()

if(NOT FSDP_BUILD_CUDA_COMM)
  return()
endif()

# The language the communicator sources are compiled as. With a CUDA Kokkos they follow
# Kokkos (its CXX compiler is nvcc_wrapper or clang, or it compiles as CMake's CUDA language);
# with a host-only Kokkos they need nvcc. They hold no kernels: CXX with g++ works as well.
if(_fsdp_kokkos_cuda AND DEFINED Kokkos_COMPILE_LANGUAGE)
  set(_fsdp_comm_lang_default ${Kokkos_COMPILE_LANGUAGE})
elseif(_fsdp_kokkos_cuda)
  set(_fsdp_comm_lang_default CXX)
else()
  set(_fsdp_comm_lang_default CUDA)
endif()
set(FSDP_CUDA_COMM_LANGUAGE ${_fsdp_comm_lang_default} CACHE STRING
  "Language the src/comm/cuda sources are compiled as: CUDA (nvcc) or CXX")
set_property(CACHE FSDP_CUDA_COMM_LANGUAGE PROPERTY STRINGS CUDA CXX)

if(FSDP_CUDA_COMM_LANGUAGE STREQUAL "CUDA")
  # `native` and CMake's own default both need a GPU or guess old ones: name them.
  # 80 = A100, 90 = H100/H200.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures for the CUDA sources")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "FSDP_BUILD_CUDA_COMM=ON but CMake found no CUDA compiler: pass "
      "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc (or the module's nvcc).")
  endif()
  enable_language(CUDA)
  # fsdp predates the language: it takes the architectures now (its link pulls CUDA objects).
  set_target_properties(fsdp PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()

find_package(CUDAToolkit REQUIRED)
find_path(FSDP_NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME ENV NCCL_ROOT PATH_SUFFIXES include)
find_library(FSDP_NCCL_LIBRARY nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME ENV NCCL_ROOT PATH_SUFFIXES lib lib64)
if(NOT FSDP_NCCL_INCLUDE_DIR OR NOT FSDP_NCCL_LIBRARY)
  message(FATAL_ERROR "FSDP_BUILD_CUDA_COMM=ON but NCCL was not found (nccl.h: "
    "${FSDP_NCCL_INCLUDE_DIR}, libnccl: ${FSDP_NCCL_LIBRARY}); set NCCL_HOME to its prefix.")
endif()
if(NOT TARGET fsdp_nccl)
  add_library(fsdp_nccl UNKNOWN IMPORTED)
  set_target_properties(fsdp_nccl PROPERTIES IMPORTED_LOCATION "${FSDP_NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${FSDP_NCCL_INCLUDE_DIR}")
endif()

# One translation unit, generated here, that includes every src/comm/cuda/*.cu: they share
# heavy headers (Kokkos, through communicator.hpp) and hold no device code, so the unit is
# wrapped in !__CUDA_ARCH__ and nvcc's per-architecture device passes skip it. This keeps the
# CUDA part of the build to ~5 s of CPU (seven files, each through cudafe++, cicc twice and
# g++, took ~26 s). CMake's own UNITY_BUILD ignores CUDA before 3.31. A source that adds a
# kernel must be compiled on its own, outside this unit.
file(GLOB FSDP_CUDA_COMM_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/comm/cuda/*.cu)
set(_fsdp_unity "// Generated by cmake/FsdpCuda.cmake: src/comm/cuda/*.cu as one translation unit.\n")
string(APPEND _fsdp_unity "#if !defined(__CUDA_ARCH__)  // host code only\n")
foreach(_src ${FSDP_CUDA_COMM_SOURCES})
  string(APPEND _fsdp_unity "#include \"${_src}\"\n")
endforeach()
string(APPEND _fsdp_unity "#endif\n")
if(FSDP_CUDA_COMM_LANGUAGE STREQUAL "CUDA")
  set(_fsdp_unity_file ${CMAKE_CURRENT_BINARY_DIR}/fsdp_cuda_comm_unity.cu)
else()
  set(_fsdp_unity_file ${CMAKE_CURRENT_BINARY_DIR}/fsdp_cuda_comm_unity.cpp)
endif()
file(CONFIGURE OUTPUT ${_fsdp_unity_file} CONTENT "${_fsdp_unity}")  # rewritten only on change
set_source_files_properties(${FSDP_CUDA_COMM_SOURCES} PROPERTIES HEADER_FILE_ONLY ON)
set_source_files_properties(${_fsdp_unity_file} PROPERTIES LANGUAGE ${FSDP_CUDA_COMM_LANGUAGE})
# An object library: its objects go into libfsdp, so there is one library to link and no cycle
# (these sources use the Communicator base and fsdp::fatal from fsdp).
add_library(fsdp_cuda_comm OBJECT ${_fsdp_unity_file} ${FSDP_CUDA_COMM_SOURCES})
# fsdp's own usage requirements, minus its CPU tuning flags (-march means nothing to nvcc).
target_include_directories(fsdp_cuda_comm PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(fsdp_cuda_comm PRIVATE OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)
target_link_libraries(fsdp_cuda_comm PUBLIC MPI::MPI_CXX Kokkos::kokkos CUDA::cudart fsdp_nccl)
if(FSDP_CUDA_COMM_LANGUAGE STREQUAL "CUDA")
  target_compile_options(fsdp_cuda_comm PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
else()
  target_compile_options(fsdp_cuda_comm PRIVATE -Wall -Wextra)
endif()
target_link_libraries(fsdp PUBLIC fsdp_cuda_comm)
if(FSDP_ENABLE_CUDA)
  target_link_libraries(fsdp PUBLIC CUDA::cublas)  # the GEMMs (src/model/gemm/cublas_gemm.hpp)
endif()
# Code that may call the device communicators (comm/cuda/device_select.hpp) checks this.
target_compile_definitions(fsdp PUBLIC FSDP_HAVE_CUDA_COMM=1)
message(STATUS "fsdp: CUDA communicators compiled as ${FSDP_CUDA_COMM_LANGUAGE}, "
  "CUDA ${CUDAToolkit_VERSION}, NCCL ${FSDP_NCCL_LIBRARY}")
