// The trainer (docs/runtime.md section 3): `syncplan run` without its command line. Each rank
// trains the model on its own shard of a text file (bytes as tokens) with AdamW on the CPU, while
// the executor runs the schedule; the log (SPEC section 8) and the measured trace are gathered to
// rank 0. Collective: every rank calls it alike.
#pragma once

#include "comm/communicator.hpp"
#include "comm/mpi_session.hpp"
#include "core/json_io.hpp"
#include "model/adamw.hpp"
#include "model/cpu/cpu_graph.hpp"
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
/// "emulate_latency_us").
struct TrainRequest {
  std::string model;                    ///< a spec name in models_dir or a spec file (resolve_model_spec)
  std::filesystem::path models_dir;     ///< where spec names are looked up (data/models)
  std::string plan_path;                ///< a syncplan.plan/v1 file; empty: `strategy` and `period`
  std::string strategy;                 ///< ssgd, wfbp, flsgd or plsgd-even (without a plan)
  int period = 1;                       ///< H (without a plan), 1..kMaxPeriod
  std::string data_path;                ///< the training text; each rank reads its own shard
  std::int64_t iterations = 0;          ///< optimizer steps to run, 1..limits::kMaxIterations
  std::int64_t batch = 4;               ///< sequences per rank and step (B), >= 1
  std::int64_t seq = 64;                ///< tokens per sequence (S), 1..the model's max_position_embeddings
  std::uint64_t seed = 1;               ///< initial parameters (the same on every rank) and dropout masks
  std::string device = "cpu";           ///< cpu (cuda: not built yet, refused)
  AdamWOptions adamw;                   ///< AdamW's hyperparameters (learning_rate: --lr)
  double timeout_s = 60;                ///< deadline of each bucket's wait (s), > 0 (the --timeout-s default)
  std::optional<EmulatedLink> link;     ///< emulated slow link; none: off
};

/// Checks the request's numbers before anything is read. Throws FieldError naming the field.
void check_train_request(const TrainRequest& request);

/// A rank's shard of the training text: bytes [begin, end) of the file (stand-in for
/// runtime/byte_data: contiguous shards, rank r of N takes bytes [r n / N, (r + 1) n / N)).
struct ByteShard {
  std::vector<std::uint8_t> bytes;
  std::int64_t begin = 0;  ///< offset of bytes[0] in the file
};

/// Reads rank `rank` of `ranks`'s shard of `path`. Throws InputError "--data PATH: ..." when the file
/// is missing or unreadable, or when a shard has fewer than B S + 1 bytes (one batch and its targets).
ByteShard read_byte_shard(const std::string& path, int rank, int ranks, std::int64_t batch, std::int64_t seq);

/// The batch at `cursor` of `shard`: sequence b holds bytes [c_b, c_b + S) as ids and [c_b + 1,
/// c_b + S + 1) as targets, c_b = the cursor after b earlier sequences; the cursor advances S per
/// sequence and wraps to 0 when the next sequence's targets would pass the shard's end. Returns the
/// batch and sets `cursor` to the next one's position.
TokenBatch next_byte_batch(const ByteShard& shard, std::int64_t& cursor, std::int64_t batch, std::int64_t seq);

/// Everything a rank's training holds between steps (the state a checkpoint saves): parameters
/// (in the graph's arena), AdamW's moments and step count, the iteration counter, the data cursor
/// and the seed the dropout masks are drawn from.
struct TrainerState {
  cpu::CpuGraph graph;          ///< parameters, gradients and activations
  AdamW optimizer;              ///< moments; its step_count() = optimizer steps taken
  std::int64_t iteration = 0;   ///< optimizer steps taken (the executor's counter starts here)
  std::int64_t data_cursor = 0; ///< position of the next batch in this rank's shard
  std::uint64_t seed = 1;       ///< TrainRequest::seed; step t draws dropout with seed + t

  /// h = iteration mod period.
  int period_position(int period) const { return static_cast<int>(iteration % period); }
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
};

/// The log line of `record`: {"iteration", "rank", "loss", "iteration_s", "compute_s", "wait_s",
/// "synced_layers" (every bucket's layers in launch order), "buckets"} and, when `link` is set,
/// "emulated_link": {"bandwidth_Gbps", "latency_us"}.
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
/// not 0), so bad input found on any rank ends every rank with exit 2 and one line, never a hang.
void agree_on_input(const MpiSession& mpi, const std::function<void()>& fn);

/// The whole run (collective): checks the request, reads the model, the plan or strategy and this
/// rank's shard (agree_on_input), initializes the parameters from the seed on every rank, aligns
/// the clocks with a barrier (nonblocking, with the request's deadline), trains
/// request.iterations steps with the executor's hooks, and gathers the log and trace to rank 0. Throws InputError for bad input (on every rank alike), SyncTimeout
/// when a bucket misses its deadline (the caller reports it and aborts `comm`), std::runtime_error
/// naming the rank when the start barrier or the final gather misses it, LibraryError when an MPI
/// call fails.
TrainResult run_training(const MpiSession& mpi, Communicator& comm, const TrainRequest& request,
                         const TrainProgress& progress = {});

}  // namespace syncplan
