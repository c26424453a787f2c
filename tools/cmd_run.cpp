// `syncplan run`: train under mpirun while executing a strategy or a plan, and write the log and
// the measured trace (SPEC sections 8 and 9, docs/runtime.md); the job is runtime/trainer.hpp.
#include "comm/fatal_signal.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/host_cpus.hpp"
#include "comm/nccl_backend.hpp"
#include "profiler/gpu_backend.hpp"
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "planner/strategy_table.hpp"
#include "runtime/trainer.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

namespace syncplan::cli {

namespace {

struct RunOptions {
  std::string plan_path;
  std::string strategy;
  std::string period;  // text: checked_period
  std::string model;
  std::string data_path;
  long long iterations = 0;
  long long batch = 4;
  long long seq = 64;
  unsigned long long seed = 1;
  std::string device = "cpu";
  double lr = 1e-3;
  std::string log_path;
  std::string trace_path;
  double timeout_s = 60;
  double emulate_Gbps = 0;
  double emulate_latency_us = 0;
  bool emulate_given = false;
  bool latency_given = false;
  std::string checkpoint_dir;
  long long checkpoint_every = 0;
  bool every_given = false;
  std::string resume_dir;
};

// The request fields of the trainer and the flags that set them.
constexpr std::initializer_list<FieldFlag> kRunFlags = {
    {"iterations", "--iterations"}, {"batch", "--batch"},       {"seq", "--seq"},
    {"timeout_s", "--timeout-s"},   {"device", "--device"},     {"period", "--period"},
    {"strategy", "--strategy"},     {"emulate_link_Gbps", "--emulate-link-Gbps"},
    {"emulate_latency_us", "--emulate-latency-us"}, {"learning_rate", "--lr"},
    {"checkpoint_every", "--checkpoint-every"}, {"checkpoint_dir", "--checkpoint"}};

// The request; `root` also checks the outputs (rank 0 alone writes them, perhaps on its own machine).
TrainRequest make_request(const RunOptions& options, bool root) {
  if (options.plan_path.empty() == options.strategy.empty())
    throw InputError(options.plan_path.empty() ? "give --plan PLAN.json or --strategy NAME --period H"
                                               : "--plan and --strategy: give one of them, not both");
  if (!options.plan_path.empty() && !options.period.empty())
    throw InputError("--period: a plan has its own period; give --period only with --strategy");
  if (!options.strategy.empty() && options.period.empty()) throw InputError("--strategy " + options.strategy + ": needs --period H");
  if (options.latency_given && !options.emulate_given)
    throw InputError("--emulate-latency-us: only with --emulate-link-Gbps (the emulated link's bandwidth)");
  if (options.checkpoint_dir.empty() != !options.every_given)
    throw InputError(options.checkpoint_dir.empty() ? "--checkpoint-every: only with --checkpoint DIR"
                                                    : "--checkpoint " + options.checkpoint_dir + ": needs --checkpoint-every K");
  TrainRequest request;
  request.checkpoint_dir = options.checkpoint_dir;
  request.checkpoint_every = options.checkpoint_every;
  request.resume_dir = options.resume_dir;
  request.model = model_spec_path(options.model).string();
  request.models_dir = data_dir() / "models";
  request.plan_path = options.plan_path;
  request.strategy = options.strategy;
  if (!options.period.empty()) request.period = checked_period(options.period);
  request.data_path = options.data_path;
  request.iterations = options.iterations;
  request.batch = options.batch;
  request.seq = options.seq;
  request.seed = options.seed;
  request.device = options.device;
  request.adamw.learning_rate = options.lr;
  request.timeout_s = options.timeout_s;
  if (options.emulate_given) request.link = EmulatedLink{options.emulate_Gbps, options.emulate_latency_us};
  std::vector<NamedPath> inputs{{"--data", options.data_path}};
  if (!options.plan_path.empty()) inputs.push_back({"--plan", options.plan_path});
  if (root) check_output_paths({{"--log", options.log_path}, {"--trace", options.trace_path}}, inputs);
  else check_input_paths(inputs);
  // The checkpoint folder is made during training: an output at its path or inside it would fail
  // only at the end, after training, and the log be lost (the helper's re-check: --log X
  // --checkpoint X trained 20 steps, then "cannot write file (it is a directory)").
  if (root && !options.checkpoint_dir.empty()) {
    const std::filesystem::path folder = output_target(options.checkpoint_dir, "--checkpoint " + options.checkpoint_dir);
    for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--log", options.log_path},
                                     std::pair<const char*, const std::string&>{"--trace", options.trace_path}}) {
      if (path.empty()) continue;
      const std::filesystem::path target = output_target(path, std::string(flag) + " " + path);
      const auto [in_folder, in_target] = std::mismatch(folder.begin(), folder.end(), target.begin(), target.end());
      if (in_folder != folder.end()) continue;
      // The folder itself, or a step folder the checkpoints write and delete (DIR/step-N/...).
      if (in_target == target.end() || in_target->string().starts_with("step-"))
        throw InputError(std::string(flag) + " " + path + ": " + (in_target == target.end() ? "is" : "is inside") +
                         " the --checkpoint folder " + options.checkpoint_dir +
                         (in_target == target.end() ? "" : "'s step folders") + "; write it elsewhere");
    }
  }
  return request;
}

