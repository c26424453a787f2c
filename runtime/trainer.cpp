// The training loop of `syncplan run`: GPT-style models on a training device (the CPU, or a CUDA
// device through the GPU backend library) with AdamW, the executor's hooks around each layer,
// checkpoints, the deadlines and the late ranks' names, the log and the measured trace
// (runtime/trainer.hpp, docs/runtime.md sections 3, 6 and 10).
#include "runtime/trainer.hpp"

#include "comm/arrivals.hpp"
#include "runtime/late_rank_watch.hpp"
#include "comm/mpi_check.hpp"
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "model/model_spec.hpp"
#include "profiler/gpu_backend.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/fingerprint.hpp"
#include "runtime/rank_agreement.hpp"
#include "runtime/training_device.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <unistd.h>

namespace syncplan {

namespace {

// The largest batch or sequence a request may ask for: B S tokens of activations must fit in memory
// long before this (CpuGraph refuses nothing itself).
constexpr std::int64_t kMaxTokensPerBatch = std::int64_t{1} << 24;
// Complete checkpoints kept in --checkpoint DIR (older ones are removed).
constexpr int kCheckpointsKept = 2;
// The shortest --timeout-s (s): a deadline detects a dead or hung rank; far shorter ones fail healthy runs.
constexpr double kShortestTimeout_s = 1.0;

// ---- gathering to rank 0, with a deadline -------------------------------------------------------

// Waits for `request` with a deadline (wait_request_within, polled every 200 us): MPI's blocking
// collectives would wait forever for a stopped rank, so everything after the barrier
// that starts the clock polls with a deadline.
void wait_or_throw(MPI_Request& request, double deadline_s, int rank, const char* what) {
  try {
    wait_request_within(request, what, deadline_s, {}, 200);
  } catch (const CommTimeout& e) {
    throw RunTimeout("rank " + std::to_string(rank) + ": " + e.what());
  }
}

// Every rank's `text` on rank 0 (in rank order), nothing on the others.
std::vector<std::string> gather_text(const MpiSession& mpi, const std::string& text, double deadline_s) {
  long long length = static_cast<long long>(text.size());
  std::vector<long long> lengths(mpi.is_root() ? mpi.size() : 0);
  MPI_Request request = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Igather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &request));
  wait_or_throw(request, deadline_s, mpi.rank(), "gathering the log lengths to rank 0");
  std::vector<int> counts, offsets;
  std::string all;
  if (mpi.is_root()) {
    long long total = 0;
    for (const long long each : lengths) {
      if (each > std::numeric_limits<int>::max() || total + each > std::numeric_limits<int>::max())
        throw InputError("the log and trace of this run exceed 2 GiB: run fewer --iterations");
      counts.push_back(static_cast<int>(each));
      offsets.push_back(static_cast<int>(total));
      total += each;
    }
    all.resize(static_cast<std::size_t>(total));
  }
  if (length > std::numeric_limits<int>::max()) throw InputError("the log and trace of this run exceed 2 GiB: run fewer --iterations");
  SYNCPLAN_MPI_CHECK(MPI_Igatherv(text.data(), static_cast<int>(length), MPI_CHAR, all.data(), counts.data(),
                                  offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD, &request));
  wait_or_throw(request, deadline_s, mpi.rank(), "gathering the log and trace to rank 0");
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < counts.size(); ++r) texts.push_back(all.substr(offsets[r], counts[r]));
  return texts;
}

// ---- the run ------------------------------------------------------------------------------------

// What the setup read, on every rank.
struct Setup {
  ModelSpec spec;
  Model model;
  Schedule schedule;
  std::string schedule_identity;  // fingerprint.hpp's canonical text of the plan or strategy
  Workload workload;
  std::optional<ByteShard> shard;
  std::optional<GpuBackend> gpu;  // --device cuda: the loaded GPU backend library
  int cuda_device = -1;           // --device cuda: this rank's CUDA device (its local rank)
};

