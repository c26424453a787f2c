// Checks made before any work starts: the DES's memory estimate and its refusal, the input the
// DES names when a time overflows, the GPU catalog's name prefixes, and torch traces' timestamps.
#include "core/errors.hpp"
#include "planner/simulate_job.hpp"
#include "profiler/import_torch_trace.hpp"
#include "profiler/roofline.hpp"
#include "simulator/des/engine.hpp"
#include "simulator/des/sync_program.hpp"

#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

using namespace syncplan;
using Catch::Contains;
using test::error_of;

namespace {

// Two layers of 1 s backward and 1 s measured all-reduce each.
DesLayers two_layers() {
  DesLayers layers;
  layers.names = {"head", "embed"};
  layers.forward_s = {0, 0};
  layers.backward_s = {1, 1};
  layers.update_s = {0, 0};
  layers.sync_s = {1, 1};
  layers.param_bytes = {4, 4};
  layers.synced = {true, true};
  layers.carrier = {0, 1};
  return layers;
}

Cluster cluster_of(int workers, bool straggler) {
  Cluster cluster;
  cluster.workers = workers;
  cluster.workers_per_node = 1;
  cluster.intra_node = cluster.inter_node = LinkSpec{10, 10};
  if (straggler) {
    cluster.compute_slowdown.assign(workers, 1.0);
    cluster.compute_slowdown.back() = 2;
  }
  return cluster;
}

GpuCatalog catalog_of(std::initializer_list<const char*> names) {
  GpuCatalog catalog;
  catalog.origin = "gpus.json";
  for (const char* name : names) catalog.gpus.push_back(GpuSpec{name, "datasheet", 1e12, 1e12, 1e12});
  return catalog;
}

}  // namespace

TEST_CASE("DES memory: the estimate grows with simulated workers and iterations, and bounds what is kept") {
  const DesLayers layers = two_layers();
  const SyncProgram program = all_layers_program(layers.size(), 1, IssuePoint::kGradientReady, true);
  DesOptions options;
  options.iterations = 1000;
  const Cluster identical = cluster_of(64, false);
  const Cluster stragglers = cluster_of(64, true);
  const Topology topology(stragglers);
  const AllreduceModel model(stragglers, topology);
  const double one = des_memory_bytes(layers, identical, model, program, options);
  const double all = des_memory_bytes(layers, stragglers, model, program, options);
  // Every simulated worker keeps, per iteration, its iteration time (8 bytes) and two compute
  // intervals (2 x 16): at least 40 bytes per worker and iteration, here 64 x 1000 x 40 = 2.56 MB.
  CHECK(all >= 64 * 1000 * 40.0);
  // Identical workers are one representative: 63 workers' 40 bytes per iteration fewer.
  CHECK(all - one >= 63 * 1000 * 40.0);
  // Everything but the workers' own state grows linearly with the iterations: 1000 more iterations
  // add the same bytes each time.
  options.iterations = 2000;
  const double two_thousand = des_memory_bytes(layers, stragglers, model, program, options);
  options.iterations = 3000;
  const double three_thousand = des_memory_bytes(layers, stragglers, model, program, options);
  CHECK(three_thousand - two_thousand == Approx(two_thousand - all));
  CHECK(two_thousand - all >= 64 * 1000 * 40.0);
  // A trace keeps per traced worker and iteration 2 layers x 2 compute events + 2 all-reduces, about
  // 1.6 kB each as JSON (measured, engine.cpp): at least 6 KiB per iteration and traced worker.
  options.iterations = 1000;
  options.trace_workers = 4;
  CHECK(des_memory_bytes(layers, stragglers, model, program, options) >= all + 4 * 1000 * 6 * 1024.0);
  // Written as a result document (simulate -o), each directed link's JSON object and each worker's
  // entries count too (2^24 workers passed the estimate and then ran out of
  // memory writing -o). 64 workers on 64 nodes: 2 x 64 + 2 x 64 = 256 links, so at least
  // 256 x 300 + 64 x 300 bytes more (the constants are 400 and 550, measured in engine.cpp).
  options.trace_workers = 0;
  options.result_document = true;
  const double written = des_memory_bytes(layers, stragglers, model, program, options);
  CHECK(written - all >= 256 * 300.0 + 64 * 300.0);
  // Without link_bytes the document has no links: only the per-worker part remains.
  options.link_bytes = false;
  const double no_links_written = des_memory_bytes(layers, stragglers, model, program, options);
  options.result_document = false;
  const double no_links = des_memory_bytes(layers, stragglers, model, program, options);
  CHECK(no_links_written - no_links >= 64 * 300.0);
  CHECK(no_links_written - no_links < 256 * 300.0);
}

