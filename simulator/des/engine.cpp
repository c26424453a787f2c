// The DES engine (docs/des.md): workers' compute streams advance layer by layer; all-reduces are
// matched across workers, queued on communication streams, and run as a latency followed by a
// transfer on their bottleneck link, which concurrent transfers share equally.
#include "simulator/des/engine.hpp"

#include "core/counter_random.hpp"
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/overloaded.hpp"
#include "core/units.hpp"
#include "core/host_memory.hpp"
#include "simulator/bucket_fusion.hpp"
#include "simulator/des/compute_spread.hpp"
#include "simulator/des/event_queue.hpp"
#include "simulator/period_model.hpp"
#include "simulator/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <numeric>
#include <variant>

namespace syncplan {

namespace {

// An all-reduce under a link fit: the link model on the bucket's bytes; none for 0 bytes (nothing
// to average, issues_allreduce).
double link_allreduce_s(const DesLayers& layers, const std::vector<int>& bucket, const LinkModel& link) {
  double bytes = 0;
  for (const int j : bucket) bytes += layers.param_bytes[j];
  return bytes > 0 ? link.time_s(bytes) : 0.0;
}

}  // namespace

double des_allreduce_s(const DesLayers& layers, const AllreduceModel& model, SyncTimeSource source,
                       const std::vector<int>& bucket, double bucket_alpha_s, const LinkModel* link) {
  if (source == SyncTimeSource::kMeasured && link) return link_allreduce_s(layers, bucket, *link);
  if (source == SyncTimeSource::kMeasured) {
    std::vector<double> member_sync_s;
    for (const int j : bucket) member_sync_s.push_back(layers.sync_s[j]);
    return fused_sync_s(member_sync_s, bucket_alpha_s);
  }
  double bytes = 0;
  for (const int j : bucket) bytes += layers.param_bytes[j];
  return model.time_s(bytes);
}

double DesResult::exposed_comm_s() const {
  if (worker_exposed_comm_s.empty()) return 0;
  return std::accumulate(worker_exposed_comm_s.begin(), worker_exposed_comm_s.end(), 0.0) /
         static_cast<double>(worker_exposed_comm_s.size());
}

double DesResult::overlap_fraction() const {
  if (comm_busy_s <= 0 || worker_overlap_s.empty()) return 0.0;
  const double mean = std::accumulate(worker_overlap_s.begin(), worker_overlap_s.end(), 0.0) /
                      static_cast<double>(worker_overlap_s.size());
  return std::clamp(mean / comm_busy_s, 0.0, 1.0);
}

namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// ---- events ------------------------------------------------------------------------------------
struct IterationStart { int worker, iteration; };
struct CollectiveReady { int collective; };
struct PhaseLatencyDone { int collective; };
struct TransferDone { int transfer; std::uint64_t version; };
struct UpdateDone { int worker, iteration; };
using Payload = std::variant<IterationStart, CollectiveReady, PhaseLatencyDone, TransferDone, UpdateDone>;

// The memory of one trace event once des_trace_json made it a JSON object and the writer its
// text (bytes): an ordered_json object of 8 keys with an args object of up to 3, and about 220
// characters of text. Measured: 160,000 events (tests/cli/data/tiny_profile.json, wfbp, 8
// straggler workers, 2,000 iterations) raised the peak resident memory by 283 MB, 1,769 bytes
// each with their records (docs/des.md section 5).
constexpr double kTraceJsonBytesPerEvent = 1600;

// The heap block of one directed link's name ("worker99999<->node12499 (down)": up to 32
// characters at 2^24 workers, in a 48-byte allocation with its header).
constexpr double kLinkNameBytes = 48;

// The result document's memory (simulate -o) per directed link and per worker: its JSON objects
// ({"link", "bytes"}; the per-worker times, exposed communication and overlap) and their text.
// Measured: 262,144 straggler workers for 2 iterations raised the peak resident memory by 516 MB
// with -o at 1 worker per node (1,048,576 links) and by 348 MB at 8 per node (589,824 links);
// solved for the two unknowns, 375 bytes per link and 518 per worker, rounded up.
constexpr double kResultJsonBytesPerLink = 400;
constexpr double kResultJsonBytesPerWorker = 550;

// ---- state -------------------------------------------------------------------------------------
struct Collective {
  int iteration = 0;
  // The iteration whose update waits for it: iteration + op->delay for the blocking issue points
  // (docs/time-model.md section 13), -1 for kAfterUpdate ops and for delayed ones whose update lies
  // beyond the run (a run that stops inside a period).
  int update_iteration = -1;
  const SyncOp* op = nullptr;
  int stream = 0;
  int issued = 0;            // workers that issued it so far
  double ready_s = 0;        // latest issue time
  bool ready = false;
  int phase = -1;            // current phase index (into model.phases()) while running
  int candidate = 0;         // the model candidate it runs (AllreduceModel::choose of its bytes)
  double start_s = 0;
  double bytes = kNoValue;   // all-reduced bytes (NaN when unknown)
  double measured_s = 0;     // measured duration (kMeasured)
};

struct IterationState {
  bool created = false;
  std::vector<int> collectives;
  // kGradientReady + kAfterBackward all-reduces not yet done whose update_iteration is this one:
  // this iteration's own without a delay and delayed ones of earlier iterations.
  int blocking_left = 0;
  int after_update_left = 0;   // kAfterUpdate all-reduces not yet done
  int after_update_total = 0;
  std::vector<int> waiting_for_update;  // workers whose update waits for blocking_left == 0
  std::vector<int> waiting_for_next;    // workers whose next iteration waits for after_update_left == 0
};

struct Interval {
  double start_s, end_s;
};

// Merges intervals sorted by start into disjoint ones.
std::vector<Interval> merge_sorted(const std::vector<Interval>& sorted) {
  std::vector<Interval> merged;
  for (const Interval& interval : sorted) {
    if (!merged.empty() && interval.start_s <= merged.back().end_s)
      merged.back().end_s = std::max(merged.back().end_s, interval.end_s);
    else
      merged.push_back(interval);
  }
  return merged;
}

// Length of the intersection of two sets of disjoint intervals, each sorted by start.
double intersection_s(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    total += std::max(0.0, std::min(a[i].end_s, b[j].end_s) - std::max(a[i].start_s, b[j].start_s));
    if (a[i].end_s < b[j].end_s) ++i;
    else ++j;
  }
  return total;
}