// --device cuda: the backend library (check_train_request found it) and this rank's device, one
// per rank on its machine (NCCL refuses two ranks of one communicator on one GPU). Throws
// FieldError "device cuda: ..." when there is no device or too few.
void choose_cuda_device(const MpiSession& mpi, Setup& setup) {
  setup.gpu = require_gpu_backend("device", "cuda");
  std::string why;
  const int devices = setup.gpu->device_count(why);
  if (devices == 0) throw FieldError("device", "device cuda: no CUDA device is visible (" + why + ")");
  if (mpi.local_rank() >= devices)
    throw FieldError("device", "device cuda: rank " + std::to_string(mpi.rank()) + " is local rank " +
                                   std::to_string(mpi.local_rank()) + " of its machine, which has " +
                                   std::to_string(devices) + " visible CUDA device" + (devices == 1 ? "" : "s") +
                                   ": run one rank per GPU");
  setup.cuda_device = mpi.local_rank();
}

// A delayed-averaging plan (docs/runtime.md section 11): on a GPU the backend must offer the
// snapshots and corrections in device memory; and a checkpoint saves no sync in flight, so every
// step it is saved after must be a period position where none is. The steps n K (K =
// checkpoint_every) fall on the positions that are multiples of gcd(K, H). Throws FieldError
// "device" or "checkpoint_every".
void check_delayed_run(const TrainRequest& request, const Schedule& schedule, const Setup& setup) {
  if (setup.gpu) {
    const GpuTrainingEntryPoints& training = setup.gpu->training();
    if (training.snapshot_buffer == nullptr || training.snapshot == nullptr || training.correct == nullptr)
      throw FieldError("device", std::string("device cuda: the GPU backend (") + setup.gpu->description() +
                                     ") has no snapshots and corrections for the delayed-averaging plan " +
                                     request.plan_path + " (sync_delays; docs/runtime.md section 11)");
  }
  if (request.checkpoint_dir.empty()) return;
  const int period = schedule.period();
  const std::int64_t step = std::gcd(request.checkpoint_every, static_cast<std::int64_t>(period));
  for (std::int64_t position = step; position < period; position += step)
    if (const auto flying = schedule.in_flight_at(static_cast<int>(position))) {
      const ScheduleBucket& bucket = schedule.iterations[flying->first][flying->second];
      throw FieldError("checkpoint_every",
                       "checkpoint_every: " + std::to_string(request.checkpoint_every) + " saves a step at period position " +
                           std::to_string(position) + " of " + std::to_string(period) + ", where the sync of '" +
                           schedule.layer_names[bucket.layers.front()] + "' started in the period's iteration " +
                           std::to_string(flying->first) + " with delay " + std::to_string(bucket.delay) +
                           " is in flight: with this delayed-averaging plan choose a multiple of the period " +
                           std::to_string(period));
    }
}

// The settings behind the run's fingerprint as the command line gave them (CheckpointIdentity::settings).
std::vector<std::pair<std::string, std::string>> run_settings(const TrainRequest& request) {
  std::vector<std::pair<std::string, std::string>> settings = {
      {"--model", request.model}, {"--batch", std::to_string(request.batch)}, {"--seq", std::to_string(request.seq)}};
  if (request.plan_path.empty()) {
    settings.emplace_back("--strategy", request.strategy);
    settings.emplace_back("--period", std::to_string(request.period));
  } else {
    settings.emplace_back("--plan", request.plan_path);
  }
  return settings;
}

Setup read_setup(const MpiSession& mpi, const TrainRequest& request) {
  check_train_request(request);
  Setup setup;
  setup.spec = read_model_spec_file(resolve_model_spec(request.model, request.models_dir).string());
  setup.model = expand_model(setup.spec);
  setup.workload = {request.batch, request.seq, Dtype::kFp32};
  check_workload(setup.model, setup.workload);
  try {
    require_byte_vocabulary(setup.spec);
  } catch (const InputError& e) {
    throw InputError("--model " + request.model + ": " + e.what());
  }
  if (request.plan_path.empty()) {
    setup.schedule = strategy_schedule(setup.model, request.strategy, request.period);
    setup.schedule_identity = schedule_identity(request.strategy, request.period);
  } else {
    setup.schedule = read_plan_schedule(setup.model, request.plan_path);
    setup.schedule_identity = schedule_identity(read_plan_file(request.plan_path, runtime_profile(setup.model)));
  }
  try {
    setup.shard.emplace(request.data_path, mpi.rank(), mpi.size(), request.batch, request.seq);
  } catch (const InputError& e) {
    throw InputError("--data " + std::string(e.what()));
  }
  if (request.device == "cuda") choose_cuda_device(mpi, setup);
  if (setup.schedule.delayed()) check_delayed_run(request, setup.schedule, setup);
  return setup;
}

