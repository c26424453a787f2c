// The executor's hooks: launching, polling and waiting for a period's buckets, with the emulated
// link's completion times and delayed averaging's snapshots and corrections (runtime/executor.hpp,
// docs/runtime.md sections 2, 5 and 11).
#include "runtime/executor.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "simulator/topology.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace syncplan {

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

Cluster emulated_cluster(const EmulatedLink& link, int workers) {
  if (!(link.bandwidth_Gbps >= limits::kMinBandwidth_Gbps && link.bandwidth_Gbps <= limits::kMaxBandwidth_Gbps))
    throw FieldError("emulate_link_Gbps", "emulate_link_Gbps: must be a bandwidth in [" +
                                              number_text(limits::kMinBandwidth_Gbps) + ", " +
                                              number_text(limits::kMaxBandwidth_Gbps) + "] Gbit/s, got " +
                                              number_text(link.bandwidth_Gbps));
  if (!(link.latency_us >= 0 && link.latency_us <= limits::kMaxLatency_us))
    throw FieldError("emulate_latency_us", "emulate_latency_us: must be a latency in [0, " +
                                               number_text(limits::kMaxLatency_us) + "] us, got " +
                                               number_text(link.latency_us));
  if (workers < 1) throw InternalError("emulated_cluster: workers < 1");
  Cluster cluster;
  cluster.name = "emulated link: " + number_text(link.bandwidth_Gbps) + " Gbit/s, " + number_text(link.latency_us) +
                 " us, " + std::to_string(workers) + " ranks";
  cluster.workers = workers;
  cluster.workers_per_node = 1;
  cluster.intra_node = {link.bandwidth_Gbps, link.latency_us};
  cluster.inter_node = {link.bandwidth_Gbps, link.latency_us};
  cluster.allreduce = AllreduceAlgorithm::kRing;
  return cluster;
}

SyncTimeout::SyncTimeout(int rank, std::int64_t iteration, const std::string& first_layer, std::size_t layers,
                         double deadline_s, std::int64_t tag)
    : std::runtime_error("rank " + std::to_string(rank) + ": iteration " + std::to_string(iteration) +
                         ": the all-reduce of bucket '" + first_layer + "'" +
                         (layers > 1 ? " (" + std::to_string(layers) + " layers)" : std::string()) +
                         " did not complete within its deadline of " + number_text(deadline_s) +
                         " s (a rank died, hung or never started it)"),
      rank_(rank),
      iteration_(iteration),
      first_layer_(first_layer),
      tag_(tag) {}

