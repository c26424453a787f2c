// Strict JSON reading and atomic writing, on nlohmann/json.
#include "core/json_io.hpp"

#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/units.hpp"
#include "core/limits.hpp"
#include "core/printable.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <fcntl.h>
#include <unistd.h>

namespace syncplan {

namespace {

// Bare non-finite tokens become strings carrying this prefix; a real JSON string can hold it only
// if it contains a NUL character, which no profile does.
const std::string kNonfinitePrefix = std::string("\0syncplan-nonfinite:", 20);

// JSON text with the bare tokens NaN, Infinity and -Infinity (outside strings) replaced by
// marked strings, and where each replacement grew the text, to map error offsets back.
struct MarkedText {
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> growth;  // (end of a replacement in text, bytes added so far)

  // Offset in the original text of offset `marked` of the marked text.
  std::size_t original_offset(std::size_t marked) const {
    std::size_t added = 0;
    for (const auto& [end, total] : growth) {
      if (end > marked) break;
      added = total;
    }
    return marked >= added ? marked - added : 0;
  }
};

MarkedText mark_nonfinite_tokens(const std::string& text) {
  MarkedText marked;
  std::string& out = marked.text;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      out += ch;
      if (ch == '\\' && i + 1 < text.size()) out += text[++i];
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    const char* token = nullptr;
    for (const char* candidate : {"-Infinity", "Infinity", "NaN"})
      if (!in_string && text.compare(i, std::strlen(candidate), candidate) == 0) {
        token = candidate;
        break;
      }
    if (token == nullptr) {
      out += ch;
      continue;
    }
    // JSON's escape for NUL keeps the result valid JSON text.
    const std::size_t length = std::strlen(token);
    out += "\"\\u0000syncplan-nonfinite:";
    out += token;
    out += '"';
    i += length - 1;
    marked.growth.emplace_back(out.size(), out.size() - (i + 1));
  }
  return marked;
}

// "parse error at line 1, column 5: syntax error ..." -> "syntax error ..."
std::string parse_error_detail(const std::string& message) {
  const auto column = message.find("column ");
  const auto colon = column == std::string::npos ? std::string::npos : message.find(": ", column);
  return colon == std::string::npos ? message : message.substr(colon + 2);
}

std::string strip_nlohmann_prefix(std::string message) {
  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> "line 1, column 5: ..."
  const auto bracket = message.find("] ");
  if (bracket != std::string::npos) message = message.substr(bracket + 2);
  const std::string parse_error = "parse error at ";
  if (message.rfind(parse_error, 0) == 0) message = message.substr(parse_error.size());
  // One printable line: nlohmann/json quotes the bytes it last read as they are, so a binary or
  // non-UTF-8 file would put raw bytes on the terminal; they are written as \xNN instead.
  std::string line;
  for (const char ch : message) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\n' || ch == '\r') {
      line += ' ';
    } else if (byte < 0x20 || byte >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      line += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    } else {
      line += ch;
    }
  }
  return line;
}

}  // namespace

namespace {

// The SAX events of one parse, handed on to nlohmann/json's own DOM builder, with the checks the
// readers need on the way: a repeated key in an object (nlohmann/json would silently keep only the
// last value: a duplicate layer would vanish), nesting deeper than kDeepestJson (refused before it
// exists: an ordered object's values are copied recursively when it grows, and 100,000 levels
// overflow the stack), and the top-level object's keys in file order. A SAX handler rather than
// nlohmann's parser callback: with a callback, the end of every object scans its parent array for
// discarded values, so an array of n objects took O(n^2) (the helper's re-check: a 212 MB trace
// that simulate wrote took minutes for compare to read).
template <class Document>
class CheckedDomBuilder {
 public:
  using number_integer_t = typename Document::number_integer_t;
  using number_unsigned_t = typename Document::number_unsigned_t;
  using number_float_t = typename Document::number_float_t;
  using string_t = typename Document::string_t;
  using binary_t = typename Document::binary_t;