// The deadline of the setup's agreements: the request's when it is in range, else --timeout-s's
// default: a bad --timeout-s is itself reported through an agreement, which a deadline of 1e-4 s
// (below the range) ended as a timeout on every rank instead of the range's one line.
double setup_deadline_s(double timeout_s) {
  return timeout_s >= kShortestTimeout_s && timeout_s <= limits::kLongestTime_s ? timeout_s : 60.0;
}

// The checkpoint of this rank's state after `step` steps.
TrainingState training_state(const TrainingDevice& device, const ByteShard& shard, std::int64_t step, int period,
                             std::uint64_t seed) {
  TrainingState state;
  state.step = step;
  state.period_position = step % period;
  state.data_cursor = shard.cursor();
  state.rng_seed = seed;
  // Dropout draws are counter based (seed + step, then the element index): the steps taken are
  // the RNG's whole position.
  state.rng_counter = static_cast<std::uint64_t>(step);
  device.save(state);  // parameters, AdamW's moments and step counter
  return state;
}

// Puts a loaded checkpoint back. Throws InputError naming the folder when it cannot continue
// this run: another --seed, a step at or past --iterations, an inconsistent period position.
void restore_state(const TrainingState& state, const TrainRequest& request, int period, TrainingDevice& device,
                   ByteShard& shard) {
  const std::string origin = "--resume " + request.resume_dir.string() + ": step " + std::to_string(state.step);
  if (state.rng_seed != request.seed)
    throw InputError(origin + " was trained with --seed " + std::to_string(state.rng_seed) + ", this run has --seed " +
                     std::to_string(request.seed));
  if (state.step >= request.iterations)
    throw InputError(origin + " is at or past --iterations " + std::to_string(request.iterations) +
                     ": nothing is left to train (raise --iterations)");
  if (state.period_position != state.step % period || state.rng_counter != static_cast<std::uint64_t>(state.step))
    throw InputError(origin + ": period position " + std::to_string(state.period_position) + " or RNG counter " +
                     std::to_string(state.rng_counter) + " does not follow from the step (period " +
                     std::to_string(period) + ")");
  device.restore(state);
  try {
    shard.set_cursor(state.data_cursor);
  } catch (const InputError& e) {
    throw InputError(origin + ": " + e.what());
  }
}

Json about_run(const TrainRequest& request, const Schedule& schedule, int ranks) {
  Json about{{"source", "measured"},     {"strategy", schedule.strategy}, {"algorithm", schedule.algorithm},
             {"period", schedule.period()}, {"sync", sync_kind_name(schedule.kind)}, {"ranks", ranks},
             {"model", request.model},   {"batch", request.batch},       {"seq", request.seq},
             {"iterations", request.iterations}, {"device", request.device}};
  if (!request.plan_path.empty()) about["plan"] = request.plan_path;
  if (request.link)
    about["emulated_link"] = {{"bandwidth_Gbps", request.link->bandwidth_Gbps}, {"latency_us", request.link->latency_us}};
  else
    about["emulated_link"] = nullptr;
  return about;
}

}  // namespace

