// The executor (docs/runtime.md section 2): runs a period's schedule inside a training loop through
// four hooks, owns the iteration counter (advanced once per optimizer step), launches each bucket
// when its last layer's backward is done, progresses the buckets in flight by polling, waits for
// them with a deadline before the step (delayed buckets: before the step of a later iteration,
// applied as corrections, docs/runtime.md section 11), and records what this rank averaged and when.
#pragma once

#include "comm/communicator.hpp"
#include "core/cluster.hpp"
#include "runtime/schedule.hpp"
#include "runtime/trace.hpp"
#include "simulator/collectives.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace syncplan {

/// A number for one-line messages, as printf's %g writes it ("0.2", "1e-06", "300").
std::string number_text(double value);

/// An emulated slow link (`run --emulate-link-Gbps B --emulate-latency-us A`).
struct EmulatedLink {
  double bandwidth_Gbps = 0;  ///< per direction, gigabits per second (1e9 bit/s), in core/limits.hpp's range
  double latency_us = 0;      ///< one-way latency, microseconds, >= 0
};

/// The cluster a run under `link` on `workers` ranks emulates: `workers` nodes of one worker each,
/// every link (inside and between nodes) at the emulated bandwidth and latency, ring all-reduce.
/// `syncplan simulate --cluster` on this cluster (cluster_to_json) predicts the emulated run.
/// Throws InputError naming the field when the bandwidth or latency is outside the cluster limits.
Cluster emulated_cluster(const EmulatedLink& link, int workers);

/// A bucket did not complete within the deadline before the step: a rank died, hung or never
/// started it. The bucket stays in flight; the caller reports what() (one line) and aborts.
class SyncTimeout : public std::runtime_error {
 public:
  SyncTimeout(int rank, std::int64_t iteration, const std::string& first_layer, std::size_t layers, double deadline_s,
              std::int64_t tag = -1);
  int rank() const { return rank_; }
  std::int64_t iteration() const { return iteration_; }
  const std::string& first_layer() const { return first_layer_; }
  /// The bucket's tag (BucketWatch::started's result; -1 without a watch).
  std::int64_t tag() const { return tag_; }

 private:
  int rank_;
  std::int64_t iteration_;
  std::string first_layer_;
  std::int64_t tag_;
};

/// How the training loop follows the buckets (the trainer: comm/arrivals.hpp's announcements and
/// heartbeats, comm/fatal_signal.hpp's line). Either may be empty.
struct BucketWatch {
  /// A bucket is being started in `iteration`, its first layer `first_layer`: returns the tag the
  /// executor hands back in `waiting` and SyncTimeout (the trainer: its Arrivals sequence number).
  std::function<std::int64_t(std::int64_t iteration, const std::string& first_layer)> started;
  /// Called after each round of tests of the buckets in flight: in layer_backward_done with
  /// `waited_s` 0 and `tag` the newest bucket's, and between tests while before_step or after_step
  /// wait for bucket `tag`, with the seconds waited for it so far.
  std::function<void(std::int64_t tag, double waited_s)> waiting;
};

/// Options of an executor.
/// Delayed averaging's snapshots in device memory (a GPU's; docs/runtime.md section 11), in order
/// with the device's compute: the training device's TrainingDevice::snapshot_buffer, snapshot and
/// correct. Tensors are fp32 spans of device memory (pointer and float count; never read here).
struct DeviceSnapshots {
  /// `floats` floats of device memory that stay for the executor's life.
  std::function<std::span<float>(std::size_t floats)> allocate;
  /// Enqueues copies of `tensors`, one after another, into `own` and into `mean`, after the work
  /// enqueued so far; returns what the all-reduce of `mean` waits for (a ready event).
  std::function<void*(std::span<const std::span<float>> tensors, std::span<float> own, std::span<float> mean)> take;
  /// Enqueues p <- p + (mean - own) over `tensors`, before the work enqueued after it (the step).
  std::function<void(std::span<const std::span<float>> tensors, std::span<const float> own, std::span<const float> mean)>
      correct;
};

struct ExecutorOptions {
  double timeout_s = 300;              ///< deadline of each bucket's wait before (or after) the step, s; > 0, finite
  std::optional<EmulatedLink> link;    ///< emulated link; none: buckets complete when the all-reduce does
  std::int64_t first_iteration = 0;    ///< the iteration counter's start (a resumed run's step), >= 0
  BucketWatch watch;                   ///< follows the buckets; none: nothing is told
  /// What a bucket waits for before its all-reduce reads its tensors, by model layer index
  /// (TrainingDevice::backward's result: a GPU's event after the layer's backward). A kLayerDone
  /// bucket waits for its last layer's (layers.back()), a kAfterBackward one for layer 0's (the
  /// last backward), a kAfterStep one for nothing (the trainer finished the device's step). None:
  /// every bucket is launched with a null ready_event (the CPU: computed on return).
  std::function<void*(std::size_t layer)> ready_event;
  /// Where the communicator averages device memory (buffer_place "device"), a delayed schedule's
  /// snapshots and corrections go through these (the training device's memory and stream); none:
  /// a delayed schedule needs a communicator of host memory.
  std::optional<DeviceSnapshots> device_snapshots;
};