  CheckedDomBuilder(Document& document, const std::string& origin, std::vector<std::string>* top_keys)
      : dom_(document, true), origin_(origin), top_keys_(top_keys) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(number_float_t value, const string_t& text) { return dom_.number_float(value, text); }
  bool string(string_t& value) { return dom_.string(value); }
  bool binary(binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) {
    open();
    objects_.emplace_back();
    return dom_.start_object(size);
  }
  bool key(string_t& name) {
    if (!objects_.back().insert(name).second && duplicate_.empty()) duplicate_ = name;
    if (top_keys_ && depth_ == 1) top_keys_->push_back(name);
    return dom_.key(name);
  }
  bool end_object() {
    objects_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t size) {
    open();
    return dom_.start_array(size);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return dom_.parse_error(position, token, error);  // throws `error`
  }

  const std::string& duplicate() const { return duplicate_; }

 private:
  void open() {
    if (depth_ >= kDeepestJson) throw InputError(origin_ + ": JSON nested deeper than " + std::to_string(kDeepestJson) + " levels");
    ++depth_;
  }

  nlohmann::detail::json_sax_dom_parser<Document> dom_;
  const std::string& origin_;
  std::vector<std::string>* top_keys_;
  int depth_ = 0;                                // containers open
  std::vector<std::set<std::string>> objects_;  // keys seen in each open object, innermost last
  std::string duplicate_;                        // the first repeated key
};

// parse_json_text for either JSON type: Json (ordered: objects keep the file's key order, but an
// insert searches the keys, so an object of n keys costs O(n^2)) or nlohmann::json (sorted keys,
// O(log n) inserts). `top_keys`, when given, receives the keys of the top-level object in file
// order.
template <class Document>
Document parse_document(const std::string& text, const std::string& origin, std::vector<std::string>* top_keys) {
  // The document takes about 8 times its text's bytes (measured: a 13.6 MB profile of 100,000
  // layers peaked at 134 MB, a 42 MB trace at 408 MB, with the commands' own data): refused up front
  // when that is more than this process may allocate. Running out while parsing is not safe to
  // recover from: nlohmann/json's destructor allocates, and std::bad_alloc there aborts (the
  // helper's re-check: exit 134 under a ulimit). Twice the document's size: as much again for
  // what the command builds from it. Small files (under 4 MB of text) are not checked.
  constexpr double kDocumentBytesPerTextByte = 8;
  if (const double needed = kDocumentBytesPerTextByte * 2 * static_cast<double>(text.size()); needed > 64e6) {
    const double available = available_memory_bytes();
    if (needed > available)
      throw InputError(origin + ": reading this " + format_short(static_cast<double>(text.size()) / 1e6, 0) +
                       " MB JSON file needs about " + format_short(needed / 1e6, 0) + " MB of memory, more than the " +
                       format_short(available / 1e6, 0) + " MB available here");
  }
  const MarkedText marked = mark_nonfinite_tokens(text);
  try {
    Document document;
    CheckedDomBuilder<Document> builder(document, origin, top_keys);
    Document::sax_parse(marked.text, &builder);
    if (!builder.duplicate().empty()) throw InputError(origin + ": duplicate key '" + builder.duplicate() + "'");
    return document;
  } catch (const typename Document::parse_error& e) {
    // Line and column in the text as written (e.byte is 1-based, in the marked text).
    const std::size_t offset = std::min(marked.original_offset(e.byte > 0 ? e.byte - 1 : 0), text.size());
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
    const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
    const std::size_t column = offset - (line_start == std::string::npos || offset == 0 ? 0 : line_start + 1) + 1;
    throw InputError(origin + ": invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
                     ": " + strip_nlohmann_prefix(parse_error_detail(e.what())));
  } catch (const typename Document::exception& e) {  // e.g. out_of_range 406: a number too large for a double
    throw InputError(origin + ": invalid JSON: " + strip_nlohmann_prefix(e.what()));
  }
}

}  // namespace

Json parse_json_text(const std::string& text, const std::string& origin) {
  return parse_document<Json>(text, origin, nullptr);
}