void check_train_request(const TrainRequest& request) {
  if (request.iterations < 1 || request.iterations > limits::kMaxIterations)
    throw FieldError("iterations", "iterations: must be in [1, " + std::to_string(limits::kMaxIterations) + "], got " +
                                       std::to_string(request.iterations));
  if (request.batch < 1 || request.batch > kMaxTokensPerBatch)
    throw FieldError("batch", "batch: must be in [1, " + std::to_string(kMaxTokensPerBatch) + "], got " +
                                  std::to_string(request.batch));
  if (request.seq < 1 || request.seq > kMaxTokensPerBatch / request.batch)
    throw FieldError("seq", "seq: must be >= 1 with batch x seq at most " + std::to_string(kMaxTokensPerBatch) +
                                ", got " + std::to_string(request.seq));
  // At most a day (limits::kLongestTime_s): a deadline of 1e10 s overflows the nanosecond clocks
  // of the NCCL waits (int64 ns end at 9.2e9 s) and would end every wait at once (overflow audit).
  // At least 1 s: the deadline detects a dead or hung rank, and below a few ms even one rank's own
  // all-reduces missed it (exit 1 for what was a bad option; the command-line fuzzer).
  if (!(request.timeout_s >= kShortestTimeout_s && request.timeout_s <= limits::kLongestTime_s))
    throw FieldError("timeout_s", "timeout_s: must be a number of seconds in " + number_text(kShortestTimeout_s) + ".." +
                                      number_text(limits::kLongestTime_s) + ", got " + number_text(request.timeout_s));
  if (!(request.adamw.learning_rate > 0 && request.adamw.learning_rate < kMaxLearningRate))
    throw FieldError("learning_rate", "learning_rate: must be a number > 0 and below " +
                                          number_text(kMaxLearningRate) + " (AdamW's steps would overflow), got " +
                                          number_text(request.adamw.learning_rate));
  if (request.device == "cuda") {
    const GpuBackend gpu = require_gpu_backend("device", "cuda");  // FieldError "device cuda: ..." with the loader's reason
    if (gpu.training().create == nullptr)
      throw FieldError("device", std::string("device cuda: the GPU backend (") + gpu.description() + ") has no trainer");
    if (gpu.nccl().open == nullptr || gpu.nccl().unique_id == nullptr)
      throw FieldError("device", std::string("device cuda: the GPU backend (") + gpu.description() +
                                     ") was built without NCCL, which the GPU runtime averages with");
  } else if (request.device != "cpu")
    throw FieldError("device", "device: unknown '" + request.device + "' (choose from cpu, cuda)");
  if (request.link) emulated_cluster(*request.link, 1);  // its range checks
  if (!request.checkpoint_dir.empty() && request.checkpoint_every < 1)
    throw FieldError("checkpoint_every", "checkpoint_every: must be >= 1 iterations, got " +
                                             std::to_string(request.checkpoint_every));
  if (!request.checkpoint_dir.empty()) {
    check_checkpoint_folder(request.checkpoint_dir);
    // A fresh run into a folder of saved steps would interleave its steps with another run's and
    // prune them (the two newest are kept): refused unless this run continues that folder, as
    // Hugging Face's Trainer refuses a non-empty output_dir without overwrite_output_dir.
    const std::vector<std::int64_t> steps = checkpoint_steps(request.checkpoint_dir);
    std::error_code ec;
    const bool continues = !request.resume_dir.empty() &&
                           std::filesystem::equivalent(request.resume_dir, request.checkpoint_dir, ec) && !ec;
    if (!steps.empty() && !continues)
      throw FieldError("checkpoint_dir", "checkpoint_dir: " + request.checkpoint_dir.string() +
                                             ": holds checkpoints of a run already (step " + std::to_string(steps.back()) +
                                             "); continue it with --resume " + request.checkpoint_dir.string() +
                                             ", or give an empty folder (checked before training)");
  }
}

void check_checkpoint_folder(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const auto refuse = [&](const std::string& why) {
    throw FieldError("checkpoint_dir", "checkpoint_dir: " + dir.string() + ": " + why + " (checked before training)");
  };
  // The folder itself if it exists, else the nearest folder above it that does: the saves create
  // the rest there (mkdir -p). Nothing is created on the way: a refused run leaves no folder, and
  // ranks that check one folder at once touch only names of their own.
  std::error_code ec;
  fs::path existing = dir;
  while (!fs::exists(fs::symlink_status(existing, ec)) && existing.has_relative_path() && existing != existing.parent_path())
    existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec))
    refuse(existing == dir ? "exists and is not a folder" : existing.string() + " is not a folder");
  // A folder of this process's own name made and removed there: a folder one may not write in
  // (or a file system like /proc) fails here, not after the first K steps.
  static std::atomic<unsigned> probes{0};
  const fs::path probe =
      existing / (".syncplan-probe-" + std::to_string(::getpid()) + "-" + std::to_string(probes.fetch_add(1)));
  if (!fs::create_directory(probe, ec) || ec)
    refuse("cannot create a folder in " + existing.string() + " (" + (ec ? ec.message() : "it exists") + ")");
  fs::remove(probe, ec);
}

