// The structure-aware mutator of the harnesses (structure_mutator.hpp), compiled once.
#include "structure_mutator.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace syncplan::fuzz {

/// The numbers most likely to break a check: zero of both signs, subnormals, the ends of double,
/// and each integer type's limits and one past them (2^31, 2^32, 2^53, 2^63, 2^64), as text so
/// that a value past double or int64 reaches the reader as written.
constexpr std::array<std::string_view, 28> kExtremeNumbers = {
    "0",     "-0",   "-0.0",  "1",  "-1",   "5e-324", "4.9e-324", "1e-320", "2.2250738585072014e-308",
    "1e-300", "1e308", "1.7976931348623157e308", "1e309", "-1e309", "2147483647", "2147483648", "-2147483649",
    "4294967296", "4294967297", "9007199254740992", "9007199254740993", "9223372036854775807",
    "9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616", "86400.000001",
    "1e-9"};

namespace detail {

using Json = nlohmann::json;

// Every node of `node` (pre-order), pointers into it.
void collect(Json& node, std::vector<Json*>& nodes) {
  nodes.push_back(&node);
  if (node.is_array() || node.is_object())
    for (Json& child : node) collect(child, nodes);
}

// One structural edit of `document`; false when nothing could be edited.
bool mutate_json(Json& document, std::minstd_rand& random) {
  std::vector<Json*> nodes;
  collect(document, nodes);
  std::vector<Json*> numbers, strings, arrays, objects;
  for (Json* node : nodes) {
    if (node->is_number()) numbers.push_back(node);
    else if (node->is_string()) strings.push_back(node);
    else if (node->is_array()) arrays.push_back(node);
    else if (node->is_object()) objects.push_back(node);
  }
  const auto pick = [&](std::vector<Json*>& from) { return from[random() % from.size()]; };
  switch (random() % 8) {
    case 0: case 1: case 2: {  // a number (or any leaf) to an extreme number
      std::vector<Json*>& targets = numbers.empty() ? nodes : numbers;
      Json* target = pick(targets);
      const std::string_view text = kExtremeNumbers[random() % kExtremeNumbers.size()];
      // Parsed by nlohmann: integers past int64 become unsigned or double; "1e309" is infinity, which
      // dump() writes as null, so it is written as text later (see the caller's placeholder).
      *target = Json::parse(text == "1e309" || text == "-1e309" ? std::string_view("1e308") : text, nullptr, false);
      if (text == "1e309" || text == "-1e309") *target = std::string("\x01SYNCPLAN_FUZZ_") + std::string(text);
      return true;
    }
    case 3: {  // a string to another string of the document, or to itself repeated / emptied
      if (strings.empty()) return false;
      Json* target = pick(strings);
      switch (random() % 3) {
        case 0: *target = *pick(strings); break;  // names that collide (a layer named twice, tied_to itself)
        case 1: *target = target->get<std::string>() + "." + target->get<std::string>(); break;  // names inside names
        default: *target = ""; break;
      }
      return true;
    }
    case 4: {  // an array element repeated, removed, or two swapped
      if (arrays.empty()) return false;
      Json* target = pick(arrays);
      if (target->empty()) return false;
      const std::size_t i = random() % target->size(), j = random() % target->size();
      const Json element = (*target)[i];  // a copy: the insertion may move the array
      switch (random() % 3) {
        case 0: target->insert(target->begin() + static_cast<std::ptrdiff_t>(j), element); break;
        case 1: target->erase(i); break;
        default: std::swap((*target)[i], (*target)[j]); break;
      }
      return true;
    }
    case 5: {  // a key removed, or a key's value copied under another key of the document
      if (objects.empty()) return false;
      Json* target = pick(objects);
      if (target->empty()) return false;
      auto it = target->begin();
      std::advance(it, static_cast<std::ptrdiff_t>(random() % target->size()));
      if (random() % 2) {
        const std::string key = it.key();
        target->erase(key);
      } else {
        Json* other = pick(objects);
        if (other->empty()) return false;
        auto from = other->begin();
        std::advance(from, static_cast<std::ptrdiff_t>(random() % other->size()));
        const Json value = it.value();
        (*target)[from.key()] = value;
      }
      return true;
    }
    case 6: {  // a value's type changed: null, a string of the number, an empty array or object
      Json* target = pick(nodes);
      switch (random() % 4) {
        case 0: *target = nullptr; break;
        case 1: *target = target->dump(); break;
        case 2: *target = Json::array(); break;
        default: *target = Json::object(); break;
      }
      return true;
    }
    default: {  // a node copied into another place (deep nesting, a whole layer where a number was)
      Json* target = pick(nodes);
      const Json copy = *pick(nodes);
      *target = copy;
      return true;
    }
  }
}

// The dump with the placeholders of non-finite numbers written as bare tokens (1e309, -1e309).
std::string dump_with_tokens(const Json& document, bool indent) {
  std::string text = indent ? document.dump(1) : document.dump();
  for (const char* token : {"1e309", "-1e309"}) {
    const std::string placeholder = std::string("\"\\u0001SYNCPLAN_FUZZ_") + token + "\"";
    for (std::size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at))
      text.replace(at, placeholder.size(), token);
  }
  return text;
}

// One number token of `text` (a run of digits with its sign, point and exponent) replaced by an
// extreme one; false when the text has none.
bool mutate_number_token(std::string& text, std::minstd_rand& random) {
  std::vector<std::pair<std::size_t, std::size_t>> tokens;  // [begin, end)
  for (std::size_t i = 0; i < text.size();) {
    const bool starts = std::isdigit(static_cast<unsigned char>(text[i])) ||
                        (text[i] == '-' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])));
    if (!starts) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                                 text[end] == 'e' || text[end] == 'E' ||
                                 ((text[end] == '-' || text[end] == '+') && (text[end - 1] == 'e' || text[end - 1] == 'E'))))
      ++end;
    tokens.emplace_back(i, end);
    i = end;
  }
  if (tokens.empty()) return false;
  const auto [begin, end] = tokens[random() % tokens.size()];
  text.replace(begin, end - begin, kExtremeNumbers[random() % kExtremeNumbers.size()]);
  return true;
}

}  // namespace detail

std::size_t structure_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed) {
  static const bool enabled = std::getenv("SYNCPLAN_FUZZ_STRUCTURE") != nullptr;
  std::minstd_rand random(seed == 0 ? 1 : seed);
  if (!enabled || random() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  for (std::size_t begin = 0;;) {
    const std::size_t nul = input.find('\0', begin);
    parts.push_back(input.substr(begin, nul == std::string::npos ? std::string::npos : nul - begin));
    if (nul == std::string::npos) break;
    begin = nul + 1;
  }
  std::string& part = parts[random() % parts.size()];
  bool changed = false;
  const detail::Json document = detail::Json::parse(part, nullptr, false);
  if (!document.is_discarded()) {
    detail::Json edited = document;
    for (int edits = 1 + static_cast<int>(random() % 3); edits > 0; --edits) changed = detail::mutate_json(edited, random) || changed;
    if (changed) part = detail::dump_with_tokens(edited, random() % 2 == 0);
  } else {
    changed = detail::mutate_number_token(part, random);
  }
  if (!changed) return LLVMFuzzerMutate(data, size, max_size);
  std::string joined;
  for (std::size_t i = 0; i < parts.size(); ++i) joined += (i ? std::string(1, '\0') : std::string()) + parts[i];
  if (joined.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, joined.data(), joined.size());
  return joined.size();
}

}  // namespace syncplan::fuzz

