// The training loop of `syncplan run` on the CPU: tiny-gpt-style models through CpuGraph and AdamW,
// the executor's hooks around each layer, the log and the measured trace (runtime/trainer.hpp,
// docs/runtime.md section 3).
#include "runtime/trainer.hpp"

#include "comm/mpi_check.hpp"
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "model/model_spec.hpp"
#include "profiler/gpu_backend.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

namespace syncplan {

namespace {

// The largest batch or sequence a request may ask for: B S tokens of activations must fit in memory
// long before this (CpuGraph refuses nothing itself).
constexpr std::int64_t kMaxTokensPerBatch = std::int64_t{1} << 24;
// The longest error message one rank passes to the others (the rest is cut).
constexpr std::size_t kLongestMessage = 4096;

// ---- gathering to rank 0, with a deadline -------------------------------------------------------

// Tests `request` until it completes or `deadline_s` has passed; false on expiry. MPI's blocking
// collectives would wait forever for a stopped rank (issue 12): everything after the barrier that
// starts the clock polls with a deadline.
bool test_until(MPI_Request& request, double deadline_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  int done = 0;
  while (true) {
    SYNCPLAN_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void wait_or_throw(MPI_Request& request, double deadline_s, int rank, const char* what) {
  if (!test_until(request, deadline_s))
    throw std::runtime_error("rank " + std::to_string(rank) + ": " + what + " did not complete within its deadline of " +
                             number_text(deadline_s) + " s (a rank died or hung)");
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
  Model model;
  Schedule schedule;
  Workload workload;
  ByteShard shard;
};

Setup read_setup(const MpiSession& mpi, const TrainRequest& request) {
  check_train_request(request);
  const ModelSpec spec = read_model_spec_file(resolve_model_spec(request.model, request.models_dir).string());
  Setup setup{expand_model(spec), {}, {request.batch, request.seq, Dtype::kFp32}, {}};
  check_workload(setup.model, setup.workload);
  if (spec.vocab_size < 256)
    throw InputError("--model " + request.model + ": vocab_size " + std::to_string(spec.vocab_size) +
                     " is below 256, the byte vocabulary of --data");
  setup.schedule = request.plan_path.empty() ? strategy_schedule(setup.model, request.strategy, request.period)
                                             : read_plan_schedule(setup.model, request.plan_path);
  setup.shard = read_byte_shard(request.data_path, mpi.rank(), mpi.size(), request.batch, request.seq);
  return setup;
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
  if (!(request.timeout_s > 0 && std::isfinite(request.timeout_s)))
    throw FieldError("timeout_s", "timeout_s: must be a finite number of seconds > 0, got " + number_text(request.timeout_s));
  if (!(request.adamw.learning_rate > 0 && std::isfinite(request.adamw.learning_rate)))
    throw FieldError("learning_rate", "learning_rate: must be a finite number > 0, got " +
                                          number_text(request.adamw.learning_rate));
  if (request.device == "cuda") {
    require_gpu_backend("device", "cuda");  // throws FieldError "device cuda: ..." with the loader's reason
    throw FieldError("device", "device cuda: the runtime trains on CPUs only so far (use --device cpu)");
  }
  if (request.device != "cpu")
    throw FieldError("device", "device: unknown '" + request.device + "' (choose from cpu, cuda)");
  if (request.link) emulated_cluster(*request.link, 1);  // its range checks
}

ByteShard read_byte_shard(const std::string& path, int rank, int ranks, std::int64_t batch, std::int64_t seq) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw InputError("--data " + path + ": " + (std::filesystem::exists(path, error) ? "not a regular file" : "no such file"));
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(path, error));
  if (error) throw InputError("--data " + path + ": cannot read its size (" + error.message() + ")");
  const std::int64_t begin = size * rank / ranks, end = size * (rank + 1) / ranks;
  const std::int64_t needed = batch * seq + 1;
  if (end - begin < needed)
    throw InputError("--data " + path + ": " + std::to_string(size) + " bytes make shards of " +
                     std::to_string(end - begin) + " bytes for " + std::to_string(ranks) +
                     " ranks, fewer than one batch needs (batch x seq + 1 = " + std::to_string(needed) + ")");
  ByteShard shard;
  shard.begin = begin;
  shard.bytes.resize(static_cast<std::size_t>(end - begin));
  std::ifstream in(path, std::ios::binary);
  in.seekg(begin);
  in.read(reinterpret_cast<char*>(shard.bytes.data()), static_cast<std::streamsize>(shard.bytes.size()));
  if (!in || in.gcount() != static_cast<std::streamsize>(shard.bytes.size()))
    throw InputError("--data " + path + ": cannot read bytes " + std::to_string(begin) + ".." + std::to_string(end));
  return shard;
}

TokenBatch next_byte_batch(const ByteShard& shard, std::int64_t& cursor, std::int64_t batch, std::int64_t seq) {
  const auto size = static_cast<std::int64_t>(shard.bytes.size());
  SYNCPLAN_CHECK(size >= seq + 1);
  TokenBatch out;
  out.ids.resize(static_cast<std::size_t>(batch * seq));
  out.targets.resize(out.ids.size());
  for (std::int64_t b = 0; b < batch; ++b) {
    if (cursor < 0 || cursor + seq + 1 > size) cursor = 0;
    for (std::int64_t s = 0; s < seq; ++s) {
      out.ids[b * seq + s] = shard.bytes[cursor + s];
      out.targets[b * seq + s] = shard.bytes[cursor + s + 1];
    }
    cursor += seq;
  }
  return out;
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
  if (link) line["emulated_link"] = {{"bandwidth_Gbps", link->bandwidth_Gbps}, {"latency_us", link->latency_us}};
  return line;
}

void agree_on_input(const MpiSession& mpi, const std::function<void()>& fn) {
  std::exception_ptr failure;
  std::string message;
  try {
    fn();
  } catch (const InputError& e) {
    failure = std::current_exception();
    message = std::string(e.what()).substr(0, kLongestMessage);
  }
  const int first = mpi.first_failing_rank(!failure);
  if (first < 0) return;
  // The failing rank sends its message before rethrowing its own error (a FieldError stays one, so
  // the command line can name its flag): every rank takes part in both broadcasts.
  int length = static_cast<int>(message.size());
  mpi.broadcast(&length, sizeof length, first);
  message.resize(static_cast<std::size_t>(length));
  mpi.broadcast(message.data(), length, first);
  if (first == mpi.rank()) std::rethrow_exception(failure);
  throw InputError("rank " + std::to_string(first) + ": " + message);
}

TrainResult run_training(const MpiSession& mpi, Communicator& comm, const TrainRequest& request,
                         const TrainProgress& progress) {
  std::optional<Setup> setup;
  std::optional<TrainerState> state;
  agree_on_input(mpi, [&] {
    setup.emplace(read_setup(mpi, request));
    state.emplace(TrainerState{cpu::CpuGraph(setup->model, setup->workload),
                               AdamW(setup->model.param_count(), request.adamw), 0, 0, request.seed});
  });
  cpu::CpuGraph& graph = state->graph;
  graph.initialize_parameters(request.seed);
  const Schedule& schedule = setup->schedule;
  const std::size_t layers = graph.layer_count();

  // Frozen layers are not trained: their parameters are put back after each step.
  std::vector<std::span<float>> frozen;
  for (std::size_t l = 0; l < layers; ++l)
    if (setup->model.layers[l].frozen && !graph.tied(l))
      for (const std::span<float> tensor : graph.layer_parameters(l)) frozen.push_back(tensor);
  std::vector<std::vector<float>> frozen_copy(frozen.size());

  RunClock clock;
  const LayerBuffers buffers = [&](std::size_t layer) {
    return schedule.kind == SyncKind::kGradients ? graph.layer_gradients(layer) : graph.layer_parameters(layer);
  };
  ExecutorOptions options;
  options.timeout_s = request.timeout_s;
  options.link = request.link;
  options.first_iteration = state->iteration;
  Executor executor(schedule, comm, buffers, clock, options);

  MeasuredTrace trace;
  trace.reserve(static_cast<std::size_t>(request.iterations) * (2 * layers + 8));
  TrainResult result;
  result.records.reserve(static_cast<std::size_t>(request.iterations));
  // The clocks of all ranks start together (to within the barrier's exit skew); a rank that hangs
  // before it ends the others at the deadline rather than never.
  MPI_Request barrier = MPI_REQUEST_NULL;
  SYNCPLAN_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
  wait_or_throw(barrier, request.timeout_s, mpi.rank(), "the barrier that starts the run's clock");
  clock.restart();

  for (std::int64_t step = 0; step < request.iterations; ++step) {
    IterationRecord record;
    record.rank = mpi.rank();
    const double begin_s = clock.now_s();
    executor.begin_iteration();
    record.iteration = executor.iteration();
    const TokenBatch batch = next_byte_batch(setup->shard, state->data_cursor, request.batch, request.seq);
    graph.set_batch(batch.ids, batch.targets);
    graph.set_dropout_seed(state->seed + static_cast<std::uint64_t>(record.iteration));
    graph.zero_gradients();
    for (std::size_t l = 0; l < layers; ++l) {
      const double start_s = clock.now_s();
      graph.forward(l);
      const double duration_s = clock.now_s() - start_s;
      record.compute_s += duration_s;
      trace.record({EventKind::kForward, record.iteration, {l}, start_s, duration_s, 0});
    }
    record.loss = graph.loss();
    for (std::size_t l = layers; l-- > 0;) {
      const double start_s = clock.now_s();
      graph.backward(l);
      const double duration_s = clock.now_s() - start_s;
      record.compute_s += duration_s;
      trace.record({EventKind::kBackward, record.iteration, {l}, start_s, duration_s, 0});
      executor.layer_backward_done(l);
    }
    executor.before_step();
    const double update_start_s = clock.now_s();
    for (std::size_t t = 0; t < frozen.size(); ++t) frozen_copy[t].assign(frozen[t].begin(), frozen[t].end());
    state->optimizer.step(graph.parameters(), graph.gradients());
    for (std::size_t t = 0; t < frozen.size(); ++t) std::copy(frozen_copy[t].begin(), frozen_copy[t].end(), frozen[t].begin());
    const double update_s = clock.now_s() - update_start_s;
    record.compute_s += update_s;
    trace.record({EventKind::kUpdate, record.iteration, {}, update_start_s, update_s, 0});
    executor.after_step();
    state->iteration = executor.iteration();
    record.iteration_s = clock.now_s() - begin_s;

    const ExecutedIteration& executed = executor.last_executed();
    record.wait_s = executed.wait_s;
    for (const ExecutedBucket& bucket : executed.buckets) {
      std::vector<std::string>& names = record.buckets.emplace_back();
      for (const std::size_t layer : bucket.layers) names.push_back(schedule.layer_names[layer]);
      trace.record({EventKind::kAllreduce, record.iteration, bucket.layers, bucket.launch_s,
                    bucket.end_s - bucket.launch_s, bucket.bytes});
    }
    if (step == 0) result.first_loss = record.loss;
    result.last_loss = record.loss;
    if (progress) progress(record);
    result.records.push_back(std::move(record));
  }

  // Gather: each rank's log lines and trace events as text, merged on rank 0.
  std::string log_text;
  for (const IterationRecord& record : result.records) log_text += log_line(record, request.link).dump() + '\n';
  const std::vector<std::string> logs = gather_text(mpi, log_text, request.timeout_s);
  const std::vector<std::string> traces =
      gather_text(mpi, measured_trace_events(trace, mpi.rank(), schedule.layer_names).dump(), request.timeout_s);
  if (!mpi.is_root()) return result;
  // Lines sorted by iteration, then rank: every rank ran the same iterations, so take one line of each in turn.
  std::vector<std::istringstream> streams;
  for (const std::string& text : logs) streams.emplace_back(text);
  for (std::int64_t step = 0; step < request.iterations; ++step)
    for (std::istringstream& stream : streams) {
      std::string line;
      if (std::getline(stream, line)) result.log_text += line + '\n';
    }
  Json events = Json::array();
  for (std::size_t r = 0; r < traces.size(); ++r)
    for (Json& event : parse_json_text(traces[r], "rank " + std::to_string(r) + "'s trace")) events.push_back(std::move(event));
  result.trace = measured_trace_document(std::move(events), about_run(request, schedule, mpi.size()));
  return result;
}

}  // namespace syncplan
