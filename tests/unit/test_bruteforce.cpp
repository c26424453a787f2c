// The planners and the lower bound against exhaustive search on seeded random profiles: every
// assignment of layers to iterations is timed by a reference implementation of SPEC section 5
// written here, independent of simulator/, and the optimum is compared with what planner/ finds
// (the exact method included).
#include "planner/strategy_table.hpp"
#include "planner/lower_bound.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace syncplan;

namespace {

// ---------------------------------------------------------------------------------------------
// Random profiles

/// One random case, in backprop order (index 0 = SPEC's j = 1), with the profile built from it.
struct RandomCase {
  std::vector<double> backward_s;  // b_j
  std::vector<double> sync_s;      // c_j
  std::vector<double> ready_s;     // B_j, summed here (not by backprop_times)
  double forward_total_s = 0;      // F
  double update_total_s = 0;       // U
  Profile profile;

  int layers() const { return static_cast<int>(backward_s.size()); }
  double backprop_s() const { return ready_s.back(); }
  double compute_s() const { return forward_total_s + backprop_s() + update_total_s; }

  std::string describe() const {
    std::ostringstream out;
    out.precision(17);
    out << "b =";
    for (const double b : backward_s) out << ' ' << b;
    out << "; c =";
    for (const double c : sync_s) out << ' ' << c;
    out << "; F = " << forward_total_s << ", U = " << update_total_s;
    return out.str();
  }
};

/// Real-valued times around a millisecond, mixing zero, tiny, ordinary and large values: some
/// syncs much larger than any backward time, some layers with nothing to sync or compute.
/// `whole_times` draws small multiples of 0.5 instead, so that ties between plans are common.
RandomCase random_case(std::mt19937& rng, int layer_count, bool whole_times) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto between = [&](double low, double high) { return low + (high - low) * unit(rng); };
  RandomCase rc;
  for (int j = 0; j < layer_count; ++j) {
    double b = 0, c = 0;
    if (whole_times) {
      b = static_cast<double>(rng() % 4);
      c = 0.5 * static_cast<double>(rng() % 9);
    } else {
      const double rb = unit(rng);
      b = rb < 0.1 ? 0.0 : rb < 0.25 ? between(0, 1e-6) : between(1e-4, 2e-3);
      const double rs = unit(rng);
      c = rs < 0.1    ? 0.0
          : rs < 0.25 ? between(0, 1e-7)
          : rs < 0.5  ? between(2e-3, 1e-2)  // much larger than a backward time
                      : between(0, 2e-3);
    }
    rc.backward_s.push_back(b);
    rc.sync_s.push_back(c);
    rc.ready_s.push_back((j == 0 ? 0.0 : rc.ready_s.back()) + b);
  }
  rc.profile.model = "random";
  rc.profile.source = "estimated:random";
  for (int j = layer_count - 1; j >= 0; --j) {  // forward order: backprop reversed
    LayerProfile layer;
    layer.name = "layer" + std::to_string(j);
    layer.backward_s = rc.backward_s[j];
    layer.sync_s = rc.sync_s[j];
    if (!whole_times && unit(rng) < 0.5) layer.forward_s = between(0, 1e-3);
    if (!whole_times && unit(rng) < 0.5) layer.update_s = between(0, 1e-4);
    rc.forward_total_s += layer.forward_s.value_or(0);
    rc.update_total_s += layer.update_s.value_or(0);
    rc.profile.layers.push_back(layer);
  }
  return rc;
}

// ---------------------------------------------------------------------------------------------
// Reference timing (SPEC section 5, written independently of simulator/)

/// Link state of each iteration while layers are added in backprop order.
struct Links {
  std::vector<double> free_s;  // when each iteration's link is free (0 = never used)
  explicit Links(int period) : free_s(period, 0.0) {}
  // Layer j syncs in iteration h: start = max(B_j, link free), end = start + c_j.
  void add(const RandomCase& rc, int h, int j) {
    free_s[h] = std::max(rc.ready_s[j], free_s[h]) + rc.sync_s[j];
  }
  // sum over h of F + B_L + U + max(0, end_h - B_L); an unused link has end 0.
  double period_s(const RandomCase& rc) const {
    double period = 0;
    for (const double end : free_s)
      period += rc.compute_s() + std::max(0.0, end - rc.backprop_s());
    return period;
  }
};

