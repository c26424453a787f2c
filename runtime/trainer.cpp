// The training loop of `syncplan run`: GPT-style models on a training device (the CPU, or a CUDA
// device through the GPU backend library) with AdamW, the executor's hooks around each layer,
// checkpoints, the deadlines and the late ranks' names, the log and the measured trace
// (runtime/trainer.hpp, docs/runtime.md sections 3, 6 and 10).
#include "runtime/trainer.hpp"

#include "comm/arrivals.hpp"
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
#include <map>
#include <numeric>
#include <sstream>
#include <unistd.h>

namespace syncplan {

namespace {

// The largest batch or sequence a request may ask for: B S tokens of activations must fit in memory
// long before this (CpuGraph refuses nothing itself).
constexpr std::int64_t kMaxTokensPerBatch = std::int64_t{1} << 24;
// How long a peer may give no sign of life before the late-rank text calls it silent or absent
// (s; comm/arrivals.hpp's quiet_s), and how often the fatal-signal line's note is refreshed.
constexpr double kQuiet_s = 1.0;
constexpr double kNoteInterval_s = 0.5;
// Complete checkpoints kept in --checkpoint DIR (older ones are removed).
constexpr int kCheckpointsKept = 2;
// The shortest --timeout-s (s): a deadline detects a dead or hung rank; far shorter ones fail healthy runs.
constexpr double kShortestTimeout_s = 1.0;

// ---- gathering to rank 0, with a deadline -------------------------------------------------------

// Waits for `request` with a deadline (wait_request_within, polled every 200 us): MPI's blocking
// collectives would wait forever for a stopped rank (issue 12), so everything after the barrier
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

// The deadline of the setup's agreements: the request's, or --timeout-s's default while the
// request is not yet checked (a bad --timeout-s is itself reported through an agreement).
double setup_deadline_s(double timeout_s) { return timeout_s > 0 && std::isfinite(timeout_s) ? timeout_s : 60.0; }

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

TrainResult run_training(const MpiSession& mpi, const CommunicatorFactory& make_comm, const TrainRequest& request,
                         const TrainProgress& progress, FatalSignalLine* line) {
  const double setup_s = setup_deadline_s(request.timeout_s);
  const std::string me = "rank " + std::to_string(mpi.rank());
  std::optional<Setup> setup;
  RunClock clock;
  std::unique_ptr<TrainingDevice> device_holder;
  std::optional<CheckpointIdentity> identity;
  try {
    // A model too large for one rank's device memory is bad input on that rank, agreed like the rest.
    agree_on_input(mpi, [&] {
      setup.emplace(read_setup(mpi, request));
      device_holder = setup->gpu ? make_cuda_training_device(*setup->gpu, setup->model, setup->workload, request.adamw,
                                                             setup->cuda_device, clock)
                                 : make_cpu_training_device(setup->model, setup->workload, request.adamw, clock);
    }, setup_s);
    identity = CheckpointIdentity{fingerprint_run(setup->schedule_identity, setup->spec, request.batch, request.seq, mpi.size()),
                                  mpi.rank(), mpi.size(), run_settings(request)};
    require_same_run(mpi, identity->fingerprint, setup_s);
  } catch (const CommTimeout& e) {
    throw RunTimeout(me + ": before the first iteration: " + e.what());
  }
  TrainingDevice& device = *device_holder;
  ByteShard& shard = *setup->shard;
  device.initialize(request.seed);
  const Schedule& schedule = setup->schedule;
  const std::size_t layers = device.layer_count();
  std::int64_t first_step = 0;
  if (!request.resume_dir.empty()) {
    if (line) line->set_place("while reading the checkpoint of --resume");
    try {
      const TrainingState state = load_checkpoint(mpi, request.resume_dir, *identity,
                                                  device.parameter_count(), request.timeout_s);
      run_agreed(mpi, "the agreement on the resumed state", request.timeout_s,
                 [&] { restore_state(state, request, schedule.period(), device, shard); });
      first_step = state.step;
    } catch (const CommTimeout& e) {
      throw RunTimeout(me + ": while reading the checkpoint of --resume: " + e.what());
    }
  }

  // The setup's agreements passed: the bucket communicator (MPI_Comm_idup under the deadline)
  // comes after them, so that bad input never reaches it.
  std::optional<Communicator> comm_holder;
  std::optional<Arrivals> arrivals_holder;
  try {
    comm_holder.emplace(make_comm(setup->cuda_device));
    arrivals_holder.emplace(mpi, request.timeout_s);
  } catch (const CommTimeout& e) {
    throw RunTimeout(me + ": before the first iteration: " + e.what());
  }
  Communicator& comm = *comm_holder;
  Arrivals& arrivals = *arrivals_holder;

  const LayerBuffers buffers = [&](std::size_t layer) {
    return device.layer_buffers(layer, schedule.kind == SyncKind::kGradients);
  };
  // Each layer's backward gives what its buckets wait for (a GPU's event; the same event object
  // every iteration, recorded anew).
  std::vector<void*> ready(layers, nullptr);
  ExecutorOptions options;
  options.ready_event = [&](std::size_t layer) { return ready.at(layer); };
  // A delayed plan on a GPU: its snapshots live in device memory, copied and corrected on the
  // device's stream (docs/runtime.md section 11); on the CPU the executor keeps them itself.
  if (device.device_snapshots())
    options.device_snapshots = DeviceSnapshots{
        [&](std::size_t floats) { return device.snapshot_buffer(floats); },
        [&](std::span<const std::span<float>> tensors, std::span<float> own, std::span<float> mean) {
          return device.snapshot(tensors, own, mean);
        },
        [&](std::span<const std::span<float>> tensors, std::span<const float> own, std::span<const float> mean) {
          device.correct(tensors, own, mean);
        }};
  options.timeout_s = request.timeout_s;
  options.link = request.link;
  options.first_iteration = first_step;
  // Every bucket and checkpoint agreement is one Arrivals sequence number, in the same order on
  // every rank. The buckets in flight belong to the current iteration (the executor waits for
  // them before it ends) or, delayed, to earlier ones of the same period (no sync crosses its
  // end), so their first layers are kept by sequence number for the period.
  std::int64_t next_sequence = 0, newest = -1, place_iteration = -1;
  std::map<std::int64_t, std::string> period_buckets;  // sequence -> the bucket's first layer
  std::int64_t noted_sequence = -1;
  double noted_s = 0;
  // Who is late at bucket `sequence`, for the timeout line: a rank stopped later in backprop has
  // arrived at the waited bucket and looks alive there (its arrival at a later bucket), so the
  // first of this rank's later buckets where someone is late is named instead.
  const auto late = [&](std::int64_t sequence) {
    arrivals.progress();
    for (std::int64_t s = sequence; s <= std::max(sequence, newest); ++s) {
      const LateRanks ranks = arrivals.late(s, kQuiet_s);
      if (ranks.absent.empty() && ranks.behind.empty() && ranks.silent.empty()) continue;
      const auto named = s != sequence ? period_buckets.find(s) : period_buckets.end();
      return (named != period_buckets.end() ? "at bucket '" + named->second + "': " : std::string()) +
             late_ranks_text(ranks, kQuiet_s);
    }
    return late_ranks_text(LateRanks{}, kQuiet_s);
  };
  options.watch.started = [&](std::int64_t iteration, const std::string& first_layer) {
    // A new period (not merely position 0: flsgd starts buckets only in its last iteration).
    if (place_iteration < 0 || iteration / schedule.period() != place_iteration / schedule.period()) period_buckets.clear();
    place_iteration = iteration;
    const std::int64_t sequence = next_sequence++;
    arrivals.arrive(sequence);
    newest = sequence;
    period_buckets[sequence] = first_layer;
    if (line) line->set_place(iteration, first_layer);
    return sequence;
  };
  options.watch.waiting = [&](std::int64_t sequence, double waited_s) {
    arrivals.progress();
    arrivals.heartbeat(newest);
    // After a second of waiting the line names the late ranks, so that a rank mpirun ends before
    // its own deadline still says who they are.
    if (line && waited_s > kQuiet_s && (sequence != noted_sequence || waited_s - noted_s > kNoteInterval_s)) {
      const auto waited = period_buckets.find(sequence);
      line->set_place(place_iteration, waited != period_buckets.end() ? waited->second : std::string(), late(sequence));
      noted_sequence = sequence;
      noted_s = waited_s;
    }
  };
  Executor executor(schedule, comm, buffers, clock, options);

  const std::int64_t steps = request.iterations - first_step;
  MeasuredTrace trace;
  trace.reserve(static_cast<std::size_t>(steps) * (2 * layers + 8));
  TrainResult result;
  result.records.reserve(static_cast<std::size_t>(steps));
  // The clocks of all ranks start together (to within the barrier's exit skew); a rank that hangs
  // before it ends the others at the deadline rather than never.
  MPI_Request barrier = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
  wait_or_throw(barrier, request.timeout_s, mpi.rank(), "the barrier that starts the run's clock");
  clock.restart();

  try {
    for (std::int64_t step = first_step; step < request.iterations; ++step) {
      IterationRecord record;
      record.rank = mpi.rank();
      const double begin_s = clock.now_s();
      executor.begin_iteration();
      record.iteration = executor.iteration();
      if (line) line->set_place(record.iteration, {});
      const ByteBatch batch = shard.next();
      device.set_batch(batch.ids, batch.targets, request.seed + static_cast<std::uint64_t>(record.iteration));
      device.begin();
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
      record.iteration_s = clock.now_s() - begin_s;
      record.loss = compute.loss;
      record.compute_s = compute.compute_s();
      for (std::size_t l = 0; l < layers; ++l)
        trace.record({EventKind::kForward, record.iteration, {l}, compute.forward[l].start_s, compute.forward[l].duration_s, 0});
      for (std::size_t l = layers; l-- > 0;)
        trace.record({EventKind::kBackward, record.iteration, {l}, compute.backward[l].start_s, compute.backward[l].duration_s, 0});
      trace.record({EventKind::kUpdate, record.iteration, {}, compute.update.start_s, compute.update.duration_s, 0});

      const ExecutedIteration& executed = executor.last_executed();
      // On the CPU the executor's time in before_step and after_step; on a GPU the host runs ahead
      // of the device and waits there for the computation too, so the wait is the time the compute
      // stream was idle (docs/runtime.md section 10).
      record.wait_s = device.asynchronous() ? std::max(0.0, record.iteration_s - record.compute_s) : executed.wait_s;
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
        trace.record({EventKind::kAllreduce, record.iteration, bucket.layers, start_s,
                      std::max(0.0, bucket.end_s - start_s), bucket.bytes});
        // Averaged in place: in the parameters when this rank saw it complete.
        if (record.delayed)
          record.applied.push_back({record.iteration, record.buckets.back(), 0, bucket.launch_s, bucket.end_s, bucket.end_s});
      }
      // Delayed buckets (CPU only: launched after their layers' backward) span from their launch
      // iteration into this one; the trace files them under their launch iteration.
      for (const AppliedSync& sync : executed.applied) {
        const ExecutedBucket& bucket = sync.bucket;
        trace.record({EventKind::kAllreduce, sync.started_iteration, bucket.layers, bucket.launch_s,
                      std::max(0.0, bucket.end_s - bucket.launch_s), bucket.bytes, bucket.delay});
        record.applied.push_back({sync.started_iteration, names_of(bucket.layers), bucket.delay, bucket.launch_s,
                                  bucket.end_s, sync.applied_s});
      }
      if (step == first_step) result.first_loss = record.loss;
      result.last_loss = record.loss;
      if (progress) progress(record);
      result.records.push_back(std::move(record));

      const std::int64_t done = executor.iteration();
      if (!request.checkpoint_dir.empty() && done % request.checkpoint_every == 0) {
        // The agreement is announced like a bucket, so that its timeout can name the late ranks.
        const std::int64_t sequence = next_sequence++;
        arrivals.arrive(sequence);
        newest = sequence;
        if (line) line->set_place("while writing the checkpoint of step " + std::to_string(done));
        const double checkpoint_start_s = clock.now_s();
        try {
          save_checkpoint(mpi, request.checkpoint_dir,
                          training_state(device, shard, done, schedule.period(), request.seed), *identity,
                          request.timeout_s, kCheckpointsKept, [&] {
                            arrivals.progress();
                            arrivals.heartbeat(sequence);
                          });
        } catch (const CommTimeout&) {
          throw RunTimeout(me + ": iteration " + std::to_string(done - 1) + ": the checkpoint of step " +
                           std::to_string(done) + " was not agreed within its deadline of " +
                           number_text(request.timeout_s) + " s; " + late(sequence));
        }
        // Between iterations done - 1 and done: not an iteration's time, in the log or the trace.
        trace.record({EventKind::kCheckpoint, done - 1, {}, checkpoint_start_s, clock.now_s() - checkpoint_start_s, 0});
      }
    }
    // A run that ends inside a period leaves delayed syncs in flight, due before steps it does not
    // run: every rank waits for them (collectives must complete) and drops them.
    executor.drain();
  } catch (const SyncTimeout& e) {
    throw RunTimeout(std::string(e.what()) + "; " + late(e.tag()));
  }
  if (line) line->set_place("while gathering the log and trace to rank 0");

