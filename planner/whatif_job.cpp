// The what-if sweep (planner/whatif_job.hpp): points built and checked up front, settings run on
// threads and ranks, rows gathered by index and written as CSV or JSON.
#include "planner/whatif_job.hpp"

#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "core/limits.hpp"
#include "model/model_spec.hpp"
#include "planner/plan_job.hpp"
#include "planner/simulate_job.hpp"
#include "simulator/layer_times.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace syncplan {

namespace {

// One setting: everything of a point but its strategy. Its points are consecutive in the sweep.
struct WhatifSetting {
  int first_index = 0;                  // the index of its first strategy's point
  Cluster cluster;
  std::string cluster_text;             // names the point's cluster in messages
  int workers = 0;
  double bandwidth_Gbps = 0;
  double latency_us = 0;
  std::optional<int> period;            // nullopt: automatic
  std::optional<std::int64_t> batch;    // per worker
  const Profile* profile = nullptr;     // the profile at `batch` (owned by WhatifPrepared)
};

// The request with its points' clusters and profiles built.
struct WhatifPrepared {
  std::map<std::int64_t, Profile> profiles;  // by per-worker batch (0: batch unknown)
  std::vector<WhatifSetting> settings;
  int points = 0;
  std::optional<std::int64_t> seq;  // tokens per sample, when known
};

template <class T>
void require_nonempty(const std::vector<T>& list, const char* field) {
  if (list.empty()) throw FieldError(field, std::string(field) + ": the list is empty (give at least one value)");
}

// A value given twice would make two identical points (and two points at one place of a plot).
template <class T, class Text>
void require_distinct(const std::vector<T>& list, const char* field, Text&& text) {
  for (std::size_t i = 0; i < list.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (list[i] == list[j])
        throw FieldError(field, std::string(field) + ": " + text(list[i]) + " is given twice (each value once)");
}

// `profile` with forward and backward times, and their spreads, multiplied by `factor` (strong
// scaling of a measured profile: compute proportional to the batch, docs/whatif.md); update_s and
// sync_s unchanged.
Profile scaled_compute(Profile profile, double factor) {
  for (LayerProfile& layer : profile.layers) {
    if (layer.forward_s) *layer.forward_s *= factor;
    if (layer.backward_s) *layer.backward_s *= factor;
    if (layer.forward_spread) layer.forward_spread = layer.forward_spread->scaled(factor);
    if (layer.backward_spread) layer.backward_spread = layer.backward_spread->scaled(factor);
  }
  if (profile.unattributed) {
    if (profile.unattributed->forward_s) *profile.unattributed->forward_s *= factor;
    if (profile.unattributed->backward_s) *profile.unattributed->backward_s *= factor;
  }
  return profile;
}

// K iterations rounded up to whole periods of H (at least one), or down to whole periods when
// rounding up would pass limits::kMaxIterations; 1 <= K <= kMaxIterations and 1 <= H <= kMaxPeriod.
int whole_periods(int iterations, int period) {
  if (period < 1) return iterations;  // no period (a failed `auto`): nothing to round to
  const std::int64_t up = (static_cast<std::int64_t>(iterations) + period - 1) / period * period;
  if (up <= limits::kMaxIterations) return static_cast<int>(up);
  return static_cast<int>(limits::kMaxIterations / period * period);
}

// The per-worker batch at `workers` (docs/whatif.md, "Scaling"); nullopt when not known.
std::optional<std::int64_t> batch_at(const WhatifRequest& request, int workers) {
  if (request.scaling == WhatifScaling::kWeak) return request.model ? request.model->batch : request.batch;
  const std::int64_t global = *request.global_batch;
  if (global % workers != 0 || global < workers)
    throw FieldError("global_batch", "global_batch: " + std::to_string(global) + " samples cannot be divided evenly among " +
                                         count_text(workers, "worker") + " (strong scaling needs a multiple of " +
                                         std::to_string(workers) + ")");
  const std::int64_t per_worker = global / workers;
  // Every point passes the limits of a single call (profile/plan --batch).
  if (per_worker > limits::kMaxBatch)
    throw FieldError("global_batch", "global_batch: " + std::to_string(global) + " samples among " +
                                         count_text(workers, "worker") + " are " + std::to_string(per_worker) +
                                         " per worker, more than the " + std::to_string(limits::kMaxBatch) +
                                         " a batch may have (docs/formats.md, Limits)");
  return per_worker;
}

// The profile at a per-worker batch, made once.
const Profile& profile_at(const WhatifRequest& request, WhatifPrepared& prepared, std::optional<std::int64_t> batch) {
  const std::int64_t key = batch.value_or(0);
  if (auto found = prepared.profiles.find(key); found != prepared.profiles.end()) return found->second;
  Profile profile;
  if (request.model) {
    ModelProfileRequest model = *request.model;
    model.batch = *batch;
    profile = make_model_profile(model).profile;
    // As `profile --model` and `plan --model` check theirs (a time past a day at a huge batch x
    // seq): every point passes the limits of a single call (the helper's re-check: "ok" rows of a
    // profile that `plan --model` refuses).
    try {
      profile_from_json(profile_to_json(profile), request.origin + " at a batch of " + std::to_string(*batch));
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) + " (a profile file holds at most a day per time)");
    }
  } else if (request.scaling == WhatifScaling::kStrong) {
    profile = scaled_compute(*request.profile, static_cast<double>(*batch) / static_cast<double>(*request.batch));
    // The scaled profile passes the readers' limits, as a profile file of that batch would (a time
    // past a day, core/limits.hpp): every point passes the limits of a single call (points of
    // 80,000 s x 2 were simulated before this check).
    profile_from_json(profile_to_json(profile), request.origin + " scaled to a batch of " + std::to_string(*batch));
  } else {
    profile = *request.profile;
  }
  // Every point charges the cluster's cost model on param_bytes: a profile without them (e.g.
  // DreamDDP's time files imported) would fail at every point, so it is bad input up front.
  try {
    des_layers(profile, request.origin, SyncTimeSource::kModel);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + "; whatif takes every point's all-reduce times from its cluster");
  }
  return prepared.profiles.emplace(key, std::move(profile)).first->second;
}