/// Period of an assignment (iterations[h] ascending backprop indices).
double reference_period_s(const RandomCase& rc, const Assignment& assignment) {
  Links links(assignment.period());
  for (int h = 0; h < assignment.period(); ++h)
    for (const int j : assignment.iterations[h]) links.add(rc, h, j);
  return links.period_s(rc);
}

/// Wait of one iteration that syncs layers s..L-1.
double reference_tail_wait_s(const RandomCase& rc, int s) {
  double free = 0;
  for (int j = s; j < rc.layers(); ++j) free = std::max(rc.ready_s[j], free) + rc.sync_s[j];
  return std::max(0.0, free - rc.backprop_s());
}

/// Least period over every assignment of each layer to exactly one of `period` iterations
/// (period^L of them): the global optimum of single-sync plans.
double global_optimum_s(const RandomCase& rc, int period, long long& enumerated) {
  const int layer_count = rc.layers();
  std::vector<int> iteration_of(layer_count, 0);  // an odometer in base `period`
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    Links links(period);
    for (int j = 0; j < layer_count; ++j) links.add(rc, iteration_of[j], j);
    best = std::min(best, links.period_s(rc));
    ++enumerated;
    int digit = 0;
    while (digit < layer_count && ++iteration_of[digit] == period) iteration_of[digit++] = 0;
    if (digit == layer_count) break;
  }
  return best;
}

/// Least period over every plan in which each layer syncs in a non-empty subset of the
/// iterations ((2^period - 1)^L of them).
double multisync_optimum_s(const RandomCase& rc, int period, long long& enumerated) {
  const int layer_count = rc.layers();
  const int all = (1 << period) - 1;
  std::vector<int> mask_of(layer_count, 1);  // an odometer over masks 1..all
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    Links links(period);
    for (int j = 0; j < layer_count; ++j)
      for (int h = 0; h < period; ++h)
        if (mask_of[j] & (1 << h)) links.add(rc, h, j);
    best = std::min(best, links.period_s(rc));
    ++enumerated;
    int digit = 0;
    while (digit < layer_count && ++mask_of[digit] > all) mask_of[digit++] = 1;
    if (digit == layer_count) break;
  }
  return best;
}

/// Least period over every cut of the backprop order into at most `period` contiguous groups,
/// group g synced in iteration g (2^(L-1) cut sets, those with at most period-1 cuts).
double contiguous_optimum_s(const RandomCase& rc, int period, long long& enumerated) {
  const int layer_count = rc.layers();
  double best = std::numeric_limits<double>::infinity();
  for (unsigned cuts = 0; cuts < (1u << (layer_count - 1)); ++cuts) {
    // Bit k set: a cut between backprop layers k and k+1.
    int groups = 1;
    for (int k = 0; k + 1 < layer_count; ++k) groups += (cuts >> k) & 1u;
    if (groups > period) continue;
    Links links(period);
    for (int j = 0, h = 0; j < layer_count; ++j) {
      links.add(rc, h, j);
      if (j + 1 < layer_count && ((cuts >> j) & 1u)) ++h;
    }
    best = std::min(best, links.period_s(rc));
    ++enumerated;
  }
  return best;
}

/// SPEC section 5's pseudocode of DreamDDP's search, literally (no memo), with the model's link
/// state (start at max(B_j, link free)). Returns the least total wait of layers s.. over the
/// `iterations_left` last iterations.
double reference_dreamddp_wait_s(const RandomCase& rc, int s, int iterations_left) {
  if (s >= rc.layers()) return 0;
  if (iterations_left == 1) return reference_tail_wait_s(rc, s);
  double free = 0;
  for (int j = s; j < rc.layers(); ++j) {
    const double start = std::max(rc.ready_s[j], free);
    const double remaining = rc.backprop_s() - start;
    if (rc.sync_s[j] <= remaining) {  // optimal hiding
      free = start + rc.sync_s[j];
      continue;
    }
    const double overflow = rc.sync_s[j] - remaining;
    const double keep = overflow + reference_dreamddp_wait_s(rc, j + 1, iterations_left - 1);
    if (j == s) return keep;  // at least one layer per iteration
    return std::min(keep, reference_dreamddp_wait_s(rc, j, iterations_left - 1));  // delayed
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Checks

/// |a - b| <= 1e-12 relative (plus an absolute 1e-18 s for periods near zero).
bool same_period(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)) + 1e-18;
}
/// a <= b up to the same tolerance.
bool at_most(double a, double b) { return a <= b || same_period(a, b); }