// The one-line progress display, rank 0 on a terminal only.
void show_progress(const IterationRecord& record, long long iterations) {
  std::fprintf(stderr, "\rsyncplan run: iteration %lld/%lld  loss %.4f  %.4f s/iteration  wait %.4f s ",
               static_cast<long long>(record.iteration + 1), iterations, record.loss, record.iteration_s, record.wait_s);
  std::fflush(stderr);
}

int run(const MpiSession& mpi, FatalSignalLine& line, const RunOptions& options) {
  TrainRequest request;
  // A bad --timeout-s is reported through this agreement, which then runs under the default deadline.
  try {
    agree_on_input(mpi, [&] { request = with_flags(kRunFlags, [&] { return make_request(options, mpi.is_root()); }); },
                   options.timeout_s >= 1 && options.timeout_s <= 86400 ? options.timeout_s : 60.0);
  } catch (const CommTimeout& e) {
    throw RunTimeout("rank " + std::to_string(mpi.rank()) + ": before the first iteration: " + e.what());
  }
  // Ranks that time-slice a machine's CPUs compute more than the profile and the DES say: each
  // machine's first rank says so, once, when the first iteration has run (the setup's bad input
  // stays one line).
  std::optional<std::string> oversubscribed;
  if (request.device == "cpu" && mpi.local_rank() == 0)
    oversubscribed = oversubscription_warning(mpi.local_size(), mpi.node_cpus());
  const bool terminal = mpi.is_root() && isatty(STDERR_FILENO) == 1;
  const TrainProgress progress = [&](const IterationRecord& record) {
    if (oversubscribed) {
      warn(*std::exchange(oversubscribed, std::nullopt));
      flush_warnings();
    }
    if (terminal) show_progress(record, options.iterations);
  };
  const TrainResult result = with_flags(kRunFlags, [&] {
    const CommunicatorFactory make_comm = [&](int cuda_device) {
      if (cuda_device < 0) return make_mpi_communicator(mpi, request.timeout_s);
      return make_nccl_communicator(mpi, require_gpu_backend("device", "cuda").nccl(), cuda_device, request.timeout_s);
    };
    return run_training(mpi, make_comm, request, progress, &line);
  });
  if (terminal) std::fputc('\n', stderr);
  if (!mpi.is_root()) return 0;
  double total_s = 0;
  for (const IterationRecord& record : result.records) total_s += record.iteration_s;
  const std::string& strategy = result.trace["syncplan"]["strategy"].get_ref<const std::string&>();
  // A resumed run did the iterations from its checkpoint's step to --iterations.
  const long long first = result.records.front().iteration;
  const std::string resumed = first > 0 ? " (resumed at iteration " + std::to_string(first) + ")" : "";
  std::printf("run: %s (%s, H = %d) on %d rank%s%s, %zu iteration%s%s: rank 0's loss %.4f -> %.4f, %.6f s per iteration\n",
              strategy == "plan" ? ("plan " + options.plan_path).c_str() : strategy.c_str(),
              result.trace["syncplan"]["sync"].get_ref<const std::string&>().c_str(),
              result.trace["syncplan"]["period"].get<int>(), mpi.size(), mpi.size() == 1 ? "" : "s",
              request.device == "cuda" ? (mpi.size() == 1 ? " (cuda: one GPU)" : " (cuda: one GPU each)") : "",
              result.records.size(), result.records.size() == 1 ? "" : "s",
              resumed.c_str(), result.first_loss, result.last_loss, total_s / static_cast<double>(result.records.size()));
  if (request.link)
    std::printf("emulated link: %g Gbit/s, %g us latency (each all-reduce ends no earlier than the ring model's time)\n",
                request.link->bandwidth_Gbps, request.link->latency_us);
  // Both outputs whole or neither (a --trace to /dev/full once left the log written).
  OutputFiles outputs;
  if (!options.log_path.empty()) outputs.add(options.log_path, result.log_text, "--log");
  if (!options.trace_path.empty()) outputs.add_json(options.trace_path, result.trace, "--trace");
  outputs.commit();
  if (!options.log_path.empty()) std::printf("log written to %s\n", options.log_path.c_str());
  if (!options.trace_path.empty()) std::printf("trace written to %s\n", options.trace_path.c_str());
  return 0;
}