// The point's cluster: the base with the swept values replaced, checked as a cluster file is.
Cluster point_cluster(const WhatifRequest& request, int workers, double bandwidth_Gbps, double latency_us,
                      const std::string& text) {
  Cluster cluster = request.base;
  cluster.workers = workers;
  cluster.inter_node.bandwidth_Gbps = bandwidth_Gbps;
  cluster.inter_node.latency_us = latency_us;
  if (request.straggler) {
    cluster.compute_slowdown.assign(static_cast<std::size_t>(workers), 1.0);
    cluster.compute_slowdown[0] = *request.straggler;
  } else if (!cluster.compute_slowdown.empty() && static_cast<int>(cluster.compute_slowdown.size()) != workers) {
    throw FieldError("workers", "workers: " + std::to_string(workers) + ": the base cluster " + request.cluster_origin +
                                    " lists compute_slowdown for " + std::to_string(cluster.compute_slowdown.size()) +
                                    " workers (give straggler instead)");
  }
  if (request.jitter_sigma) {
    const std::uint64_t seed = cluster.jitter ? cluster.jitter->seed : 1;
    cluster.jitter = JitterSpec{JitterSpec::Distribution::kLognormal, *request.jitter_sigma, seed};
  }
  // The same checks as a cluster file (limits of core/limits.hpp), naming the point.
  return cluster_from_json(cluster_to_json(cluster), text);
}

// Every list of the sweep has a value, and no value twice.
void check_whatif_lists(const WhatifRequest& request) {
  require_nonempty(request.workers, "workers");
  require_nonempty(request.bandwidth_Gbps, "bandwidth_Gbps");
  require_nonempty(request.latency_us, "latency_us");
  require_nonempty(request.periods, "periods");
  require_nonempty(request.strategies, "strategies");
  if (!request.profile && !request.model) throw InternalError("whatif: neither a profile nor a model");
  require_distinct(request.workers, "workers", [](int value) { return std::to_string(value); });
  require_distinct(request.bandwidth_Gbps, "bandwidth_Gbps", [](double value) { return format_shortest(value); });
  require_distinct(request.latency_us, "latency_us", [](double value) { return format_shortest(value); });
  require_distinct(request.periods, "periods", [](const std::optional<int>& value) {
    return value ? std::to_string(*value) : std::string("auto");
  });
  require_distinct(request.strategies, "strategies", [](const std::string& value) { return "'" + value + "'"; });
}