/// The buffers a bucket's layer averages: model layer index -> its tensors (parameters or
/// gradients, as the schedule's kind says), float32 memory where the communicator averages
/// (host for MPI, device for NCCL) that stays in place for the executor's life (the training
/// device's arenas).
using LayerBuffers = std::function<std::vector<std::span<float>>(std::size_t layer)>;

/// One bucket as this rank ran it.
struct ExecutedBucket {
  std::vector<std::size_t> layers;  ///< model layer indices, backprop order
  std::int64_t bytes = 0;
  double launch_s = 0;              ///< when it was started (s on the run clock)
  /// When this rank saw it complete (s): the later of the all-reduce and the emulated end. A
  /// delayed bucket (delay > 0) completes in a later iteration: 0 in its launch iteration's
  /// record, set in the AppliedSync of the iteration that applies it.
  double end_s = 0;
  double emulated_end_s = 0;        ///< the emulated link's end (s); = launch_s without emulation
  int delay = 0;                    ///< ScheduleBucket::delay: applied before the step of iteration + delay
};

/// A delayed bucket (delay > 0) whose correction p <- p + (mean - snapshot) was applied to the live
/// parameters before a step (docs/time-model.md section 13).
struct AppliedSync {
  std::int64_t started_iteration = 0;  ///< the iteration that launched it (its snapshot's)
  ExecutedBucket bucket;               ///< with end_s: when this rank saw the all-reduce complete
  double applied_s = 0;                ///< when the correction was applied (s on the run clock)
};

/// What this rank averaged in one iteration (the executed schedule, SPEC section 8).
struct ExecutedIteration {
  std::int64_t iteration = 0;
  int period_position = 0;            ///< h = iteration mod H
  std::vector<ExecutedBucket> buckets;///< launched in this iteration, in launch order
  /// The delayed buckets of this or earlier iterations applied before this iteration's step, in
  /// sync order (launch iteration ascending, then launch order); empty without delays.
  std::vector<AppliedSync> applied;
  double wait_s = 0;                  ///< time in before_step and after_step: launching and waiting for buckets (s)
};

/// Runs `schedule` through a training loop's hooks, in this order per optimizer step:
///   begin_iteration(); layer_forward_done(l) after each layer's forward (optional);
///   layer_backward_done(l) for l = L-1 .. 0 (every layer, in backprop order); before_step();
///   [optimizer step]; after_step().
/// and drain() once after the last step. A bucket with delay d > 0 (a delayed-averaging plan,
/// docs/time-model.md section 13) launched in iteration h copies its layers' parameters at launch
/// (the snapshot s), all-reduces a second copy on the side while the loop trains on, and in
/// before_step of iteration h + d, after the buckets of that iteration, is waited for and applied
/// to the live parameters as p <- p + (m - s) (m the ranks' mean of s), in sync order. Buckets
/// with d = 0 are averaged in place, as without delays. A hook called out of order is an
/// InternalError. Not thread-safe (the loop's thread only).
class Executor {
 public:
  /// `comm` must outlive the executor; `buffers` gives each scheduled layer's tensors (called once
  /// per layer here, not per iteration). `clock` times launches and completions (the trace's
  /// clock). Throws FieldError "timeout_s: ..." for a deadline that is not > 0 and finite,
  /// "first_iteration: ..." when negative or, with delays, at a period position where a delayed
  /// bucket would be in flight (Schedule::in_flight_at), InputError when a delayed schedule's
  /// communicator averages other than host memory (the snapshots are host copies), and InputError
  /// from emulated_cluster.
  Executor(Schedule schedule, Communicator& comm, const LayerBuffers& buffers, const RunClock& clock,
           ExecutorOptions options = {});

