// The what-if sweep (`syncplan whatif` without its command line): the cartesian product of worker
// counts, inter-node bandwidths, latencies, periods and strategies, each point planned (when its
// strategy is a plan) and timed on the discrete-event simulator, in parallel threads and MPI ranks,
// with its rows written as CSV or JSON (docs/whatif.md).
#pragma once

#include "core/cluster.hpp"
#include "core/json_io.hpp"
#include "core/profile.hpp"
#include "planner/algorithms/algorithms.hpp"
#include "profiler/model_profile.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kWhatifFormat = "syncplan.whatif/v1";

/// The automatic period's largest planned wait over compute unless told (5%, as `plan --period auto`
/// is usually given).
inline constexpr double kWhatifDefaultMaxOverhead = 0.05;

/// The search's time limit in a sweep (s): long enough that `search` and `best` stop at their rounds,
/// not at the clock, so that every run of the sweep gives the same plans (docs/whatif.md).
inline constexpr double kWhatifSearchLimit_s = 600;

/// How the batch follows the worker count (docs/whatif.md, "Scaling").
enum class WhatifScaling {
  kWeak,    ///< the per-worker batch is fixed; the global batch grows with the workers
  kStrong,  ///< the global batch is fixed; per-worker batch = global_batch / workers
};

/// "weak" or "strong".
std::string to_string(WhatifScaling scaling);

/// What to sweep. Errors name these fields (FieldError): "workers", "bandwidth_Gbps", "latency_us",
/// "periods", "strategies", "jitter_sigma", "straggler", "global_batch", "batch", "max_overhead",
/// "iterations", "search.rounds".
struct WhatifRequest {
  /// The profile to time (its compute; its all-reduce times always come from each point's cluster
  /// cost model). Unset: `model`.
  std::optional<Profile> profile;
  /// A model spec estimated (or measured) by make_model_profile at the per-worker batch: once under
  /// weak scaling, once per worker count under strong scaling. Used when `profile` is unset.
  std::optional<ModelProfileRequest> model;
  std::string origin;          ///< names the profile in messages ("gpt2.json", "--model gpt2")
  /// Sequences (samples) per step and worker behind `profile`'s times, for throughput and strong
  /// scaling; unset: throughput in samples is not known (and strong scaling refused). With `model`:
  /// model->batch.
  std::optional<std::int64_t> batch;
  std::optional<std::int64_t> seq;  ///< tokens per sample, for tokens/s; with `model`: its seq when set
  Cluster base;                ///< every point's cluster is this one with the swept values replaced
  std::string cluster_origin;  ///< names the base cluster in messages
  std::vector<int> workers;              ///< each a multiple of base.workers_per_node, 1..65,536
  std::vector<double> bandwidth_Gbps;    ///< inter-node bandwidth per direction (Gbit/s, core/limits.hpp)
  std::vector<double> latency_us;        ///< inter-node one-way latency (us, core/limits.hpp)
  std::vector<std::optional<int>> periods;  ///< H in 1..kMaxPeriod; nullopt: automatic (see max_overhead)
  std::vector<std::string> strategies;   ///< names of the strategy table that the DES runs
  std::optional<double> jitter_sigma;    ///< lognormal compute jitter (0..2, seed base.jitter's or 1); unset: base's
  std::optional<double> straggler;       ///< worker 0's compute factor (1e-3..1e3); unset: base's slowdowns
  WhatifScaling scaling = WhatifScaling::kWeak;
  std::optional<std::int64_t> global_batch;  ///< strong scaling: samples per step over all workers, >= 1
  double max_overhead = kWhatifDefaultMaxOverhead;  ///< automatic H: dp's planned wait / compute at most this
  /// Plan options, as `plan`'s: search (rounds >= 0, seed; time_limit_s in (0, 86400]), bubble
  /// filling, bucket fusion with the point cluster's all-reduce start-up time.
  SearchOptions search = {kWhatifSearchLimit_s, SearchOptions{}.rounds, 1, {}, std::nullopt, std::nullopt};
  bool fill_bubbles = false;
  bool fuse_buckets = false;
  std::optional<std::int64_t> iterations;  ///< DES iterations per point (1..limits::kMaxIterations); unset: one period
};

/// Every rank's text, in rank order, on every rank: `own` is this rank's (collective; the command
/// line gives one over MPI, tools/cmd_whatif.cpp).
using WhatifShare = std::function<std::vector<std::string>(const std::string& own)>;