struct Worker {
  std::vector<Interval> compute;  // forward+backward and update intervals, in time order
  double backward_end_s = 0;
  double update_end_s = 0;
  double previous_end_s = 0;
};

// The lognormal or normal jitter's factors, when the cluster has it with sigma > 0 (sigma 0 draws
// nothing: exactly no jitter). Counter-based, like the "measured" jitter's draws: no per-worker
// state (compute_spread.hpp).
std::optional<JitterFactors> jitter_factors(const Cluster& cluster) {
  if (!cluster.jitter || cluster.jitter->distribution == JitterSpec::Distribution::kMeasured ||
      !(cluster.jitter->sigma > 0))
    return std::nullopt;
  return JitterFactors(*cluster.jitter);
}

// The "measured" jitter's draws, when the cluster has it.
std::optional<SpreadDraws> spread_draws(const Cluster& cluster) {
  if (!cluster.jitter || cluster.jitter->distribution != JitterSpec::Distribution::kMeasured) return std::nullopt;
  return SpreadDraws(cluster.jitter->seed, cluster.jitter->correlation);
}

// Layer j's spread in `spreads` (DesLayers::forward_spread, ...), or null: none measured.
const TimeSpread* spread_at(const std::vector<std::optional<TimeSpread>>& spreads, std::size_t j) {
  return j < spreads.size() && spreads[j] ? &*spreads[j] : nullptr;
}

// The work a transfer moves is counted in its link's unit (LinkState::capacity per second): bytes
// on a topology link, seconds of exclusive use on the measured resource, whose capacity is 1, so
// that a measured all-reduce of s seconds takes s seconds alone and longer when shared.
struct Transfer {
  int collective = 0;
  int link = 0;
  double remaining_work = 0;  // in the link's unit (see above)
  double rate = 0;            // work per second: the link's capacity shared equally
  std::uint64_t version = 0;  // bumped when the rate changes; stale completions are ignored
  bool active = false;
};

struct LinkState {
  double capacity = 0;        // work per second: bytes/s on a topology link, 1 on the measured resource
  double last_update_s = 0;
  std::vector<int> transfers; // active transfer ids
};

class Engine {
 public:
  Engine(const DesLayers& layers, const Cluster& cluster, const Topology& topology, const AllreduceModel& model,
         const SyncProgram& program, const DesOptions& options)
      : layers_(layers), cluster_(cluster), program_(program), options_(options), topology_(topology),
        model_(model), jitter_factors_(jitter_factors(cluster)), spread_draws_(spread_draws(cluster)) {
    simulated_ = cluster.identical_workers() ? 1 : cluster.workers;
    workers_.resize(simulated_);
    // Two compute intervals per iteration (forward and backward, update), allocated once.
    for (Worker& worker : workers_) worker.compute.reserve(2 * static_cast<std::size_t>(options.iterations));
    // Transfers only ever run on a phase's bottleneck link: one state per such link (not per link
    // of the topology, which has 2 per worker), then the measured resource.
    for (const CollectivePhase& phase : model.phases()) {
      int resource = -1;
      if (phase.bottleneck_link >= 0) {
        const auto known = std::find(bottleneck_links_.begin(), bottleneck_links_.end(), phase.bottleneck_link);
        resource = static_cast<int>(known - bottleneck_links_.begin());
        if (known == bottleneck_links_.end()) {
          bottleneck_links_.push_back(phase.bottleneck_link);
          links_.push_back(LinkState{phase.bottleneck_link_Bps, 0, {}});
        }
      }
      phase_resource_.push_back(resource);
    }
    measured_resource_ = static_cast<int>(links_.size());
    links_.push_back(LinkState{1.0, 0, {}});  // measured all-reduces: work is seconds at rate 1
    allreduced_bytes_.assign(model.candidates().size(), 0.0);
    iterations_.resize(options.iterations);
    streams_.resize(options.comm_streams);
    stream_busy_.assign(options.comm_streams, false);
    result_.workers = cluster.workers;
    result_.simulated_workers = simulated_;
    result_.worker_iteration_s.assign(simulated_, std::vector<double>(options.iterations, 0.0));
    result_.worker_exposed_comm_s.assign(simulated_, 0.0);
    iteration_end_s_.assign(options.iterations, 0.0);
  }

