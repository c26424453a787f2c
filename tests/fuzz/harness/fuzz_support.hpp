// What every libFuzzer harness shares: the rule that InputError is a reader's normal answer to bad
// bytes, temporary files for readers that take a path, and the write-then-read-back check.
#pragma once

#include "core/errors.hpp"
#include "core/json_io.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <utility>

namespace syncplan::fuzz {

/// The fuzzer's bytes as a string (any bytes, NULs included).
inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// Runs `read`; an InputError (FieldError included) is the reader refusing bad input, the normal
/// outcome. Any other exception escapes to libFuzzer, which reports it as a crash.
template <typename Read>
int refused_or_read(Read read) {
  try {
    read();
  } catch (const InputError&) {
  }
  return 0;
}

/// Stops the run with `message` on stderr: libFuzzer saves the input as a crash.
[[noreturn]] inline void fail(const std::string& message) {
  std::fprintf(stderr, "fuzz: %s\n", message.c_str());
  std::abort();
}

/// The text before the first NUL byte and the text after it (empty when there is none): one
/// input holding two files, e.g. a profile and the plan read against it.
inline std::pair<std::string, std::string> split_at_nul(const std::string& text) {
  const std::size_t nul = text.find('\0');
  if (nul == std::string::npos) return {text, ""};
  return {text.substr(0, nul), text.substr(nul + 1)};
}

/// A file holding `text` under the temporary folder, removed on destruction; its name carries
/// the process id, so harnesses run side by side do not share it.
class TemporaryFile {
 public:
  TemporaryFile(const std::string& name, const std::string& text)
      : path_((std::filesystem::temp_directory_path() /
               ("syncplan-fuzz-" + std::to_string(::getpid()) + "-" + name)).string()) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) fail("cannot write " + path_);
  }
  ~TemporaryFile() { std::remove(path_.c_str()); }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The round-trip rule (docs/fuzzing.md): a document the tool wrote (`written`, the writer's JSON
/// of what was read) is accepted by `reread` (text -> JSON of what it read) and gives the same
/// JSON back. A refusal or a difference aborts.
template <typename Reread>
void expect_round_trip(const Json& written, Reread reread, const char* what) {
  const std::string text = written.dump(1) + "\n";  // as write_json_file_atomic writes it
  Json again;
  try {
    again = reread(text);
  } catch (const InputError& e) {
    fail(std::string(what) + " written by syncplan is refused on reading back: " + e.what());
  }
  if (again != written) fail(std::string(what) + " read back differs from the one written:\n" + text + "\n" + again.dump(1));
}

}  // namespace syncplan::fuzz