// Each swept value in range: worker counts that the base's nodes divide, bandwidths, latencies,
// periods and iterations (as each point's simulate request: validate_simulate_request), strategies
// that run in the DES.
void check_whatif_sweep(const WhatifRequest& request) {
  const int per_node = request.base.workers_per_node;
  for (const int workers : request.workers) {
    if (workers < 1 || workers > limits::kMaxWorkers)
      throw FieldError("workers", "workers: " + std::to_string(workers) + " is outside 1.." +
                                      std::to_string(limits::kMaxWorkers));
    if (workers % per_node != 0)
      throw FieldError("workers", "workers: " + std::to_string(workers) + " is not a multiple of " +
                                      std::to_string(per_node) + ", the workers_per_node of " + request.cluster_origin);
  }
  for (const double value : request.bandwidth_Gbps)
    if (!(value >= limits::kMinBandwidth_Gbps && value <= limits::kMaxBandwidth_Gbps))
      throw FieldError("bandwidth_Gbps", "bandwidth_Gbps: " + format_shortest(value) + " is outside " +
                                             format_shortest(limits::kMinBandwidth_Gbps) + ".." +
                                             format_shortest(limits::kMaxBandwidth_Gbps) + " Gbit/s");
  for (const double value : request.latency_us)
    if (!(value >= 0 && value <= limits::kMaxLatency_us))
      throw FieldError("latency_us", "latency_us: " + format_shortest(value) + " is outside 0.." +
                                         format_shortest(limits::kMaxLatency_us) + " us");
  // Each point's simulate request has these ranges (one rule: validate_simulate_request), checked
  // here before any point runs; an `auto` period is chosen in range.
  for (const std::optional<int>& period : request.periods) {
    SimulateRequest point;
    point.strategy = request.strategies.front();
    point.period = period.value_or(1);
    point.iterations = request.iterations;
    try {
      validate_simulate_request(point);
    } catch (const FieldError& e) {
      if (e.field() != "period") throw;
      throw FieldError("periods", e.renamed("periods"));
    }
  }
  for (const std::string& name : request.strategies) {
    try {
      strategy_for(name, StrategyUse::kDes);
    } catch (const FieldError& e) {
      throw FieldError("strategies", e.renamed("strategies"));
    }
  }
}

// The cluster's stragglers and jitter, the batch and its scaling, the automatic period's overhead.
void check_whatif_workload(const WhatifRequest& request) {
  if (request.jitter_sigma && !(*request.jitter_sigma >= 0 && *request.jitter_sigma <= limits::kMaxJitterSigma))
    throw FieldError("jitter_sigma", "jitter_sigma: " + format_shortest(*request.jitter_sigma) + " is outside 0.." +
                                         format_shortest(limits::kMaxJitterSigma));
  if (request.straggler && !(*request.straggler >= limits::kMinSlowdown && *request.straggler <= limits::kMaxSlowdown))
    throw FieldError("straggler", "straggler: " + format_shortest(*request.straggler) + " is outside " +
                                      format_shortest(limits::kMinSlowdown) + ".." + format_shortest(limits::kMaxSlowdown));
  if (request.scaling == WhatifScaling::kStrong) {
    if (!request.global_batch || *request.global_batch < 1)
      throw FieldError("global_batch", "global_batch: strong scaling needs a global batch >= 1");
    if (!request.model && !request.batch)
      throw FieldError("batch", "batch: strong scaling of a profile needs the per-worker batch it was measured at");
  } else if (request.global_batch) {
    throw FieldError("global_batch", "global_batch: only with strong scaling");
  }
  if (request.batch && *request.batch < 1)
    throw FieldError("batch", "batch: must be >= 1, got " + std::to_string(*request.batch));
  if (!(request.max_overhead > 0 && request.max_overhead <= 100))
    throw FieldError("max_overhead", "max_overhead: must be a fraction of compute in (0, 100], got " +
                                         format_shortest(request.max_overhead));
}

