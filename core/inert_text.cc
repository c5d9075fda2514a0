#include "core/inert_text.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace metasrv::core {
namespace {

// Whether the two-byte sequence at `text[i]` is a C1 control.
bool IsC1(absl::string_view text, size_t i) {
  return static_cast<unsigned char>(text[i]) == 0xC2 &&
         static_cast<unsigned char>(text[i + 1]) < 0xA0;
}

}  // namespace

size_t Utf8SequenceAt(absl::string_view text, size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  int extra = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    extra = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    extra = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    extra = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + extra >= text.size()) return 0;  // Cut short.
  for (int k = 1; k <= extra; ++k) {
    const unsigned char n = static_cast<unsigned char>(text[i + k]);
    if ((n & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (n & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;  // Overlong, past Unicode, or a surrogate.
  }
  return extra + 1;
}

bool IsValidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceAt(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void AppendInert(absl::string_view text, bool json, std::string* out) {
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = Utf8SequenceAt(text, i);
    if (n > 2 || (n == 2 && !IsC1(text, i))) {
      // Well-formed UTF-8 beyond ASCII and the C1 controls: as it is.
      out->append(text.data() + i, n);
      i += n;
      continue;
    }
    if (n == 2) {  // A C1 control (U+0080..U+009F): a terminal obeys some.
      const unsigned char next = static_cast<unsigned char>(text[i + 1]);
      absl::StrAppendFormat(out, "\\u%04x", (c & 0x1F) << 6 | (next & 0x3F));
      i += 2;
      continue;
    }
    ++i;
    if (json && c == '"') {
      out->append("\\\"");
    } else if (json && c == '\\') {
      out->append("\\\\");
    } else if (json && c == '\n') {
      out->append("\\n");
    } else if (json && c == '\t') {
      out->append("\\t");
    } else if (n == 1 && c >= 0x20 && c != 0x7f) {
      out->push_back(static_cast<char>(c));
    } else if (json) {
      // A control byte, DEL, or a byte of broken UTF-8: as the code point of
      // its value, so the line stays valid JSON.
      absl::StrAppendFormat(out, "\\u%04x", c);
    } else {
      // No byte can end the line or move the terminal's cursor.
      absl::StrAppendFormat(out, "\\x%02x", c);
    }
  }
}

std::string Inert(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendInert(text, /*json=*/false, &out);
  return out;
}

}  // namespace metasrv::core
