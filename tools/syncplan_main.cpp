// The syncplan command line: subcommands, and the mapping of errors to exit codes (SPEC section 2).
#include "core/errors.hpp"
#include "core/host_memory.hpp"
#include "core/printable.hpp"
#include "tools/cli_common.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <new>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace {


// The rank mpirun (Open MPI, MPICH, PMIx) gave this process, or 0 outside of it. Parse errors
// come before MPI starts, from every rank alike: rank 0 alone prints them.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      // Not atoi: a value that is not a rank (or past int) is taken as rank 0, which prints.
      int rank = 0;
      const char* end = value + std::strlen(value);
      const auto [last, error] = std::from_chars(value, end, rank);
      return error == std::errc() && last == end && rank >= 0 ? rank : 0;
    }
  return 0;
}

// How long the other ranks wait before exiting on a parse error, so that mpirun, which ends the
// job when the first rank exits non-zero, does not end rank 0 before its message is out (as
// profile-link does on bad input).
constexpr std::chrono::milliseconds kReportGrace{1500};

// The names of `app`'s subcommands: "import, plan, simulate, profile and profile-link".
std::string subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(command->get_name());
  return syncplan::cli::join_names(names);
}

// The first word that should name a (sub)command and does not: "syncplan bogus", "syncplan
// import bogus". Empty when the words name commands down to one without subcommands.
std::string unknown_command_message(const CLI::App& app, int argc, char** argv) {
  const CLI::App* current = &app;
  std::string path;  // the commands so far: "", "import"
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";  // an option: CLI11 says what is wrong with it
    if (current->get_subcommands([](const CLI::App*) { return true; }).empty()) return "";
    const CLI::App* next = nullptr;
    for (const CLI::App* command : current->get_subcommands([](const CLI::App*) { return true; }))
      if (command->get_name() == word) next = command;
    if (next == nullptr)
      return (path.empty() ? "" : path + ": ") + "unknown command '" + word + "' (commands: " +
             subcommand_names(*current) + ")";
    current = next;
    path += (path.empty() ? "" : " ") + word;
  }
  return "";
}

// Levenshtein distance between `a` and `b` (insertions, deletions and substitutions of bytes).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The option "--NAME" of `command` or of a command above it; nullptr when none has it.
const CLI::Option* find_option(const CLI::App* command, const std::string& name) {
  for (; command != nullptr; command = command->get_parent())
    if (const CLI::Option* option = command->get_option_no_throw("--" + name)) return option;
  return nullptr;
}

// The option "-X" (a dash and one letter, as one word) of `command` or of a command above it;
// nullptr when `word` is not that or no command has it. "-1" and "-0.5" are values, not options.
const CLI::Option* find_short_option(const CLI::App* command, const std::string& word) {
  if (word.size() != 2 || word[0] != '-' || std::isalpha(static_cast<unsigned char>(word[1])) == 0) return nullptr;
  for (; command != nullptr; command = command->get_parent())
    if (const CLI::Option* option = command->get_option_no_throw(word)) return option;
  return nullptr;
}

// What is wrong with the use of `option`, written as `shown` ("--loss" or "-o") at argv[i]; empty
// when nothing. An option that takes a value, written without "=" (`separate_value`), followed by
// another option's name: CLI11 would take "--svg" as the value and then say --svg is missing
// instead. A single-valued option given twice: which one was meant is not guessed.
std::string option_use_message(const CLI::App* current, const CLI::Option* option, const std::string& shown,
                               bool separate_value, int argc, char** argv, int i,
                               std::map<const CLI::Option*, int>& seen) {
  if (option->get_items_expected_min() > 0 && separate_value && i + 1 < argc) {
    const std::string next = argv[i + 1];
    std::string next_shown;
    if (next.rfind("--", 0) == 0 && next.size() > 2) {
      const std::string next_name = next.substr(2, next.find('=') - 2);
      if (find_option(current, next_name) != nullptr) next_shown = "--" + next_name;
    } else if (find_short_option(current, next) != nullptr) {
      next_shown = next;
    }
    // The "=" form is the way to give a value that starts with "-" (short options have none).
    const std::string long_form = option->get_lnames().empty() ? shown : "--" + option->get_lnames().front();
    if (!next_shown.empty())
      return shown + " needs a value, got the option " + next_shown + " (write " + long_form +
             "=VALUE for a value that starts with -)";
  }
  if (option->get_type_size_min() > 0 && option->get_expected_max() == 1 && ++seen[option] == 2)
    return shown + " is given more than once (give it once)";
  return "";
}