std::vector<std::pair<std::string, Json>> read_json_object_in_order(const std::string& path, const std::string& expected) {
  std::vector<std::string> keys;
  const nlohmann::json document = parse_document<nlohmann::json>(read_text_file(path), path, &keys);
  if (!document.is_object())
    throw InputError(path + ": expected " + expected + ", got " + json_type_name(Json(document)));
  std::vector<std::pair<std::string, Json>> items;
  items.reserve(keys.size());
  for (std::string& key : keys) {
    Json value = document.at(key);  // the same value, as the ordered type the readers take
    items.emplace_back(std::move(key), std::move(value));
  }
  return items;
}

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path + ": cannot read file (it is a directory)");
  // A FIFO or a device would block or never end: only regular files are read.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw InputError(path + ": cannot read file (not a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read file (" + std::strerror(errno) + ")");
  // Read whole into a string of the file's size: a stream copy that runs out of memory stops
  // quietly and left a truncated text (the helper's re-check: a 170 MB file read as 67 MB under a
  // ulimit). Running out here names the file.
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  std::string text;
  try {
    if (!ec) text.reserve(static_cast<std::size_t>(size));
    std::ostringstream buffer;
    if (ec) {
      buffer << in.rdbuf();
      text = buffer.str();
    } else {
      text.resize(static_cast<std::size_t>(size));
      in.read(text.data(), static_cast<std::streamsize>(size));
      text.resize(static_cast<std::size_t>(in.gcount()));
      // A file that grew while being read (a log still being written): the rest too.
      if (in && in.peek() != std::char_traits<char>::eof()) {
        buffer << in.rdbuf();
        text += buffer.str();
      }
    }
  } catch (const std::bad_alloc&) {
    throw InputError(path + ": cannot read file (out of memory: " + std::to_string(size / 1'000'000) +
                     " MB, more than the " + std::to_string(static_cast<long long>(available_memory_bytes() / 1e6)) +
                     " MB this process may still allocate here)");
  }
  if (in.bad()) throw InputError(path + ": cannot read file (read error)");
  return text;
}

Json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

bool is_nonfinite_token(const Json& value) {
  return value.is_string() && value.get_ref<const std::string&>().rfind(kNonfinitePrefix, 0) == 0;
}


bool has_control_character(const std::string& name) { return first_unprintable(name).first != std::string::npos; }

void require_printable(const std::string& text, const std::string& where, const std::string& field) {
  const auto [at, unit] = first_unprintable(text);
  if (at == std::string::npos) return;
  // A command-line value reads as its usage does ("--model NAME: ..."), a file's field as a field.
  const bool flag = where.rfind("--", 0) == 0;
  throw InputError((flag ? where + " " + field + ": " : where + ": field '" + field + "': ") + describe_text_unit(unit) +
                   " at byte " + std::to_string(at) +
                   (field == "name" ? " (names are" : " (it is") + " printed in messages and tables)");
}

void require_printable_name(const std::string& name, const std::string& where) { require_printable(name, where, "name"); }

void write_text_file_atomic(const std::string& path, const std::string& text, const std::string& flag) {
  OutputFiles files;
  files.add(path, text, flag);
  files.commit();
}

std::string json_text(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

void write_json_file_atomic(const std::string& path, const Json& value, const std::string& flag) {
  write_text_file_atomic(path, json_text(value, 1) + "\n", flag);
}

void OutputFiles::add(const std::string& path, std::string text, const std::string& flag) {
  files_.push_back({path, std::move(text), flag.empty() ? path : flag + " " + path});
}

void OutputFiles::add_json(const std::string& path, const Json& value, const std::string& flag) {
  add(path, json_text(value, 1) + "\n", flag);
}

// Standard streams as paths (the header): with the descriptor closed or its target a regular file,
// resolving such a path replaced the /dev/stdout link itself with a regular file (found on this
// project's machine after the helper's re-check), so it is never resolved.
int standard_descriptor(const std::string& path) {
  for (const int fd : {1, 2}) {
    const std::string number = std::to_string(fd);
    if (path == (fd == 1 ? "/dev/stdout" : "/dev/stderr") || path == "/dev/fd/" + number || path == "/proc/self/fd/" + number)
      return fd;
  }
  return -1;
}

namespace {
void write_stream(const std::filesystem::path& path, const std::string& text, const std::string& shown) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(shown + ": cannot write file (" + std::strerror(errno) + ")");
  out << text;
  out.flush();
  if (!out) throw InputError(shown + ": cannot write file (write error)");
}



// Writes `text` to the open descriptor `fd` (1 or 2), after what the streams hold.
void write_descriptor(int fd, const std::string& text, const std::string& shown) {
  if (::fcntl(fd, F_GETFD) < 0) throw InputError(shown + ": cannot write file (the descriptor is closed)");
  std::cout.flush();
  std::cerr.flush();
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(shown + ": cannot write file (" + std::strerror(n < 0 ? errno : EIO) + ")");
    written += static_cast<std::size_t>(n);
  }
}

