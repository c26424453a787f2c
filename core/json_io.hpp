// Strict JSON reading (unknown keys, wrong types and non-finite numbers are errors that name the
// file, the field and the layer) and whole-or-nothing file writing.
#pragma once

#include "core/limits.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace syncplan {

using Json = nlohmann::ordered_json;

/// Reads a whole regular file as text. Throws InputError "PATH: cannot read file (...)" when it is
/// missing, a directory, or not a regular file (a FIFO or a device would block or never end).
std::string read_text_file(const std::string& path);

/// Reads and parses a JSON file. The bare tokens NaN, Infinity and -Infinity that Python's json
/// module writes are accepted and become values that NumberReader reports as non-finite, so that
/// the error can name the layer instead of a byte offset.
/// Throws InputError "PATH: cannot read file (...)" or "PATH: invalid JSON at line L, column C: ...".
Json read_json_file(const std::string& path);

/// Deepest nesting of arrays and objects a JSON input may have (no syncplan format, nor the files
/// of DreamDDP, nccl-tests or PyTorch's profiler, nests more than a few levels; docs/formats.md).
inline constexpr int kDeepestJson = 512;

/// Parses JSON text; `origin` names it in errors (a path, or "<string>"). Throws InputError
/// "ORIGIN: JSON nested deeper than 512 levels" for deeper arrays and objects.
Json parse_json_text(const std::string& text, const std::string& origin);

/// Reads a JSON file whose top level is an object, as its (key, value) pairs in file order, with
/// read_json_file's errors (invalid JSON, duplicate keys, nesting, NaN/Infinity tokens as there).
/// For large flat objects (DreamDDP's {layer: seconds} files): parsed with sorted keys, O(n log n);
/// read_json_file keeps the key order by searching the keys on every insert, O(n^2) (40,000
/// layers took 7.7 s; the helper's new-user check). Throws InputError "PATH: expected EXPECTED,
/// got TYPE" when the top level is not an object.
std::vector<std::pair<std::string, Json>> read_json_object_in_order(const std::string& path, const std::string& expected);

/// True when `value` stands for NaN/Infinity/-Infinity written as a bare token in the source.
bool is_nonfinite_token(const Json& value);

/// Writes `text` to `path` whole or not at all: a temporary file beside it, then rename.
/// Throws InputError "FLAG PATH: cannot write file (...)" (the command-line flag that named the
/// path, e.g. "-o", when `flag` is given; "PATH: ..." otherwise) when the folder is missing or not
/// writable, or the device is full.
void write_text_file_atomic(const std::string& path, const std::string& text, const std::string& flag = "");

/// `value` as JSON text: `indent` spaces per level, or one line when negative. A string byte that is
/// not UTF-8 (a file path given on the command line may hold one; names are refused before) is
/// written as U+FFFD instead of throwing nlohmann's type_error 316.
std::string json_text(const Json& value, int indent = -1);

/// Writes `value` as indented JSON (json_text(value, 1) and a newline) with write_text_file_atomic.
void write_json_file_atomic(const std::string& path, const Json& value, const std::string& flag = "");

/// Refuses a text that is printed (a layer's name, a profile's model or source, a plan's algorithm,
/// a cluster's name, a link's source) holding a control character: C0 (bytes 0x00-0x1F), DEL
/// (0x7F) or C1 (U+0080-U+009F, UTF-8 0xC2 0x80-0x9F), or a byte that is not UTF-8 (a lone 0x9B
/// is the one-byte CSI to a terminal, and JSON cannot hold it). A NUL cut every message that quoted
/// it (messages pass through `what()` as C strings), and the others reached terminals raw (ESC and
/// U+009B in profile sources were printed as they were). The
/// rule is core/printable.hpp's. Throws InputError "WHERE: field 'FIELD': control character U+00XX
/// at byte N (it is printed in messages and tables)", or "... invalid UTF-8 byte 0xNN at byte N
/// ..." ("names are" for FIELD "name"); `where` must not quote the text. A `where` that is a flag
/// ("--model") reads as its usage instead: "--model NAME: control character ..."
void require_printable(const std::string& text, const std::string& where, const std::string& field);

/// require_printable(name, where, "name").
void require_printable_name(const std::string& name, const std::string& where);

/// True when `name` holds a control character or a byte that is not UTF-8 (require_printable's rule).
bool has_control_character(const std::string& name);

/// Refuses a path whose file name is longer than its folder's file system allows (pathconf
/// _PC_NAME_MAX, 255 bytes on ext4) or whose absolute path reaches PATH_MAX, before anything is
/// written: "SHOWN: cannot write file (its name has N bytes, more than the 255 a file name may have
/// here)". OutputFiles::commit and the commands' up-front output checks call it.
void require_file_name_fits(const std::filesystem::path& target, const std::string& shown);

/// The file an output path names, its links followed even where the last one points at nothing yet:
/// absolute, "." and ".." resolved, its existing folders canonical. A link to a file not yet made
/// is written through (the file it names is created), never replaced by a regular file, and two
/// paths that reach one file this way are the same output. Throws InputError "SHOWN: cannot write
/// file (...)" for more than 40 links in a row (the kernel's ELOOP limit) or an unreadable link.
std::filesystem::path output_target(const std::filesystem::path& path, const std::string& shown);