Executor::Executor(Schedule schedule, Communicator& comm, const LayerBuffers& buffers, const RunClock& clock,
                   ExecutorOptions options)
    : schedule_(std::move(schedule)), comm_(comm), clock_(clock), options_(std::move(options)) {
  if (!(options_.timeout_s > 0 && std::isfinite(options_.timeout_s)))
    throw FieldError("timeout_s", "timeout_s: must be a finite number of seconds > 0, got " + number_text(options_.timeout_s));
  if (options_.first_iteration < 0)
    throw FieldError("first_iteration", "first_iteration: must be >= 0, got " + std::to_string(options_.first_iteration));
  SYNCPLAN_CHECK(schedule_.period() >= 1);
  if (options_.link) {
    const Cluster cluster = emulated_cluster(*options_.link, comm_.size());
    emulated_ = std::make_unique<AllreduceModel>(cluster, Topology(cluster));
  }
  const bool delayed = schedule_.delayed();
  const bool on_host = std::string(comm_.buffer_place()) == "host";
  if (delayed && !on_host && !options_.device_snapshots)
    throw InputError(std::string("a delayed-averaging schedule (sync_delays) needs snapshots where the ") +
                     comm_.backend() + " communicator averages, in " + comm_.buffer_place() +
                     " memory, and the training device offers none");
  if (!on_host) host_snapshots_ = false;
  for (const std::vector<ScheduleBucket>& buckets : schedule_.iterations) {
    auto& spans = spans_.emplace_back();
    auto& names = names_.emplace_back();
    auto& snapshots = snapshots_.emplace_back(buckets.size());
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const ScheduleBucket& bucket = buckets[b];
      SYNCPLAN_CHECK(bucket.delay == 0 || bucket.launch == LaunchPoint::kLayerDone);
      auto& list = spans.emplace_back();
      std::size_t elements = 0;
      for (const std::size_t layer : bucket.layers) {
        const std::vector<std::span<float>> tensors = buffers(layer);
        list.insert(list.end(), tensors.begin(), tensors.end());
        for (const std::span<float> tensor : tensors) elements += tensor.size();
      }
      names.push_back(schedule_.layer_names.at(bucket.layers.front()));
      if (bucket.delay > 0) {
        Snapshot& snapshot = snapshots[b];
        if (host_snapshots_) {
          snapshot.own_host.resize(elements);
          snapshot.mean_host.resize(elements);
          snapshot.own = snapshot.own_host;
          snapshot.mean = snapshot.mean_host;
        } else {
          snapshot.own = options_.device_snapshots->allocate(elements);
          snapshot.mean = options_.device_snapshots->allocate(elements);
        }
      }
    }
  }
  iteration_ = options_.first_iteration;
  if (const auto flying = schedule_.in_flight_at(period_position()))
    throw FieldError("first_iteration", "first_iteration: " + std::to_string(iteration_) + " is period position " +
                                            std::to_string(period_position()) + ", where the delayed sync of bucket '" +
                                            names_[flying->first][flying->second] + "' started in the period's iteration " +
                                            std::to_string(flying->first) + " is still in flight");
}

double Executor::emulated_allreduce_s(double bytes) const { return emulated_ ? emulated_->time_s(bytes) : 0.0; }

const ExecutedIteration& Executor::last_executed() const {
  SYNCPLAN_CHECK(last_.has_value());
  return *last_;
}

void Executor::begin_iteration() {
  SYNCPLAN_CHECK(phase_ == Phase::kIdle);
  phase_ = Phase::kBackward;
  next_bucket_ = 0;
  current_ = ExecutedIteration{};
  current_.iteration = iteration_;
  current_.period_position = period_position();
}

void Executor::launch(std::size_t bucket) {
  const int h = period_position();
  const ScheduleBucket& scheduled = schedule_.iterations[h][bucket];
  ExecutedBucket record;
  record.layers = scheduled.layers;
  record.bytes = scheduled.bytes;
  record.launch_s = clock_.now_s();
  record.emulated_end_s = record.launch_s;
  if (emulated_) {
    // One first-in-first-out link, as the DES and SPEC section 5 time it: a bucket starts when it is
    // launched and the previous bucket's emulated transfer is over, and takes the cluster's time.
    record.emulated_end_s = std::max(record.launch_s, link_free_s_) + emulated_->time_s(static_cast<double>(scheduled.bytes));
    link_free_s_ = record.emulated_end_s;
  }
  // The watch hears of the bucket before it is started: a peer that times out in it can then tell
  // this rank arrived (comm/arrivals.hpp).
  const std::int64_t tag = options_.watch.started ? options_.watch.started(iteration_, names_[h][bucket]) : started_;
  ++started_;
  newest_tag_ = tag;
  record.delay = scheduled.delay;
  if (scheduled.delay > 0) {
    // Delayed averaging (docs/time-model.md section 13, step 1): the parameters iteration h used
    // (its step has not run) are copied twice, one copy kept as s, the other averaged into m.
    Snapshot& snapshot = snapshots_[h][bucket];
    void* ready = nullptr;
    if (host_snapshots_) {
      auto into = snapshot.own.begin();
      for (const std::span<float> tensor : spans_[h][bucket]) into = std::copy(tensor.begin(), tensor.end(), into);
      std::copy(snapshot.own.begin(), snapshot.own.end(), snapshot.mean.begin());
    } else {
      ready = options_.device_snapshots->take(spans_[h][bucket], snapshot.own, snapshot.mean);
    }
    const BucketRequest request =
        comm_.start(names_[h][bucket], std::span<const std::span<float>>(&snapshot.mean, 1), ready);
    delayed_.push_back({{request, bucket, 0, tag}, h, iteration_ + scheduled.delay, false, {iteration_, record, 0}});
    current_.buckets.push_back(std::move(record));
    return;
  }
  void* ready = nullptr;
  if (options_.ready_event && scheduled.launch != LaunchPoint::kAfterStep)
    ready = options_.ready_event(scheduled.launch == LaunchPoint::kLayerDone ? scheduled.layers.back() : 0);
  const BucketRequest request = comm_.start(names_[h][bucket], spans_[h][bucket], ready);
  in_flight_.push_back({request, bucket, current_.buckets.size(), tag});
  current_.buckets.push_back(std::move(record));
}