Json log_line(const IterationRecord& record, const std::optional<EmulatedLink>& link) {
  Json synced = Json::array(), buckets = Json::array();
  for (const std::vector<std::string>& bucket : record.buckets) {
    for (const std::string& name : bucket) synced.push_back(name);
    buckets.push_back(bucket);
  }
  Json line{{"iteration", record.iteration}, {"rank", record.rank},         {"loss", record.loss},
            {"iteration_s", record.iteration_s}, {"compute_s", record.compute_s}, {"wait_s", record.wait_s},
            {"synced_layers", std::move(synced)}, {"buckets", std::move(buckets)}};
  if (record.delayed) {
    Json applied = Json::array();
    for (const AppliedRecord& sync : record.applied)
      applied.push_back({{"iteration", sync.iteration}, {"layers", sync.layers}, {"delay", sync.delay},
                         {"start_s", sync.start_s}, {"end_s", sync.end_s}, {"applied_s", sync.applied_s}});
    line["sync_delays"] = record.sync_delays;
    line["applied"] = std::move(applied);
  }
  if (link) line["emulated_link"] = {{"bandwidth_Gbps", link->bandwidth_Gbps}, {"latency_us", link->latency_us}};
  return line;
}

void agree_on_input(const MpiSession& mpi, const std::function<void()>& fn, double deadline_s) {
  std::exception_ptr failure;
  std::optional<std::string> message;
  try {
    fn();
  } catch (const InputError& e) {
    failure = std::current_exception();
    message = (mpi.rank() == 0 ? std::string() : "rank " + std::to_string(mpi.rank()) + ": ") + e.what();
  }
  try {
    agree_on_error(mpi, message, "the agreement on the run's input", deadline_s);
  } catch (const InputError& agreed) {
    // The lowest failing rank rethrows its own error (a FieldError stays one, so that the command
    // line can name its flag); the others the message it sent.
    if (failure && message && agreed.what() == message->substr(0, kAgreedMessageBytes - 1)) std::rethrow_exception(failure);
    throw;
  }
}


