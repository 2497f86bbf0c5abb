// SPDX-License-Identifier: MIT
#include "data/normalizer.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "data/data_error.hpp"

namespace fsdp {
namespace {

int form_of(const std::string& type) {
  const int stable = UTF8PROC_STABLE;
  if (type == "NFC") return stable | UTF8PROC_COMPOSE;
  if (type == "NFD") return stable | UTF8PROC_DECOMPOSE;
  if (type == "NFKC") return stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
  if (type == "NFKD") return stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
  return 0;
}

void add_forms(const JsonAt& node, std::vector<int>& forms) {
  const std::string type = node.string("type");
  if (type == "Sequence") {
    const JsonAt steps = node.at("normalizers");
    for (std::size_t i = 0; i < steps.array_size(); ++i) add_forms(steps.at(i), forms);
    return;
  }
  const int form = form_of(type);
  if (form == 0)
    node.at("type").fail("\"" + type +
                         "\" is not supported (only NFC, NFD, NFKC, NFKD and a Sequence of them)");
  forms.push_back(form);
}

struct Free {
  void operator()(utf8proc_uint8_t* p) const { std::free(p); }
};

}  // namespace

Normalizer Normalizer::from_json(const JsonAt& node) {
  Normalizer n;
  if (!node.is_null()) add_forms(node, n.forms_);
  return n;
}

std::string_view Normalizer::apply(std::string_view text, std::string& scratch) const {
  if (forms_.empty()) return text;
  // ASCII is unchanged by every normalization form: most text skips utf8proc entirely.
  bool ascii = true;
  for (char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return text;
  scratch.assign(text);
  for (int form : forms_) {
    utf8proc_uint8_t* raw = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(scratch.data()),
                     utf8proc_ssize_t(scratch.size()), &raw, utf8proc_option_t(form));
    std::unique_ptr<utf8proc_uint8_t, Free> out(raw);
    if (n < 0) throw DataError(std::string("normalizing a text: utf8proc: ") + utf8proc_errmsg(n));
    scratch.assign(reinterpret_cast<const char*>(out.get()), std::size_t(n));
  }
  return scratch;
}

}  // namespace fsdp
