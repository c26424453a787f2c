// The self-contained HTML page writer (report/html.hpp).
#include "report/html.hpp"

#include "core/field_error.hpp"
#include "report/svg_text.hpp"

#include <sstream>
#include <string>

namespace syncplan::report {

namespace {

// The page's whole style: inline, no web fonts.
constexpr const char* kPageStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:28px}"
    "table{border-collapse:collapse;margin:8px 0 16px}caption{text-align:left;font-weight:bold;padding:4px 0}"
    "th,td{border:1px solid #bbb;padding:3px 8px;text-align:left;font-size:13px}"
    "th{background:#eef}tr:nth-child(even) td{background:#f7f7f7}"
    "figure{margin:12px 0}figcaption{font-size:13px;color:#444;margin-top:4px}svg{max-width:100%;height:auto}";

// The parts of an SVG document that can fetch or run anything: its tags (attributes) and the
// content of <style> and <script> elements. Text content (a layer's name in a <text>, escaped) is
// left out: a name holding "url(http" is text, not a reference (such names once made report
// --html and whatif --html refuse valid input).
std::string svg_markup(const std::string& svg) {
  std::string markup;
  bool in_tag = false;
  std::size_t i = 0;
  while (i < svg.size()) {
    if (!in_tag && svg[i] == '<') {
      in_tag = true;
      // <style> and <script> bodies count as markup up to their closing tag.
      for (const char* element : {"<style", "<script"}) {
        if (svg.compare(i, std::char_traits<char>::length(element), element) == 0) {
          const std::string closing = std::string("</") + (element + 1);
          const std::size_t end = svg.find(closing, i);
          const std::size_t stop = end == std::string::npos ? svg.size() : end;
          markup.append(svg, i, stop - i);
          i = stop;
          break;
        }
      }
      if (i >= svg.size()) break;
    }
    // A data-* attribute's value is data for scripts, never fetched or styled: a name there (the
    // Gantt's data-label) is left out as text is (the helper's new-user check: a layer named
    // "url(http" in a bar's data-label made report --html refuse a valid plan).
    if (in_tag && svg.compare(i, 6, " data-") == 0) {
      const std::size_t open = svg.find("=\"", i);
      const std::size_t tag_end = svg.find('>', i);
      if (open != std::string::npos && open < tag_end) {
        const std::size_t close = svg.find('"', open + 2);
        if (close != std::string::npos) {
          markup.append(svg, i, open + 2 - i);
          i = close;  // the closing quote is copied below
        }
      }
    }
    if (in_tag) markup.push_back(svg[i]);
    if (in_tag && svg[i] == '>') in_tag = false;
    ++i;
  }
  return markup;
}

void check_figure(const HtmlFigure& figure) {
  const std::size_t first = figure.svg.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || figure.svg.compare(first, 4, "<svg") != 0)
    throw FieldError("figures", "figures: figure '" + figure.caption + "' is not an SVG document (it must start with <svg)");
  const std::string markup = svg_markup(figure.svg);
  for (const char* forbidden : {"<script", "href=\"http", "href=\"//", "url(http"})
    if (markup.find(forbidden) != std::string::npos)
      throw FieldError("figures", "figures: figure '" + figure.caption + "' holds '" + forbidden +
                                      "' in its markup (the page must render without a network)");
}

}  // namespace

std::string html_page(const HtmlPage& page) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << xml_escape(page.title)
       << "</title>\n<style>" << kPageStyle << "</style>\n</head>\n<body>\n<h1>" << xml_escape(page.title) << "</h1>\n";
  for (const HtmlSection& section : page.sections) {
    html << "<section>\n";
    if (!section.heading.empty()) html << "<h2>" << xml_escape(section.heading) << "</h2>\n";
    for (const std::string& paragraph : section.paragraphs) html << "<p>" << xml_escape(paragraph) << "</p>\n";
    for (const HtmlTable& table : section.tables) {
      html << "<table>\n";
      if (!table.caption.empty()) html << "<caption>" << xml_escape(table.caption) << "</caption>\n";
      html << "<tr>";
      for (const std::string& cell : table.header) html << "<th>" << xml_escape(cell) << "</th>";
      html << "</tr>\n";
      for (const auto& row : table.rows) {
        if (row.size() != table.header.size())
          throw FieldError("tables", "tables: table '" + table.caption + "' has a row of " + std::to_string(row.size()) +
                                         " cells under a header of " + std::to_string(table.header.size()));
        html << "<tr>";
        for (const std::string& cell : row) html << "<td>" << xml_escape(cell) << "</td>";
        html << "</tr>\n";
      }
      html << "</table>\n";
    }
    for (const HtmlFigure& figure : section.figures) {
      check_figure(figure);
      html << "<figure>\n" << figure.svg;
      if (!figure.caption.empty()) html << "<figcaption>" << xml_escape(figure.caption) << "</figcaption>\n";
      html << "</figure>\n";
    }
    html << "</section>\n";
  }
  html << "</body>\n</html>\n";
  return html.str();
}

}  // namespace syncplan::report