void Executor::complete(const Flight& flight, double now_s) {
  current_.buckets[flight.record].end_s = std::max(now_s, current_.buckets[flight.record].emulated_end_s);
}

// A bucket whose all-reduce is done but whose emulated end is still ahead stays "in flight" for
// the emulation only: its request is released, so it is marked with an id of -1.
void Executor::test_in_flight() {
  const double now_s = clock_.now_s();
  for (Flight& flight : in_flight_) {
    if (flight.request.id >= 0 && comm_.test(flight.request)) flight.request.id = -1;
    if (flight.request.id < 0 && now_s >= current_.buckets[flight.record].emulated_end_s) {
      complete(flight, now_s);
      flight.bucket = static_cast<std::size_t>(-1);
    }
  }
  std::erase_if(in_flight_, [](const Flight& flight) { return flight.bucket == static_cast<std::size_t>(-1); });
  for (Delayed& delayed : delayed_) {
    if (delayed.done) continue;
    if (delayed.flight.request.id >= 0 && comm_.test(delayed.flight.request)) delayed.flight.request.id = -1;
    if (delayed.flight.request.id < 0 && now_s >= delayed.record.bucket.emulated_end_s) {
      delayed.record.bucket.end_s = std::max(now_s, delayed.record.bucket.emulated_end_s);
      delayed.done = true;
    }
  }
}

void Executor::layer_forward_done(std::size_t /*layer*/) {
  SYNCPLAN_CHECK(phase_ == Phase::kBackward);
  if (in_flight_.empty() && std::none_of(delayed_.begin(), delayed_.end(), [](const Delayed& d) { return !d.done; }))
    return;
  test_in_flight();
  if (options_.watch.waiting) options_.watch.waiting(newest_tag_, 0.0);
}

void Executor::layer_backward_done(std::size_t layer) {
  SYNCPLAN_CHECK(phase_ == Phase::kBackward);
  const auto& buckets = schedule_.iterations[period_position()];
  // Backprop runs layers L-1 .. 0: a bucket's last layer is done once the current one is at or below it.
  while (next_bucket_ < buckets.size() && buckets[next_bucket_].launch == LaunchPoint::kLayerDone &&
         buckets[next_bucket_].layers.back() >= layer)
    launch(next_bucket_++);
  if (!in_flight_.empty() || !delayed_.empty()) {
    test_in_flight();
    if (options_.watch.waiting) options_.watch.waiting(newest_tag_, 0.0);
  }
}

