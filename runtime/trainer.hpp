// The trainer (docs/runtime.md section 3): `syncplan run` without its command line. Each rank
// trains the model on its own shard of a text file (bytes as tokens) with AdamW on the CPU or on
// a CUDA device (runtime/training_device.hpp, docs/runtime.md section 10), while
// the executor runs the schedule; the log (SPEC section 8) and the measured trace are gathered to
// rank 0; checkpoints and --resume (runtime/checkpoint.hpp), the run fingerprint check and the
// deadlines that end a rank when a peer dies or hangs (docs/runtime.md section 6). Collective:
// every rank calls it alike.
#pragma once

#include "comm/communicator.hpp"
#include "comm/fatal_signal.hpp"
#include "comm/mpi_session.hpp"
#include "core/json_io.hpp"
#include "model/adamw.hpp"
#include "runtime/byte_data.hpp"
#include "runtime/executor.hpp"
#include "runtime/schedule.hpp"
#include "runtime/trace.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// What to train. Errors name these fields (FieldError: "iterations", "batch", "seq",
/// "learning_rate", "timeout_s", "device", "period", "strategy", "emulate_link_Gbps",
/// "emulate_latency_us", "checkpoint_every").
struct TrainRequest {
  std::string model;                    ///< a spec name in models_dir or a spec file (resolve_model_spec)
  std::filesystem::path models_dir;     ///< where spec names are looked up (data/models)
  std::string plan_path;                ///< a syncplan.plan/v1 file; empty: `strategy` and `period`
  std::string strategy;                 ///< ssgd, wfbp, flsgd or plsgd-even (without a plan)
  int period = 1;                       ///< H (without a plan), 1..kMaxPeriod
  std::string data_path;                ///< the training text; each rank reads its own shard
  std::int64_t iterations = 0;          ///< the step to train to, 1..limits::kMaxIterations (a resumed run continues to it)
  std::int64_t batch = 4;               ///< sequences per rank and step (B), >= 1
  std::int64_t seq = 64;                ///< tokens per sequence (S), 1..the model's max_position_embeddings
  std::uint64_t seed = 1;               ///< initial parameters (the same on every rank) and dropout masks
  std::string device = "cpu";           ///< cpu, or cuda: one CUDA device per rank (its local rank's), NCCL
  AdamWOptions adamw;                   ///< AdamW's hyperparameters (learning_rate: --lr)
  double timeout_s = 60;                ///< deadline of each bucket's wait (s), 1 .. 86400 (the --timeout-s default)
  std::optional<EmulatedLink> link;     ///< emulated slow link; none: off
  std::filesystem::path checkpoint_dir; ///< where to save checkpoints; empty: none
  std::int64_t checkpoint_every = 0;    ///< save after every K-th step (step mod K = 0), >= 1 with checkpoint_dir
  std::filesystem::path resume_dir;     ///< continue from the latest complete checkpoint here; empty: start fresh
};

/// Checks the request's numbers before anything is read, and for --device cuda that the GPU
/// backend library loads with a trainer and NCCL. Throws FieldError naming the field.
void check_train_request(const TrainRequest& request);

/// --checkpoint DIR checked before training, not at the first save after training (a file or
/// /proc/ck would fail there, naming no flag): DIR, or the nearest existing folder above it, must be a folder
/// in which a folder can be created (a probe of this process's own name, removed again; nothing
/// else is created, so several ranks may check one folder at once). Throws FieldError
/// "checkpoint_dir: DIR: ..." naming why.
void check_checkpoint_folder(const std::filesystem::path& dir);

/// A bucket whose average took effect before an iteration's step, in a delayed-averaging run's
/// log (docs/formats.md "Training log", `applied`).
struct AppliedRecord {
  std::int64_t iteration = 0;        ///< the iteration that launched it (took its snapshot)
  std::vector<std::string> layers;   ///< the bucket, backprop order
  int delay = 0;                     ///< applied before the step of iteration + delay
  double start_s = 0;                ///< launched (s on the run clock)
  double end_s = 0;                  ///< this rank saw its all-reduce complete (s)
  double applied_s = 0;              ///< the average or correction was in the parameters (s)
};