// How long a FIFO's writer waits for a reader to open it (a reader started just before the command,
// `cat fifo &`, may open it a moment later).
constexpr auto kFifoReaderWait = std::chrono::seconds(5);

// A FIFO: opened without blocking (open(2) with O_NONBLOCK fails with ENXIO while no process has it
// open for reading), retried for kFifoReaderWait, then refused instead of waiting forever; with a
// reader, written in blocking mode.
void write_fifo(const std::filesystem::path& path, const std::string& text, const std::string& shown) {
  const auto deadline = std::chrono::steady_clock::now() + kFifoReaderWait;
  int fd = -1;
  while ((fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 && (errno == ENXIO || errno == EINTR) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (fd < 0) {
    throw InputError(shown + ": cannot write file (" +
                     (errno == ENXIO ? "a FIFO that no process opened for reading within " +
                                           std::to_string(kFifoReaderWait.count()) + " s"
                                     : std::string(std::strerror(errno))) +
                     ")");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    const int error = errno;
    ::close(fd);
    throw InputError(shown + ": cannot write file (" + std::strerror(error) + ")");
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      throw InputError(shown + ": cannot write file (" + std::strerror(error) + ")");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw InputError(shown + ": cannot write file (" + std::strerror(errno) + ")");
}
}  // namespace

void require_file_name_fits(const std::filesystem::path& target, const std::string& shown) {
  namespace fs = std::filesystem;
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::size_t name = target.filename().string().size();
  const long name_max = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && name > static_cast<std::size_t>(name_max))
    throw InputError(shown + ": cannot write file (its name has " + std::to_string(name) + " bytes, more than the " +
                     std::to_string(name_max) + " a file name may have here)");
  std::error_code ec;
  const std::size_t whole = fs::absolute(target, ec).string().size();
  if (!ec && whole >= PATH_MAX)
    throw InputError(shown + ": cannot write file (its path has " + std::to_string(whole) + " bytes, more than the " +
                     std::to_string(PATH_MAX - 1) + " a path may have)");
}

std::filesystem::path output_target(const std::filesystem::path& path, const std::string& shown) {
  namespace fs = std::filesystem;
  constexpr int kMostLinks = 40;  // Linux's MAXSYMLINKS
  std::error_code ec;
  fs::path target = fs::absolute(path, ec);
  if (ec) throw InputError(shown + ": cannot write file (" + ec.message() + ")");
  for (int links = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++links) {
    if (links == kMostLinks) throw InputError(shown + ": cannot write file (more than 40 links in a row: a loop?)");
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) throw InputError(shown + ": cannot write file (its link cannot be read: " + ec.message() + ")");
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  fs::path resolved = fs::weakly_canonical(target, ec);
  return ec || resolved.empty() ? target.lexically_normal() : resolved;
}

namespace {

// How each output of OutputFiles::commit is written: a standard stream named as a path, a device
// or FIFO written in place, or a file written to a temporary beside it and renamed.
struct PendingFile {
  std::filesystem::path target, temporary;
  const std::string* text;
  const std::string* shown;
  bool fifo = false;
};
struct PendingStream {
  int fd;
  const std::string* text;
  const std::string* shown;
};
struct OutputPlan {
  std::vector<PendingStream> streams;  // the standard output or error, named as a path
  std::vector<PendingFile> direct;     // devices and FIFOs
  std::vector<PendingFile> renamed;    // regular files (or new ones)
};

// Sorts the outputs and refuses, before anything is written, what cannot be written: a folder as
// target, a missing folder, a name too long for the file system. Throws InputError naming the
// output (`shown`).
// `files`: OutputFiles's list of {path, text, shown}.
template <class Files>
OutputPlan plan_outputs(const Files& files) {
  namespace fs = std::filesystem;
  OutputPlan plan;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [path, text, shown] = files[i];
    if (const int fd = standard_descriptor(path); fd >= 0) {
      plan.streams.push_back({fd, &text, &shown});
      continue;
    }
    fs::path target(path);
    std::error_code ec;
    // What the path names, links followed: /dev/stdout is a link to /proc/self/fd/1, which the
    // kernel resolves to a pipe or terminal that has no path of its own ("pipe:[N]"), so it is
    // written through the path as given (canonicalized, it became a file to create in
    // /proc/self/fd and failed after the other outputs were in place).
    const fs::file_status status = fs::status(target, ec);
    if (fs::exists(status) && fs::is_directory(status)) throw InputError(shown + ": cannot write file (it is a directory)");
    if (fs::exists(status) && !fs::is_regular_file(status)) {
      plan.direct.push_back({target, {}, &text, &shown, fs::is_fifo(status)});
      continue;
    }
    // A link to a regular file (or to nothing yet): the file it names is replaced or made, not the
    // link (a dangling link was once replaced by a regular file).
    if (fs::is_symlink(fs::symlink_status(target, ec))) target = output_target(target, shown);
    fs::path folder = target.parent_path();
    if (folder.empty()) folder = ".";
    if (!fs::is_directory(folder, ec))
      throw InputError(shown + ": cannot write file (folder " + folder.string() + " does not exist)");
    // Before anything is written: a name too long for the file system failed only at the rename,
    // after the other outputs were in place (the command-line fuzzer, docs/fuzzing.md).
    require_file_name_fits(target, shown);
    // A short hidden name beside the target, so the rename stays on one file system.
    const std::string name = ".syncplan-" + std::to_string(::getpid()) + "-" + std::to_string(i) + ".tmp";
    plan.renamed.push_back({target, folder / name, &text, &shown});
  }
  return plan;
}

}  // namespace