// The number of points and the search options.
void check_whatif_grid(const WhatifRequest& request) {
  // The grid's size, counted in double so that no product of list sizes overflows.
  const double points = static_cast<double>(request.workers.size()) * static_cast<double>(request.bandwidth_Gbps.size()) *
                        static_cast<double>(request.latency_us.size()) * static_cast<double>(request.periods.size()) *
                        static_cast<double>(request.strategies.size());
  if (points > static_cast<double>(limits::kMaxWhatifPoints))
    throw FieldError("workers", "workers: " + std::to_string(request.workers.size()) + " worker counts x " +
                                    std::to_string(request.bandwidth_Gbps.size()) + " bandwidths x " +
                                    std::to_string(request.latency_us.size()) + " latencies x " +
                                    std::to_string(request.periods.size()) + " periods x " +
                                    std::to_string(request.strategies.size()) + " strategies make " +
                                    format_shortest(points) + " points, more than the " +
                                    std::to_string(limits::kMaxWhatifPoints) +
                                    " a sweep may have (docs/formats.md, Limits); split the sweep");
  if (request.search.rounds < 0) throw FieldError("search.rounds", "search.rounds: must be >= 0");
  if (!(request.search.time_limit_s > 0 && request.search.time_limit_s <= 86400))
    throw FieldError("search.time_limit_s", "search.time_limit_s: must be in (0, 86400] seconds");
}

void validate_whatif_values(const WhatifRequest& request) {
  check_whatif_lists(request);
  check_whatif_sweep(request);
  check_whatif_workload(request);
  check_whatif_grid(request);
}


std::string setting_text(const WhatifRequest& request, int workers, double bandwidth_Gbps, double latency_us) {
  return request.cluster_origin + " at " + count_text(workers, "worker") + ", " + format_shortest(bandwidth_Gbps) +
         " Gbit/s, " + format_shortest(latency_us) + " us";
}

WhatifPrepared prepare_whatif(const WhatifRequest& request) {
  validate_whatif_values(request);
  WhatifPrepared prepared;
  prepared.seq = request.seq;
  if (request.model && !prepared.seq) {
    // The sequence length make_model_profile profiles at (its default: the context, at most 1024).
    const std::int64_t context = read_model_spec_file(request.model->spec_path.string()).max_position_embeddings;
    prepared.seq = request.model->seq > 0 ? request.model->seq : std::min(context, kDefaultProfileSeq);
  }
  const int strategy_count = static_cast<int>(request.strategies.size());
  for (const int workers : request.workers) {
    const std::optional<std::int64_t> batch = batch_at(request, workers);
    const Profile& profile = profile_at(request, prepared, batch);
    for (const double bandwidth : request.bandwidth_Gbps)
      for (const double latency : request.latency_us) {
        const std::string text = setting_text(request, workers, bandwidth, latency);
        const Cluster cluster = point_cluster(request, workers, bandwidth, latency, text);
        for (const std::optional<int>& period : request.periods) {
          prepared.settings.push_back({prepared.points, cluster, text, workers, bandwidth, latency, period, batch, &profile});
          prepared.points += strategy_count;
        }
      }
  }
  return prepared;
}

// A strategy run at one setting: the DES outcome and, for plans, the planning job's.
struct PointRun {
  DesOutcome des;
  std::optional<PlanOutcome> plan;
};

// The all-reduce payload of one period: each synced layer's parameter bytes, once per all-reduce
// that carries it (the same for every worker in data parallelism).
double bytes_per_period(const DesOutcome& des) {
  double bytes = 0;
  for (const auto& ops : des.program.iterations)
    for (const SyncOp& op : ops)
      for (const int j : op.layers)
        if (std::isfinite(des.layers.param_bytes[j])) bytes += des.layers.param_bytes[j];
  return bytes;
}

class SettingRunner {
 public:
  SettingRunner(const WhatifRequest& request, const WhatifSetting& setting, std::optional<std::int64_t> seq)
      : request_(request), setting_(setting), seq_(seq) {}

  // The rows of the setting's points, in strategy order.
  std::vector<WhatifRow> rows() {
    std::vector<WhatifRow> rows;
    for (std::size_t s = 0; s < request_.strategies.size(); ++s) rows.push_back(input_row(static_cast<int>(s)));
    try {
      prepare_setting();
    } catch (const InputError& e) {
      for (WhatifRow& row : rows) fail(row, e.what());
      return rows;
    }
    const std::optional<double> ssgd = baseline("ssgd");
    const std::optional<double> flsgd = baseline("flsgd");
    for (WhatifRow& row : rows) {
      row.period = period_;
      try {
        const PointRun& run = point(row.strategy);
        fill(row, run);
        // A period of 0 s (a profile of all-zero times) has no speedup and no throughput: left
        // empty, not inf or NaN.
        if (ssgd && *row.period_s > 0) row.speedup_vs_ssgd = *ssgd / *row.period_s;
        if (flsgd && *row.period_s > 0) row.speedup_vs_flsgd = *flsgd / *row.period_s;
      } catch (const InputError& e) {
        fail(row, e.what());
      }
    }
    return rows;
  }

