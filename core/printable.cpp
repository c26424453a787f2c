// The one classifier of text bytes (core/printable.hpp).
#include "core/printable.hpp"

#include <cstdio>
#include <utility>

namespace syncplan {

namespace {
bool continuation(unsigned char byte) { return byte >= 0x80 && byte <= 0xBF; }

// The valid range of the second byte of a sequence led by `lead` (RFC 3629 section 4's table): it
// excludes overlong forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
std::pair<unsigned char, unsigned char> second_byte_range(unsigned char lead) {
  switch (lead) {
    case 0xE0: return {0xA0, 0xBF};
    case 0xED: return {0x80, 0x9F};
    case 0xF0: return {0x90, 0xBF};
    case 0xF4: return {0x80, 0x8F};
    default: return {0x80, 0xBF};
  }
}
}  // namespace

TextUnit next_text_unit(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) {
    const bool control = lead < 0x20 || lead == 0x7F;
    return {control ? TextUnit::Kind::kControl : TextUnit::Kind::kPrintable, 1, lead};
  }
  std::size_t length = 0;
  unsigned code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2, code = lead & 0x1Fu;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3, code = lead & 0x0Fu;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4, code = lead & 0x07u;
  else return {TextUnit::Kind::kInvalid, 1, lead};  // 0x80-0xC1 (continuation, overlong lead), 0xF5-0xFF
  const auto [low, high] = second_byte_range(lead);
  for (std::size_t k = 1; k < length; ++k) {
    if (at + k >= text.size()) return {TextUnit::Kind::kIncomplete, text.size() - at, lead};
    const auto byte = static_cast<unsigned char>(text[at + k]);
    const bool fits = k == 1 ? byte >= low && byte <= high : continuation(byte);
    if (!fits) return {TextUnit::Kind::kInvalid, 1, lead};
    code = (code << 6) | (byte & 0x3Fu);
  }
  const bool control = code >= 0x80 && code <= 0x9F;
  return {control ? TextUnit::Kind::kControl : TextUnit::Kind::kPrintable, length, code};
}

std::pair<std::size_t, TextUnit> first_unprintable(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    TextUnit unit = next_text_unit(text, i);
    if (unit.kind == TextUnit::Kind::kIncomplete) unit = {TextUnit::Kind::kInvalid, 1, unit.code};
    if (unit.kind != TextUnit::Kind::kPrintable) return {i, unit};
    i += unit.length;
  }
  return {std::string_view::npos, TextUnit{}};
}

std::string escape_text_unit(const TextUnit& unit, std::string_view unit_text) {
  char code[16];
  switch (unit.kind) {
    case TextUnit::Kind::kPrintable: return std::string(unit_text);
    case TextUnit::Kind::kControl:
      if (unit.code < 0x80) std::snprintf(code, sizeof code, "\\x%02X", unit.code);
      else std::snprintf(code, sizeof code, "\\u%04X", unit.code);
      return code;
    case TextUnit::Kind::kInvalid:
    case TextUnit::Kind::kIncomplete: {
      std::string out;
      for (const char c : unit_text) {
        std::snprintf(code, sizeof code, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
        out += code;
      }
      return out;
    }
  }
  return std::string(unit_text);
}

std::string printable_text(std::string_view text, bool keep_line_breaks) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    TextUnit unit = next_text_unit(text, i);
    if (unit.kind == TextUnit::Kind::kIncomplete) unit = {TextUnit::Kind::kInvalid, 1, unit.code};
    const bool line_break = keep_line_breaks && (text[i] == '\n' || text[i] == '\t');
    if (unit.kind == TextUnit::Kind::kPrintable || line_break) out.append(text.substr(i, unit.length));
    else out += escape_text_unit(unit, text.substr(i, unit.length));
    i += unit.length;
  }
  return out;
}

std::string describe_text_unit(const TextUnit& unit) {
  char code[40];
  if (unit.kind == TextUnit::Kind::kInvalid || unit.kind == TextUnit::Kind::kIncomplete)
    std::snprintf(code, sizeof code, "invalid UTF-8 byte 0x%02X", unit.code);
  else
    std::snprintf(code, sizeof code, "%scharacter U+%04X", unit.kind == TextUnit::Kind::kControl ? "control " : "",
                  unit.code);
  return code;
}

}  // namespace syncplan
