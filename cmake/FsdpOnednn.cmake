# SPDX-License-Identifier: MIT
# oneDNN for the CPU build's bf16 GEMMs (src/model/gemm/onednn_matmul.hpp), included once the `fsdp`
# target exists.
#   FSDP_ONEDNN  AUTO (use it where found), ON (fail without it), OFF.
# Found by header and library rather than by dnnl-config.cmake: Debian's config requires
# OpenCL's development files for a GPU runtime the CPU path never uses. A site install is found
# through dnnl_ROOT or CMAKE_PREFIX_PATH. A GPU build runs its bf16 GEMMs on cuBLAS and skips it.
set(FSDP_ONEDNN AUTO CACHE STRING "oneDNN for bf16 GEMMs on CPUs: AUTO, ON or OFF")
set_property(CACHE FSDP_ONEDNN PROPERTY STRINGS AUTO ON OFF)

set(FSDP_HAVE_ONEDNN OFF)
if(NOT FSDP_ONEDNN STREQUAL "OFF" AND NOT FSDP_ENABLE_CUDA)
  find_path(FSDP_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ${dnnl_ROOT} ENV dnnl_ROOT
            PATH_SUFFIXES include)
  find_library(FSDP_DNNL_LIBRARY NAMES dnnl HINTS ${dnnl_ROOT} ENV dnnl_ROOT PATH_SUFFIXES lib lib64)
  find_package(OpenMP COMPONENTS CXX)
  if(FSDP_DNNL_INCLUDE_DIR AND FSDP_DNNL_LIBRARY AND OpenMP_CXX_FOUND)
    set(FSDP_HAVE_ONEDNN ON)
  elseif(FSDP_ONEDNN STREQUAL "ON")
    message(FATAL_ERROR "FSDP_ONEDNN=ON but oneDNN was not found (header oneapi/dnnl/dnnl.hpp: "
      "${FSDP_DNNL_INCLUDE_DIR}, library dnnl: ${FSDP_DNNL_LIBRARY}, OpenMP: ${OpenMP_CXX_FOUND}); "
      "apt-get install libdnnl-dev, or pass -Ddnnl_ROOT=<prefix>")
  endif()
endif()

if(FSDP_HAVE_ONEDNN)
  message(STATUS "fsdp: oneDNN ${FSDP_DNNL_LIBRARY}: bf16 GEMMs on CPUs with bf16 kernels")
  target_compile_definitions(fsdp PRIVATE FSDP_HAVE_ONEDNN=1)
  target_include_directories(fsdp SYSTEM PRIVATE ${FSDP_DNNL_INCLUDE_DIR})
  # Only the oneDNN wrapper includes omp.h; the rest of the library keeps its flags (and bits).
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/model/gemm/onednn_matmul.cpp PROPERTIES
    COMPILE_OPTIONS "${OpenMP_CXX_FLAGS}")
  target_link_libraries(fsdp PRIVATE ${FSDP_DNNL_LIBRARY} ${OpenMP_CXX_LIBRARIES})
elseif(NOT FSDP_ENABLE_CUDA)
  message(STATUS "fsdp: no oneDNN: bf16 GEMMs on CPUs widen to fp32 (apt-get install libdnnl-dev)")
endif()