 private:
  WhatifRow input_row(int strategy) const {
    WhatifRow row;
    row.index = setting_.first_index + strategy;
    row.workers = setting_.workers;
    row.nodes = setting_.cluster.nodes();
    row.bandwidth_Gbps = setting_.bandwidth_Gbps;
    row.latency_us = setting_.latency_us;
    row.period_requested = setting_.period ? std::to_string(*setting_.period) : "auto";
    row.strategy = request_.strategies[strategy];
    row.batch_per_worker = setting_.batch;
    row.jitter_sigma = setting_.cluster.jitter ? setting_.cluster.jitter->sigma : 0.0;
    row.straggler = setting_.cluster.slowdown(0);
    return row;
  }

  static void fail(WhatifRow& row, const std::string& message) {
    row.status = WhatifStatus::kError;
    row.error = message;
  }

  // The point's all-reduce times (the cluster's cost model) and its period.
  void prepare_setting() {
    SyncTimeInputs inputs;
    inputs.cluster = setting_.cluster;
    inputs.cluster_origin = setting_.cluster_text;
    inputs.mode = SyncTimeMode::kModel;
    sync_ = choose_sync_times(*setting_.profile, request_.origin, inputs);
    if (setting_.period) {
      period_ = *setting_.period;
      return;
    }
    // Automatic: `plan --algorithm dp --period auto --max-overhead F` (dp: no search, deterministic).
    PlanRequest plan = plan_request("dp");
    plan.period.reset();
    plan.max_overhead = request_.max_overhead;
    try {
      period_ = run_plan_job(plan).period;
    } catch (const FieldError& e) {
      if (e.field() != "max_overhead") throw;
      // "period auto: no period H up to 1000 keeps the wait within 5.00% of compute ...": the row's
      // message names the list element, not the plan request's field.
      throw InputError(e.renamed("period auto"));
    }
  }

  PlanRequest plan_request(const std::string& algorithm) const {
    PlanRequest plan;
    plan.profile = sync_->profile;
    plan.origin = request_.origin;
    plan.times = sync_backprop_times(*sync_, request_.origin);
    plan.period = period_;
    plan.algorithm = algorithm;
    plan.search = request_.search;
    plan.fill_bubbles = request_.fill_bubbles;
    if (request_.fuse_buckets) plan.bucket_alpha_s = sync_->alpha_s;
    return plan;
  }

  // The strategy at this setting, run once: plannable strategies as `plan` then `simulate --plan`,
  // the others as `simulate --strategy`.
  const PointRun& point(const std::string& name) {
    for (const auto& [known, run] : runs_)
      if (known == name) return run;
    PointRun run;
    SimulateRequest simulate;
    simulate.sync = *sync_;
    simulate.origin = request_.origin;
    // Whole periods only (at 15 iterations of H = 10 the row's period_s fell
    // below the plan's proven lower bound): K rounded up to a multiple of this point's H, or down
    // when that passes the iteration limit (docs/whatif.md).
    if (request_.iterations) simulate.iterations = whole_periods(static_cast<int>(*request_.iterations), period_);
    simulate.link_bytes = false;  // the rows read no per-link bytes: a point costs no memory per worker
    const Strategy& strategy = strategy_for(name, StrategyUse::kDes);
    if (strategy.plannable()) {
      run.plan = run_plan_job(plan_request(name));
      simulate.plan = run.plan->plan;
      simulate.plan_origin = "the " + name + " plan";
    } else {
      simulate.strategy = name;
      simulate.period = period_;
    }
    run.des = simulate_des(simulate);
    // A composite (`best`) means best: every point has a cluster, so the all-reduce start-up
    // time is known, and the fused plan (docs/time-model.md section 12) is planned and timed too;
    // the shorter period in the DES is the row's. At 100,000 workers the flat ring's start-up term
    // made mgwfbp's merged buckets 14 times faster than best's unfused plan. --fuse-buckets forces
    // fusion on every plan instead.
    if (!strategy.members.empty() && !request_.fuse_buckets && sync_->alpha_s && *sync_->alpha_s > 0) {
      PlanRequest fused_request = plan_request(name);
      fused_request.bucket_alpha_s = sync_->alpha_s;
      fused_request.fuse_after_planning = true;  // no fused search: a point costs about an unfused plan
      PointRun fused;
      fused.plan = run_plan_job(fused_request);
      simulate.plan = fused.plan->plan;
      simulate.plan_origin = "the fused " + name + " plan";
      fused.des = simulate_des(simulate);
      if (fused.des.document.period_s() < run.des.document.period_s()) run = std::move(fused);
    }
    runs_.emplace_back(name, std::move(run));
    return runs_.back().second;
  }

