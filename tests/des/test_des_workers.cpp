// Who the DES simulates (docs/des.md 5): one representative for identical workers, every worker
// otherwise; jitter is reproducible from its seed, and sigma 0 is no jitter.
#include "des_support.hpp"

#include "simulator/des/sync_program.hpp"

namespace syncplan {
namespace {

using des_test::backprop_layers;

Json base_cluster() { return des_test::cluster_document(8, 4, 80, 1, 8, 10, "hierarchical"); }

DesResult run(const Json& cluster_document, int iterations = 4) {
  // Backprop order: 4 layers; F and U known; wfbp every iteration; measured times.
  const DesLayers layers = backprop_layers({0.25, 0.5, 0.25, 1}, {0.5, 0.25, 0.75, 0.25}, 0.5, 0.125);
  Assignment assignment;
  assignment.iterations = {{0, 1, 2, 3}};
  DesOptions options;
  options.iterations = iterations;
  return run_des(layers, des_test::cluster_of(cluster_document), program_from_assignment(assignment), options);
}

Json with_jitter(const std::string& distribution, double sigma, int seed) {
  Json document = base_cluster();
  document["jitter"] = Json{{"distribution", distribution}, {"sigma", sigma}, {"seed", seed}};
  return document;
}

}  // namespace

TEST_CASE("DES workers: identical workers are simulated by one representative", "[des][workers]") {
  const DesResult result = run(base_cluster());
  REQUIRE(result.workers == 8);
  REQUIRE(result.simulated_workers == 1);
  REQUIRE(result.worker_iteration_s.size() == 1);
  REQUIRE(result.worker_exposed_comm_s.size() == 1);
  // By hand (wfbp, measured): F = 0.5; gradients ready at 0.75, 1.25, 1.5, 2.5 (from iteration
  // start); syncs 0.75 -> 1.25, 1.25 -> 1.5, 1.5 -> 2.25, 2.5 -> 2.75; update 2.75 -> 2.875.
  // 4 iterations: 4 * 2.875 = 11.5.
  REQUIRE(result.total_s == des_test::near(11.5));
}

TEST_CASE("DES workers: stragglers or jitter simulate every worker", "[des][workers]") {
  SECTION("jitter") {
    const DesResult result = run(with_jitter("lognormal", 0.1, 1));
    REQUIRE(result.simulated_workers == 8);
    REQUIRE(result.worker_iteration_s.size() == 8);
    REQUIRE(result.worker_exposed_comm_s.size() == 8);
    REQUIRE(result.worker_overlap_s.size() == 8);
  }
  SECTION("one straggler") {
    Json document = base_cluster();
    document["compute_slowdown"] = Json{{"5", 1.5}};
    const DesResult result = run(document);
    REQUIRE(result.simulated_workers == 8);
    // Every worker waits for the straggler: all iterations as slow as the 1.5x worker's.
    // By hand for worker 5 (all times x1.5): F 0.75, ready 1.125, 1.875, 2.25, 3.75 from start;
    // syncs 1.125 -> 1.625, 1.875 -> 2.125, 2.25 -> 3.0, 3.75 -> 4.0; update 4.0 -> 4.1875.
    REQUIRE(result.iteration_s.front() == des_test::near(4.1875));
  }
}

TEST_CASE("DES workers: the same seed gives the same run, another seed another run", "[des][workers]") {
  for (const char* distribution : {"lognormal", "normal"}) {
    INFO(distribution);
    const DesResult a = run(with_jitter(distribution, 0.2, 42));
    const DesResult b = run(with_jitter(distribution, 0.2, 42));
    REQUIRE(a.total_s == b.total_s);
    REQUIRE(a.worker_iteration_s == b.worker_iteration_s);
    REQUIRE(a.worker_exposed_comm_s == b.worker_exposed_comm_s);
    REQUIRE(a.events == b.events);
    const DesResult c = run(with_jitter(distribution, 0.2, 43));
    REQUIRE(c.total_s != a.total_s);
    REQUIRE(c.worker_iteration_s != a.worker_iteration_s);
    // Workers of one run draw different factors: their iteration times are not all equal.
    bool differ = false;
    for (const auto& worker : a.worker_iteration_s) differ = differ || worker != a.worker_iteration_s.front();
    REQUIRE(differ);
    // Jitter only stretches or shrinks compute; the run is still finite and positive.
    REQUIRE(a.total_s > 0);
    REQUIRE(std::isfinite(a.total_s));
  }
}

TEST_CASE("DES workers: jitter with sigma 0 equals no jitter", "[des][workers]") {
  const DesResult none = run(base_cluster());
  for (const char* distribution : {"lognormal", "normal"}) {
    INFO(distribution);
    const DesResult zero = run(with_jitter(distribution, 0.0, 3));
    REQUIRE(zero.simulated_workers == 1);
    REQUIRE(zero.total_s == none.total_s);
    REQUIRE(zero.iteration_s == none.iteration_s);
    REQUIRE(zero.worker_exposed_comm_s == none.worker_exposed_comm_s);
  }
}

TEST_CASE("DES workers: lognormal jitter keeps the mean compute time", "[des][workers]") {
  // E[exp(sigma z - sigma^2 / 2)] = 1 (docs/cluster.md): with no syncs (flsgd with a period
  // longer than the run) an iteration is pure compute, F + B_L + U = 0.5 + 2 + 0.125 = 2.625,
  // a sum of 6 jittered operations (times 0.5, 0.25, 0.5, 0.25, 1, 0.125). sigma = 0.3: the
  // factor's standard deviation is sqrt(exp(0.09) - 1) ~ 0.31, an iteration's
  // 0.31 * sqrt(0.25 + 0.0625 + 0.25 + 0.0625 + 1 + 0.015625) ~ 0.40 s, so the mean of
  // 8 workers x 500 iterations has a standard error ~ 0.40 / sqrt(4000) ~ 0.0063 s (0.24%).
  // Allow 1.5% (~6 standard errors); forgetting the -sigma^2/2 would add exp(0.045) - 1 = 4.6%.
  const DesLayers layers = backprop_layers({0.25, 0.5, 0.25, 1}, {0.5, 0.25, 0.75, 0.25}, 0.5, 0.125);
  DesOptions options;
  options.iterations = 500;
  const DesResult result =
      run_des(layers, des_test::cluster_of(with_jitter("lognormal", 0.3, 9)), flsgd_program(4, 1000), options);
  double sum = 0;
  int count = 0;
  for (const auto& worker : result.worker_iteration_s)
    for (const double seconds : worker) {
      sum += seconds;
      ++count;
    }
  REQUIRE(count == 4000);
  REQUIRE(sum / count == Approx(2.625).epsilon(0.015));
}

}  // namespace syncplan