  DesResult run() {
    for (int w = 0; w < simulated_; ++w) queue_.schedule(0.0, IterationStart{w, 0});
    while (!queue_.empty()) {
      auto event = queue_.pop();
      now_ = event.time_s;
      ++result_.events;
      std::visit(Overloaded{[&](const IterationStart& e) { on_iteration_start(e.worker, e.iteration); },
                            [&](const CollectiveReady& e) { on_collective_ready(e.collective); },
                            [&](const PhaseLatencyDone& e) { start_transfer(e.collective); },
                            [&](const TransferDone& e) { on_transfer_done(e.transfer, e.version); },
                            [&](const UpdateDone& e) { on_update_done(e.worker, e.iteration); }},
                 event.payload);
    }
    for (std::size_t c = 0; c < collectives_.size(); ++c) SYNCPLAN_CHECK(collectives_[c].phase == kFinished);
    // Overlap: all-reduce time (union over streams) that falls inside each worker's compute.
    std::sort(comm_intervals_.begin(), comm_intervals_.end(),
              [](const Interval& a, const Interval& b) { return a.start_s < b.start_s; });
    const std::vector<Interval> comm = merge_sorted(comm_intervals_);
    for (const Interval& interval : comm) result_.comm_busy_s += interval.end_s - interval.start_s;
    for (const Worker& worker : workers_) result_.worker_overlap_s.push_back(intersection_s(comm, worker.compute));
    double previous = 0;
    for (int i = 0; i < options_.iterations; ++i) {
      result_.iteration_s.push_back(iteration_end_s_[i] - previous);
      previous = iteration_end_s_[i];
    }
    result_.total_s = previous;
    if (options_.link_bytes) add_link_bytes();
    return std::move(result_);
  }

 private:
  static constexpr int kFinished = -2;

  // Bytes per directed link (docs/des.md section 4): the all-reduced total times each link's bytes
  // per byte, in link id order. The one step that is O(links) = O(workers).
  void add_link_bytes() {
    double all = 0;
    for (const double bytes : allreduced_bytes_) all += bytes;
    if (all <= 0) return;
    std::vector<double> link_bytes(topology_.link_count(), 0.0);
    for (std::size_t c = 0; c < allreduced_bytes_.size(); ++c) {
      const AllreduceCandidate& candidate = model_.candidates()[c];
      for (int p = candidate.first_phase; p < candidate.end_phase; ++p)
        for (const LinkRange& range : model_.phases()[p].link_bytes_per_byte)
          for (int i = 0; i < range.count; ++i)
            link_bytes[range.first + i * range.stride] += allreduced_bytes_[c] * range.load;
    }
    for (std::size_t link = 0; link < link_bytes.size(); ++link)
      if (link_bytes[link] > 0) result_.link_bytes.emplace_back(topology_.link(static_cast<int>(link)).name, link_bytes[link]);
  }

  // The random stream of worker w's iteration i (compute_spread.hpp; 0 without jitter).
  std::uint64_t stream(int w, int i) const {
    return cluster_.jitter ? worker_iteration_stream(cluster_.jitter->seed, w, i) : 0;
  }

  // A compute duration of `worker`: the profile's time, its slowdown, and the jitter factor of
  // operation `slot` of its iteration's `stream` (docs/des.md: lognormal with mean 1, or normal
  // 1 + sigma z cut at 0).
  double compute_s(int worker, double seconds, std::uint64_t stream, std::uint64_t slot) const {
    if (seconds <= 0) return 0;
    const double factor = slowdown(worker);
    return seconds * (jitter_factors_ ? factor * jitter_factors_->factor(stream, slot) : factor);
  }

  // One layer's compute of median `seconds` (docs/des.md, "Compute spread"): under the "measured"
  // jitter, drawn from its `spread` at the worker's quantile for `slot` of its iteration's `stream`,
  // times the worker's slowdown; otherwise (or without a spread) compute_s.
  double layer_compute_s(int worker, double seconds, const TimeSpread* spread, std::uint64_t stream,
                         std::uint64_t slot) const {
    if (!spread_draws_ || spread == nullptr) return compute_s(worker, seconds, stream, slot);
    return spread_quantile_s(*spread, seconds, spread_draws_->uniform(stream, slot)) * slowdown(worker);
  }