  // ssgd's or flsgd's period at this setting, or nullopt when it fails.
  std::optional<double> baseline(const std::string& name) {
    try {
      return point(name).des.document.period_s();
    } catch (const InputError&) {
      return std::nullopt;
    }
  }

  void fill(WhatifRow& row, const PointRun& run) const {
    const DesRunResult& document = run.des.document;
    const int iterations = document.iterations;
    row.period_s = document.period_s();
    row.iteration_s = document.total_s / iterations;
    if (row.batch_per_worker && *row.iteration_s > 0) {
      row.samples_per_s = static_cast<double>(row.workers) * static_cast<double>(*row.batch_per_worker) / *row.iteration_s;
      if (seq_) row.tokens_per_s = *row.samples_per_s * static_cast<double>(*seq_);
    }
    row.exposed_comm_s = document.exposed_comm_s / iterations * *row.period;
    row.bytes_per_worker = bytes_per_period(run.des);
    if (run.plan) {
      row.lower_bound_s = run.plan->lower_bound_s;
      row.plan_gap = run.plan->gap_to_lower_bound;
      row.search_time_limited = run.plan->time_limited_searches() > 0;
    }
  }

  const WhatifRequest& request_;
  const WhatifSetting& setting_;
  const std::optional<std::int64_t> seq_;
  std::optional<SyncTimes> sync_;
  int period_ = 0;
  std::vector<std::pair<std::string, PointRun>> runs_;
};

// ---------------------------------------------------------------------------------------------
// Rows as JSON and CSV: one table of columns.

template <class T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// A row field's JSON value and back: a value, or null for an unset optional.
template <class T>
Json cell_json(const T& value) {
  return Json(value);
}
template <class T>
Json cell_json(const std::optional<T>& value) {
  return optional_json(value);
}
template <class T>
void read_cell(const Json& value, T& field) {
  field = value.get<T>();
}
template <class T>
void read_cell(const Json& value, std::optional<T>& field) {
  field = value.is_null() ? std::nullopt : std::optional<T>(value.get<T>());
}

// One column: its name, its value in a row, and (for a column that is a row's field) how the row
// reads it back; nullptr for columns made from the outcome (model, scaling, seq) or other columns.
struct WhatifColumn {
  const char* name;
  Json (*value)(const WhatifOutcome& outcome, const WhatifRow& row);
  void (*read)(const Json& value, WhatifRow& row);
};

// The column of the row field `Member`, both ways.
template <auto Member>
WhatifColumn field_column(const char* name) {
  return {name, [](const WhatifOutcome&, const WhatifRow& row) { return cell_json(row.*Member); },
          [](const Json& value, WhatifRow& row) { read_cell(value, row.*Member); }};
}