  /// Starts iteration iteration() (its period position h = iteration() mod H).
  void begin_iteration();
  /// Layer `layer`'s forward is done: tests every delayed bucket still in flight once, so that a
  /// delayed all-reduce (the only kind in flight during the forward) keeps moving through the
  /// forward as the DES assumes (MPI progresses only when tested; without these polls a delayed
  /// plan's all-reduces stalled for the whole forward: +15% communication at 200 Mbit/s,
  /// docs/runtime.md section 7.1). Does nothing without one in flight.
  void layer_forward_done(std::size_t layer);
  /// Layer `layer`'s backward is done: launches every kLayerDone bucket whose last layer it is (or
  /// an earlier one's), then tests every bucket in flight once (MPI progresses only when tested).
  void layer_backward_done(std::size_t layer);
  /// Launches what is left of the iteration's kLayerDone buckets and its kAfterBackward ones, then
  /// waits for every bucket in flight, at most options.timeout_s each, and until its emulated end.
  /// Throws SyncTimeout (the bucket's first layer, this rank, the iteration) when one does not
  /// complete in time.
  void before_step();
  /// Runs the iteration's kAfterStep buckets (flsgd) and waits for them as before_step does, then
  /// records the iteration and advances the counter.
  void after_step();
  /// After the last step (between iterations): waits for the delayed buckets still in flight (a
  /// run that ends inside a period), at most options.timeout_s each, and drops them: the step
  /// they were due before is never run. Returns how many were dropped. Throws SyncTimeout.
  std::size_t drain();

  /// The iteration counter: optimizer steps taken (from options.first_iteration).
  std::int64_t iteration() const { return iteration_; }
  /// h = iteration() mod H.
  int period_position() const { return static_cast<int>(iteration_ % schedule_.period()); }
  const Schedule& schedule() const { return schedule_; }
  /// The last iteration run (after_step records it; the loop logs it before the next one, so the
  /// executor keeps no history that grows with the run). InternalError before the first.
  const ExecutedIteration& last_executed() const;
  /// The all-reduce time (s) the emulated link charges `bytes` bytes, 0 without emulation.
  double emulated_allreduce_s(double bytes) const;

 private:
  struct Flight {
    BucketRequest request;
    std::size_t bucket;   // index into the iteration's schedule
    std::size_t record;   // index into current_.buckets
    std::int64_t tag;     // BucketWatch::started's result, or the bucket's start number
  };
  // A delayed bucket in flight: its own snapshot and the copy being averaged (host memory, one
  // per delayed bucket of the period, reused each period), and its record until it is applied.
  struct Snapshot {
    std::span<float> own;   // s: this rank's parameters at launch, the bucket's tensors in order
    std::span<float> mean;  // m: the copy of s the communicator averages in place
    std::vector<float> own_host, mean_host;  // their memory where the communicator averages host memory
  };
  struct Delayed {
    Flight flight;               // flight.bucket indexes iterations[h]; flight.record is unused
    int h = 0;                   // its period position
    std::int64_t due = 0;        // the iteration before whose step it is applied (h + delay)
    bool done = false;           // the all-reduce and the emulated end are over
    AppliedSync record;
  };
  void launch(std::size_t bucket);
  void test_in_flight();
  void wait_in_flight();
  void complete(const Flight& flight, double now_s);
  // Polls `request` until it is done (at most options.timeout_s, then SyncTimeout naming bucket
  // b of period position h), then sleeps until `emulated_end_s`; returns when it was seen done.
  double wait_for(BucketRequest& request, double emulated_end_s, int h, std::size_t b, std::int64_t tag);
  void apply_due();

  enum class Phase { kIdle, kBackward, kStepping };

  Schedule schedule_;
  Communicator& comm_;
  const RunClock& clock_;
  ExecutorOptions options_;
  std::unique_ptr<AllreduceModel> emulated_;  // the emulated cluster's all-reduce, null without emulation
  // spans_[h][b]: the buffers of bucket b of iteration h, gathered once.
  std::vector<std::vector<std::vector<std::span<float>>>> spans_;
  std::vector<std::vector<std::string>> names_;  // names_[h][b]: the bucket's name for messages
  std::int64_t iteration_ = 0;
  Phase phase_ = Phase::kIdle;
  std::size_t next_bucket_ = 0;  // the next bucket of the iteration to launch
  std::int64_t started_ = 0;     // buckets started so far (the tags without a watch)
  double link_free_s_ = 0;       // when the emulated link is free (s on the run clock)
  std::vector<Flight> in_flight_;
  bool host_snapshots_ = true;                    // the snapshots are host memory, copied here
  std::vector<std::vector<Snapshot>> snapshots_;  // snapshots_[h][b]: empty vectors unless delay > 0
  std::vector<Delayed> delayed_;                  // delayed buckets in flight, in launch order
  std::int64_t newest_tag_ = -1;                  // the tag of the bucket started last
  ExecutedIteration current_;
  std::optional<ExecutedIteration> last_;
};

}  // namespace syncplan
