// SPDX-License-Identifier: MIT
// A stand-in for data/chat_template.hpp until its implementation (branch chat) is merged: every
// template is refused, so a chat line fails with one line naming it. Removed at that merge.
#include "data/chat_template.hpp"

namespace fsdp {

struct ChatTemplate::Program {};

ChatTemplate::ChatTemplate(std::unique_ptr<Program> p) : program_(std::move(p)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

ChatTemplate ChatTemplate::parse(const std::string&, const std::string& where) {
  throw DataError(where + ": chat_template: chat templates are not in this build yet");
}
ChatTemplate ChatTemplate::load(const std::string& dir) {
  throw DataError(dir + ": chat_template: chat templates are not in this build yet");
}
std::vector<ChatSegment> ChatTemplate::render(const nlohmann::json&, const ChatVariables&) const {
  return {};
}
std::string ChatTemplate::render_text(const nlohmann::json&, const ChatVariables&) const {
  return {};
}

}  // namespace fsdp
