// The fatal-signal line (comm/fatal_signal.hpp) in a forked child: SIGTERM and SIGINT print the
// line last set, whole, on stderr and exit 1; a line is never torn while the loop rewrites it;
// the handlers are restored afterwards. Under mpirun: test_arrivals_cases.sh (signal case).
#include "comm/fatal_signal.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

using namespace syncplan;

namespace {

struct ChildResult {
  int status = 0;
  std::string stderr_text;
};

// Runs `body` in a child whose stderr goes into a pipe; sends `signal` after `delay` unless it is 0.
template <class Body>
ChildResult run_child(Body body, int signal = 0, std::chrono::milliseconds delay = {}) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], 2);
    body();
    _exit(42);  // the body was to be ended by its signal
  }
  close(pipe_fds[1]);
  if (signal != 0) {
    std::this_thread::sleep_for(delay);
    kill(child, signal);
  }
  ChildResult result;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.stderr_text.append(buffer, static_cast<std::size_t>(got));
  close(pipe_fds[0]);
  waitpid(child, &result.status, 0);
  return result;
}

const std::string kWhy = " (another rank failed or mpirun stopped the job)";

}  // namespace

TEST_CASE("fatal signal: SIGTERM prints the place last set, one line, and exits 1", "[fatal_signal]") {
  const ChildResult result = run_child([] {
    FatalSignalLine line("syncplan run: rank 3");
    line.set_place(11, "transformer.h.0.attn.c_attn");
    line.set_place(12, "transformer.h.3.mlp.c_proj");
    raise(SIGTERM);
  });
  REQUIRE(WIFEXITED(result.status));
  CHECK(WEXITSTATUS(result.status) == 1);
  CHECK(result.stderr_text ==
        std::string("syncplan run: rank 3: ended by a signal in iteration 12, bucket transformer.h.3.mlp.c_proj") + kWhy + "\n");
}

TEST_CASE("fatal signal: SIGINT too, the place before the first iteration and in words", "[fatal_signal]") {
  const ChildResult before = run_child([] {
    FatalSignalLine line("syncplan run: rank 0");
    raise(SIGINT);
  });
  REQUIRE(WIFEXITED(before.status));
  CHECK(WEXITSTATUS(before.status) == 1);
  CHECK(before.stderr_text == std::string("syncplan run: rank 0: ended by a signal before the first iteration") + kWhy + "\n");

  FatalSignalLine line("syncplan run: rank 1");
  line.set_place(7, "");
  CHECK(std::string(line.line()) == std::string("syncplan run: rank 1: ended by a signal in iteration 7") + kWhy);
  line.set_place(8, "lm_head", "rank 0 did not arrive");
  CHECK(std::string(line.line()) ==
        std::string("syncplan run: rank 1: ended by a signal in iteration 8, bucket lm_head; rank 0 did not arrive") + kWhy);
  line.set_place("while writing the checkpoint of step 200");
  CHECK(std::string(line.line()) ==
        std::string("syncplan run: rank 1: ended by a signal while writing the checkpoint of step 200") + kWhy);
  // A bucket name longer than the line is cut, and the line still ends with its newline.
  line.set_place(1, std::string(2000, 'x'));
  CHECK(line.line().size() < 512);
}

TEST_CASE("fatal signal: muted while the rank prints its own line, a signal is ignored", "[fatal_signal]") {
  // The child mutes, is sent SIGTERM, and must live on to print its own line and exit 5.
  const ChildResult result = run_child([] {
    FatalSignalLine line("syncplan run: rank 0");
    line.set_place(31, "lm_head");
    line.mute();
    if (!line.line().empty()) _exit(43);
    raise(SIGTERM);
    const char own[] = "syncplan run: rank 0: timed out\n";
    if (write(2, own, sizeof own - 1) < 0) _exit(44);
    _exit(5);
  });
  REQUIRE(WIFEXITED(result.status));
  CHECK(WEXITSTATUS(result.status) == 5);
  CHECK(result.stderr_text == "syncplan run: rank 0: timed out\n");
}

TEST_CASE("fatal signal: end_rank prints its line once, even when SIGTERM comes in its grace", "[fatal_signal]") {
  // The child ends itself with a 0.3 s grace; the parent's SIGTERM at 0.1 s lands inside it and
  // must neither print the fatal-signal line nor cut the grace short (exit status 1, one line).
  const auto start = std::chrono::steady_clock::now();
  const ChildResult result = run_child(
      [] {
        FatalSignalLine line("syncplan run: rank 2");
        line.set_place(9, "lm_head");
        line.end_rank("syncplan run: rank 2: iteration 9, bucket lm_head: timed out; rank 1 did not arrive", 0.3);
      },
      SIGTERM, std::chrono::milliseconds(100));
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(WIFEXITED(result.status));
  CHECK(WEXITSTATUS(result.status) == 1);
  CHECK(result.stderr_text == "syncplan run: rank 2: iteration 9, bucket lm_head: timed out; rank 1 did not arrive\n");
  CHECK(took_s >= 0.3);
}

TEST_CASE("fatal signal: a line rewritten in a tight loop is never torn", "[fatal_signal]") {
  // The child rewrites the place as fast as it can; the signal lands at an arbitrary moment, and
  // what comes out must be one whole line of one of the two places.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const ChildResult result = run_child(
        [] {
          FatalSignalLine line("syncplan run: rank 2");
          for (std::int64_t i = 0;; ++i) line.set_place(i, i % 2 ? "lm_head" : "transformer.h.1.ln_2");
        },
        SIGTERM, std::chrono::milliseconds(20 + 7 * attempt));
    REQUIRE(WIFEXITED(result.status));
    CHECK(WEXITSTATUS(result.status) == 1);
    static const std::regex whole(
        "syncplan run: rank 2: ended by a signal in iteration ([0-9]+), bucket (lm_head|transformer\\.h\\.1\\.ln_2) "
        "\\(another rank failed or mpirun stopped the job\\)\n");
    std::smatch match;
    REQUIRE(std::regex_match(result.stderr_text, match, whole));
    // Odd iterations name lm_head: the line's two halves come from one set_place.
    CHECK((std::stoll(match[1].str()) % 2 == 1) == (match[2].str() == "lm_head"));
  }
}

TEST_CASE("fatal signal: the handlers are restored when the line goes", "[fatal_signal]") {
  // Two lines one after the other (one at a time is allowed), then SIGTERM's default action ends
  // the child by the signal, with nothing printed.
  const ChildResult result = run_child([] {
    { FatalSignalLine first("syncplan run: rank 0"); }
    { FatalSignalLine second("syncplan run: rank 0"); }
    raise(SIGTERM);
  });
  REQUIRE(WIFSIGNALED(result.status));
  CHECK(WTERMSIG(result.status) == SIGTERM);
  CHECK(result.stderr_text.empty());
}
