# SPDX-License-Identifier: MIT
# Quantised storage: fsdp's NF4 codec (model/gemm/nf4.hpp) byte for byte against bitsandbytes'
# quantize_4bit / dequantize_4bit on this CPU (tests/reference/nf4_check.py, run by the pinned
# reference environment). Without that environment the test says SKIPPED.
add_executable(nf4_codec tools/nf4_codec.cpp)
target_link_libraries(nf4_codec PRIVATE fsdp)
fsdp_add_e2e_test(e2e_nf4_reference nf4_reference.sh)
set_property(TEST e2e_nf4_reference APPEND PROPERTY ENVIRONMENT "NF4_CODEC=$<TARGET_FILE:nf4_codec>")
set_property(TEST e2e_nf4_reference PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
# LoRA on a frozen base (docs/lora.md): every strategy, the frozen base's bits, resume at another
# N, --init-from, bad settings; and against PEFT and transformers (SKIPPED without them).
fsdp_add_e2e_test(e2e_lora lora.sh)
fsdp_add_e2e_test(e2e_lora_peft lora_peft.sh)
set_property(TEST e2e_lora_peft PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
