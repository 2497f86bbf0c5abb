# SPDX-License-Identifier: MIT
# Hugging Face tokenizers: the real Llama 3 and Qwen3 tokenizer.json files (../shared/data/tokenizers)
# against Hugging Face's own `tokenizers` and tiktoken, and fsdp-data's files against transformers'
# tokenizer, from the pinned reference environment (scripts/pyenv.sh); without it or the files
# the tests say SKIPPED.
add_executable(tokenize_json data/tokenize_json.cpp)
target_link_libraries(tokenize_json PRIVATE fsdp)
fsdp_add_e2e_test(e2e_hf_tokenizer hf_tokenizer.sh)
fsdp_add_e2e_test(e2e_fsdp_data fsdp_data.sh)
set_property(TEST e2e_fsdp_data PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
set_property(TEST e2e_hf_tokenizer APPEND PROPERTY ENVIRONMENT "TOKENIZE_JSON=$<TARGET_FILE:tokenize_json>")
set_property(TEST e2e_hf_tokenizer PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
