// SPDX-License-Identifier: MIT
// Hugging Face's tokenizers compile split patterns with Oniguruma; PCRE2 reads the same syntax
// but gives a few escapes other classes. This rewrites those to Oniguruma's Unicode meaning and
// refuses the constructs whose meaning would differ in ways a rewrite cannot fix.
#pragma once
#include <string>

namespace fsdp {

// The PCRE2 pattern that matches what Oniguruma's `onig` matches:
//   \s, \S  -> \p{White_Space}, \P{White_Space} (PCRE2's \s also takes U+180E)
//   \w, \W  -> letters, marks, numbers, connector punctuation (PCRE2's \w lacks the marks)
// and DataError "<where>: ..." for \b, \B, \h, \H, ^, $, \W inside [...] and nested classes.
std::string pcre2_from_oniguruma(const std::string& pattern, const std::string& where);

}  // namespace fsdp