TEST_CASE("DES memory: a run whose estimate exceeds the limit is refused before it starts, with both amounts") {
  const DesLayers layers = two_layers();
  const SyncProgram program = all_layers_program(layers.size(), 1, IssuePoint::kGradientReady, true);
  const Cluster cluster = cluster_of(16, true);
  const Topology topology(cluster);
  const AllreduceModel model(cluster, topology);
  DesOptions options;
  options.iterations = 100;
  const double needed = des_memory_bytes(layers, cluster, model, program, options);
  options.memory_limit_bytes = needed / 2;
  const std::string message = error_of([&] { run_des(layers, cluster, topology, model, program, options); });
  CHECK_THAT(message, Contains("needs about") && Contains("GiB") && Contains("16 simulated worker(s) x 100 iterations") &&
                          Contains("available"));
  // At the estimate itself the run goes ahead: 2 layers of 1 s backward, the all-reduce of the
  // output-most layer (1 s) hides behind the second's backward, the second's ends at 3 s, and the
  // straggler (factor 2) ends its backward at 4 s: its iteration is 4 s + 1 s of the last sync = 5 s.
  options.memory_limit_bytes = needed;
  const DesResult result = run_des(layers, cluster, topology, model, program, options);
  REQUIRE(result.iteration_s.size() == 100);
  CHECK(result.iteration_s[0] == Approx(5));
}

TEST_CASE("DES: a profile whose times overflow is named, not the cluster") {
  Profile profile;
  profile.model = "huge";
  profile.source = "estimated:hand";
  for (const char* name : {"a", "b"}) {
    LayerProfile layer;
    layer.name = name;
    layer.backward_s = 1e308;  // finite alone; two of them sum to infinity
    layer.sync_s = 0;
    layer.param_bytes = 4;
    profile.layers.push_back(layer);
  }
  SyncTimeInputs inputs;
  inputs.cluster = cluster_of(2, false);
  inputs.cluster_origin = "cluster.json";
  inputs.mode = SyncTimeMode::kMeasured;
  SimulateRequest request;
  request.sync = choose_sync_times(profile, "huge-profile.json", inputs);
  request.origin = "huge-profile.json";
  request.strategy = "ssgd";
  request.period = 1;
  const std::string message = error_of([&] { simulate_des(request); });
  CHECK_THAT(message, Contains("huge-profile.json: field 'layers'") && Contains("more than a double can hold"));
  CHECK_THAT(message, !Contains("cluster.json") && !Contains("simulator's layers"));
}

TEST_CASE("GPU catalog: exact names, unique case-insensitive prefixes, ambiguous and unknown names") {
  const GpuCatalog catalog = catalog_of({"H200-SXM", "H100-SXM", "A100-SXM-80GB", "L40S", "L40"});
  CHECK(catalog.find("H100-SXM").name == "H100-SXM");
  CHECK(catalog.find("h100").name == "H100-SXM");
  CHECK(catalog.find("a100-sxm").name == "A100-SXM-80GB");
  // "l40" is one name exactly and a prefix of another: the exact name wins.
  CHECK(catalog.find("l40").name == "L40");
  const std::string ambiguous = error_of([&] { catalog.find("h"); });
  CHECK_THAT(ambiguous, Contains("gpu 'h'") && Contains("ambiguous") && Contains("H200-SXM, H100-SXM"));
  const std::string unknown = error_of([&] { catalog.find("B200"); });
  CHECK_THAT(unknown, Contains("gpu 'B200'") && Contains("not in gpus.json") && Contains("L40S"));
  CHECK_THROWS_AS(catalog.find(""), InputError);
}

