// Text pieces shared by the report's SVG and HTML writers: XML escaping and number formatting.
#pragma once

#include <string>
#include <string_view>

namespace syncplan::report {

/// `text` with &, <, >, " and ' replaced by their XML entities, and control characters other than
/// tab and newline (C0 ones are not allowed in XML 1.0; C1 ones too, here) and bytes that are not
/// UTF-8 (a path may hold any byte) by U+FFFD (core/printable.hpp's classes), so that any layer or
/// series name or path is safe in element text and in attribute values of SVG and HTML.
std::string xml_escape(std::string_view text);

/// A coordinate in SVG user units (pixels) with at most 2 decimals, trailing zeros removed: "12.5".
std::string svg_coordinate(double value);

/// A value for a data attribute: shortest round-trip decimal (17 significant digits, %.17g), so
/// that a reader of the SVG gets back the exact double the chart was drawn from.
std::string exact_number(double value);

/// A tick label: up to 6 significant digits (%g), e.g. "0.005", "1000"; from 10,000 up with a
/// metric suffix (k, M, G, T: "20k", "1.6M", "100M"), so that labels fit beside an axis.
std::string tick_label(double value);

}  // namespace syncplan::report