  // Worker w's forward and backward durations of every layer in the iteration whose stream is
  // `draws`, into forward_d_ and backward_d_: layer_compute_s of each, with the lognormal or normal
  // jitter's factors drawn in one batch (the same numbers, JitterFactors::factors).
  void layer_durations(int w, std::uint64_t draws) {
    const std::size_t count = layers_.size();
    forward_d_.resize(count);
    backward_d_.resize(count);
    if (spread_draws_ || !jitter_factors_) {
      for (std::size_t j = 0; j < count; ++j) {
        forward_d_[j] = layer_compute_s(w, layers_.forward_s[j], spread_at(layers_.forward_spread, j), draws,
                                        forward_slot(j));
        backward_d_[j] = layer_compute_s(w, layers_.backward_s[j], spread_at(layers_.backward_spread, j), draws,
                                         backward_slot(count, j));
      }
      return;
    }
    // Forward slots are 0..L-1 and backward slots L..2L-1 (compute_spread.hpp): one batch of 2L.
    factors_.resize(2 * count);
    jitter_factors_->factors(draws, forward_slot(0), 2 * count, factors_.data());
    const double slow = slowdown(w);
    for (std::size_t j = 0; j < count; ++j) {
      const double forward = layers_.forward_s[j], backward = layers_.backward_s[j];
      forward_d_[j] = forward <= 0 ? 0 : forward * (slow * factors_[forward_slot(j)]);
      backward_d_[j] = backward <= 0 ? 0 : backward * (slow * factors_[backward_slot(count, j)]);
    }
  }

  // The whole optimizer update of iteration i: the layers' update_s summed. Under the "measured"
  // jitter every layer's share is drawn at one quantile (the profiler times the update whole and
  // apportions it, so the shares move together), a layer without a spread adding its update_s.
  double update_compute_s(int worker, int i) const {
    double update = 0;
    const std::uint64_t slot = update_slot(layers_.size());
    if (!spread_draws_) {
      for (const double u : layers_.update_s) update += u;
      return compute_s(worker, update, stream(worker, i), slot);
    }
    const double u = spread_draws_->uniform(stream(worker, i), slot);
    for (std::size_t j = 0; j < layers_.size(); ++j) {
      const TimeSpread* spread = spread_at(layers_.update_spread, j);
      update += spread ? spread_quantile_s(*spread, layers_.update_s[j], u) : layers_.update_s[j];
    }
    return update * slowdown(worker);
  }

  // The compute-time factor of simulated worker `worker` (its representative's when identical).
  double slowdown(int worker) const { return cluster_.slowdown(simulated_ == 1 ? 0 : worker); }

  bool traced(int worker) const { return worker < options_.trace_workers; }

  void record(int worker, int stream, EventKind kind, double start, double duration, int iteration,
              std::vector<int> layers, double bytes, int delay = 0) {
    std::vector<std::string> names;
    for (const int j : layers) names.push_back(layers_.names[j]);
    result_.trace.push_back(DesTraceEvent{worker, stream, kind, timeline_slice_name(kind, names), event_category(kind),
                                          start, duration, iteration, std::move(layers), bytes, delay});
  }

  IterationState& iteration_state(int i) {
    IterationState& state = iterations_[i];
    if (state.created) return state;
    state.created = true;
    for (const SyncOp& op : program_.iterations[i % program_.period()]) {
      // An all-reduce of tied layers only: their parameters are synced by their carrier's.
      if (std::none_of(op.layers.begin(), op.layers.end(), [&](int j) { return layers_.synced.empty() || layers_.synced[j]; }))
        continue;
      Collective collective;
      collective.iteration = i;
      collective.op = &op;
      double bytes = 0;
      for (const int j : op.layers) bytes += layers_.param_bytes[j];
      collective.bytes = bytes;
      // Measured times: the all-reduce's seconds by the one cost rule (des_allreduce_s); the
      // model's phases time it otherwise.
      collective.measured_s = options_.sync_time == SyncTimeSource::kMeasured
                                  ? des_allreduce_s(layers_, model_, SyncTimeSource::kMeasured, op.layers,
                                                    options_.bucket_alpha_s, options_.link)
                                  : 0.0;
      if (!issues_allreduce(options_.sync_time, bytes, collective.measured_s)) continue;
      collective.stream = static_cast<int>(next_stream_++ % streams_.size());
      const int id = static_cast<int>(collectives_.size());
      collectives_.push_back(collective);
      streams_[collective.stream].push_back(id);
      state.collectives.push_back(id);
      if (op.issue == IssuePoint::kAfterUpdate) {
        ++state.after_update_total;
      } else if (i + op.delay < options_.iterations) {
        // A delayed sync (section 13) holds back the update of i + delay, whose state may not
        // exist yet: only its count is kept there. Every worker reaches that update after starting
        // iteration i, so the count is complete before any worker checks it.
        collectives_[id].update_iteration = i + op.delay;
        ++iterations_[i + op.delay].blocking_left;
      }
    }
    state.after_update_left = state.after_update_total;
    return state;
  }