TEST_CASE("torch-trace: a negative or far-future timestamp is no clock reading") {
  for (const char* ts : {"-5", "1e300"}) {
    const std::string text = std::string(R"([{"name": "syncplan.forward:a", "ph": "X", "ts": )") + ts +
                             R"(, "dur": 10, "tid": 1, "pid": 1}])";
    const Json trace = parse_json_text(text, "trace.json");
    const std::string message = error_of([&] { torch_trace_to_profile(trace, "trace.json", {}); });
    CHECK_THAT(message, Contains("trace.json") && Contains("field 'ts'") && Contains("not a clock reading"));
  }
  // Epoch microseconds, as PyTorch's profiler writes them (about 1.7e15 in 2024), are fine: the
  // message for this one-event trace is about the missing backward, not the timestamp.
  const Json epoch = parse_json_text(
      R"([{"name": "syncplan.forward:a", "ph": "X", "ts": 1712345678901234, "dur": 10, "tid": 1, "pid": 1}])", "t.json");
  CHECK_THAT(error_of([&] { torch_trace_to_profile(epoch, "t.json", {}); }), !Contains("field 'ts'"));
}

TEST_CASE("simulate requests: one validator checks every range, naming the field", "[unit]") {
  // The limits (core/limits.hpp): iterations 1..100,000, comm streams 1..64, bucket cap up to
  // 2^50 bytes (1 PiB), period 1..kMaxPeriod; trace workers up to the cluster's.
  SimulateRequest request;
  request.strategy = "wfbp";
  request.period = 1;
  validate_simulate_request(request);  // the defaults pass
  const auto fails_with = [&](const std::string& expected) {
    const std::string message = error_of([&] { validate_simulate_request(request); });
    CHECK(message == expected);
  };
  request.period = 0;
  fails_with("period: must be >= 1, got 0");
  request.period = kMaxPeriod + 1;
  fails_with("period: at most " + std::to_string(kMaxPeriod) + ", got " + std::to_string(kMaxPeriod + 1));
  request.strategy.clear();  // a plan still to be read: its own period counts
  validate_simulate_request(request);
  request.strategy = "wfbp";
  request.period = kMaxPeriod;
  request.iterations = 0;
  fails_with("iterations: must be in 1..100000, got 0");
  request.iterations = 100'001;
  fails_with("iterations: must be in 1..100000, got 100001");
  request.iterations = 4'294'967'297;  // past int: reported as given, not narrowed
  fails_with("iterations: must be in 1..100000, got 4294967297");
  request.iterations = 100'000;
  validate_simulate_request(request);
  request.comm_streams = 0;
  fails_with("comm_streams: must be in 1..64, got 0");
  request.comm_streams = 65;
  fails_with("comm_streams: must be in 1..64, got 65");
  request.comm_streams = 64;
  request.bucket_cap_bytes = 0;
  fails_with("bucket_cap_bytes: must be > 0 and at most 1 PiB, got 0 MiB");
  request.bucket_cap_bytes = std::nan("");
  fails_with("bucket_cap_bytes: must be > 0 and at most 1 PiB, got nan MiB");
  request.bucket_cap_bytes = 2 * 1125899906842624.0;  // 2 PiB = 2^31 MiB
  fails_with("bucket_cap_bytes: must be > 0 and at most 1 PiB, got 2.147483648e+09 MiB");  // format_shortest
  request.bucket_cap_bytes = 1125899906842624.0;
  request.trace_workers = -1;
  fails_with("trace_workers: must be >= 0 (0: no trace), got -1");
  // With a cluster the trace may name at most its workers.
  request.sync.cluster = cluster_of(2, false);
  request.sync.cluster_origin = "cluster.json";
  request.trace_workers = 3;
  fails_with("trace_workers: 3 is more than the 2 workers of cluster.json");
  request.trace_workers = 2;
  validate_simulate_request(request);
  // Both engines' jobs run it first.
  request.period = 0;
  CHECK(error_of([&] { simulate_des(request); }) == "period: must be >= 1, got 0");
  CHECK(error_of([&] { simulate_period_model(request); }) == "period: must be >= 1, got 0");
}
