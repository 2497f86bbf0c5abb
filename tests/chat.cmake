# SPDX-License-Identifier: MIT
# Chat templates: fsdp::ChatTemplate (chat_render) and fsdp-data prepare's chats, tools
# included, against transformers' own apply_chat_template on the real Llama 3 and Qwen3
# templates (tests/reference/chat_render.py, run by the pinned reference environment). Without
# that environment or the real tokenizer files the test says SKIPPED.
add_executable(chat_render tools/chat_render.cpp)
target_link_libraries(chat_render PRIVATE fsdp_text)
fsdp_add_e2e_test(e2e_chat_template chat_template.sh)
set_property(TEST e2e_chat_template APPEND PROPERTY ENVIRONMENT "CHAT_RENDER=$<TARGET_FILE:chat_render>")
set_property(TEST e2e_chat_template PROPERTY SKIP_REGULAR_EXPRESSION "SKIPPED: ")
