// The CPU training step in a steady state (core/host_memory.hpp): after
// keep_freed_memory(), as `syncplan` sets it first thing, a step of tiny-gpt (the CPU graph's
// forward and backward and AdamW, as the trainer and the profiler run them) maps no new pages, so
// iteration 20 computes in the state iteration 1 did. Page faults, not times: a count that two busy
// processes beside the test do not change, where a timing would (the fidelity script prints the
// times: tests/runtime/check_fidelity.py steady).
//
// The same loop runs twice, each in a fresh process (fork before anything is allocated): once with
// glibc's defaults, once after keep_freed_memory(). The second must add at most kSteadyPages minor
// faults per step after its warm-up; the first's count is printed beside it (the evidence that the
// setting is what keeps the step steady; glibc's default maps and unmaps large temporaries).
//
// usage: test_steady_compute MODEL_SPEC.json
#include "core/host_memory.hpp"
#include "model/adamw.hpp"
#include "model/cpu/cpu_graph.hpp"
#include "model/model_spec.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kWarmupSteps = 3;    // the first steps allocate the optimizer's moments, Eigen's caches
constexpr int kMeasuredSteps = 20;
// At most this many new pages per measured step (4 KiB each): a steady loop maps none; a few may
// come from the C library's own bookkeeping. tiny-gpt's arenas are 3.3 MB of parameters alone
// (about 800 pages), and a loop that faulted its temporaries in again each step measured 1,000+.
constexpr double kSteadyPages = 8;

// Minor faults per measured step of tiny-gpt (batch 4 x seq 32, the fidelity runs' workload).
double faults_per_step(const std::string& spec_path) {
  const syncplan::Model model = syncplan::expand_model(syncplan::read_model_spec_file(spec_path));
  syncplan::Workload workload;
  workload.batch = 4;
  workload.seq = 32;
  syncplan::cpu::CpuGraph graph(model, workload);
  graph.initialize_parameters(1);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(workload.tokens())), targets(ids.size());
  for (std::size_t t = 0; t < ids.size(); ++t) {
    ids[t] = static_cast<std::int64_t>((t * 37) % 256);
    targets[t] = static_cast<std::int64_t>((t * 37 + 37) % 256);
  }
  graph.set_batch(ids, targets);
  syncplan::AdamW optimizer(static_cast<std::int64_t>(graph.parameters().size()));
  long start = 0;
  for (int step = 0; step < kWarmupSteps + kMeasuredSteps; ++step) {
    if (step == kWarmupSteps) start = syncplan::minor_page_faults();
    graph.forward_backward();
    optimizer.step(graph.parameters(), graph.gradients());
  }
  return static_cast<double>(syncplan::minor_page_faults() - start) / kMeasuredSteps;
}

// Runs faults_per_step in a child process (after keep_freed_memory() when `steady`) and returns its
// result, or a negative number when the child failed.
double in_child(const std::string& spec_path, bool steady) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    close(pipe_fds[0]);
    if (steady && !syncplan::keep_freed_memory()) _exit(3);
    double faults = -1;
    try {
      faults = faults_per_step(spec_path);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "test_steady_compute: %s\n", error.what());
      _exit(1);
    }
    const bool written = write(pipe_fds[1], &faults, sizeof faults) == static_cast<ssize_t>(sizeof faults);
    _exit(written ? 0 : 1);
  }
  close(pipe_fds[1]);
  double faults = -1;
  const bool read_all = read(pipe_fds[0], &faults, sizeof faults) == static_cast<ssize_t>(sizeof faults);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    std::printf("skip: this C library has no setting to keep freed memory (not glibc)\n");
    std::exit(77);
  }
  return read_all && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? faults : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_steady_compute MODEL_SPEC.json\n");
    return 2;
  }
  const double default_faults = in_child(argv[1], false);
  const double steady_faults = in_child(argv[1], true);
  if (default_faults < 0 || steady_faults < 0) {
    std::printf("FAIL: a child process failed\n");
    return 1;
  }
  std::printf("minor page faults per tiny-gpt step (batch 4 x 32, after %d warm-up steps): %.1f with glibc's "
              "defaults, %.1f after keep_freed_memory() (at most %.0f allowed)\n",
              kWarmupSteps, default_faults, steady_faults, kSteadyPages);
  if (steady_faults > kSteadyPages) {
    std::printf("FAIL: the step is not steady: %.1f new pages per step\n", steady_faults);
    return 1;
  }
  std::printf("1 passed, 0 failed\n");
  return 0;
}
