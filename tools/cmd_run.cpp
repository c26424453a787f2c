// `syncplan run`: train under mpirun while executing a strategy or a plan, and write the log and
// the measured trace (SPEC sections 8 and 9, docs/runtime.md); the job is runtime/trainer.hpp.
#include "comm/mpi_communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "runtime/trainer.hpp"
#include "tools/cli_common.hpp"
#include "tools/model_profile.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

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
};

// The request fields of the trainer and the flags that set them.
constexpr std::initializer_list<FieldFlag> kRunFlags = {
    {"iterations", "--iterations"}, {"batch", "--batch"},       {"seq", "--seq"},
    {"timeout_s", "--timeout-s"},   {"device", "--device"},     {"period", "--period"},
    {"strategy", "--strategy"},     {"emulate_link_Gbps", "--emulate-link-Gbps"},
    {"emulate_latency_us", "--emulate-latency-us"}, {"learning_rate", "--lr"}};

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
  TrainRequest request;
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
  return request;
}

// The one-line progress display, rank 0 on a terminal only.
void show_progress(const IterationRecord& record, long long iterations) {
  std::fprintf(stderr, "\rsyncplan run: iteration %lld/%lld  loss %.4f  %.4f s/iteration  wait %.4f s ",
               static_cast<long long>(record.iteration + 1), iterations, record.loss, record.iteration_s, record.wait_s);
  std::fflush(stderr);
}

int run(const MpiSession& mpi, Communicator& comm, const RunOptions& options) {
  TrainRequest request;
  agree_on_input(mpi, [&] { request = with_flags(kRunFlags, [&] { return make_request(options, mpi.is_root()); }); });
  const bool terminal = mpi.is_root() && isatty(STDERR_FILENO) == 1;
  TrainProgress progress;
  if (terminal) progress = [&](const IterationRecord& record) { show_progress(record, options.iterations); };
  const TrainResult result = with_flags(kRunFlags, [&] { return run_training(mpi, comm, request, progress); });
  if (terminal) std::fputc('\n', stderr);
  if (!mpi.is_root()) return 0;
  double total_s = 0;
  for (const IterationRecord& record : result.records) total_s += record.iteration_s;
  const std::string& strategy = result.trace["syncplan"]["strategy"].get_ref<const std::string&>();
  std::printf("run: %s (%s, H = %d) on %d rank%s, %lld iterations: rank 0's loss %.4f -> %.4f, %.6f s per iteration\n",
              strategy == "plan" ? ("plan " + options.plan_path).c_str() : strategy.c_str(),
              result.trace["syncplan"]["sync"].get_ref<const std::string&>().c_str(),
              result.trace["syncplan"]["period"].get<int>(), mpi.size(), mpi.size() == 1 ? "" : "s", options.iterations, result.first_loss,
              result.last_loss, total_s / static_cast<double>(result.records.size()));
  if (request.link)
    std::printf("emulated link: %g Gbit/s, %g us latency (each all-reduce ends no earlier than the ring model's time)\n",
                request.link->bandwidth_Gbps, request.link->latency_us);
  if (!options.log_path.empty()) {
    write_text_file_atomic(options.log_path, result.log_text);
    std::printf("log written to %s\n", options.log_path.c_str());
  }
  if (!options.trace_path.empty()) {
    write_json_file_atomic(options.trace_path, result.trace);
    std::printf("trace written to %s\n", options.trace_path.c_str());
  }
  return 0;
}

int run_command(const RunOptions& options) {
  const MpiSession mpi;
  Communicator comm = make_mpi_communicator(mpi);
  return run_on_every_rank(mpi, [&] {
    try {
      return run(mpi, comm, options);
    } catch (const SyncTimeout& e) {
      // A bucket missed its deadline: its request stays in flight, so this rank ends the job.
      std::cerr << "syncplan: error: " << e.what() << '\n';
      comm.abort(1);
      return 1;
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
                      std::string("strategy to execute without a plan: ") + kScheduleStrategies);
  command->add_option("--period", options->period, "H, iterations per period, with --strategy (1..10000)");
  command->add_option("--model", options->model, "model spec: a name in data/models (e.g. tiny-gpt) or a file")->required();
  command->add_option("--data", options->data_path,
                      "training text, read as bytes (tokens 0..255); rank r of N trains on bytes [r n/N, (r+1) n/N)")
      ->required();
  command->add_option("--iterations", options->iterations, "optimizer steps to run (1..100000)")->required();
  command->add_option("--batch", options->batch, "sequences per rank and step (default: 4)");
  command->add_option("--seq", options->seq, "tokens per sequence, at most the model's context (default: 64)");
  command->add_option("--seed", options->seed, "seed of the initial parameters (the same on every rank) and dropout (default: 1)");
  command->add_option("--device", options->device, "cpu (cuda: not yet; refused) (default: cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--lr", options->lr, "AdamW learning rate (default: 0.001)");
  command->add_option("--log", options->log_path, "training log to write (JSON lines, one per iteration and rank; rank 0 writes)");
  command->add_option("--trace", options->trace_path, "measured Chrome trace to write (microseconds; rank 0 writes)");
  command->add_option("--timeout-s", options->timeout_s,
                      "deadline of each all-reduce's wait, seconds: a rank that dies or hangs ends the run within it "
                      "(default: 60)");
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
