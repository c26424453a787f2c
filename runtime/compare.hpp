// `syncplan compare`: a prediction (a simulate result or trace) against a measured run (a run trace
// or log): per-iteration error, MAPE, per all-reduce start and end error, and the ranking of runs
// (docs/compare.md).
#pragma once

#include "core/json_io.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace syncplan {

inline constexpr const char* kCompareFormat = "syncplan.compare/v1";

/// What a compare input holds, as told from its content (docs/compare.md section 1).
enum class TimelineKind {
  kPeriodModelResult,  ///< syncplan.result/v1, engine period-model: H iteration times, repeated
  kDesResult,          ///< syncplan.result/v1, engine des: one time per iteration
  kPeriodModelTrace,   ///< `simulate --trace` without --cluster (all-reduces of cat "sync"): one period, repeated
  kSimulatedTrace,     ///< `simulate --cluster --trace` (cat "allreduce", no "syncplan" object)
  kMeasuredTrace,      ///< `run --trace`: the DES schema plus {"syncplan": {"source": "measured"}}
  kRunLog,             ///< `run --log`: JSON lines, one per iteration and rank (SPEC section 8)
};

/// The kind's name in output: "period-model result", "des result", "period-model trace",
/// "simulated trace", "measured trace", "run log".
const char* to_string(TimelineKind kind);

/// One all-reduce read from a trace, on the lowest pid (rank, worker) that has all-reduces.
struct TimedAllreduce {
  int iteration = 0;                ///< args.iteration
  std::vector<std::string> layers;  ///< args.layer, or args.layers in the file's order
  double start_s = 0;               ///< ts minus its iteration's start on that pid (s)
  double end_s = 0;                 ///< ts + dur minus its iteration's start on that pid (s)
};

/// The iteration times (and, from a trace, the all-reduces) of one compare input.
struct Timeline {
  std::string path;                 ///< the file, for messages
  TimelineKind kind = TimelineKind::kRunLog;
  int first_iteration = 0;          ///< the iteration number of iteration_s[0]
  /// Per iteration (s), as the DES defines its iteration_s: the latest end of the iteration over
  /// the ranks (workers) minus the latest end of the previous one. A trace's end of an iteration
  /// on a pid is its latest event end (the first iteration starts at the earliest start of its
  /// events); a log's on a rank is the sum of that rank's iteration_s so far.
  std::vector<double> iteration_s;
  /// True for the period model (result or trace): iteration_s are the H iterations of one period,
  /// and iteration i of a run is predicted by iteration_s[i mod H].
  bool repeats = false;
  int ranks = 1;                    ///< ranks in a log, pids in a trace; a result's workers (1 for the period model)
  std::optional<int> period;        ///< H, when the file says it (results; a measured trace's syncplan.period)
  std::optional<std::vector<TimedAllreduce>> allreduces;  ///< traces only, in file order
  /// Run logs only: per iteration (as iteration_s), the mean of the ranks' `loss`; std::nullopt
  /// where any rank logged null (a loss that was not finite). For loss curves (`syncplan report --loss`).
  std::optional<std::vector<std::optional<double>>> loss{};
};

/// Reads a compare input, telling its kind from the content: a JSON object with "format"
/// syncplan.result/v1 is a result; one with "traceEvents" a Chrome trace (and so is an array of
/// trace events, Chrome's JSON array format); otherwise JSON lines with "iteration" a run log. Throws InputError "PATH: ..." naming the field, the line (logs) or
/// the event (traceEvents[N]) for: unreadable or invalid JSON, a result of an unknown engine or
/// whose iteration_s does not match its period/iterations, unknown keys (results, log lines), an
/// empty log, a log line missing a key, a duplicate (iteration, rank), ranks that did not log the
/// same iterations, iterations with a gap, an iteration time of 0 or over a day, a trace without
/// timed events ("ph": "X" with args.iteration), an event without ts/dur/pid, an all-reduce
/// without args.layer(s).
Timeline read_timeline(const std::string& path);

/// The same on text already in memory; `origin` names it in messages.
Timeline parse_timeline(const std::string& text, const std::string& origin);