// Every column, in CSV order (docs/whatif.md says what each holds): the one table that writes
// the CSV and JSON rows and reads a JSON row back (whatif_row_from_json).
const std::vector<WhatifColumn>& whatif_columns() {
  static const std::vector<WhatifColumn> columns = {
      field_column<&WhatifRow::index>("index"),
      {"model", [](const WhatifOutcome& o, const WhatifRow&) { return Json(o.model); }, nullptr},
      {"scaling", [](const WhatifOutcome& o, const WhatifRow&) { return Json(to_string(o.scaling)); }, nullptr},
      field_column<&WhatifRow::workers>("workers"),
      field_column<&WhatifRow::nodes>("nodes"),
      field_column<&WhatifRow::bandwidth_Gbps>("bandwidth_Gbps"),
      field_column<&WhatifRow::latency_us>("latency_us"),
      field_column<&WhatifRow::period_requested>("period_requested"),
      field_column<&WhatifRow::period>("period"),
      field_column<&WhatifRow::strategy>("strategy"),
      field_column<&WhatifRow::batch_per_worker>("batch_per_worker"),
      {"global_batch",
       [](const WhatifOutcome&, const WhatifRow& r) {
         return r.batch_per_worker ? Json(*r.batch_per_worker * r.workers) : Json(nullptr);
       },
       nullptr},
      {"seq", [](const WhatifOutcome& o, const WhatifRow&) { return optional_json(o.seq); }, nullptr},
      field_column<&WhatifRow::jitter_sigma>("jitter_sigma"),
      field_column<&WhatifRow::straggler>("straggler"),
      {"status", [](const WhatifOutcome&, const WhatifRow& r) { return Json(to_string(r.status)); },
       [](const Json& value, WhatifRow& row) {
         const std::string text = value.get<std::string>();
         if (text != "ok" && text != "error") throw InternalError("whatif row: status '" + text + "' is neither ok nor error");
         row.status = text == "ok" ? WhatifStatus::kOk : WhatifStatus::kError;
       }},
      field_column<&WhatifRow::period_s>("period_s"),
      field_column<&WhatifRow::iteration_s>("iteration_s"),
      field_column<&WhatifRow::samples_per_s>("samples_per_s"),
      field_column<&WhatifRow::tokens_per_s>("tokens_per_s"),
      field_column<&WhatifRow::speedup_vs_ssgd>("speedup_vs_ssgd"),
      field_column<&WhatifRow::speedup_vs_flsgd>("speedup_vs_flsgd"),
      field_column<&WhatifRow::exposed_comm_s>("exposed_comm_s"),
      field_column<&WhatifRow::bytes_per_worker>("bytes_per_worker_per_period"),
      field_column<&WhatifRow::lower_bound_s>("lower_bound_s"),
      field_column<&WhatifRow::plan_gap>("plan_gap"),
      field_column<&WhatifRow::search_time_limited>("search_time_limited"),
      field_column<&WhatifRow::error>("error"),
  };
  return columns;
}

// One CSV cell (RFC 4180): numbers exact, null empty, text quoted when it needs to be.
std::string csv_cell(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  if (value.is_number()) return format_exact(value.get<double>());
  const std::string text = value.get<std::string>();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

Json row_json(const WhatifOutcome& outcome, const WhatifRow& row) {
  Json object = Json::object();
  for (const WhatifColumn& column : whatif_columns()) object[column.name] = column.value(outcome, row);
  return object;
}

// The rows of `settings` (by index) as one JSON array, for the other ranks.
std::string rows_text(const WhatifOutcome& outcome, const std::vector<WhatifRow>& rows) {
  Json array = Json::array();
  for (const WhatifRow& row : rows) array.push_back(row_json(outcome, row));
  return json_text(array);
}

// Every rank's rows onto every rank: each rank's rows' JSON text through run.share.
void gather_rows(const WhatifRun& run, const WhatifOutcome& outcome, std::vector<WhatifRow>& rows,
                 const std::vector<bool>& mine) {
  SYNCPLAN_CHECK(run.share != nullptr);
  std::vector<WhatifRow> own;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (mine[i]) own.push_back(rows[i]);
  const std::vector<std::string> texts = run.share(rows_text(outcome, own));
  SYNCPLAN_CHECK(static_cast<int>(texts.size()) == run.ranks);
  for (int rank = 0; rank < run.ranks; ++rank) {
    if (rank == run.rank) continue;
    const std::string& text = texts[static_cast<std::size_t>(rank)];
    const std::string origin = "whatif: rank " + std::to_string(rank) + "'s rows";
    Json array;
    try {
      array = Json::parse(text);
    } catch (const Json::exception& e) {
      throw InternalError(origin + ": " + e.what());
    }
    for (const Json& object : array) {
      WhatifRow row = whatif_row_from_json(object, origin);
      SYNCPLAN_CHECK(row.index >= 0 && row.index < static_cast<int>(rows.size()));
      rows[row.index] = std::move(row);
    }
  }
}

}  // namespace

std::string to_string(WhatifScaling scaling) { return scaling == WhatifScaling::kWeak ? "weak" : "strong"; }

const char* to_string(WhatifStatus status) { return status == WhatifStatus::kOk ? "ok" : "error"; }