namespace {

// ---- the run's pieces, in the order run_training uses them -------------------------------------

// Everything the run reads and builds before its first iteration. Built in place and never moved:
// the training device keeps references to the setup's model and GPU backend and to the clock.
struct PreparedRun {
  RunClock clock;
  std::optional<Setup> setup;
  std::unique_ptr<TrainingDevice> device;
  std::optional<CheckpointIdentity> identity;
  std::int64_t first_step = 0;  // the step the loop starts at: 0, or a resumed checkpoint's
};

// The setup and training device (agreed on every rank), the check that every rank runs the same
// run, the initial parameters and, with --resume, the checkpoint put back. Throws as run_training.
void prepare_run(const MpiSession& mpi, const TrainRequest& request, FatalSignalLine* line, PreparedRun& run) {
  const double setup_s = setup_deadline_s(request.timeout_s);
  const std::string me = "rank " + std::to_string(mpi.rank());
  try {
    // A model too large for one rank's device memory is bad input on that rank, agreed like the rest.
    agree_on_input(mpi, [&] {
      const Setup& setup = run.setup.emplace(read_setup(mpi, request));
      run.device = setup.gpu ? make_cuda_training_device(*setup.gpu, setup.model, setup.workload, request.adamw,
                                                         setup.cuda_device, run.clock)
                             : make_cpu_training_device(setup.model, setup.workload, request.adamw, run.clock);
    }, setup_s);
    run.identity = CheckpointIdentity{
        fingerprint_run(run.setup->schedule_identity, run.setup->spec, request.batch, request.seq, mpi.size()),
        mpi.rank(), mpi.size(), run_settings(request)};
    require_same_run(mpi, run.identity->fingerprint, setup_s);
  } catch (const CommTimeout& e) {
    throw RunTimeout(me + ": before the first iteration: " + e.what());
  }
  run.device->initialize(request.seed);
  if (request.resume_dir.empty()) return;
  if (line) line->set_place("while reading the checkpoint of --resume");
  try {
    const TrainingState state =
        load_checkpoint(mpi, request.resume_dir, *run.identity, run.device->parameter_count(), request.timeout_s);
    run_agreed(mpi, "the agreement on the resumed state", request.timeout_s, [&] {
      restore_state(state, request, run.setup->schedule.period(), *run.device, *run.setup->shard);
    });
    run.first_step = state.step;
  } catch (const CommTimeout& e) {
    throw RunTimeout(me + ": while reading the checkpoint of --resume: " + e.what());
  }
}

// The run's communicators (the buckets' and the arrival messages'), made once the setup's
// agreements have passed, so that bad input never reaches them.
struct RunChannels {
  RunChannels(const MpiSession& mpi, const CommunicatorFactory& make_comm, int cuda_device, double timeout_s)
      : comm(make_comm(cuda_device)), arrivals(mpi, timeout_s) {}
  Communicator comm;
  Arrivals arrivals;
};

// The executor's options: what each bucket waits for (`ready`, by layer: the loop stores each
// layer's backward result there), a GPU's device-memory snapshots of a delayed plan (on the CPU
// the executor keeps them itself; docs/runtime.md section 11), the deadline, the emulated link,
// the first iteration and the watch's hooks. `device`, `ready` and `watch` must outlive the executor.
ExecutorOptions executor_options(const TrainRequest& request, TrainingDevice& device, const std::vector<void*>& ready,
                                 std::int64_t first_step, LateRankWatch& watch) {
  ExecutorOptions options;
  options.ready_event = [&ready](std::size_t layer) { return ready.at(layer); };
  if (device.device_snapshots())
    options.device_snapshots = DeviceSnapshots{
        [&device](std::size_t floats) { return device.snapshot_buffer(floats); },
        [&device](std::span<const std::span<float>> tensors, std::span<float> own, std::span<float> mean) {
          return device.snapshot(tensors, own, mean);
        },
        [&device](std::span<const std::span<float>> tensors, std::span<const float> own, std::span<const float> mean) {
          device.correct(tensors, own, mean);
        }};
  options.timeout_s = request.timeout_s;
  options.link = request.link;
  options.first_iteration = first_step;
  options.watch = watch.hooks();
  return options;
}

// Starts every rank's clock together (to within the barrier's exit skew); a rank that hangs before
// it ends the others at the deadline rather than never.
void start_clocks(const MpiSession& mpi, double timeout_s, RunClock& clock) {
  MPI_Request barrier = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
  wait_or_throw(barrier, timeout_s, mpi.rank(), "the barrier that starts the run's clock");
  clock.restart();
}

// One iteration's computation with the executor's hooks around it: the batch, forward, backward
// (each layer's ready event into `ready`), the step. The executor's iteration has begun.
IterationCompute train_iteration(TrainingDevice& device, Executor& executor, ByteShard& shard, std::uint64_t seed,
                                 std::vector<void*>& ready) {
  const ByteBatch batch = shard.next();
  device.set_batch(batch.ids, batch.targets, seed + static_cast<std::uint64_t>(executor.iteration()));
  device.begin();
  const std::size_t layers = device.layer_count();
  for (std::size_t l = 0; l < layers; ++l) {
    device.forward(l);
    executor.layer_forward_done(l);
  }
  for (std::size_t l = layers; l-- > 0;) {
    ready[l] = device.backward(l);
    executor.layer_backward_done(l);
  }
  executor.before_step();
  device.step();
  // The step is done before after_step's buckets (flsgd) read the parameters.
  const IterationCompute compute = device.finish();
  executor.after_step();
  return compute;
}

// The iteration's layer computations and update in the trace.
void trace_compute(MeasuredTrace& trace, std::int64_t iteration, const IterationCompute& compute) {
  const std::size_t layers = compute.forward.size();
  for (std::size_t l = 0; l < layers; ++l)
    trace.record({EventKind::kForward, iteration, {l}, compute.forward[l].start_s, compute.forward[l].duration_s, 0});
  for (std::size_t l = layers; l-- > 0;)
    trace.record({EventKind::kBackward, iteration, {l}, compute.backward[l].start_s, compute.backward[l].duration_s, 0});
  trace.record({EventKind::kUpdate, iteration, {}, compute.update.start_s, compute.update.duration_s, 0});
}

// The log record of iteration `iteration` (`iteration_s` long) on rank `rank`, and its buckets in
// the trace: each undelayed bucket under this iteration, each delayed one applied in it under the
// iteration that launched it. `asynchronous`: the device runs behind the host (a GPU), so the
// wait is the time the compute stream was idle (docs/runtime.md section 10); on the CPU it is
// the executor's time in before_step and after_step.
IterationRecord record_iteration(int rank, std::int64_t iteration, double iteration_s, const IterationCompute& compute,
                                 const ExecutedIteration& executed, const Schedule& schedule, bool asynchronous,
                                 MeasuredTrace& trace) {
  IterationRecord record;
  record.rank = rank;
  record.iteration = iteration;
  record.iteration_s = iteration_s;
  record.loss = compute.loss;
  record.compute_s = compute.compute_s();
  record.wait_s = asynchronous ? std::max(0.0, iteration_s - record.compute_s) : executed.wait_s;
  record.delayed = schedule.delayed();
  const auto names_of = [&](const std::vector<std::size_t>& bucket) {
    std::vector<std::string> names;
    for (const std::size_t layer : bucket) names.push_back(schedule.layer_names[layer]);
    return names;
  };
  for (const ExecutedBucket& bucket : executed.buckets) {
    record.buckets.push_back(names_of(bucket.layers));
    if (record.delayed) record.sync_delays.push_back(bucket.delay);
    if (bucket.delay > 0) continue;  // it ends in a later iteration: traced when applied, below
    // A GPU's bucket is launched (enqueued) before its layers' backward has run; it starts
    // when the last of them has (on the CPU it is launched after them already).
    double start_s = bucket.launch_s;
    for (const std::size_t layer : bucket.layers)
      start_s = std::max(start_s, compute.backward[layer].start_s + compute.backward[layer].duration_s);
    trace.record({EventKind::kAllreduce, iteration, bucket.layers, start_s, std::max(0.0, bucket.end_s - start_s),
                  bucket.bytes});
    // Averaged in place: in the parameters when this rank saw it complete.
    if (record.delayed) record.applied.push_back({iteration, record.buckets.back(), 0, bucket.launch_s, bucket.end_s, bucket.end_s});
  }
  // Delayed buckets (CPU only: launched after their layers' backward) span from their launch
  // iteration into this one; the trace files them under their launch iteration.
  for (const AppliedSync& sync : executed.applied) {
    const ExecutedBucket& bucket = sync.bucket;
    trace.record({EventKind::kAllreduce, sync.started_iteration, bucket.layers, bucket.launch_s,
                  std::max(0.0, bucket.end_s - bucket.launch_s), bucket.bytes, bucket.delay});
    record.applied.push_back({sync.started_iteration, names_of(bucket.layers), bucket.delay, bucket.launch_s, bucket.end_s,
                              sync.applied_s});
  }
  return record;
}

// After step `done`: this rank's state saved into request.checkpoint_dir (collective, under the
// run's deadline; a timeout names the late ranks), traced between iterations done - 1 and done
// (not an iteration's time). Throws RunTimeout.
void save_step(const MpiSession& mpi, const TrainRequest& request, PreparedRun& run, std::int64_t done,
               LateRankWatch& watch, FatalSignalLine* line, MeasuredTrace& trace) {
  const std::int64_t sequence = watch.agreement_started();
  if (line) line->set_place("while writing the checkpoint of step " + std::to_string(done));
  const double start_s = run.clock.now_s();
  try {
    save_checkpoint(mpi, request.checkpoint_dir,
                    training_state(*run.device, *run.setup->shard, done, run.setup->schedule.period(), request.seed),
                    *run.identity, request.timeout_s, kCheckpointsKept, [&] { watch.agreement_waiting(sequence); });
  } catch (const CommTimeout&) {
    throw RunTimeout("rank " + std::to_string(mpi.rank()) + ": iteration " + std::to_string(done - 1) +
                     ": the checkpoint of step " + std::to_string(done) + " was not agreed within its deadline of " +
                     number_text(request.timeout_s) + " s; " + watch.late(sequence));
  }
  trace.record({EventKind::kCheckpoint, done - 1, {}, start_s, run.clock.now_s() - start_s, 0});
}

// Every rank's log lines and trace events gathered to rank 0 and merged there: result.log_text
// sorted by iteration, then rank, and result.trace. Nothing changes on the other ranks.
void gather_to_root(const MpiSession& mpi, const TrainRequest& request, const Schedule& schedule,
                    const MeasuredTrace& trace, TrainResult& result) {
  std::string log_text;
  for (const IterationRecord& record : result.records) log_text += json_text(log_line(record, request.link)) + '\n';
  const std::vector<std::string> logs = gather_text(mpi, log_text, request.timeout_s);
  const std::vector<std::string> traces =
      gather_text(mpi, json_text(measured_trace_events(trace, mpi.rank(), schedule.layer_names)), request.timeout_s);
  if (!mpi.is_root()) return;
  // Every rank ran the same iterations: take one line of each in turn.
  std::vector<std::istringstream> streams;
  for (const std::string& text : logs) streams.emplace_back(text);
  for (std::size_t step = 0; step < result.records.size(); ++step)
    for (std::istringstream& stream : streams) {
      std::string line_text;
      if (std::getline(stream, line_text)) result.log_text += line_text + '\n';
    }
  Json events = Json::array();
  for (std::size_t r = 0; r < traces.size(); ++r)
    for (Json& event : parse_json_text(traces[r], "rank " + std::to_string(r) + "'s trace")) events.push_back(std::move(event));
  result.trace = measured_trace_document(std::move(events), about_run(request, schedule, mpi.size()));
}

}  // namespace