/// One line of the log (SPEC section 8), as one rank saw one iteration.
struct IterationRecord {
  std::int64_t iteration = 0;
  int rank = 0;
  double loss = 0;           ///< mean cross-entropy of this rank's batch (nats per token)
  double iteration_s = 0;    ///< from begin_iteration to after_step (s)
  double compute_s = 0;      ///< forward, backward and update (s)
  double wait_s = 0;         ///< waiting for buckets before and after the step (s)
  std::vector<std::vector<std::string>> buckets;  ///< what this rank averaged, per bucket in launch order
  /// A delayed-averaging run (Schedule::delayed): the line also has sync_delays and applied.
  bool delayed = false;
  std::vector<int> sync_delays;        ///< per entry of `buckets`, its delay (delayed runs)
  std::vector<AppliedRecord> applied;  ///< in the order they took effect (delayed runs)
};

/// The log line of `record`: {"iteration", "rank", "loss", "iteration_s", "compute_s", "wait_s",
/// "synced_layers" (every bucket's layers in launch order), "buckets"}; when record.delayed also
/// "sync_delays" (one per bucket) and "applied" ([{"iteration", "layers", "delay", "start_s",
/// "end_s", "applied_s"}]); and, when `link` is set, "emulated_link": {"bandwidth_Gbps", "latency_us"}.
Json log_line(const IterationRecord& record, const std::optional<EmulatedLink>& link);

/// What a run produced. On rank 0 `log_text` and `trace` hold every rank's (the log sorted by
/// iteration, then rank); on the others they are empty.
struct TrainResult {
  std::string log_text;           ///< JSON lines
  Json trace;                     ///< the measured trace document (measured_trace_document)
  std::vector<IterationRecord> records;  ///< this rank's
  double first_loss = 0, last_loss = 0;  ///< this rank's first and last loss
};

/// Called on every rank after each iteration (a progress display).
using TrainProgress = std::function<void(const IterationRecord&)>;

/// Runs `fn` on every rank and agrees on the result: when it throws InputError on some rank, every
/// rank throws InputError with the message of the lowest such rank (prefixed "rank R: " when R is
/// not 0; that rank rethrows its own error, so a FieldError stays one), so bad input found on any
/// rank ends every rank with exit 2 and one line, never a hang. The agreement is nonblocking and
/// must complete within `deadline_s` seconds (> 0), else CommTimeout (a rank died or hangs).
void agree_on_input(const MpiSession& mpi, const std::function<void()>& fn, double deadline_s);

/// A rank gave up on its peers: a bucket or an agreement (the fingerprint check, a checkpoint)
/// did not complete within --timeout-s. what() is the one line to print after "syncplan run: ",
/// e.g. "rank 0: iteration 41: the all-reduce of bucket 'h.1.mlp' did not complete within its
/// deadline of 5 s (...); rank 1 did not arrive" (comm/arrivals.hpp's late ranks). The rank
/// should then end itself (FatalSignalLine::end_rank), not return into MPI.
class RunTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Makes the run's communicator: called once the setup's agreements have passed, with the CUDA
/// device this rank trains on (-1 on the CPU): make_mpi_communicator on the CPU, or
/// make_nccl_communicator on that device, with the run's deadline. A CommTimeout it throws (a
/// rank stopped during setup) ends the run with one line like the setup's other deadlines.
using CommunicatorFactory = std::function<Communicator(int cuda_device)>;

/// The whole run (collective): checks the request, reads the model, the plan or strategy and this
/// rank's shard (agree_on_input), checks that every rank runs the same plan, model, batch,
/// sequence and rank count (require_same_run), initializes the parameters from the seed or
/// loads the latest complete checkpoint of request.resume_dir (load_checkpoint: parameters,
/// AdamW's moments and step, the iteration and period position, the data cursor, the seed),
/// makes the communicator and the arrival messages, aligns the clocks with a barrier, trains up
/// to step request.iterations with the executor's hooks (saving a checkpoint after every
/// checkpoint_every-th step; a delayed sync still in flight after the last step is waited for
/// and dropped, Executor::drain), and gathers the log and trace to rank 0. A delayed-averaging
/// plan is refused (FieldError) on --device cuda and with a checkpoint_every that would save a
/// step where a delayed sync is in flight (docs/runtime.md section 11). Every wait for the other
/// ranks has the request's deadline. `line`, when given, is kept naming the iteration and bucket
/// (and, after a second of waiting, the late ranks). Throws InputError for bad input (on every
/// rank alike: a resume folder of another run, a checkpoint at or past request.iterations),
/// RunTimeout when a peer does not take part in time, LibraryError when an MPI call fails.
TrainResult run_training(const MpiSession& mpi, const CommunicatorFactory& make_comm, const TrainRequest& request,
                         const TrainProgress& progress = {}, FatalSignalLine* line = nullptr);

}  // namespace syncplan