int WhatifOutcome::failed() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const WhatifRow& r) { return r.status != WhatifStatus::kOk; }));
}

int validate_whatif_request(const WhatifRequest& request) { return prepare_whatif(request).points; }

WhatifOutcome run_whatif_job(const WhatifRequest& request, const WhatifRun& run) {
  const WhatifPrepared prepared = prepare_whatif(request);
  SYNCPLAN_CHECK(run.jobs >= 1);
  WhatifOutcome outcome;
  outcome.model = prepared.profiles.begin()->second.model.value_or("");
  outcome.origin = request.origin;
  outcome.cluster_origin = request.cluster_origin;
  outcome.allreduce = request.base.allreduce;
  outcome.scaling = request.scaling;
  outcome.global_batch = request.global_batch;
  outcome.seq = prepared.seq;

  // This rank's settings: setting i on rank i mod R.
  SYNCPLAN_CHECK(run.ranks >= 1 && run.rank >= 0 && run.rank < run.ranks);
  const int ranks = run.ranks;
  const int rank = run.rank;
  std::vector<int> mine;
  for (int i = 0; i < static_cast<int>(prepared.settings.size()); ++i)
    if (i % ranks == rank) mine.push_back(i);
  const int strategy_count = static_cast<int>(request.strategies.size());
  const int my_points = static_cast<int>(mine.size()) * strategy_count;

  outcome.rows.resize(static_cast<std::size_t>(prepared.points));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards first_error, done and progress calls
  std::exception_ptr first_error;
  int done = 0;
  auto worker = [&] {
    while (!stop) {
      const std::size_t k = next++;
      if (k >= mine.size()) return;
      const WhatifSetting& setting = prepared.settings[mine[k]];
      try {
        std::vector<WhatifRow> rows = SettingRunner(request, setting, prepared.seq).rows();
        for (WhatifRow& row : rows) outcome.rows[row.index] = std::move(row);  // distinct indices per thread
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!first_error) first_error = std::current_exception();
        stop = true;
        return;
      }
      std::lock_guard lock(mutex);
      done += strategy_count;
      if (run.progress) run.progress(done, my_points);
    }
  };
  const int threads = std::max(1, std::min(run.jobs, static_cast<int>(mine.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
  if (first_error) std::rethrow_exception(first_error);

  if (ranks > 1) {
    std::vector<bool> own(outcome.rows.size(), false);
    for (const int i : mine)
      for (int s = 0; s < strategy_count; ++s) own[prepared.settings[i].first_index + s] = true;
    gather_rows(run, outcome, outcome.rows, own);
  }
  return outcome;
}

std::string whatif_csv(const WhatifOutcome& outcome) {
  std::string text;
  for (const WhatifColumn& column : whatif_columns()) text += (text.empty() ? "" : ",") + std::string(column.name);
  text += '\n';
  for (const WhatifRow& row : outcome.rows) {
    std::string line;
    bool first = true;
    for (const WhatifColumn& column : whatif_columns()) {
      line += (first ? "" : ",") + csv_cell(column.value(outcome, row));
      first = false;
    }
    text += line + '\n';
  }
  return text;
}

Json whatif_to_json(const WhatifOutcome& outcome) {
  Json points = Json::array();
  Json errors = Json::array();
  for (const WhatifRow& row : outcome.rows) {
    points.push_back(row_json(outcome, row));
    if (row.status != WhatifStatus::kOk) errors.push_back({{"index", row.index}, {"error", row.error}});
  }
  return {{"format", kWhatifFormat},
          {"model", outcome.model},
          {"profile", outcome.origin},
          {"cluster", outcome.cluster_origin},
          {"allreduce", to_string(outcome.allreduce)},
          {"scaling", to_string(outcome.scaling)},
          {"global_batch", optional_json(outcome.global_batch)},
          {"seq", optional_json(outcome.seq)},
          {"points", points},
          {"summary", {{"points", outcome.rows.size()}, {"failed", outcome.failed()}, {"errors", errors}}}};
}

WhatifRow whatif_row_from_json(const Json& object, const std::string& origin) {
  try {
    WhatifRow row;
    for (const WhatifColumn& column : whatif_columns())
      if (column.read) column.read(object.at(column.name), row);
    return row;
  } catch (const Json::exception& e) {
    throw InputError(origin + ": not a what-if point (" + e.what() + ")");
  }
}

}  // namespace syncplan