/// The descriptor (1 or 2) when `path` names the standard output or error as a path ("/dev/stdout",
/// "/dev/fd/1", "/proc/self/fd/1"; the same for 2), else -1. OutputFiles writes such a path through
/// the descriptor, in order with the printout, and never renames a file into its place.
int standard_descriptor(const std::string& path);

/// Output files of one command, written whole or not at all: commit() writes every file to a
/// temporary file beside its target first and renames them only when all were written. A target
/// that exists and is not a regular file (/dev/null, a FIFO) is written directly, before the
/// temporary files; a FIFO that no process opens for reading within 5 s is refused, not
/// waited for; a symbolic link is written through (its target is replaced).
class OutputFiles {
 public:
  /// `flag` is the command-line flag that named `path` ("-o", "--trace"): messages then read
  /// "--trace /dev/full: cannot write file (...)", naming what the user typed.
  void add(const std::string& path, std::string text, const std::string& flag = "");
  void add_json(const std::string& path, const Json& value, const std::string& flag = "");
  /// Writes every file: devices and FIFOs directly, first (before any temporary file exists),
  /// then regular ones through a temporary renamed into place, so a failing write leaves no
  /// regular output and no temporary file behind (a device written before the failure stays
  /// written). Throws InputError "[FLAG ]PATH: cannot write file (...)" (for a FIFO without a reader:
  /// "a FIFO that no process opened for reading within 5 s") and removes the temporary files on failure.
  void commit();

 private:
  struct File {
    std::string path, text, shown;  // shown: "FLAG PATH" or "PATH", what messages name
  };
  std::vector<File> files_;
};

/// What a null value of an optional key means: `kUnknown`, the value is not known and reads as if
/// the key were absent (where the format says so: a profile's times, SPEC section 3); `kRejected`,
/// null is no value the format allows, and the caller's type check names the field and "null".
enum class Null { kUnknown, kRejected };

/// Reads one JSON object field by field and rejects the keys nobody asked for.
/// `where` prefixes every message, e.g. "profile.json: layer 'lm_head'".
class ObjectReader {
 public:
  /// Throws InputError "WHERE: expected a JSON object, got TYPE" when `object` is not an object.
  ObjectReader(const Json& object, std::string where);

  bool has(const std::string& key) const;
  const Json& required(const std::string& key);
  /// Absent gives nullptr; so does null with Null::kUnknown (null means unknown, SPEC section 3).
  /// With Null::kRejected a null value is returned, for the caller's type check to reject.
  const Json* optional(const std::string& key, Null null = Null::kUnknown);

  std::string required_string(const std::string& key);
  /// Absent (or null with Null::kUnknown): std::nullopt; otherwise it must be a string.
  std::optional<std::string> optional_string(const std::string& key, Null null = Null::kUnknown);
  /// A whole number >= minimum; throws naming the field otherwise.
  std::int64_t required_integer(const std::string& key, std::int64_t minimum);
  /// A whole number in [minimum, maximum]; throws "field 'K': at most MAX, got N" above it.
  std::int64_t required_integer(const std::string& key, std::int64_t minimum, std::int64_t maximum);
  /// Reads "format" and throws "WHERE: field 'format': expected "F", got "G"" unless it is `expected`.
  void require_format(const char* expected);
  /// Absent (or null with Null::kUnknown): std::nullopt; otherwise as required_integer.
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t minimum,
                                               Null null = Null::kUnknown);
  /// Absent (or null with Null::kUnknown): std::nullopt; otherwise a whole number in
  /// [minimum, maximum], as required_integer.
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t minimum, std::int64_t maximum,
                                               Null null = Null::kUnknown);
  /// A finite number of seconds in [0, limits::kLongestTime_s] (a day: one layer's or one
  /// collective's time), or null/absent. Throws InputError naming the field otherwise.
  std::optional<double> optional_seconds(const std::string& key);
  std::optional<double> optional_nonnegative(const std::string& key);

  /// Throws InputError "WHERE: unknown key 'K'" for the first key not read.
  void reject_unknown_keys() const;

  const std::string& where() const { return where_; }

 private:
  const Json& object_;
  std::string where_;
  std::set<std::string> read_;
};

/// The value of a JSON integer that fits in int64, or std::nullopt (not an integer, or >= 2^63).
std::optional<std::int64_t> integer_value(const Json& value);

/// The readers' rule for a whole number: a JSON integer within int64, or a number written with a
/// fraction or exponent whose value is whole and below 9e15 in magnitude, where every whole double
/// is exact (8.0 and 1e3 are 8 and 1000; 8.5 is none). std::nullopt otherwise. ObjectReader's
/// required_integer and the readers of bare numbers (schedule iterations, nccl-tests' config) use it.
std::optional<std::int64_t> whole_number_value(const Json& value);

/// The JSON type name used in messages ("string", "number", ...).
std::string json_type_name(const Json& value);

/// Reads a number that must be finite and >= 0; `where` names the field for errors.
double read_nonnegative_number(const Json& value, const std::string& where);

/// Reads a finite number in [minimum, maximum] (the bounds of core/limits.hpp); `where` names the
/// field. Throws InputError "WHERE: ..." saying non-finite, not a number, negative (when minimum is
/// 0), "must be > 0" (when minimum is above 0 and the value is 0), "at least MIN" or "at most MAX".
double read_number_in(const Json& value, const std::string& where, double minimum, double maximum);

}  // namespace syncplan