TrainResult run_training(const MpiSession& mpi, const CommunicatorFactory& make_comm, const TrainRequest& request,
                         const TrainProgress& progress, FatalSignalLine* line) {
  PreparedRun run;
  prepare_run(mpi, request, line, run);
  TrainingDevice& device = *run.device;
  const Schedule& schedule = run.setup->schedule;
  std::optional<RunChannels> channels;
  try {
    channels.emplace(mpi, make_comm, run.setup->cuda_device, request.timeout_s);
  } catch (const CommTimeout& e) {
    throw RunTimeout("rank " + std::to_string(mpi.rank()) + ": before the first iteration: " + e.what());
  }
  LateRankWatch watch(channels->arrivals, schedule.period(), line);
  std::vector<void*> ready(device.layer_count(), nullptr);  // each layer's backward result (a GPU's event)
  const bool gradients = schedule.kind == SyncKind::kGradients;
  Executor executor(schedule, channels->comm, [&](std::size_t layer) { return device.layer_buffers(layer, gradients); },
                    run.clock, executor_options(request, device, ready, run.first_step, watch));

  TrainResult result;
  result.records.reserve(static_cast<std::size_t>(request.iterations - run.first_step));
  MeasuredTrace trace;
  trace.reserve(result.records.capacity() * (2 * device.layer_count() + 8));
  start_clocks(mpi, request.timeout_s, run.clock);
  try {
    for (std::int64_t step = run.first_step; step < request.iterations; ++step) {
      const double begin_s = run.clock.now_s();
      executor.begin_iteration();
      const std::int64_t iteration = executor.iteration();
      if (line) line->set_place(iteration, {});
      const IterationCompute compute = train_iteration(device, executor, *run.setup->shard, request.seed, ready);
      trace_compute(trace, iteration, compute);
      IterationRecord record = record_iteration(mpi.rank(), iteration, run.clock.now_s() - begin_s, compute,
                                                executor.last_executed(), schedule, device.asynchronous(), trace);
      if (progress) progress(record);
      result.records.push_back(std::move(record));
      const std::int64_t done = executor.iteration();
      if (!request.checkpoint_dir.empty() && done % request.checkpoint_every == 0)
        save_step(mpi, request, run, done, watch, line, trace);
    }
    // A run that ends inside a period leaves delayed syncs in flight, due before steps it does not
    // run: every rank waits for them (collectives must complete) and drops them.
    executor.drain();
  } catch (const SyncTimeout& e) {
    throw RunTimeout(std::string(e.what()) + "; " + watch.late(e.tag()));
  }
  result.first_loss = result.records.front().loss;
  result.last_loss = result.records.back().loss;
  if (line) line->set_place("while gathering the log and trace to rank 0");
  gather_to_root(mpi, request, schedule, trace, result);
  return result;
}

}  // namespace syncplan