void OutputFiles::commit() {
  namespace fs = std::filesystem;
  const OutputPlan plan = plan_outputs(files_);
  // Devices and FIFOs cannot be renamed into place: they are written first, before any temporary
  // file exists, so that a failing one (/dev/full, a FIFO nobody reads) leaves nothing behind.
  for (const PendingStream& stream : plan.streams) write_descriptor(stream.fd, *stream.text, *stream.shown);
  for (const PendingFile& file : plan.direct)
    (file.fifo ? write_fifo : write_stream)(file.target, *file.text, *file.shown);
  const auto remove_temporaries = [&] {
    std::error_code ignored;
    for (const PendingFile& file : plan.renamed) fs::remove(file.temporary, ignored);
  };
  for (const PendingFile& file : plan.renamed) {
    try {
      write_stream(file.temporary, *file.text, *file.shown);
    } catch (...) {
      remove_temporaries();
      throw;
    }
  }
  for (const PendingFile& file : plan.renamed) {
    std::error_code ec;
    fs::rename(file.temporary, file.target, ec);
    if (ec) {
      remove_temporaries();
      throw InputError(*file.shown + ": cannot write file (" + ec.message() + ")");
    }
  }
}

std::optional<std::int64_t> integer_value(const Json& value) {
  if (value.is_number_unsigned()) {
    const std::uint64_t whole = value.get<std::uint64_t>();
    if (whole > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(whole);
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return std::nullopt;
}

std::string json_type_name(const Json& value) {
  if (is_nonfinite_token(value)) return "non-finite number";
  if (value.is_number()) return "number";
  return value.type_name();
}

double read_nonnegative_number(const Json& value, const std::string& where) {
  if (is_nonfinite_token(value))
    throw InputError(where + ": non-finite value " +
                     value.get_ref<const std::string&>().substr(kNonfinitePrefix.size()));
  if (!value.is_number())
    throw InputError(where + ": expected a number, got " + json_type_name(value));
  const double number = value.get<double>();
  if (!std::isfinite(number)) throw InputError(where + ": non-finite value");
  if (number < 0) throw InputError(where + ": negative value " + format_shortest(number));
  return number;
}

double read_number_in(const Json& value, const std::string& where, double minimum, double maximum) {
  // The limits are round numbers (1e-06, 86400, 1e+07): %g prints them as written in limits.hpp.
  const auto limit_text = [](double limit) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", limit);
    return std::string(text);
  };
  const double number = read_nonnegative_number(value, where);
  if (number < minimum)
    throw InputError(where + (number == 0 ? ": must be > 0" : ": at least " + limit_text(minimum) + ", got " +
                                                                format_shortest(number)) +
                     " (limits: docs/formats.md)");
  if (number > maximum)
    throw InputError(where + ": at most " + limit_text(maximum) + ", got " + format_shortest(number) +
                     " (limits: docs/formats.md)");
  return number;
}

ObjectReader::ObjectReader(const Json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object())
    throw InputError(where_ + ": expected a JSON object, got " + json_type_name(object_));
}

