// The signal handler and its two preformatted lines.
#include "comm/fatal_signal.hpp"

#include "core/errors.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace syncplan {

namespace {

constexpr std::size_t kLineBytes = 512;   // the longest line, newline included
constexpr std::size_t kPrefixBytes = 128;  // the longest prefix kept

struct Line {
  char text[kLineBytes] = {};
  std::size_t length = 0;  // bytes of text, newline included
};

// The handler's only state (see the class comment): two lines, the published one's index, the
// prefix, whether a FatalSignalLine is alive, and the handlers it replaced.
Line lines[2];
std::atomic<int> published{0};
char prefix_text[kPrefixBytes] = {};
bool installed = false;
struct sigaction previous_term {}, previous_int {};

static_assert(std::atomic<int>::is_always_lock_free, "the handler reads the index without a lock");

extern "C" void on_fatal_signal(int) {
  const Line& line = lines[published.load(std::memory_order_acquire)];
  if (line.length == 0) return;  // muted: the rank is printing its own line and ending itself
  std::size_t done = 0;
  while (done < line.length) {
    const ssize_t wrote = ::write(2, line.text + done, line.length - done);
    if (wrote <= 0) break;  // nothing else can be done from here
    done += static_cast<std::size_t>(wrote);
  }
  ::_exit(1);
}

// Formats into the unpublished buffer, then publishes it.
template <class... Args>
void publish(const char* format, Args... args) {
  const int next = 1 - published.load(std::memory_order_relaxed);
  Line& line = lines[next];
  int length = std::snprintf(line.text, kLineBytes, format, prefix_text, args...);
  length = std::clamp(length, 0, static_cast<int>(kLineBytes) - 2);
  line.text[length] = '\n';  // a cut line still ends its line
  line.length = static_cast<std::size_t>(length) + 1;
  published.store(next, std::memory_order_release);
}

constexpr const char* kWhy = "(another rank failed or mpirun stopped the job)";

}  // namespace

FatalSignalLine::FatalSignalLine(std::string_view prefix) {
  SYNCPLAN_CHECK(!installed);
  const std::size_t kept = std::min(prefix.size(), kPrefixBytes - 1);
  std::copy_n(prefix.data(), kept, prefix_text);
  prefix_text[kept] = '\0';
  set_place("before the first iteration");
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGINT);
  SYNCPLAN_CHECK(sigaction(SIGTERM, &action, &previous_term) == 0);
  SYNCPLAN_CHECK(sigaction(SIGINT, &action, &previous_int) == 0);
  installed = true;
}

FatalSignalLine::~FatalSignalLine() {
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGINT, &previous_int, nullptr);
  installed = false;
}

void FatalSignalLine::set_place(std::int64_t iteration, std::string_view bucket_first_layer, std::string_view note) {
  const auto cut = [](std::string_view text) { return static_cast<int>(std::min<std::size_t>(text.size(), kLineBytes)); };
  const auto at = static_cast<long long>(iteration);
  const char* separator = note.empty() ? "" : "; ";
  if (bucket_first_layer.empty())
    publish("%s: ended by a signal in iteration %lld%s%.*s %s", at, separator, cut(note), note.data(), kWhy);
  else
    publish("%s: ended by a signal in iteration %lld, bucket %.*s%s%.*s %s", at, cut(bucket_first_layer),
            bucket_first_layer.data(), separator, cut(note), note.data(), kWhy);
}

void FatalSignalLine::set_place(std::string_view where) {
  const auto length = static_cast<int>(std::min<std::size_t>(where.size(), kLineBytes));
  publish("%s: ended by a signal %.*s %s", length, where.data(), kWhy);
}

void FatalSignalLine::mute() {
  const int next = 1 - published.load(std::memory_order_relaxed);
  lines[next].length = 0;
  published.store(next, std::memory_order_release);
}

void FatalSignalLine::end_rank(std::string_view line, double grace_s) {
  mute();
  std::string text(line);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  if (grace_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(grace_s));
  ::_exit(1);
}

std::string_view FatalSignalLine::line() const {
  const Line& line = lines[published.load(std::memory_order_acquire)];
  return {line.text, line.length == 0 ? 0 : line.length - 1};
}

}  // namespace syncplan