// The first "--word" of the command line that names no option of the command it belongs to (nor
// of a command above it), as "plan: unknown option --perod (did you mean --period?)": the
// suggestion when an option is within 2 edits (and less than half the word's length) of it. Empty
// when every option is known. Checked before CLI11 parses, which would first say that a required
// option is missing ("--period is required") when it was only misspelt. Also the first option
// that takes a value but is followed by another option ("--loss --svg x.svg"), and the first
// single-valued option given twice (CLI11 says "At Most 1 required but received 2"). Words after
// "--" are positional and not looked at.
std::string unknown_option_message(const CLI::App& app, int argc, char** argv) {
  const CLI::App* current = &app;
  std::string path;
  std::map<const CLI::Option*, int> seen;  // how often each single-valued option was given
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return "";
    if (const CLI::Option* option = find_short_option(current, word)) {
      const std::string problem = option_use_message(current, option, word, true, argc, argv, i, seen);
      if (!problem.empty()) return (path.empty() ? "" : path + ": ") + problem;
      continue;
    }
    if (word.rfind("--", 0) != 0) {
      for (const CLI::App* command : current->get_subcommands([](const CLI::App*) { return true; }))
        if (command->get_name() == word) {
          current = command;
          path += (path.empty() ? "" : " ") + word;
        }
      continue;
    }
    const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
    const CLI::Option* option = find_option(current, name);
    if (option != nullptr) {
      const std::string problem = option_use_message(current, option, "--" + name, word.find('=') == std::string::npos, argc, argv, i, seen);
      if (!problem.empty()) return (path.empty() ? "" : path + ": ") + problem;
      continue;
    }
    std::string best;
    std::size_t best_distance = 3;
    for (const CLI::App* command = current; command != nullptr; command = command->get_parent())
      for (const CLI::Option* option : command->get_options())
        for (const std::string& candidate : option->get_lnames())
          if (const std::size_t distance = edit_distance(name, candidate);
              distance < best_distance && 2 * distance < name.size())
            best = candidate, best_distance = distance;
    const std::string shown = name.size() > 64 ? name.substr(0, 64) + "..." : name;
    return (path.empty() ? "" : path + ": ") + "unknown option --" + shown +
           (best.empty() ? std::string() : " (did you mean --" + best + "?)");
  }
  return "";
}

// CLI11's "Could not convert: --iterations = x" as "--iterations: 'x' is not an integer".
std::string conversion_message(const CLI::App& app, const std::string& what) {
  const std::string prefix = "Could not convert: ";
  const std::size_t equals = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || equals == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), equals - prefix.size());
  const std::string value = what.substr(equals + 3);
  const CLI::Option* option = nullptr;
  for (const CLI::App* command = &app; command != nullptr && option == nullptr;) {
    option = command->get_option_no_throw(name);
    const auto parsed = command->get_subcommands();
    command = parsed.empty() ? nullptr : parsed.front();
  }
  std::string type = option != nullptr ? option->get_type_name() : "";
  type = type.substr(0, type.find(':'));
  const std::string kind = type == "INT" ? "an integer" : type == "UINT" ? "a whole number >= 0"
                           : type == "FLOAT" ? "a number" : "a valid value";
  // Digits that did not convert are a whole number too large for the option's type.
  static const std::regex digits(R"([+-]?[0-9]+)");
  if ((type == "INT" || type == "UINT") && value.size() <= 4096 && std::regex_match(value, digits))
    return name + ": '" + value + "' is out of range (too large for " + kind + " here)";
  return name + ": '" + value + "' is not " + kind;
}

// The first option given an empty value ("-o ''"), as "-o,--output: empty value ...", or empty:
// an empty path or number is never meant, and later checks would take it for "not given".
std::string empty_value_message(const CLI::App& app) {
  for (const CLI::App* command = &app; command != nullptr;) {
    for (const CLI::Option* option : command->get_options())
      if (option->count() > 0)
        for (const std::string& value : option->results())
          if (value.empty()) return option->get_name(false, true) + ": empty value (give a path, name or number)";
    const auto parsed = command->get_subcommands();
    command = parsed.empty() ? nullptr : parsed.front();
  }
  return "";
}

// The first option value written with a leading zero or a radix prefix ("010", "0x10"), as
// "--iterations: '010': ..."; "" when none. CLI11 converts integers with the C library's base
// detection, so "010" would silently be 8 and "0x10" 16; numbers are decimal on this command line.
std::string radix_value_message(const CLI::App& app) {
  // Hex floats too (0x1p-3, 0x1.8p+1): strtod reads them, so a float option took them while an
  // integer option and the file readers refuse them (the helper's re-check).
  static const std::regex radix(R"([+-]?0([0-9]+|[xXbBoO][0-9a-fA-F.]+([pP][+-]?[0-9]+)?))");
  for (const CLI::App* command = &app; command != nullptr;) {
    for (const CLI::Option* option : command->get_options())
      if (option->count() > 0 && option->nonpositional())
        for (const std::string& value : option->results())
          if (value.size() <= 64 && std::regex_match(value, radix))
            return option->get_name(false, true) + ": '" + value +
                   "': write numbers in decimal without leading zeros (it would be read as octal or hex)";
    const auto parsed = command->get_subcommands();
    command = parsed.empty() ? nullptr : parsed.front();
  }
  return "";
}