  void issue(int id, double time_s) {
    Collective& collective = collectives_[id];
    ++collective.issued;
    collective.ready_s = std::max(collective.ready_s, time_s);
    if (collective.issued == simulated_) queue_.schedule(collective.ready_s, CollectiveReady{id});
  }

  void on_iteration_start(int w, int i) {
    if (i == options_.iterations) return;
    IterationState& state = iteration_state(i);
    // Forward in forward order (backprop indices L-1..0), then backward in backprop order.
    const std::uint64_t draws = stream(w, i);
    layer_durations(w, draws);
    double t = run_forward(w, i, now_);
    // The profile's unattributed compute (docs/time-model.md, "Unattributed compute"): serial, the
    // forward part after the last layer's forward, the backward part before the first layer's
    // backward (where the loss's backward runs), so it delays every gradient alike.
    t += unattributed_compute(w, layers_.unattributed_forward_s, EventKind::kForward, t, i, draws,
                              unattributed_forward_slot(layers_.size()));
    t += unattributed_compute(w, layers_.unattributed_backward_s, EventKind::kBackward, t, i, draws,
                              unattributed_backward_slot(layers_.size()));
    t = run_backward(w, i, t);
    Worker& worker = workers_[w];
    worker.backward_end_s = t;
    worker.compute.push_back({now_, t});
    for (const int id : state.collectives) {
      const SyncOp& op = *collectives_[id].op;
      if (op.issue == IssuePoint::kGradientReady) issue(id, ready_s_[op.layers.back()]);
      else if (op.issue == IssuePoint::kAfterBackward) issue(id, t);
    }
    if (state.blocking_left == 0) start_update(w, i, t);
    else state.waiting_for_update.push_back(w);
  }

  // Worker w's forward of every layer in iteration i from `t`, in forward order (backprop indices
  // L-1..0), with forward_d_'s durations; returns its end. The loop without tracing has no call, so
  // t stays in a register (the hot loop of a jittered run: docs/des.md section 5).
  double run_forward(int w, int i, double t) {
    const int count = static_cast<int>(layers_.size());
    if (!traced(w)) {
      for (int j = count - 1; j >= 0; --j) t += forward_d_[j];
      return t;
    }
    for (int j = count - 1; j >= 0; --j) {
      const double d = forward_d_[j];
      if (d > 0) record(w, 0, EventKind::kForward, t, d, i, {j}, kNoValue);
      t += d;
    }
    return t;
  }

  // Worker w's backward of every layer in iteration i from `t`, in backprop order, with
  // backward_d_'s durations; ready_s_[j] is layer j's gradient time. Returns the backward's end.
  double run_backward(int w, int i, double t) {
    const int count = static_cast<int>(layers_.size());
    ready_s_.resize(count);
    if (!traced(w)) {
      for (int j = 0; j < count; ++j) ready_s_[j] = t += backward_d_[j];
      return t;
    }
    for (int j = 0; j < count; ++j) {
      const double d = backward_d_[j];
      if (d > 0) record(w, 0, EventKind::kBackward, t, d, i, {j}, kNoValue);
      t += d;
      ready_s_[j] = t;
    }
    return t;
  }

  // One block of unattributed compute of `seconds` (slowed and jittered like any compute, by the
  // draw of `slot` in `draws`) starting at `start_s`; returns its duration.
  double unattributed_compute(int w, double seconds, EventKind kind, double start_s, int i, std::uint64_t draws,
                              std::uint64_t slot) {
    const double d = compute_s(w, seconds, draws, slot);
    if (traced(w) && d > 0)
      record(w, 0, kind, start_s, d, i, {}, kNoValue);
    return d;
  }

  void start_update(int w, int i, double start_s) {
    Worker& worker = workers_[w];
    result_.worker_exposed_comm_s[w] += start_s - worker.backward_end_s;
    const double d = update_compute_s(w, i);
    if (traced(w) && d > 0) record(w, 0, EventKind::kUpdate, start_s, d, i, {}, kNoValue);
    if (d > 0) worker.compute.push_back({start_s, start_s + d});
    queue_.schedule(start_s + d, UpdateDone{w, i});
  }

  void on_update_done(int w, int i) {
    Worker& worker = workers_[w];
    worker.update_end_s = now_;
    IterationState& state = iterations_[i];
    if (state.after_update_total == 0) return end_iteration(w, i);
    for (const int id : state.collectives)
      if (collectives_[id].op->issue == IssuePoint::kAfterUpdate) issue(id, now_);
    state.waiting_for_next.push_back(w);
  }