double Executor::wait_for(BucketRequest& request, double emulated_end_s, int h, std::size_t b, std::int64_t tag) {
  // Polled here rather than with Communicator::wait, so that the watch runs between tests.
  const double started_s = clock_.now_s();
  while (request.id >= 0 && !comm_.test(request)) {
    const double waited_s = clock_.now_s() - started_s;
    if (waited_s > options_.timeout_s)
      throw SyncTimeout(comm_.rank(), iteration_, names_[h][b], schedule_.iterations[h][b].layers.size(),
                        options_.timeout_s, tag);
    if (options_.watch.waiting) options_.watch.waiting(tag, waited_s);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  request.id = -1;
  if (clock_.now_s() < emulated_end_s) std::this_thread::sleep_until(clock_.at(emulated_end_s));
  return clock_.now_s();
}

void Executor::wait_in_flight() {
  for (Flight& flight : in_flight_)
    complete(flight, wait_for(flight.request, current_.buckets[flight.record].emulated_end_s, period_position(),
                              flight.bucket, flight.tag));
  in_flight_.clear();
}

// docs/time-model.md section 13, step 2: before the step of iteration h + d, wait for the sync of
// h and apply p <- p + (m - s) to the live parameters; several in sync order (delayed_ is in
// launch order: iteration ascending, then issue order). The d = 0 buckets of this iteration were
// averaged in place before (wait_in_flight): corrections are additions, so in exact arithmetic the
// order among them is immaterial; the contract's order is kept among the corrections.
void Executor::apply_due() {
  for (Delayed& delayed : delayed_) {
    if (delayed.due != iteration_) continue;
    ExecutedBucket& bucket = delayed.record.bucket;
    if (!delayed.done)
      bucket.end_s = std::max(wait_for(delayed.flight.request, bucket.emulated_end_s, delayed.h, delayed.flight.bucket,
                                       delayed.flight.tag),
                              bucket.emulated_end_s);
    const Snapshot& snapshot = snapshots_[delayed.h][delayed.flight.bucket];
    if (host_snapshots_) {
      std::size_t at = 0;
      for (const std::span<float> tensor : spans_[delayed.h][delayed.flight.bucket])
        for (float& p : tensor) {
          p = p + (snapshot.mean[at] - snapshot.own[at]);
          ++at;
        }
    } else {
      options_.device_snapshots->correct(spans_[delayed.h][delayed.flight.bucket], snapshot.own, snapshot.mean);
    }
    delayed.record.applied_s = clock_.now_s();
    current_.applied.push_back(std::move(delayed.record));
  }
  std::erase_if(delayed_, [this](const Delayed& delayed) { return delayed.due == iteration_; });
}

std::size_t Executor::drain() {
  SYNCPLAN_CHECK(phase_ == Phase::kIdle);
  for (Delayed& delayed : delayed_)
    if (!delayed.done)
      wait_for(delayed.flight.request, delayed.record.bucket.emulated_end_s, delayed.h, delayed.flight.bucket,
               delayed.flight.tag);
  const std::size_t dropped = delayed_.size();
  delayed_.clear();
  return dropped;
}

void Executor::before_step() {
  SYNCPLAN_CHECK(phase_ == Phase::kBackward);
  // The time from here to the step is communication the step waits for: launches included (ssgd
  // starts all its buckets here, each MPI_Iallreduce a call of its own).
  const double started_s = clock_.now_s();
  const auto& buckets = schedule_.iterations[period_position()];
  while (next_bucket_ < buckets.size() && buckets[next_bucket_].launch != LaunchPoint::kAfterStep) launch(next_bucket_++);
  wait_in_flight();
  if (!delayed_.empty()) apply_due();
  current_.wait_s += clock_.now_s() - started_s;
  phase_ = Phase::kStepping;
}

void Executor::after_step() {
  SYNCPLAN_CHECK(phase_ == Phase::kStepping);
  const double started_s = clock_.now_s();
  const auto& buckets = schedule_.iterations[period_position()];
  while (next_bucket_ < buckets.size()) launch(next_bucket_++);
  wait_in_flight();
  current_.wait_s += clock_.now_s() - started_s;
  last_ = std::move(current_);
  ++iteration_;
  phase_ = Phase::kIdle;
}

}  // namespace syncplan