// The first integer option value that does not fit the option's type, as "--iterations:
// '99999999999999999999' is out of range (too large for an integer here)"; "" when none. CLI11
// converts with strtoll, which saturates: the value would reach the option's own check as
// 9223372036854775807, and its message would quote a number the user never wrote.
std::string saturated_value_message(const CLI::App& app) {
  static const std::regex digits(R"([+-]?[0-9]+)");
  for (const CLI::App* command = &app; command != nullptr;) {
    for (const CLI::Option* option : command->get_options())
      if (option->count() > 0) {
        std::string type = option->get_type_name();
        type = type.substr(0, type.find(':'));
        if (type != "INT" && type != "UINT") continue;
        for (const std::string& value : option->results()) {
          if (value.size() > 4096 || !std::regex_match(value, digits)) continue;
          const char* first = value.data() + (value[0] == '+' ? 1 : 0);
          const char* last = value.data() + value.size();
          std::errc error{};
          if (type == "INT") {
            long long parsed = 0;
            error = std::from_chars(first, last, parsed).ec;
          } else if (value[0] != '-') {
            unsigned long long parsed = 0;
            error = std::from_chars(first, last, parsed).ec;
          }
          if (error == std::errc::result_out_of_range)
            return option->get_name(false, true) + ": '" + value + "' is out of range (too large for " +
                   (type == "INT" ? "an integer" : "a whole number >= 0") + " here)";
        }
      }
    const auto parsed = command->get_subcommands();
    command = parsed.empty() ? nullptr : parsed.front();
  }
  return "";
}

}  // namespace

// Standard output with control characters and bytes that are not UTF-8 escaped as core/printable.hpp
// writes them (C0 but newline and tab, DEL and a stray byte as \xNN, C1 as \u00NN): a path or any
// text from the command line that reaches a printout cannot drive the terminal (the helper's
// re-checks: a profile path holding ESC, or a lone 0x9B, printed raw). The files' texts are checked
// where they are read (core/json_io.hpp require_printable); JSON and CSV written here hold no such
// bytes, so nothing else changes. A multi-byte sequence split between writes is held until whole.
class PrintableOutput : public std::streambuf {
 public:
  explicit PrintableOutput(std::streambuf* target) : target_(target) {}
  ~PrintableOutput() override { flush_pending(); }

 protected:
  int overflow(int ch) override {
    if (ch == traits_type::eof()) return traits_type::not_eof(ch);
    return put(static_cast<char>(ch)) ? ch : traits_type::eof();
  }
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    std::streamsize i = 0;
    while (i < count) {
      // A run of bytes that need nothing is written at once.
      std::streamsize run = i;
      while (run < count && pending_.empty() && plain(static_cast<unsigned char>(text[run]))) ++run;
      if (run > i) {
        if (!write(text + i, run - i)) return i;
        i = run;
        continue;
      }
      if (!put(text[i])) return i;
      ++i;
    }
    return count;
  }
  int sync() override { return flush_pending() && target_->pubsync() == 0 ? 0 : -1; }

 private:
  static bool plain(unsigned char byte) { return (byte >= 0x20 && byte < 0x7F) || byte == '\n' || byte == '\t'; }
  bool write(const char* text, std::streamsize count) { return target_->sputn(text, count) == count; }
  bool write(const std::string& text) { return write(text.data(), static_cast<std::streamsize>(text.size())); }
  // Writes the whole units held; an incomplete sequence at the end stays held unless `all`.
  bool drain(bool all) {
    std::size_t i = 0;
    while (i < pending_.size()) {
      const syncplan::TextUnit unit = syncplan::next_text_unit(pending_, i);
      if (unit.kind == syncplan::TextUnit::Kind::kIncomplete && !all) break;
      const std::string_view bytes = std::string_view(pending_).substr(i, unit.length);
      const bool line_break = bytes == "\n" || bytes == "\t";
      if (!write(line_break ? std::string(bytes) : syncplan::escape_text_unit(unit, bytes))) return false;
      i += unit.length;
    }
    pending_.erase(0, i);
    return true;
  }
  bool flush_pending() { return drain(true); }
  bool put(char c) {
    pending_ += c;
    return drain(false);
  }

  std::streambuf* target_;
  std::string pending_;  // at most 3 bytes: the start of a multi-byte sequence
};