  void end_iteration(int w, int i) {
    Worker& worker = workers_[w];
    result_.worker_exposed_comm_s[w] += now_ - worker.update_end_s;
    result_.worker_iteration_s[w][i] = now_ - worker.previous_end_s;
    worker.previous_end_s = now_;
    iteration_end_s_[i] = std::max(iteration_end_s_[i], now_);
    queue_.schedule(now_, IterationStart{w, i + 1});
  }

  void on_collective_ready(int id) {
    collectives_[id].ready = true;
    try_start_stream(collectives_[id].stream);
  }

  // A stream runs its all-reduces in issue order, one at a time.
  void try_start_stream(int stream) {
    if (stream_busy_[stream] || streams_[stream].empty()) return;
    const int id = streams_[stream].front();
    if (!collectives_[id].ready) return;
    streams_[stream].pop_front();
    stream_busy_[stream] = true;
    collectives_[id].start_s = now_;
    Collective& collective = collectives_[id];
    // An "auto" cluster runs the cheapest candidate for the all-reduce's size (docs/collectives.md 6).
    collective.candidate = options_.sync_time == SyncTimeSource::kModel ? model_.choose(collective.bytes) : 0;
    collective.phase = options_.sync_time == SyncTimeSource::kModel
                           ? model_.candidates()[collective.candidate].first_phase - 1
                           : -1;
    next_phase(id);
  }

  // One past the last phase of `collective` (measured times: one transfer, phase 0).
  int phase_end(const Collective& collective) const {
    return options_.sync_time == SyncTimeSource::kMeasured ? 1 : model_.candidates()[collective.candidate].end_phase;
  }

  void next_phase(int id) {
    Collective& collective = collectives_[id];
    if (++collective.phase == phase_end(collective)) return finish(id);
    const double latency = options_.sync_time == SyncTimeSource::kMeasured ? 0.0
                                                                           : model_.phases()[collective.phase].latency_s;
    if (latency > 0) queue_.schedule(now_ + latency, PhaseLatencyDone{id});
    else start_transfer(id);
  }

  void start_transfer(int id) {
    Collective& collective = collectives_[id];
    int link = measured_resource_;
    double work = collective.measured_s;  // seconds on the measured resource, bytes on a model link
    if (options_.sync_time == SyncTimeSource::kModel) {
      const CollectivePhase& phase = model_.phases()[collective.phase];
      link = phase_resource_[collective.phase];
      work = link < 0 ? 0.0 : collective.bytes * phase.bottleneck_bytes_per_byte / phase.efficiency;
    }
    if (work <= 0) return next_phase(id);
    progress(link);
    const int transfer_id = static_cast<int>(transfers_.size());
    transfers_.push_back(Transfer{id, link, work, 0, 0, true});
    links_[link].transfers.push_back(transfer_id);
    reschedule(link);
  }

  // Advances every transfer on `link` to now at its current rate.
  void progress(int link) {
    LinkState& state = links_[link];
    for (const int t : state.transfers) transfers_[t].remaining_work -= transfers_[t].rate * (now_ - state.last_update_s);
    state.last_update_s = now_;
  }

  // Equal shares of the link; new completion events (older ones become stale).
  void reschedule(int link) {
    LinkState& state = links_[link];
    const double share = state.capacity / static_cast<double>(state.transfers.size());
    for (const int t : state.transfers) {
      Transfer& transfer = transfers_[t];
      transfer.rate = share;
      ++transfer.version;
      queue_.schedule(now_ + std::max(0.0, transfer.remaining_work) / share, TransferDone{t, transfer.version});
    }
  }

  void on_transfer_done(int t, std::uint64_t version) {
    Transfer& transfer = transfers_[t];
    if (!transfer.active || transfer.version != version) return;
    const int link = transfer.link;
    progress(link);
    transfer.active = false;
    auto& active = links_[link].transfers;
    active.erase(std::find(active.begin(), active.end(), t));
    if (!active.empty()) reschedule(link);
    next_phase(transfer.collective);
  }

  void finish(int id) {
    Collective& collective = collectives_[id];
    collective.phase = kFinished;
    comm_intervals_.push_back({collective.start_s, now_});
    // Every all-reduce of one model candidate crosses the same links in the same proportions: bytes
    // per link are each candidate's all-reduced total times its links' bytes per byte, summed once
    // at the end.
    if (!std::isnan(collective.bytes)) allreduced_bytes_[collective.candidate] += collective.bytes;
    for (int w = 0; w < simulated_ && traced(w); ++w) {
      record(w, 1 + collective.stream, EventKind::kAllreduce, collective.start_s, now_ - collective.start_s,
             collective.iteration, collective.op->layers, collective.bytes, collective.op->delay);
    }
    stream_busy_[collective.stream] = false;
    IterationState& state = iterations_[collective.iteration];
    if (collective.op->issue == IssuePoint::kAfterUpdate) {
      if (--state.after_update_left == 0)
        for (const int w : std::exchange(state.waiting_for_next, {})) end_iteration(w, collective.iteration);
    } else if (collective.update_iteration >= 0 && --iterations_[collective.update_iteration].blocking_left == 0) {
      const int update = collective.update_iteration;
      for (const int w : std::exchange(iterations_[update].waiting_for_update, {}))
        start_update(w, update, std::max(now_, workers_[w].backward_end_s));
    }
    try_start_stream(collective.stream);
  }

