#include "common/utf8.h"

namespace novaserve::utf8 {

int sequence_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b < 0xC2) return 0;  // continuation byte, or the always-overlong leads C0/C1
  if (b < 0xE0) return 2;
  if (b < 0xF0) return 3;
  if (b < 0xF5) return 4;
  return 0;
}

Step next(std::string_view s) {
  const auto lead = static_cast<uint8_t>(s[0]);
  const int need = sequence_length(lead);
  if (need == 1) return {Step::kComplete, 1};
  if (need == 0) return {Step::kInvalid, 1};
  // Table 3-7: only the second byte has a lead-dependent range; later ones are 80..BF.
  uint8_t lo = 0x80, hi = 0xBF;
  if (lead == 0xE0)
    lo = 0xA0;  // excludes overlong 3-byte forms
  else if (lead == 0xED)
    hi = 0x9F;  // excludes surrogates D800..DFFF
  else if (lead == 0xF0)
    lo = 0x90;  // excludes overlong 4-byte forms
  else if (lead == 0xF4)
    hi = 0x8F;  // excludes code points above U+10FFFF
  for (int i = 1; i < need; ++i) {
    if (static_cast<size_t>(i) >= s.size()) return {Step::kIncomplete, s.size()};
    const auto b = static_cast<uint8_t>(s[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {Step::kInvalid, static_cast<size_t>(i)};
  }
  return {Step::kComplete, static_cast<size_t>(need)};
}

bool is_valid(std::string_view s) {
  while (!s.empty()) {
    const Step st = next(s);
    if (st.kind != Step::kComplete) return false;
    s.remove_prefix(st.length);
  }
  return true;
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const Step st = next(s);
    if (st.kind == Step::kComplete) {
      out.append(s.substr(0, st.length));
    } else {
      out.append(kReplacement);
    }
    s.remove_prefix(st.length);
  }
  return out;
}

void append_codepoint(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t decode(std::string_view s, size_t length) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (length == 1) return b0;
  uint32_t cp = b0 & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[i]) & 0x3F);
  return cp;
}

}  // namespace novaserve::utf8