/// Options of a comparison.
struct CompareOptions {
  /// Measured iterations left out of MAPE and all-reduce errors at the start of each run
  /// (warm-up: the first iteration pays allocation, page faults and the first collective's
  /// connection set-up). Default 1; >= 0.
  int skip = 1;
};

/// One measured iteration against its prediction.
struct IterationComparison {
  int iteration = 0;        ///< the run's iteration number
  double predicted_s = 0;   ///< predicted time (s)
  double measured_s = 0;    ///< measured time (s), > 0
  bool skipped = false;     ///< within the first `skip` iterations: not in the MAPE
  double error_s() const { return measured_s - predicted_s; }
  /// (measured - predicted) / measured x 100: positive when the run was slower than predicted.
  double error_percent() const;
};

/// One all-reduce found on both sides (same iteration, same set of layers).
struct AllreduceComparison {
  int iteration = 0;                ///< the run's iteration number
  std::vector<std::string> layers;  ///< the measured side's layers, in its order
  double predicted_start_s = 0, measured_start_s = 0;  ///< from the iteration's start (s)
  double predicted_end_s = 0, measured_end_s = 0;      ///< from the iteration's start (s)
  double start_error_s() const { return measured_start_s - predicted_start_s; }
  double end_error_s() const { return measured_end_s - predicted_end_s; }
};

/// The all-reduces of two traces, matched over the compared (not skipped) iterations.
struct AllreduceSummary {
  std::vector<AllreduceComparison> matched;  ///< in measured order
  int predicted_only = 0;   ///< predicted all-reduces of compared iterations with no measured match
  int measured_only = 0;    ///< measured all-reduces of compared iterations with no predicted match
  double mean_abs_start_error_s = 0;  ///< mean |start_error_s| over `matched` (s)
  double mean_abs_end_error_s = 0;    ///< mean |end_error_s| over `matched` (s)
};

/// One statistic (mean, median, p90) of the compared iterations' times, predicted against measured
/// (docs/compare.md section 4): the prediction's statistic is that of its own per-iteration times
/// over the same iterations, whether it is one draw per iteration (a DES with compute spread) or a
/// fixed time (the period model, repeated).
struct StatisticComparison {
  double predicted_s = 0;          ///< the statistic of the predicted times (s)
  double measured_s = 0;           ///< the statistic of the measured times (s), > 0
  /// The measured statistic's noise floor: twice its bootstrap standard error over the compared
  /// iterations (kNoiseFloorStandardErrors, kBootstrapResamples), in percent of measured_s.
  double noise_floor_percent = 0;
  double error_s() const { return measured_s - predicted_s; }
  /// (measured - predicted) / measured x 100: positive when the run was slower than predicted.
  double error_percent() const;
  /// |error_percent| <= noise_floor_percent: the run itself could give this difference.
  bool within_noise() const;
};

/// The spread of a run against itself over the compared iterations (docs/compare.md section 4).
struct NoiseFloor {
  /// The MAPE of predicting each compared iteration by the run's own median time (%): what a single
  /// time per iteration cannot get below on this machine.
  double median_mape_percent = 0;
  double p90_over_median = 1;      ///< the run's 90th-percentile iteration time over its median
};

/// Resamples of the bootstrap behind StatisticComparison::noise_floor_percent, and its seed.
inline constexpr int kBootstrapResamples = 1000;
inline constexpr std::uint64_t kBootstrapSeed = 1;
/// Standard errors in a noise floor: 2, about a 95 % interval for a statistic of many iterations.
inline constexpr double kNoiseFloorStandardErrors = 2;

/// The compared iterations at one position h of the period (iteration mod H), predicted against
/// measured (docs/compare.md section 4.1): a plan's iterations sync different layers, and the mean
/// over all of them hides which position the model misses.
struct PositionComparison {
  int position = 0;          ///< h = iteration mod H, 0 <= h < H
  int iterations = 0;        ///< compared (not skipped) iterations at this position, >= 1
  double predicted_s = 0;    ///< their mean predicted time (s)
  double measured_s = 0;     ///< their mean measured time (s), > 0
  double error_s() const { return measured_s - predicted_s; }
  /// (measured - predicted) / measured x 100, as IterationComparison's.
  double error_percent() const;
};