/// Every layer in exactly one iteration, indices ascending in each, `period` iterations; with
/// `contiguous`, the iterations read in order are 0, 1, ..., L-1 (contiguous groups in backprop
/// order, iteration h's group before iteration h+1's).
void require_single_sync_plan(const Assignment& assignment, int layer_count, int period,
                              bool contiguous) {
  REQUIRE(assignment.period() == period);
  std::vector<int> times_synced(layer_count, 0);
  std::vector<int> concatenated;
  for (const std::vector<int>& layers : assignment.iterations) {
    for (std::size_t k = 0; k < layers.size(); ++k) {
      REQUIRE(layers[k] >= 0);
      REQUIRE(layers[k] < layer_count);
      if (k > 0) REQUIRE(layers[k - 1] < layers[k]);
      ++times_synced[layers[k]];
      concatenated.push_back(layers[k]);
    }
  }
  for (int j = 0; j < layer_count; ++j) {
    INFO("layer " << j);
    REQUIRE(times_synced[j] == 1);
  }
  if (contiguous) {
    for (int j = 0; j < layer_count; ++j) REQUIRE(concatenated[j] == j);
  }
}

}  // namespace

TEST_CASE("brute force: planners and lower bound against exhaustive search", "[bruteforce]") {
  constexpr int kMaxLayers = 8;
  constexpr int kMaxPeriod = 4;
  constexpr int kSeedsPerShape = 100;  // per (L, H) and per kind of times
  long long cases = 0, single_enumerated = 0, multi_enumerated = 0, contiguous_enumerated = 0;
  long long multisync_cases = 0, noncontiguous_better = 0, dreamddp_worse = 0, bound_tight = 0;
  long long suffix_tight = 0, search_optimal = 0, exact_improved = 0, exact_nodes = 0;

  for (int layer_count = 1; layer_count <= kMaxLayers; ++layer_count) {
    for (int period = 1; period <= kMaxPeriod; ++period) {
      for (int seed = 0; seed < 2 * kSeedsPerShape; ++seed) {
        const bool whole_times = seed >= kSeedsPerShape;
        std::mt19937 rng(static_cast<unsigned>(1000003 * layer_count + 1009 * period + seed));
        const RandomCase rc = random_case(rng, layer_count, whole_times);
        INFO("L = " << layer_count << ", H = " << period << ", seed " << seed << ": "
                    << rc.describe());
        const BackpropTimes times = backprop_times(rc.profile, "random.json");
        REQUIRE(times.ready_s.size() == rc.ready_s.size());

        // (a) the optimum over all single-sync plans, and over contiguous groups.
        const double global = global_optimum_s(rc, period, single_enumerated);
        const double contiguous = contiguous_optimum_s(rc, period, contiguous_enumerated);
        REQUIRE(at_most(global, contiguous));
        if (!same_period(global, contiguous)) ++noncontiguous_better;

        // The planners' plans, timed by the library and by the reference.
        const PlanCandidate dp = plan_dp(times, period);
        const PlanCandidate dreamddp = plan_dreamddp(times, period);
        const PlanCandidate even = find_plan_algorithm("plsgd-even").plan(times, period, {});
        const PlanCandidate best = plan_best(times, period);
        const PlanCandidate search = plan_search(times, period, {});
        const double search_s = time_assignment(times, search.assignment).period_s;
        // search: never worse than dp, never better than the optimum; count how often it is optimal.
        REQUIRE(at_most(search_s, time_assignment(times, plan_dp(times, period).assignment).period_s));
        REQUIRE(search.algorithm == "search");
        const double dp_s = time_assignment(times, dp.assignment).period_s;
        const double dreamddp_s = time_assignment(times, dreamddp.assignment).period_s;
        const double even_s = time_assignment(times, even.assignment).period_s;
        const double best_s = time_assignment(times, best.assignment).period_s;
        for (const auto* candidate : {&dp, &dreamddp, &even, &best, &search}) {
          INFO("algorithm " << candidate->algorithm);
          REQUIRE(same_period(time_assignment(times, candidate->assignment).period_s,
                              reference_period_s(rc, candidate->assignment)));
        }

        // (b) dp is the contiguous optimum.
        REQUIRE(same_period(dp_s, contiguous));
        // (c) dp between the global optimum and the other contiguous planners.
        REQUIRE(at_most(global, dp_s));
        REQUIRE(at_most(global, search_s));
        if (same_period(search_s, global)) ++search_optimal;
        REQUIRE(at_most(dp_s, even_s));
        REQUIRE(at_most(dp_s, dreamddp_s));
        if (!same_period(dp_s, dreamddp_s)) ++dreamddp_worse;
        // dreamddp follows SPEC section 5's pseudocode.
        REQUIRE(same_period(dreamddp_s, period * rc.compute_s() +
                                            reference_dreamddp_wait_s(rc, 0, period)));
        // best is the least of dp, dreamddp, plsgd-even and search, and says which.
        REQUIRE(same_period(best_s, std::min({dp_s, dreamddp_s, even_s, search_s})));
        REQUIRE((best.algorithm == "dp" || best.algorithm == "dreamddp" ||
                 best.algorithm == "plsgd-even" || best.algorithm == "search"));

        // (d) the bound holds for every single-sync plan, and for multi-sync plans when small.
        const double bound = spec_lower_bound_s(times, period);
        REQUIRE(at_most(bound, global));
        if (same_period(bound, global)) ++bound_tight;
        // The suffix bound is never below SPEC's and never above the optimum either.
        const double suffix = suffix_lower_bound_s(times, period);
        REQUIRE(at_most(bound, suffix));
        REQUIRE(at_most(suffix, global));
        REQUIRE(same_period(best_lower_bound_s(times, period), suffix));
        if (same_period(suffix, global)) ++suffix_tight;
        if (layer_count <= 5 && period <= 3) {
          const double multi = multisync_optimum_s(rc, period, multi_enumerated);
          REQUIRE(at_most(bound, multi));
          REQUIRE(at_most(suffix, multi));
          // Syncing a layer again never shortens an iteration, so multi-sync plans gain nothing.
          REQUIRE(same_period(multi, global));
          ++multisync_cases;
        }

        // (f) the exact method, started from the worst planner's plan, proves the
        // brute-force optimum within its node limit; a proven optimum is a bound at least the
        // suffix bound's, and from best's plan it never changes a plan already optimal.
        const ExactResult exact = plan_exact(times, period, {}, even);
        REQUIRE(exact.run.ran);
        REQUIRE(exact.run.proven_optimal);
        const double exact_s = time_assignment(times, exact.candidate.assignment).period_s;
        REQUIRE(same_period(exact_s, global));
        REQUIRE(same_period(exact_s, reference_period_s(rc, exact.candidate.assignment)));
        REQUIRE(at_most(suffix, exact_s));
        require_single_sync_plan(exact.candidate.assignment, layer_count, period, false);
        if (exact.run.improved) ++exact_improved;
        exact_nodes += exact.run.nodes;
        const ExactResult from_best = plan_exact(times, period, {}, best);
        REQUIRE(from_best.run.proven_optimal);
        REQUIRE(same_period(time_assignment(times, from_best.candidate.assignment).period_s, global));

        // (e) plans cover every layer exactly once, ascending, in contiguous groups.
        require_single_sync_plan(dp.assignment, layer_count, period, true);
        require_single_sync_plan(dreamddp.assignment, layer_count, period, true);
        require_single_sync_plan(even.assignment, layer_count, period, true);
        require_single_sync_plan(best.assignment, layer_count, period, best.algorithm != "search");
        require_single_sync_plan(search.assignment, layer_count, period, false);
        // plsgd-even's groups are ceil(L/H) long: layer j in iteration j / ceil(L/H).
        const int group = (layer_count + period - 1) / period;
        for (int h = 0; h < period; ++h)
          for (const int j : even.assignment.iterations[h]) REQUIRE(j / group == h);
        ++cases;
      }
    }
  }
  std::cout << "brute force: " << cases << " random profiles (L 1.." << kMaxLayers << ", H 1.."
            << kMaxPeriod << "); " << single_enumerated << " single-sync, "
            << contiguous_enumerated << " contiguous and " << multi_enumerated
            << " multi-sync assignments (" << multisync_cases << " profiles) timed; "
            << noncontiguous_better << " profiles where a non-contiguous plan beats dp; "
            << dreamddp_worse << " where dreamddp is worse than dp; SPEC bound tight on "
            << bound_tight << ", suffix bound tight on " << suffix_tight << "; search optimal on "
            << search_optimal << " (" << (100.0 * search_optimal / cases) << "%); exact proved every optimum ("
            << exact_nodes << " nodes from plsgd-even's plans, shorter than it on " << exact_improved << ")\n";
  // Search finds the optimum in most cases.
  REQUIRE(search_optimal * 10 >= cases * 9);
  REQUIRE(cases == kMaxLayers * kMaxPeriod * 2 * kSeedsPerShape);
}