bool ObjectReader::has(const std::string& key) const { return object_.contains(key); }

const Json& ObjectReader::required(const std::string& key) {
  read_.insert(key);
  const auto it = object_.find(key);
  if (it == object_.end()) throw InputError(where_ + ": missing field '" + key + "'");
  return *it;
}

const Json* ObjectReader::optional(const std::string& key, Null null) {
  read_.insert(key);
  const auto it = object_.find(key);
  if (it == object_.end() || (it->is_null() && null == Null::kUnknown)) return nullptr;
  return &*it;
}

std::string ObjectReader::required_string(const std::string& key) {
  const Json& value = required(key);
  if (!value.is_string() || is_nonfinite_token(value))
    throw InputError(where_ + ": field '" + key + "': expected a string, got " +
                     json_type_name(value));
  return value.get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key, Null null) {
  if (optional(key, null) == nullptr) return std::nullopt;
  return required_string(key);
}

std::optional<std::int64_t> whole_number_value(const Json& value) {
  if (const std::optional<std::int64_t> whole = integer_value(value)) return whole;
  if (!value.is_number_float()) return std::nullopt;
  // 8.0 is accepted as 8; 8.5 is not.
  const double number = value.get<double>();
  if (std::isfinite(number) && number == std::floor(number) && std::fabs(number) < 9e15)
    return static_cast<std::int64_t>(number);
  return std::nullopt;
}

std::int64_t ObjectReader::required_integer(const std::string& key, std::int64_t minimum) {
  const Json& value = required(key);
  const std::string field = where_ + ": field '" + key + "'";
  const std::optional<std::int64_t> whole = whole_number_value(value);
  if (!whole && value.is_number_unsigned()) throw InputError(field + ": too large (" + value.dump() + ")");
  if (!whole && value.is_number_float() && std::isfinite(value.get<double>()) &&
      value.get<double>() == std::floor(value.get<double>()))
    throw InputError(field + ": " + value.dump() + " is a whole number past 9e15 written with a fraction or exponent, "
                     "which a double may not hold exactly: write it as an integer (limits: docs/formats.md)");
  if (!whole) throw InputError(field + ": expected a whole number, got " + json_type_name(value) +
                               (value.is_number() ? " " + value.dump() : ""));
  if (*whole < minimum)
    throw InputError(field + ": must be >= " + std::to_string(minimum) + ", got " + std::to_string(*whole));
  return *whole;
}

std::int64_t ObjectReader::required_integer(const std::string& key, std::int64_t minimum, std::int64_t maximum) {
  const std::int64_t whole = required_integer(key, minimum);
  if (whole > maximum)
    throw InputError(where_ + ": field '" + key + "': at most " + std::to_string(maximum) + ", got " +
                     std::to_string(whole));
  return whole;
}

void ObjectReader::require_format(const char* expected) {
  const std::string format = required_string("format");
  if (format != expected)
    throw InputError(where_ + ": field 'format': expected \"" + expected + "\", got \"" + format + "\"");
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key, std::int64_t minimum,
                                                           Null null) {
  if (optional(key, null) == nullptr) return std::nullopt;
  return required_integer(key, minimum);
}

std::optional<double> ObjectReader::optional_nonnegative(const std::string& key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  return read_nonnegative_number(*value, where_ + ": field '" + key + "'");
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key, std::int64_t minimum,
                                                           std::int64_t maximum, Null null) {
  if (optional(key, null) == nullptr) return std::nullopt;
  return required_integer(key, minimum, maximum);
}

std::optional<double> ObjectReader::optional_seconds(const std::string& key) {
  const Json* value = optional(key);
  if (value == nullptr) return std::nullopt;
  return read_number_in(*value, where_ + ": field '" + key + "'", 0, limits::kLongestTime_s);
}

void ObjectReader::reject_unknown_keys() const {
  for (const auto& item : object_.items())
    if (!read_.count(item.key())) throw InputError(where_ + ": unknown key '" + item.key() + "'");
}

}  // namespace syncplan