int run_command(const RunOptions& options) {
  const MpiSession mpi;
  // From here on SIGTERM (mpirun ending the job after a rank died) prints where this rank was.
  const std::string prefix = "syncplan run: rank " + std::to_string(mpi.rank());
  FatalSignalLine line(prefix);
  return run_on_every_rank(mpi, [&]() -> int {
    try {
      return run(mpi, line, options);
    } catch (const RunTimeout& e) {
      // A peer missed a deadline: requests stay in flight, so this rank ends itself with its one
      // line (not MPI_Abort, whose survivors' lines may be lost; comm/fatal_signal.hpp).
      line.end_rank("syncplan run: " + std::string(e.what()));
    }
  });
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand(
      "run",
      "Train a model under `mpirun -np N` (one rank per process, CPU) while executing a strategy or a plan with "
      "DreamDDP's semantics (SPEC section 5): write the training log (JSON lines, SPEC section 8) and a measured "
      "Chrome trace in the simulator's schema (docs/runtime.md). Times are seconds.");
  command->add_option("--plan", options->plan_path, "syncplan.plan/v1 file to execute (its layers must be the model's)");
  command->add_option("--strategy", options->strategy,
                      "strategy to execute without a plan: " + strategy_names_text(StrategyUse::kRun) +
                          " (--plan or --strategy is required; no default)");
  command->add_option("--period", options->period, "H, iterations per period, with --strategy (1..10000)");
  command->add_option("--model", options->model, "model spec: a name in data/models (e.g. tiny-gpt) or a file")->required();
  command->add_option("--data", options->data_path,
                      "training text, read as bytes (tokens 0..255); rank r of N trains on bytes [r n/N, (r+1) n/N)")
      ->required();
  command->add_option("--iterations", options->iterations, "the step to train to (1..100000): a fresh run takes that many optimizer steps, a resumed one "
                      "continues from its checkpoint's step")->required();
  command->add_option("--batch", options->batch, "sequences per rank and step (default: 4)");
  command->add_option("--seq", options->seq, "tokens per sequence, at most the model's context (default: 64)");
  command
      ->add_option("--seed", options->seed, "seed of the initial parameters (the same on every rank) and dropout (default: 1)")
      ->check([](const std::string& text) -> std::string {
        // CLI11 reads unsigned numbers with strtoull, which takes "-1" as 2^64 - 1 and clamps what
        // is beyond it: only the digits of a number in [0, 2^64 - 1] are a seed.
        const std::string largest = "18446744073709551615";
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        const std::string trimmed = digits ? text.substr(std::min(text.find_first_not_of('0'), text.size() - 1)) : text;
        if (!digits || trimmed.size() > largest.size() || (trimmed.size() == largest.size() && trimmed > largest))
          return "must be a whole number in [0, " + largest + "], got '" + text + "'";
        return "";
      });
  command->add_option("--device", options->device, "cpu, or cuda: one GPU per rank, NCCL (default: cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--lr", options->lr, "AdamW learning rate, dimensionless (default: 0.001)");
  command->add_option("--log", options->log_path, "training log to write (JSON lines, one per iteration and rank; rank 0 writes)");
  command->add_option("--trace", options->trace_path, "measured Chrome trace to write (microseconds; rank 0 writes)");
  command->add_option("--timeout-s", options->timeout_s,
                      "deadline of each all-reduce's wait, seconds: a rank that dies or hangs ends the run within it "
                      "(default: 60)");
  command->add_option("--checkpoint", options->checkpoint_dir,
                      "folder to save checkpoints in (DIR/step-N/rank-R.ckpt and a manifest; docs/formats.md), with "
                      "--checkpoint-every");
  command->add_option("--checkpoint-every", options->checkpoint_every,
                      "save a checkpoint after every K-th step, steps >= 1 (the two newest complete ones are kept; "
                      "required with --checkpoint, no default)")
      ->each([options](const std::string&) { options->every_given = true; });
  command->add_option("--resume", options->resume_dir,
                      "continue from the latest complete checkpoint in DIR (the same plan, model, batch, seq, ranks "
                      "and seed); --iterations is the step to train to");
  command->add_option("--emulate-link-Gbps", options->emulate_Gbps,
                      "emulate a slow link: each all-reduce ends no earlier than the ring model's time at this "
                      "bandwidth, Gbit/s (off by default; docs/runtime.md)")
      ->each([options](const std::string&) { options->emulate_given = true; });
  command->add_option("--emulate-latency-us", options->emulate_latency_us,
                      "the emulated link's one-way latency, microseconds (default: 0)")
      ->each([options](const std::string&) { options->latency_given = true; });
  command->callback([&action, options] { action = [options] { return run_command(*options); }; });
}

}  // namespace syncplan::cli