  // Gather: each rank's log lines and trace events as text, merged on rank 0.
  std::string log_text;
  for (const IterationRecord& record : result.records) log_text += json_text(log_line(record, request.link)) + '\n';
  const std::vector<std::string> logs = gather_text(mpi, log_text, request.timeout_s);
  const std::vector<std::string> traces =
      gather_text(mpi, json_text(measured_trace_events(trace, mpi.rank(), schedule.layer_names)), request.timeout_s);
  if (!mpi.is_root()) return result;
  // Lines sorted by iteration, then rank: every rank ran the same iterations, so take one line of each in turn.
  std::vector<std::istringstream> streams;
  for (const std::string& text : logs) streams.emplace_back(text);
  for (std::int64_t step = 0; step < steps; ++step)
    for (std::istringstream& stream : streams) {
      std::string line_text;
      if (std::getline(stream, line_text)) result.log_text += line_text + '\n';
    }
  Json events = Json::array();
  for (std::size_t r = 0; r < traces.size(); ++r)
    for (Json& event : parse_json_text(traces[r], "rank " + std::to_string(r) + "'s trace")) events.push_back(std::move(event));
  result.trace = measured_trace_document(std::move(events), about_run(request, schedule, mpi.size()));
  return result;
}

}  // namespace syncplan
