# SPDX-License-Identifier: MIT
# docs/data.md's fine-tuning walk-through as written, on a tiny model with the real Qwen3
# tokenizer (../shared/data/tokenizers); SKIPPED without those files.
fsdp_add_e2e_test(e2e_data_walkthrough data_walkthrough.sh)
set_property(TEST e2e_data_walkthrough PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
# The longer tokenizer and data tests: a cost makes CTest start them first (a clean clone has no
# timing data, so it would run them in definition order, last, beside an idle core).
set_tests_properties(e2e_hf_tokenizer e2e_chat_template e2e_fsdp_data e2e_data_walkthrough
                     PROPERTIES COST 1000)
