// One self-contained HTML page (no network fetch: the style is inline, SVG figures are inlined,
// no scripts or fonts from outside) made of sections of paragraphs, tables and figures.
#pragma once

#include <string>
#include <vector>

namespace syncplan::report {

/// A table of text cells; every row has as many cells as the header.
struct HtmlTable {
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

/// A figure: an SVG document (as line_plot_svg or gantt_svg write it, starting with "<svg").
struct HtmlFigure {
  std::string caption;
  std::string svg;
};

/// A headed section; its paragraphs, then tables, then figures.
struct HtmlSection {
  std::string heading;
  std::vector<std::string> paragraphs;
  std::vector<HtmlTable> tables;
  std::vector<HtmlFigure> figures;
};

/// A whole page.
struct HtmlPage {
  std::string title;
  std::vector<HtmlSection> sections;
};

/// The page as HTML5 (UTF-8). Text is escaped (xml_escape); figures are inlined as they are.
/// Throws FieldError "tables: ..." naming the table's caption when a row's cell count differs from
/// the header's, "figures: ..." naming the caption when a figure's text does not start with "<svg"
/// or holds a <script> or an http(s) reference (the page must render without a network).
std::string html_page(const HtmlPage& page);

}  // namespace syncplan::report