  const DesLayers& layers_;
  const Cluster& cluster_;
  const SyncProgram& program_;
  const DesOptions& options_;
  const Topology& topology_;
  const AllreduceModel& model_;
  int simulated_ = 1;
  double now_ = 0;
  EventQueue<Payload> queue_;
  std::vector<Worker> workers_;
  std::optional<JitterFactors> jitter_factors_;  // the lognormal or normal jitter only
  std::optional<SpreadDraws> spread_draws_;     // the "measured" jitter only
  std::vector<IterationState> iterations_;
  std::vector<Collective> collectives_;
  std::vector<Transfer> transfers_;
  std::vector<LinkState> links_;
  int measured_resource_ = 0;
  std::vector<int> bottleneck_links_;  // topology link id of each links_ entry but the measured one
  std::vector<int> phase_resource_;    // per model phase: its links_ entry (-1: nothing moves)
  std::vector<double> allreduced_bytes_;  // per model candidate
  std::vector<std::deque<int>> streams_;
  std::vector<bool> stream_busy_;
  std::uint64_t next_stream_ = 0;
  std::vector<double> ready_s_;
  std::vector<double> forward_d_, backward_d_;  // scratch: one worker-iteration's layer durations
  std::vector<double> factors_;                 // scratch: its jitter factors
  std::vector<double> iteration_end_s_;
  std::vector<Interval> comm_intervals_;
  DesResult result_;
};

// Delays as docs/time-model.md section 13 allows them: d >= 0, only on ops issued when their
// gradient is ready, and no sync past its period's last update (h + d <= H - 1). A plan's are
// checked when it is read (core/plan.cpp), so a bad one here is a bug of the code that built the
// program: InternalError, naming the iteration, the layer and the delay.
void check_sync_delays(const SyncProgram& program, const DesLayers& layers) {
  const int period = program.period();
  for (int h = 0; h < period; ++h)
    for (const SyncOp& op : program.iterations[h]) {
      if (op.delay == 0) continue;
      const std::string where = "sync program: iteration " + std::to_string(h) + " of " + std::to_string(period) +
                                ", all-reduce of layer '" + layers.names[op.layers.back()] + "'";
      if (op.delay < 0) throw InternalError(where + ": delay " + std::to_string(op.delay) + " is negative");
      if (op.issue != IssuePoint::kGradientReady)
        throw InternalError(where + ": delay " + std::to_string(op.delay) +
                            " on an all-reduce not issued when its gradient is ready (only those may be delayed)");
      if (h + op.delay > period - 1)
        throw InternalError(where + ": delay " + std::to_string(op.delay) + " runs past the period (h + delay = " +
                            std::to_string(h + op.delay) + " > H - 1 = " + std::to_string(period - 1) + ")");
    }
}

}  // namespace

double des_memory_bytes(const DesLayers& layers, const Cluster& cluster, const AllreduceModel& model,
                        const SyncProgram& program, const DesOptions& options) {
  constexpr double kGrowth = 2;  // a vector grown by push_back holds up to twice its elements
  const double simulated = cluster.identical_workers() ? 1 : cluster.workers;
  const double iterations = options.iterations;
  // Collectives over the run: the program's all-reduces per period, repeated (an upper bound: ops of
  // tied layers only or of nothing to average issue none).
  double collectives = 0;
  const int period = program.period();
  for (int h = 0; h < period; ++h) {
    const double repeats = std::floor(iterations / period) + (h < options.iterations % period ? 1 : 0);
    collectives += repeats * static_cast<double>(program.iterations[h].size());
  }
  const double phases = options.sync_time == SyncTimeSource::kMeasured ? 1 : static_cast<double>(model.most_phases());
  // Per simulated worker and iteration: its iteration time, and two compute intervals (forward and
  // backward, update; reserved up front).
  const double per_worker_iteration = sizeof(double) + 2 * sizeof(Interval);
  const double per_iteration = sizeof(IterationState) + 2 * sizeof(double) * kGrowth;
  // Per collective: its state, its id in its iteration and its stream, its busy interval, and a
  // transfer per phase (transfers are kept to the end).
  const double per_collective =
      kGrowth * (sizeof(Collective) + sizeof(int) + sizeof(Interval) + phases * sizeof(Transfer)) + sizeof(int);
  // Per simulated worker besides its iterations: its state, its iteration-time vector, exposed
  // communication and overlap (jitter draws are counter-based: no state).
  const double per_worker = sizeof(Worker) + sizeof(std::vector<double>) + 2 * sizeof(double);
  double bytes = simulated * iterations * per_worker_iteration + iterations * per_iteration +
                 collectives * per_collective + simulated * per_worker;
  if (options.link_bytes) {
    // The result's bytes per directed link (2 per worker and 2 per node, whether or not workers
    // are identical): a count per link while summing, then a name and a count per used link.
    const double links = 2.0 * cluster.workers + (cluster.nodes() > 1 ? 2.0 * cluster.nodes() : 0.0);
    bytes += links * (sizeof(double) + kGrowth * sizeof(std::pair<std::string, double>) + kLinkNameBytes);
    if (options.result_document) bytes += links * kResultJsonBytesPerLink;
  }
  if (options.result_document) bytes += static_cast<double>(cluster.workers) * kResultJsonBytesPerWorker;
  const double traced = std::min<double>(std::max(options.trace_workers, 0), simulated);
  if (traced > 0) {
    // Per traced worker and iteration: a forward and a backward event per layer, the update and
    // the all-reduces; each event's record, name and layer list, and its JSON object and text
    // (kTraceJsonBytesPerEvent, docs/des.md "Memory").
    double names = 0;
    for (const std::string& name : layers.names) names += static_cast<double>(name.size()) + sizeof("backward ");
    const double per_event = kGrowth * (sizeof(DesTraceEvent) + sizeof(int)) + kTraceJsonBytesPerEvent;
    const double compute_events = iterations * (2.0 * static_cast<double>(layers.size()) + 1);
    bytes += traced * ((compute_events + collectives) * per_event + iterations * 2 * names);
  }
  return bytes;
}