/// One PREDICTED MEASURED pair.
struct PairComparison {
  std::string predicted_path, measured_path;
  TimelineKind predicted_kind = TimelineKind::kPeriodModelResult, measured_kind = TimelineKind::kRunLog;
  int measured_ranks = 1;
  std::optional<int> predicted_period;         ///< H of a repeating prediction
  std::vector<IterationComparison> iterations; ///< every measured iteration, skipped ones flagged
  int compared = 0;                 ///< iterations in the MAPE (not skipped), >= 1
  /// Mean absolute percentage error over the compared iterations:
  /// 100 / n x sum |measured - predicted| / measured.
  double mape_percent = 0;
  double mean_predicted_s = 0;      ///< mean predicted time of the compared iterations (s)
  double mean_measured_s = 0;       ///< mean measured time of the compared iterations (s)
  /// The mean, median and 90th percentile (core/statistics.hpp) of the compared iterations' times.
  StatisticComparison mean, median, p90;
  NoiseFloor noise_floor;           ///< the measured run against itself
  /// The period H that the files say (the prediction's, else the measured trace's; 0 when neither
  /// says one), and with H > 1 the compared iterations by position in the period, h = 0..H-1 in
  /// order (a position with no compared iteration left out); empty when H <= 1.
  int period = 0;
  std::vector<PositionComparison> positions;
  /// When both sides are traces and either has an all-reduce in the compared iterations (neither:
  /// nothing to time, unset).
  std::optional<AllreduceSummary> allreduces;

  /// mape_percent <= noise_floor.median_mape_percent: per iteration the prediction does as well
  /// as the run's own median.
  bool mape_within_noise() const { return mape_percent <= noise_floor.median_mape_percent; }
};

/// Whether the predictions order the runs by mean iteration time as the measurements do.
struct RankingComparison {
  std::vector<int> predicted_order;  ///< pair indices, fastest predicted first
  std::vector<int> measured_order;   ///< pair indices, fastest measured first
  int concordant_pairs = 0;          ///< pairs of runs both sides order alike (or both see a tie: means within 1e-9 relative)
  int run_pairs = 0;                 ///< n (n - 1) / 2 for n runs
  bool same() const { return concordant_pairs == run_pairs; }
};

/// The whole comparison.
struct CompareReport {
  int skip = 1;
  std::vector<PairComparison> pairs;
  std::optional<RankingComparison> ranking;  ///< with two pairs or more
};

/// Compares one prediction with one measured run. A repeating prediction (period model) predicts
/// iteration i by its iteration i mod H; any other must have the measured run's iterations (same
/// first iteration and count). Throws InputError naming both files when the iterations cannot be
/// matched (counts, a measured trace's syncplan.period differing from the prediction's H, a log
/// given as PREDICTED or a result as MEASURED), when `skip` leaves no iteration, when both are
/// traces and no all-reduce is in common; FieldError "skip: ..." when options.skip < 0.
PairComparison compare_timelines(const Timeline& predicted, const Timeline& measured, const CompareOptions& options);

/// Reads and compares each (PREDICTED, MEASURED) pair, and ranks the runs when there are two or
/// more. Throws as read_timeline and compare_timelines; InputError when `pairs` is empty.
CompareReport compare_files(const std::vector<std::pair<std::string, std::string>>& pairs,
                            const CompareOptions& options);

/// Whether two runs' mean times tie in the ranking: within 1e-9 of each other, relative (one figure
/// reached by two engines or two clocks differs in its last digits).
bool means_tie(double a_s, double b_s);

/// The ranking of runs given each pair's (mean predicted, mean measured) iteration time.
RankingComparison rank_runs(const std::vector<std::pair<double, double>>& mean_predicted_measured_s);

/// The report as the syncplan.compare/v1 document (docs/formats.md "Comparison").
Json compare_to_json(const CompareReport& report);

}  // namespace syncplan
