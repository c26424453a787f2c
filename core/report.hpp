// The plan report (`plan --report`, syncplan.report/v1, docs/formats.md "Report") as a type, and
// its JSON writer.
#pragma once

#include "core/json_io.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace syncplan {

inline constexpr const char* kReportFormat = "syncplan.report/v1";

/// One row of the strategy comparison: a strategy's period under the period model (SPEC 5).
struct ReportStrategyRow {
  std::string name;              ///< the strategy's name, e.g. "ssgd"
  double period_s = 0;           ///< one period of H iterations (s)
  double mean_iteration_s = 0;   ///< period_s / H (s)
  double wait_s = 0;             ///< exposed sync time over the period (s)
  double speedup_over_ssgd = 0;  ///< ssgd's period_s / period_s; written as null when not finite
  double speedup_over_flsgd = 0; ///< flsgd's period_s / period_s; written as null when not finite
};

/// The chosen plan's bucket fusion (only with --fuse-buckets).
struct ReportBuckets {
  double alpha_s = 0;                        ///< all-reduce start-up time assumed (s)
  std::size_t allreduces = 0;                ///< all-reduces (buckets) per period, fused
  std::size_t unfused_allreduces = 0;        ///< all-reduces per period before fusion
  double unfused_period_s = 0;               ///< the same plan's period without fusion (s)
  double unfused_lower_bound_period_s = 0;   ///< the unfused model's lower bound (s)
};

/// What the report says about the chosen plan.
struct ReportChosen {
  std::string algorithm;             ///< the algorithm that found it (for best: the winner)
  std::string requested_algorithm;   ///< the algorithm asked for, e.g. "best"
  double period_s = 0;               ///< its period, fused when buckets are set (s)
  double gap_to_lower_bound = 0;     ///< period_s / lower bound - 1 (a fraction; 0 when the bound is 0)
  int extra_syncs = 0;               ///< syncs added by bubble filling
  std::optional<ReportBuckets> buckets;
  /// The bound gap_to_lower_bound is measured against: "exact" (the proven optimum), "suffix" or
  /// "fused" (docs/formats.md "Report").
  std::string bound = "suffix";
  /// No plan is shorter (by more than a relative 1e-9) under the period model with the job's pinned
  /// layers: the plan meets its bound, or the exact method (docs/time-model.md 14) proved it.
  bool proven_optimal = false;
};

/// What the exact method did in the job (only when it ran).
struct ReportExact {
  long long nodes = 0;          ///< branch-and-bound nodes visited
  long long node_limit = 0;     ///< the most it could visit
  bool proven_optimal = false;  ///< the tree was searched to its end
  bool improved = false;        ///< it found a plan shorter than the other algorithms' (then chosen)
  bool time_limited = false;    ///< the job's search time limit (or prove_s) cut it short
  /// Set when the opt-in proof ran (`plan --prove-s S`): S (s); unset, the node budget alone
  /// (node_limit: planner/plan_job.hpp kDefaultProofNodes unless --exact-nodes) limited it.
  std::optional<double> prove_s;
};

/// The relaxed bound's run (docs/time-model.md section 14, "Dropped syncs").
struct ReportRelaxed {
  double fraction = 0;     ///< syncs below this fraction of the largest were removed
  int dropped_layers = 0;  ///< layers whose syncs that removed
  long long nodes = 0;     ///< the exact method's nodes on the relaxed profile
  double period_s = 0;     ///< the relaxed profile's proven optimum, the bound (s)
};

/// What the job's runs of `search` did (docs/time-model.md section 7).
struct ReportSearch {
  double time_limit_s = 0;   ///< the limit on the whole job's search (s)
  int runs = 0;              ///< runs of search in the job (shared by the table's row and best)
  double elapsed_s = 0;      ///< their wall-clock time together (s)
  int time_limited_runs = 0; ///< runs the time limit cut short
  /// How the run behind the chosen plan stopped: "bound" (optimal), "rounds" or "time_limit".
  std::string stopped_by;
  int rounds = 0;            ///< that run's completed perturbation rounds
};

/// A syncplan.report/v1 document (docs/formats.md "Report").
struct PlanReport {
  std::optional<std::string> model;  ///< the profile's model; null when unnamed
  std::string profile;               ///< where the profile came from (a path, or "--model NAME")
  int period = 1;                    ///< H
  std::vector<ReportStrategyRow> strategies;  ///< comparison table order
  double lower_bound_period_s = 0;   ///< the bound the gap is measured against (fused bound when fused) (s)
  double spec_lower_bound_s = 0;     ///< SPEC section 5's bound (s)
  double suffix_lower_bound_s = 0;   ///< the suffix bound (docs/time-model.md section 6) (s)
  /// The link limit max(H x compute, compute around the link + sum of syncs), the bound of
  /// delayed-averaging plans (docs/time-model.md section 13) (s)
  double link_limit_s = 0;
  /// The optimum the exact method proved (s): a bound for every plan with the job's pinned layers.
  std::optional<double> exact_lower_bound_s;
  ReportChosen chosen;
  std::optional<ReportExact> exact;  ///< set when the exact method ran
  std::optional<ReportRelaxed> relaxed;  ///< set when the relaxed bound was proven and is the bound
  std::optional<std::string> cluster;  ///< the cluster file, when one gave the sync times
  std::optional<std::string> link;     ///< the link fit file, when one was given
  std::string sync_times;              ///< where the all-reduce times came from, in words
  bool period_automatic = false;       ///< H chosen automatically (period_chosen_by "auto"; else "given")
  ReportSearch search;
  std::vector<std::string> every_iteration;  ///< layers pinned to every iteration, backprop order
  std::optional<double> max_overhead;  ///< the automatic period's largest wait / compute (a fraction)
};

/// A fraction as a percentage with 2 decimals, e.g. 0.0135 -> "1.35%"; rounding noise (a gap of
/// 7e-12%) reads "0.00%", never an exponent, and -0 reads 0.
std::string format_percent(double fraction);

/// The report as JSON, keys in docs/formats.md's order.
Json report_to_json(const PlanReport& report);

}  // namespace syncplan
