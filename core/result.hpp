// The simulation result (`simulate -o`, syncplan.result/v1, docs/formats.md "Result") of either
// engine as a type, and its JSON writers.
#pragma once

#include "core/json_io.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace syncplan {

inline constexpr const char* kResultFormat = "syncplan.result/v1";
/// The result's "engine" values: the period model (SPEC section 5) and the discrete-event simulator.
inline constexpr const char* kPeriodModelEngine = "period-model";
inline constexpr const char* kDesEngine = "des";

/// What was simulated: a plan file or a strategy by name (exactly one is non-empty).
struct ResultSubject {
  std::optional<std::string> model;  ///< the profile's model; null when unnamed
  std::string profile;               ///< the profile's path
  std::string plan;                  ///< the plan's path; empty for a strategy
  std::string strategy;              ///< the strategy's name; empty for a plan
};

/// The period model's result (SPEC section 5): one period of H iterations.
struct PeriodModelResult {
  ResultSubject subject;
  int period = 1;                       ///< H
  double period_s = 0;                  ///< one period (s)
  double wait_s = 0;                    ///< exposed sync time over the period (s)
  std::vector<double> iteration_s;      ///< H entries (s)
  std::vector<double> iteration_wait_s; ///< H entries (s)
  double lower_bound_period_s = 0;      ///< lower bound on any plan's period (s)
};

/// The discrete-event simulator's result (docs/des.md) over `iterations` iterations.
struct DesRunResult {
  ResultSubject subject;
  std::string cluster;                  ///< the cluster file
  int period = 1;                       ///< H of the program
  int iterations = 1;                   ///< iterations run
  std::string sync_time;                ///< "measured", "model" or "link": where all-reduce times came from
  std::optional<std::string> link;      ///< the link fit file, when one was given
  int workers = 0;                      ///< the cluster's workers
  int simulated_workers = 0;            ///< 1 when workers are identical
  double total_s = 0;                   ///< end of the last iteration (s)
  std::vector<double> iteration_s;      ///< per iteration, slowest worker (s)
  std::vector<std::vector<double>> worker_iteration_s;  ///< [simulated worker][iteration] (s)
  double exposed_comm_s = 0;            ///< mean over workers of compute waiting for syncs (s)
  std::vector<double> worker_exposed_comm_s;  ///< per simulated worker (s)
  double comm_busy_s = 0;               ///< time at least one all-reduce runs (s)
  double overlap_fraction = 0;          ///< share of all-reduce time overlapping compute
  std::vector<std::pair<std::string, double>> link_bytes;  ///< bytes per directed link
  /// With compute drawn from the profile's measured spread (a cluster's jitter "measured",
  /// docs/des.md "Compute spread"), the prediction is a distribution: the median and the 90th
  /// percentile of iteration_s (s; core/statistics.hpp's quantile). std::nullopt otherwise, and
  /// then the document has neither key.
  std::optional<double> median_iteration_s{}, p90_iteration_s{};

  /// The mean per period over the iterations run: the mean iteration times H,
  /// total_s / iterations x period (s). For a whole number of periods it is the mean of the
  /// periods' sums; otherwise the last, partial period counts by its iterations' mean
  /// (docs/formats.md "Simulation result").
  double period_s() const { return total_s / iterations * period; }
};

/// The period model's result as JSON ("engine": "period-model").
Json result_to_json(const PeriodModelResult& result);
/// The DES's result as JSON ("engine": "des"), with period_s() beside total_s.
Json result_to_json(const DesRunResult& result);

}  // namespace syncplan