int main(int argc, char** argv) {
  // Before any allocation: profile and run compute in the same steady state (core/host_memory.hpp).
  syncplan::keep_freed_memory();
  PrintableOutput printable(std::cout.rdbuf());
  std::streambuf* const raw_output = std::cout.rdbuf(&printable);
  struct RestoreOutput {
    std::streambuf* raw;
    ~RestoreOutput() {
      std::cout.flush();
      std::cout.rdbuf(raw);
    }
  } restore{raw_output};
  CLI::App app{"syncplan: plan and simulate communication schedules for data-parallel training "
               "(S-SGD, WFBP, local SGD, partial sync / DreamDDP). Times are in seconds."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "syncplan 0.1.0");
  syncplan::cli::Action action;
  syncplan::cli::add_import_commands(app, action);
  syncplan::cli::add_plan_command(app, action);
  syncplan::cli::add_simulate_command(app, action);
  syncplan::cli::add_profile_command(app, action);
  syncplan::cli::add_profile_link_command(app, action);
  syncplan::cli::add_run_command(app, action);
  syncplan::cli::add_compare_command(app, action);
  syncplan::cli::add_report_command(app, action);
  syncplan::cli::add_whatif_command(app, action);
  try {
    if (const std::string unknown = unknown_command_message(app, argc, argv); !unknown.empty())
      throw CLI::ExtrasError(unknown, CLI::ExitCodes::ExtrasError);
    if (const std::string unknown = unknown_option_message(app, argc, argv); !unknown.empty())
      throw CLI::ExtrasError(unknown, CLI::ExitCodes::ExtrasError);
    app.parse(argc, argv);
    if (const std::string empty = empty_value_message(app); !empty.empty())
      throw CLI::ValidationError(empty, CLI::ExitCodes::ValidationError);
    if (const std::string radix = radix_value_message(app); !radix.empty())
      throw CLI::ValidationError(radix, CLI::ExitCodes::ValidationError);
    if (const std::string saturated = saturated_value_message(app); !saturated.empty())
      throw CLI::ValidationError(saturated, CLI::ExitCodes::ValidationError);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    if (launcher_rank() != 0) {
      std::this_thread::sleep_for(kReportGrace);
      return 2;
    }
    const std::string message = dynamic_cast<const CLI::ConversionError*>(&e) ? conversion_message(app, e.what())
                                                                               : std::string(e.what());
    std::cerr << "syncplan: " << syncplan::cli::one_line(message) << " (see --help)\n";
    return 2;
  }
  // A closed standard output (`>&-`) is refused before the command runs, so that nothing is written
  // for a printout that has nowhere to go (the helper's re-check: the outputs were left behind). A
  // full device, or a pipe whose reader left, fails only when written, after the outputs were
  // written whole (docs/formats.md); a pipe's reader leaving ends the process by SIGPIPE, as it
  // does `cat` (`syncplan ... | head` prints no error).
  if (::fcntl(STDOUT_FILENO, F_GETFD) < 0) {
    std::cerr << "syncplan: standard output is closed: the printout has nowhere to go (send it to /dev/null "
                 "instead of closing it)\n";
    return 2;
  }
  try {
    const int code = action ? action() : 2;
    // Only once the command has succeeded (cli_common.hpp: warn): a command that reported its own
    // error and returned non-zero (profile-link's agreed errors) keeps stderr to that one line.
    if (code == 0) syncplan::cli::flush_warnings();
    std::cout.flush();
    if (!std::cout) {
      // A full or closed standard output is where the printout was sent, as /dev/full given to
      // --report is: exit 2 naming it (the helper's re-check: exit 1, naming nothing). The files
      // were written whole before the printout.
      std::cerr << "syncplan: standard output: cannot write the printout (a full device, or a closed or broken pipe)\n";
      return 2;
    }
    return code;
  } catch (const syncplan::InputError& e) {
    std::cerr << "syncplan: " << syncplan::cli::one_line(e.what()) << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    // Inputs within the readers' limits can still be too large for this machine's memory (or a
    // ulimit): exit 2 with a sentence, not "error: std::bad_alloc" and exit 1 (the helper's
    // re-check). The outputs are written only at the end, so none is half-written.
    std::cerr << "syncplan: out of memory: the inputs need more than the "
              << syncplan::format_short(syncplan::available_memory_bytes() / 1e6, 0)
              << " MB this process may still allocate here; give smaller inputs (fewer layers, iterations, events or "
                 "traced workers)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "syncplan: error: " << syncplan::cli::one_line(e.what()) << '\n';
    return 1;
  }
}
