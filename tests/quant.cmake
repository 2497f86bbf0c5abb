# SPDX-License-Identifier: MIT
# Quantised storage: fsdp's NF4 codec (model/gemm/nf4.hpp) byte for byte against bitsandbytes'
# quantize_4bit / dequantize_4bit on this CPU (tests/reference/nf4_check.py, run by the pinned
# reference environment). Without that environment the test says SKIPPED.
add_executable(nf4_codec tools/nf4_codec.cpp)
target_link_libraries(nf4_codec PRIVATE fsdp)
fsdp_add_e2e_test(e2e_nf4_reference nf4_reference.sh)
set_property(TEST e2e_nf4_reference APPEND PROPERTY ENVIRONMENT "NF4_CODEC=$<TARGET_FILE:nf4_codec>")
set_property(TEST e2e_nf4_reference PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
