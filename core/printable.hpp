// What may reach a terminal, a message or a JSON string as it is: the one classifier of text bytes
// behind escaped messages, the printable-name checks and the standard-output filter.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace syncplan {

/// One unit of text read from a byte string: a whole UTF-8 sequence, or one byte that is not part of
/// one. UTF-8 as RFC 3629 section 4 defines it: no overlong forms, no surrogates, nothing past U+10FFFF.
struct TextUnit {
  enum class Kind {
    kPrintable,   ///< a character a terminal shows: `length` bytes, 1-4
    kControl,     ///< C0 (U+0000-U+001F), DEL (U+007F) or C1 (U+0080-U+009F, bytes 0xC2 0x80-0x9F)
    kInvalid,     ///< one byte that starts no valid sequence here (e.g. a lone 0x9B); `length` is 1
    kIncomplete,  ///< the text ends inside a valid sequence's prefix; `length` is the bytes left
  };
  Kind kind = Kind::kPrintable;
  std::size_t length = 1;  ///< bytes of the unit, >= 1
  unsigned code = 0;       ///< the code point (printable, control) or the byte (invalid, incomplete)
};

/// Reads the unit of `text` that starts at byte `at` (at < text.size()); throws nothing.
TextUnit next_text_unit(std::string_view text, std::size_t at);

/// The byte offset and unit of the first control character or non-UTF-8 byte of `text` (an
/// incomplete sequence at the end counts as its first byte, kind kInvalid); offset npos when none.
std::pair<std::size_t, TextUnit> first_unprintable(std::string_view text);

/// `text` with every control character and non-UTF-8 byte written as an escape: C0 and DEL as
/// `\xNN`, C1 as `\u00NN`, a byte that is not UTF-8 as `\xNN`. With `keep_line_breaks`, newline and
/// tab stay as they are (the standard-output filter); otherwise they are escaped too (one-line
/// messages). Everything else, multi-byte characters included, is copied unchanged.
std::string printable_text(std::string_view text, bool keep_line_breaks);

/// The escape `printable_text` writes for a unit that is not printable (a control character or a
/// non-UTF-8 byte); the unit itself when it is printable. `unit_text` is the unit's bytes.
std::string escape_text_unit(const TextUnit& unit, std::string_view unit_text);

/// How a unit is named in messages: "control character U+NNNN" for a control character, "invalid
/// UTF-8 byte 0xNN" for a byte that is not UTF-8, "character U+NNNN" for a printable one.
std::string describe_text_unit(const TextUnit& unit);

}  // namespace syncplan