/// How the sweep runs: threads here, the processes (ranks) it is divided among, and who hears of
/// progress. The job itself knows no MPI: `share` carries the rows between the ranks.
struct WhatifRun {
  int jobs = 1;                     ///< threads on this process, >= 1
  /// Called after each finished setting (a point group, see docs/whatif.md) with the points done on
  /// this rank and this rank's total, from the worker threads one at a time.
  std::function<void(int done, int total)> progress = {};
  int ranks = 1;                    ///< processes the settings are divided among, >= 1
  int rank = 0;                     ///< this process, 0..ranks-1
  WhatifShare share = {};           ///< required when ranks > 1
};

/// Whether a point was timed; written "ok" or "error" (to_string).
enum class WhatifStatus { kOk, kError };

/// "ok" or "error".
const char* to_string(WhatifStatus status);

/// One point's row (docs/whatif.md lists the columns and units). Values that do not apply or are
/// not known are unset and written empty (CSV) or null (JSON).
struct WhatifRow {
  int index = 0;                  ///< place in the sweep's order (0-based)
  int workers = 0;
  int nodes = 0;
  double bandwidth_Gbps = 0;      ///< inter-node
  double latency_us = 0;          ///< inter-node
  std::string period_requested;   ///< the --period element: "10" or "auto"
  std::optional<int> period;      ///< H the point ran at
  std::string strategy;
  std::optional<std::int64_t> batch_per_worker;  ///< samples per step and worker
  double jitter_sigma = 0;
  double straggler = 1;           ///< worker 0's compute factor
  WhatifStatus status = WhatifStatus::kOk;
  std::string error;              ///< the one-line message of a failed point
  std::optional<double> period_s;         ///< DES mean time per period (s)
  std::optional<double> iteration_s;      ///< DES mean iteration time (s)
  std::optional<double> samples_per_s;    ///< workers * batch_per_worker / iteration_s
  std::optional<double> tokens_per_s;     ///< samples_per_s * seq
  std::optional<double> speedup_vs_ssgd;  ///< ssgd's period_s / period_s at the same cluster and H; unset when period_s is 0
  std::optional<double> speedup_vs_flsgd; ///< flsgd's period_s / period_s at the same cluster and H
  std::optional<double> exposed_comm_s;   ///< per period, mean over workers: compute waiting for syncs (s)
  std::optional<double> bytes_per_worker; ///< gradient bytes each worker all-reduces per period
  std::optional<double> lower_bound_s;    ///< plans: the plan's lower bound on the period (s, period model)
  std::optional<double> plan_gap;         ///< plans: planned period / lower bound - 1 (a fraction)
  std::optional<bool> search_time_limited;  ///< plans: the time limit cut a search short (not reproducible)
};

/// The sweep's answer: every row in index order, on every rank.
struct WhatifOutcome {
  std::string model;               ///< the profile's model name
  std::string origin;
  std::string cluster_origin;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::kRing;  ///< every point's all-reduce algorithm
  WhatifScaling scaling = WhatifScaling::kWeak;
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> seq;
  std::vector<WhatifRow> rows;
  int failed() const;              ///< rows whose status is "error"
};

/// Checks every value of the request and builds every point's cluster and profile, before any
/// point runs: an empty list, a bad element, a size that is not a multiple of the base's
/// workers_per_node, an unknown or period-model-only strategy, a strong scaling batch that does not
/// divide. Throws FieldError naming the field and the value, InputError from make_model_profile.
/// run_whatif_job calls it first. Returns the number of points.
int validate_whatif_request(const WhatifRequest& request);

/// Runs the sweep: points in the order workers, bandwidth, latency, period, strategy (strategy
/// fastest), grouped by setting (all but the strategy) so that each setting's ssgd and flsgd
/// baselines run once; settings divided among run.ranks (setting i on rank i mod R) and run.jobs
/// threads, results placed by index, then shared with every rank (run.share). A point that fails with
/// an InputError is reported in its row (status "error"), never thrown; other errors are thrown
/// (after every thread has stopped).
WhatifOutcome run_whatif_job(const WhatifRequest& request, const WhatifRun& run = {});

/// The rows as CSV: a header line, then one line per row (docs/whatif.md); numbers with 17
/// significant digits, unknown values empty, text quoted when it holds a comma or quote.
std::string whatif_csv(const WhatifOutcome& outcome);

/// The syncplan.whatif/v1 document (docs/formats.md).
Json whatif_to_json(const WhatifOutcome& outcome);

/// The row back from its JSON object in whatif_to_json's "points" (used to share rows between
/// ranks), read by the same column table that writes it.
/// Throws InputError naming `origin` for a malformed object.
WhatifRow whatif_row_from_json(const Json& object, const std::string& origin);

}  // namespace syncplan
