// XML escaping and number formatting for the report's SVG and HTML writers.
#include "report/svg_text.hpp"

#include "core/printable.hpp"

#include <cmath>
#include <cstdio>

namespace syncplan::report {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const TextUnit unit = next_text_unit(text, i);
    const char ch = text[i];
    if (unit.kind == TextUnit::Kind::kPrintable || ch == '\t' || ch == '\n') {
      switch (ch) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out.append(text.substr(i, unit.length));
      }
    } else {
      // U+FFFD for a control character (XML 1.0 cannot write C0 ones; C1 ones act on terminals
      // that show the file) and for a byte that is not UTF-8 (a path's 0x9B made the page invalid
      // UTF-8 under its charset; the helper's re-check), as JSON outputs write them.
      out += "\xEF\xBF\xBD";
    }
    i += unit.length;
  }
  return out;
}

std::string svg_coordinate(double value) {
  if (std::fabs(value) < 0.005) value = 0;  // no "-0"
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", value);
  std::string out = text;
  out.erase(out.find_last_not_of('0') + 1);
  if (out.back() == '.') out.pop_back();
  return out;
}

std::string exact_number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string tick_label(double value) {
  if (std::fabs(value) < 1e-300) value = 0;
  // From 10,000 up, a metric suffix keeps labels short enough for an axis: 20k, 1.6M.
  const char* suffix = "";
  for (const auto& [scale, name] : {std::pair{1e12, "T"}, std::pair{1e9, "G"}, std::pair{1e6, "M"}, std::pair{1e3, "k"}})
    if (std::fabs(value) >= 10 * scale || (scale > 1e3 && std::fabs(value) >= scale)) {
      value /= scale;
      suffix = name;
      break;
    }
  char text[64];
  std::snprintf(text, sizeof text, "%g%s", value, suffix);
  return text;
}

}  // namespace syncplan::report