DesResult run_des(const DesLayers& layers, const Cluster& cluster, const SyncProgram& program,
                  const DesOptions& options) {
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  return run_des(layers, cluster, topology, model, program, options);
}

DesResult run_des(const DesLayers& layers, const Cluster& cluster, const Topology& topology,
                  const AllreduceModel& model, const SyncProgram& program, const DesOptions& options) {
  SYNCPLAN_CHECK(topology.workers() == cluster.workers);
  // The caller's request was validated (validate_simulate_request; plans when read).
  SYNCPLAN_CHECK(options.iterations >= 1);
  SYNCPLAN_CHECK(options.bucket_alpha_s >= 0 && std::isfinite(options.bucket_alpha_s));
  SYNCPLAN_CHECK(options.comm_streams >= 1);
  SYNCPLAN_CHECK(program.period() >= 1);
  for (const auto& ops : program.iterations)
    for (const SyncOp& op : ops) {
      SYNCPLAN_CHECK(!op.layers.empty());
      for (const int j : op.layers) SYNCPLAN_CHECK(j >= 0 && j < static_cast<int>(layers.size()));
    }
  check_sync_delays(program, layers);
  const double needed_bytes = des_memory_bytes(layers, cluster, model, program, options);
  const double limit_bytes = options.memory_limit_bytes.value_or(available_memory_bytes());
  if (needed_bytes > limit_bytes) {
    const auto amount = [](double value) {
      char bytes[40];
      std::snprintf(bytes, sizeof bytes, "%.0f", value);
      return std::string(bytes) + " bytes (" + format_short(value / units::kBytesPerGiB, 2) + " GiB)";
    };
    const int simulated = cluster.identical_workers() ? 1 : cluster.workers;
    throw InputError("the discrete-event simulation needs about " + amount(needed_bytes) + " of memory for " +
                     std::to_string(simulated) + " simulated worker(s) x " + std::to_string(options.iterations) +
                     " iterations x " + std::to_string(layers.size()) + " layers" +
                     (options.trace_workers > 0 ? " with " + std::to_string(options.trace_workers) + " traced worker(s)"
                                                : std::string()) +
                     ", more than the " + amount(limit_bytes) +
                     " available; simulate fewer iterations or workers, or trace fewer workers");
  }
  Engine engine(layers, cluster, topology, model, program, options);
  return engine.run();
}

Json des_trace_json(const DesResult& result, const DesLayers& layers) {
  Json events = Json::array();
  int streams = 0;
  int traced_workers = 0;
  for (const DesTraceEvent& event : result.trace) {
    streams = std::max(streams, event.stream + 1);
    traced_workers = std::max(traced_workers, event.worker + 1);
  }
  for (int w = 0; w < traced_workers; ++w) append_timeline_tracks(events, w, "worker " + std::to_string(w), std::max(streams - 1, 0));
  for (const DesTraceEvent& event : result.trace) {
    TimelineSlice slice{.kind = event.kind, .pid = event.worker, .tid = event.stream, .start_s = event.start_s,
                        .duration_s = event.duration_s, .iteration = event.iteration};
    for (const int j : event.layers) slice.layers.push_back(layers.names[j]);
    if (event.kind == EventKind::kAllreduce && !std::isnan(event.bytes)) slice.bytes = event.bytes;
    slice.delay = event.delay;
    events.push_back(timeline_slice_json(slice));
  }
  return Json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace syncplan
