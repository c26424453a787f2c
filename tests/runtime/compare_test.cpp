// runtime/compare: the timelines read from hand-made results, logs and traces
// (tests/runtime/data/compare/, README there), and the errors, MAPE, all-reduce errors and ranking
// derived by hand below.
#include "core/errors.hpp"
#include "core/field_error.hpp"
#include "runtime/compare.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace syncplan {

namespace {
std::string data(const std::string& name) {
  std::string path = SYNCPLAN_COMPARE_DATA;  // appended, not `+`: GCC 12 warns falsely on that (bug 105329)
  path += '/';
  path += name;
  return path;
}
Timeline timeline(const std::string& name) { return read_timeline(data(name)); }
CompareOptions skip(int n) {
  CompareOptions options;
  options.skip = n;
  return options;
}
// The message of the InputError `job` throws ("" when it throws none).
template <class Job>
std::string error_of(Job&& job) {
  try {
    job();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
using Catch::Matchers::Contains;
}  // namespace

TEST_CASE("compare: a log's iteration ends are the latest of the ranks' running sums", "[compare]") {
  // log_2ranks.jsonl: rank 0 logs 50, 20, 10, 20 ms (ends 50, 70, 80, 100), rank 1 40, 35, 10, 10
  // ms (ends 40, 75, 85, 95). Latest ends 50, 75, 85, 100: iterations of 50, 25, 10, 15 ms (the
  // largest per-rank times, 50, 35, 10, 20, would count rank 1's catching up twice).
  const Timeline log = timeline("log_2ranks.jsonl");
  CHECK(log.kind == TimelineKind::kRunLog);
  CHECK(log.ranks == 2);
  CHECK(log.first_iteration == 0);
  REQUIRE(log.iteration_s.size() == 4);
  CHECK(log.iteration_s[0] == Approx(0.050));
  CHECK(log.iteration_s[1] == Approx(0.025));
  CHECK(log.iteration_s[2] == Approx(0.010));
  CHECK(log.iteration_s[3] == Approx(0.015));
  CHECK_FALSE(log.allreduces);
  // The loss per iteration, the mean of both ranks' (each logs 5.5, 5.4, 5.3, then its last line).
  REQUIRE(log.loss);
  REQUIRE(log.loss->size() == 4);
  CHECK((*log.loss)[0] == Approx(5.5));
  CHECK((*log.loss)[2] == Approx(5.3));
  // Traces and results carry no loss.
  CHECK_FALSE(timeline("pm_result_h2.json").loss);
}

TEST_CASE("compare: a period-model result repeats its H iterations over the run", "[compare]") {
  // pm_result_h2.json predicts 10, 20 ms: iterations 0..3 of the run are predicted 10, 20, 10, 20 ms.
  // Measured 50, 25, 10, 15 ms: errors (m - p) / m = 80%, 20%, 0%, -33.333%.
  // --skip 1: MAPE (20 + 0 + 33.333) / 3 = 17.778%; means predicted (20 + 10 + 20) / 3 = 16.667 ms,
  // measured (25 + 10 + 15) / 3 = 16.667 ms. --skip 0: (80 + 20 + 0 + 33.333) / 4 = 33.333%.
  const Timeline predicted = timeline("pm_result_h2.json");
  CHECK(predicted.kind == TimelineKind::kPeriodModelResult);
  CHECK(predicted.repeats);
  const PairComparison pair = compare_timelines(predicted, timeline("log_2ranks.jsonl"), skip(1));
  REQUIRE(pair.iterations.size() == 4);
  CHECK(pair.iterations[0].skipped);
  CHECK_FALSE(pair.iterations[1].skipped);
  CHECK(pair.iterations[2].predicted_s == Approx(0.010));
  CHECK(pair.iterations[3].predicted_s == Approx(0.020));
  CHECK(pair.iterations[0].error_percent() == Approx(80));
  CHECK(pair.iterations[1].error_percent() == Approx(20));
  CHECK(pair.iterations[2].error_percent() == Approx(0).margin(1e-12));
  CHECK(pair.iterations[3].error_s() == Approx(-0.005));
  CHECK(pair.iterations[3].error_percent() == Approx(-100.0 / 3));
  CHECK(pair.compared == 3);
  CHECK(pair.mape_percent == Approx((20 + 100.0 / 3) / 3));
  CHECK(pair.mean_predicted_s == Approx(0.050 / 3));
  CHECK(pair.mean_measured_s == Approx(0.050 / 3));
  CHECK(pair.predicted_period == 2);
  CHECK(compare_timelines(predicted, timeline("log_2ranks.jsonl"), skip(0)).mape_percent == Approx(100.0 / 3));
}

TEST_CASE("compare: a DES result predicts each iteration of the run", "[compare]") {
  // des_result_4.json: 40, 20, 8, 20 ms against 50, 25, 10, 15 ms: errors 20%, 20%, 20%, -33.333%;
  // --skip 1: MAPE (20 + 20 + 33.333) / 3 = 24.444%.
  const PairComparison pair = compare_timelines(timeline("des_result_4.json"), timeline("log_2ranks.jsonl"), skip(1));
  CHECK(pair.mape_percent == Approx((40 + 100.0 / 3) / 3));
  CHECK(pair.iterations[2].error_s() == Approx(0.002));
  CHECK_FALSE(pair.predicted_period);
}

TEST_CASE("compare: the compared iterations by position in the period", "[compare]") {
  // des_result_4_h2.json: 40, 20, 8, 20 ms with H = 2, against 50, 25, 10, 15 ms. --skip 1 compares
  // iterations 1, 2, 3: position 0 (iteration 2) predicted 8, measured 10 ms: error 2 / 10 = 20%;
  // position 1 (iterations 1 and 3) predicted (20 + 20) / 2 = 20, measured (25 + 15) / 2 = 20 ms: 0%.
  PairComparison pair = compare_timelines(timeline("des_result_4_h2.json"), timeline("log_2ranks.jsonl"), skip(1));
  CHECK(pair.period == 2);
  CHECK_FALSE(pair.predicted_period);  // a DES result does not repeat; its H still groups the iterations
  REQUIRE(pair.positions.size() == 2);
  CHECK(pair.positions[0].position == 0);
  CHECK(pair.positions[0].iterations == 1);
  CHECK(pair.positions[0].predicted_s == Approx(0.008));
  CHECK(pair.positions[0].measured_s == Approx(0.010));
  CHECK(pair.positions[0].error_percent() == Approx(20));
  CHECK(pair.positions[1].iterations == 2);
  CHECK(pair.positions[1].predicted_s == Approx(0.020));
  CHECK(pair.positions[1].measured_s == Approx(0.020));
  // --skip 3 leaves iteration 3 alone: position 0 has no compared iteration and is left out.
  pair = compare_timelines(timeline("des_result_4_h2.json"), timeline("log_2ranks.jsonl"), skip(3));
  REQUIRE(pair.positions.size() == 1);
  CHECK(pair.positions[0].position == 1);
  CHECK(pair.positions[0].measured_s == Approx(0.015));
  // The period model's result (pm_result_h2.json: 10, 20 ms repeated), --skip 0: position 0
  // (iterations 0, 2) predicted 10, measured (50 + 10) / 2 = 30 ms: error 20 / 30 = 66.67%.
  pair = compare_timelines(timeline("pm_result_h2.json"), timeline("log_2ranks.jsonl"), skip(0));
  REQUIRE(pair.positions.size() == 2);
  CHECK(pair.positions[0].measured_s == Approx(0.030));
  CHECK(pair.positions[0].error_percent() == Approx(200.0 / 3));
  // In the document, per position; H = 1 has no positions.
  CompareReport report;
  report.pairs.push_back(pair);
  const Json document = compare_to_json(report);
  CHECK(document.at("pairs").at(0).at("period") == 2);
  CHECK(document.at("pairs").at(0).at("positions").at(0).at("measured_s").get<double>() == Approx(0.030));
  CHECK(compare_timelines(timeline("des_result_4.json"), timeline("log_2ranks.jsonl"), skip(1)).positions.empty());
}

TEST_CASE("compare: a checkpoint between two iterations is neither's time, as in the log", "[compare]") {
  // trace_meas_checkpoint.json: trace_meas.json with iteration 1 moved 5,000 us later and a
  // checkpoint after iteration 0 on each rank (rank 0: 6,600 -> 11,900 us, waiting for rank 1
  // inside it; rank 1: 6,900 -> 11,900). Iteration 0 ends at 6,900 us as before: 6,850 us.
  // Iteration 1 ends at 18,500 us; of [6,900, 18,500] the checkpoints' union [6,600, 11,900]
  // covers 5,000 us: 18,500 - 6,900 - 5,000 = 6,600 us, trace_meas.json's iteration 1. (The
  // trace once charged the checkpoint to the next iteration, 0.314 s against the log's 0.033 s.)
  const Timeline measured = timeline("trace_meas_checkpoint.json");
  REQUIRE(measured.iteration_s.size() == 2);
  CHECK(measured.iteration_s[0] == Approx(0.00685));
  CHECK(measured.iteration_s[1] == Approx(0.0066));
}

TEST_CASE("compare: a trace's iteration time is the latest end minus the previous iteration's", "[compare]") {
  // trace_meas.json, two ranks. Iteration 0: rank 1 starts first (50 us) and ends last (6,900 us):
  // 6,850 us. Iteration 1: rank 0 ends last at 13,500 us: 13,500 - 6,900 = 6,600 us.
  const Timeline measured = timeline("trace_meas.json");
  CHECK(measured.kind == TimelineKind::kMeasuredTrace);
  CHECK(measured.ranks == 2);
  CHECK(measured.period == 2);
  REQUIRE(measured.iteration_s.size() == 2);
  CHECK(measured.iteration_s[0] == Approx(0.00685));
  CHECK(measured.iteration_s[1] == Approx(0.0066));
  // Rank 0's all-reduces, from its iteration starts (100 us, 6,900 us): head 2.3 -> 4.5 ms,
  // embed 4.5 -> 5.5 ms, wpe 5.5 -> 5.6 ms; the bucket of iteration 1 3.1 -> 5.6 ms.
  REQUIRE(measured.allreduces);
  REQUIRE(measured.allreduces->size() == 4);
  CHECK((*measured.allreduces)[0].start_s == Approx(0.0023));
  CHECK((*measured.allreduces)[0].end_s == Approx(0.0045));
  CHECK((*measured.allreduces)[3].iteration == 1);
  CHECK((*measured.allreduces)[3].start_s == Approx(0.0031));
  // trace_pred.json (one worker, no "syncplan" object): 6 ms each.
  const Timeline predicted = timeline("trace_pred.json");
  CHECK(predicted.kind == TimelineKind::kSimulatedTrace);
  CHECK_FALSE(predicted.repeats);
  CHECK(predicted.iteration_s[0] == Approx(0.006));
  CHECK(predicted.iteration_s[1] == Approx(0.006));
  // The same events in Chrome's JSON array format (a bare array) read alike.
  const Timeline array = timeline("trace_pred_array.json");
  CHECK(array.kind == TimelineKind::kSimulatedTrace);
  CHECK(array.iteration_s == predicted.iteration_s);
  CHECK(array.allreduces->size() == predicted.allreduces->size());
}

TEST_CASE("compare: all-reduces matched by iteration and layers, from the iteration's start", "[compare]") {
  // trace_pred.json against trace_meas.json (rank 0's all-reduces):
  //   iteration 0  head    start 2.0 vs 2.3 ms (+0.3), end 4.0 vs 4.5 ms (+0.5)
  //                embed   start 4.0 vs 4.5 ms (+0.5), end 5.0 vs 5.5 ms (+0.5)
  //                wpe     only measured
  //   iteration 1  bucket [head, embed] (measured lists it as [embed, head]: the same set)
  //                        start 3.0 vs 3.1 ms (+0.1), end 5.0 vs 5.6 ms (+0.6)
  // --skip 0: 3 matched, 1 only measured; mean |start error| (0.3 + 0.5 + 0.1) / 3 = 0.3 ms, mean
  // |end error| (0.5 + 0.5 + 0.6) / 3 = 0.5333 ms. Iterations: (6.85 - 6) / 6.85 = 12.409%,
  // (6.6 - 6) / 6.6 = 9.0909%: MAPE 10.750%.
  const Timeline predicted = timeline("trace_pred.json"), measured = timeline("trace_meas.json");
  const PairComparison all = compare_timelines(predicted, measured, skip(0));
  REQUIRE(all.allreduces);
  CHECK(all.allreduces->matched.size() == 3);
  CHECK(all.allreduces->measured_only == 1);
  CHECK(all.allreduces->predicted_only == 0);
  CHECK(all.allreduces->mean_abs_start_error_s == Approx(0.0003));
  CHECK(all.allreduces->mean_abs_end_error_s == Approx(0.0016 / 3));
  CHECK(all.allreduces->matched[2].layers == std::vector<std::string>{"embed", "head"});
  CHECK(all.mape_percent == Approx((0.85 / 6.85 + 0.6 / 6.6) / 2 * 100));
  // --skip 1: iteration 1 alone: the bucket, +0.1 and +0.6 ms; MAPE 9.0909%.
  const PairComparison later = compare_timelines(predicted, measured, skip(1));
  REQUIRE(later.allreduces->matched.size() == 1);
  CHECK(later.allreduces->matched[0].start_error_s() == Approx(0.0001));
  CHECK(later.allreduces->matched[0].end_error_s() == Approx(0.0006));
  CHECK(later.allreduces->measured_only == 0);
  CHECK(later.mape_percent == Approx(0.6 / 6.6 * 100));
}

TEST_CASE("compare: a period-model trace repeats its period, its syncs matched per period position", "[compare]") {
  // pm_trace_h2.json: iterations of 4 and 5 ms; iteration 0 syncs head 2.0 -> 2.5 ms, iteration 1
  // embed 3.0 -> 4.0 ms. Against trace_meas.json (H = 2 there too), --skip 0: errors
  // (6.85 - 4) / 6.85 = 41.606%, (6.6 - 5) / 6.6 = 24.242%. All-reduces: head of iteration 0
  // matches (start 2.3 - 2.0 = +0.3 ms, end 4.5 - 2.5 = +2.0 ms); measured embed and wpe of
  // iteration 0 and the bucket of iteration 1 have no match (3 only measured); predicted embed of
  // iteration 1 has none (1 only predicted).
  const Timeline predicted = timeline("pm_trace_h2.json");
  CHECK(predicted.kind == TimelineKind::kPeriodModelTrace);
  CHECK(predicted.repeats);
  CHECK(predicted.period == 2);
  const PairComparison pair = compare_timelines(predicted, timeline("trace_meas.json"), skip(0));
  CHECK(pair.iterations[0].error_percent() == Approx(2.85 / 6.85 * 100));
  CHECK(pair.iterations[1].error_percent() == Approx(1.6 / 6.6 * 100));
  REQUIRE(pair.allreduces->matched.size() == 1);
  CHECK(pair.allreduces->matched[0].start_error_s() == Approx(0.0003));
  CHECK(pair.allreduces->matched[0].end_error_s() == Approx(0.002));
  CHECK(pair.allreduces->measured_only == 3);
  CHECK(pair.allreduces->predicted_only == 1);
  // --skip 1 leaves iteration 1 alone, where nothing matches: an error naming both files, and the
  // 3 measured all-reduces of iteration 0 (head, embed, wpe) that --skip left out, with the way back.
  const std::string message = error_of([&] { compare_timelines(predicted, timeline("trace_meas.json"), skip(1)); });
  CHECK_THAT(message, Contains("no all-reduce in common") && Contains("pm_trace_h2.json") &&
                          Contains("trace_meas.json") && Contains("1 predicted, 1 measured") &&
                          Contains("; 3 measured all-reduces are in the warm-up iterations --skip leaves out "
                                   "(--skip 0 compares them)"));
}

TEST_CASE("compare: ranking runs by mean iteration time", "[compare]") {
  // Means (predicted, measured), ms: A (16.667, 16.333), B (6, 8.333), C (16, 8.333) (made up).
  // Predicted B < C < A; measured B = C < A (stable: B first). Pairs: A-B alike, A-C alike, B-C
  // not (predicted B < C, measured a tie): 2 of 3.
  const RankingComparison three = rank_runs({{0.016667, 0.016333}, {0.006, 0.008333}, {0.016, 0.008333}});
  CHECK(three.predicted_order == std::vector<int>{1, 2, 0});
  CHECK(three.measured_order == std::vector<int>{1, 2, 0});
  CHECK(three.concordant_pairs == 2);
  CHECK(three.run_pairs == 3);
  CHECK_FALSE(three.same());
  const RankingComparison two = rank_runs({{0.016667, 0.016333}, {0.006, 0.008333}});
  CHECK(two.same());
  // Predictions equal but for rounding (1e-17 apart) tie; so do equal measurements.
  CHECK(rank_runs({{0.017177, 0.01}, {0.017177 + 1e-17, 0.01}}).same());
  CHECK_FALSE(rank_runs({{0.017177, 0.01}, {0.017177 + 1e-17, 0.02}}).same());
  // Through the files: pm_result_h2 vs log_2ranks (A) and pm_result_h1 vs log_fast (B: predicted 6
  // ms every iteration; measured 10, 5, 10 ms after the skipped one, mean 8.333 ms).
  const CompareReport report =
      compare_files({{data("pm_result_h2.json"), data("log_2ranks.jsonl")},
                     {data("pm_result_h1.json"), data("log_fast.jsonl")}}, skip(1));
  REQUIRE(report.ranking);
  CHECK(report.ranking->same());
  CHECK(report.pairs[1].mean_measured_s == Approx(0.025 / 3));
  const Json document = compare_to_json(report);
  CHECK(document["format"] == kCompareFormat);
  CHECK(document["pairs"][1]["mape_percent"].get<double>() ==
        Approx((4.0 / 10 + 1.0 / 5 + 4.0 / 10) / 3 * 100));  // |10-6|/10, |5-6|/5, |10-6|/10
  CHECK(document["ranking"]["measured_order"] == Json::array({1, 0}));
  CHECK(document["pairs"][0]["allreduces"].is_null());
}

TEST_CASE("compare: iteration numbers up to INT_MAX, and text in memory", "[compare]") {
  // Two iterations numbered 2^31 - 2 and 2^31 - 1, 1 ms and then 2 ms: compared with themselves
  // (--skip 0) every error is 0, the all-reduce of the last one included.
  const std::string text =
      R"({"traceEvents": [)"
      R"({"name": "backward a", "cat": "backward", "ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 1000, "args": {"iteration": 2147483646}},)"
      R"({"name": "backward a", "cat": "backward", "ph": "X", "pid": 0, "tid": 0, "ts": 1000, "dur": 1000, "args": {"iteration": 2147483647}},)"
      R"({"name": "all-reduce a", "cat": "allreduce", "ph": "X", "pid": 0, "tid": 1, "ts": 2000, "dur": 1000, "args": {"iteration": 2147483647, "layer": "a"}}]})";
  const Timeline trace = parse_timeline(text, "<edge>");
  CHECK(trace.first_iteration == 2147483646);
  REQUIRE(trace.iteration_s.size() == 2);
  CHECK(trace.iteration_s[1] == Approx(0.002));
  const PairComparison pair = compare_timelines(trace, trace, skip(0));
  CHECK(pair.mape_percent == 0);
  CHECK(pair.allreduces->matched.size() == 1);
  CHECK(pair.allreduces->matched[0].measured_start_s == Approx(0.001));  // 2,000 - 1,000 us
  CHECK(pair.iterations.back().iteration == 2147483647);
  // A time past the limits is refused, not summed to infinity (docs/formats.md "Limits").
  const std::string huge_line =
      R"({"iteration": 0, "rank": 0, "loss": 1, "iteration_s": 1e308, "synced_layers": [], "compute_s": 0, "wait_s": 0})";
  CHECK_THAT(error_of([&] { parse_timeline(huge_line, "<huge>"); }), Contains("'iteration_s'") && Contains("at most"));
}

TEST_CASE("compare: bad inputs name the file and what is wrong", "[compare][errors]") {
  const auto read_error = [](const std::string& name) { return error_of([&] { timeline(name); }); };
  CHECK_THAT(read_error("result_wrong_format.json"), Contains("result_wrong_format.json") && Contains("'format'"));
  CHECK_THAT(read_error("result_unknown_engine.json"), Contains("'engine'") && Contains("ns-3"));
  CHECK_THAT(read_error("result_period_mismatch.json"), Contains("'iteration_s'") && Contains("'period' is 3"));
  CHECK_THAT(read_error("result_unknown_key.json"), Contains("unknown key 'iteration_time'"));
  CHECK_THAT(read_error("not_a_timeline.json"), Contains("not_a_timeline.json") && Contains("neither"));
  // A measured trace's syncplan.period must be a whole number >= 1 when present (absent or null:
  // unknown); 2.5, "5", true, 0 and -1 were ignored, and the run's H went unchecked. (1e3 is the
  // whole number 1000, as 4.0 is 4, below.)
  const auto run_trace = [](const std::string& period) {
    return R"({"traceEvents": [{"name": "update", "ph": "X", "pid": 0, "ts": 0, "dur": 1000, "args": {"iteration": 0}}],)"
           R"( "syncplan": {"source": "measured", "period": )" + period + "}}";
  };
  for (const char* bad : {"0", "-1", "2.5", "1e-3", "\"5\"", "true"})
    CHECK_THAT(error_of([&] { parse_timeline(run_trace(bad), "<run>"); }),
               Contains("<run>: field 'syncplan.period': expected the run's period H, a whole number >= 1, got"));
  CHECK_FALSE(parse_timeline(run_trace("null"), "<run>").period);
  CHECK(parse_timeline(run_trace("3"), "<run>").period == 3);
  // A DES trace states its period in otherData (simulate --cluster --trace), checked the same way.
  const auto des_trace = [](const std::string& period) {
    return R"({"traceEvents": [{"name": "update", "ph": "X", "pid": 0, "ts": 0, "dur": 1000, "args": {"iteration": 0}}],)"
           R"( "otherData": {"period": )" + period + "}}";
  };
  const Timeline des = parse_timeline(des_trace("4"), "<des>");
  CHECK(des.kind == TimelineKind::kSimulatedTrace);
  CHECK(des.period == 4);
  CHECK_THAT(error_of([&] { parse_timeline(des_trace("0.5"), "<des>"); }),
             Contains("<des>: field 'otherData.period': expected the run's period H"));
  CHECK(parse_timeline(des_trace("4.0"), "<des>").period == 4);  // the whole number 4, as a result reads it
  std::string other_array = des_trace("4");
  other_array.replace(other_array.find(R"({"period": 4})"), 13, "[4]");
  CHECK_THAT(error_of([&] { parse_timeline(other_array, "<des>"); }),
             Contains("<des>: field 'otherData': expected an object, got array"));
  // A DES trace as MEASURED (a prediction against another): the mismatch names its own field.
  Timeline four = parse_timeline(des_trace("4"), "four"), two = parse_timeline(des_trace("2"), "two");
  CHECK_THAT(error_of([&] { compare_timelines(four, two, skip(0)); }),
             Contains("two: field 'otherData.period': the run's period H = 2, but four predicts a period of H = 4"));
  // log_2ranks.jsonl's lines as one JSON array: said "traceEvents[0]: field 'ph'" (an array is Chrome's format).
  CHECK_THAT(read_error("log_as_array.json"), Contains("log_as_array.json: a JSON array of run-log lines") &&
                                                  Contains("JSON lines, one object per line"));
  CHECK_THAT(read_error("log_empty.jsonl"), Contains("log_empty.jsonl") && Contains("empty"));
  CHECK_THAT(read_error("log_missing_key.jsonl"), Contains("line 2") && Contains("missing field 'wait_s'"));
  CHECK_THAT(read_error("log_unknown_key.jsonl"), Contains("line 3") && Contains("unknown key 'bucket'"));
  CHECK_THAT(read_error("log_duplicate.jsonl"), Contains("line 5") && Contains("iteration 1 of rank 0 again"));
  CHECK_THAT(read_error("log_rank_missing_iteration.jsonl"), Contains("iteration 2: no line of rank 1"));
  CHECK_THAT(read_error("log_iteration_gap.jsonl"), Contains("no line for iteration 2"));
  CHECK_THAT(read_error("log_truncated_line.jsonl"), Contains("line 2") && Contains("invalid JSON"));
  CHECK_THAT(read_error("log_loss_string.jsonl"), Contains("line 4") && Contains("'loss'"));
  CHECK_THAT(read_error("log_buckets_not_nested.jsonl"), Contains("line 3") && Contains("'buckets'"));
  CHECK_THAT(read_error("trace_no_events.json"), Contains("trace_no_events.json") && Contains("without timed events"));
  CHECK_THAT(read_error("trace_missing_dur.json"), Contains("traceEvents[6]") && Contains("'dur'"));
  CHECK_THAT(read_error("trace_allreduce_without_layers.json"), Contains("all-reduce head") && Contains("'layers'"));
  CHECK_THAT(read_error("trace_iteration_gap.json"), Contains("iteration 1 has no events"));
  CHECK_THAT(read_error("trace_truncated.json"), Contains("trace_truncated.json") && Contains("invalid JSON"));
  // Iteration 1 ends (at 500 us) before iteration 0 (at 1,000 us): the labels are out of order.
  const std::string swapped =
      R"([{"name": "update", "ph": "X", "pid": 0, "ts": 0, "dur": 1000, "args": {"iteration": 0}},)"
      R"({"name": "update", "ph": "X", "pid": 0, "ts": 0, "dur": 500, "args": {"iteration": 1}}])";
  CHECK_THAT(error_of([&] { parse_timeline(swapped, "<swapped>"); }),
             Contains("<swapped>: iteration 1 ends before the previous one"));
  // A layer name holding ESC is refused as in every other reader (it was read, and printed escaped
  // in the tables). JSON text cannot hold a byte that is not UTF-8: the parser refuses it first.
  const std::string escaped =
      R"([{"name": "all-reduce", "cat": "allreduce", "ph": "X", "pid": 0, "ts": 0, "dur": 10,)"
      R"( "args": {"iteration": 0, "layer": "he\u001b[2Jad"}}])";
  CHECK_THAT(error_of([&] { parse_timeline(escaped, "<layer>"); }),
             Contains("<layer>") && Contains("field 'layer'") && Contains("control character U+001B"));

  const Timeline log = timeline("log_2ranks.jsonl");
  CHECK_THAT(error_of([&] { compare_timelines(timeline("des_result_3.json"), log, skip(1)); }),
             Contains("des_result_3.json has iterations 0..2 (3)") && Contains("iterations 0..3 (4)"));
  CHECK_THAT(error_of([&] { compare_timelines(timeline("pm_result_h1.json"), timeline("trace_meas.json"), skip(1)); }),
             Contains("syncplan.period") && Contains("H = 2") && Contains("H = 1"));
  // A DES result (period 1) does not repeat, but says its H: against the trace's H = 2 it is
  // refused the same way (it was compared, grouped by the prediction's H).
  CHECK_THAT(error_of([&] { compare_timelines(timeline("des_result_4.json"), timeline("trace_meas.json"), skip(1)); }),
             Contains("trace_meas.json: field 'syncplan.period': the run's period H = 2, but") &&
                 Contains("des_result_4.json predicts a period of H = 1"));
  CHECK_THAT(error_of([&] { compare_timelines(log, log, skip(1)); }), Contains("not a prediction"));
  CHECK_THAT(error_of([&] { compare_timelines(timeline("des_result_4.json"), timeline("des_result_4.json"), skip(1)); }),
             Contains("not a measurement"));
  CHECK_THAT(error_of([&] { compare_timelines(timeline("pm_result_h2.json"), timeline("log_zero_time.jsonl"), skip(1)); }),
             Contains("iteration 2") && Contains("0 s"));
  try {
    compare_timelines(timeline("pm_result_h2.json"), log, skip(4));
    FAIL("--skip 4 of 4 iterations was accepted");
  } catch (const FieldError& e) {
    CHECK(e.field() == "skip");
    CHECK_THAT(std::string(e.what()), Contains("none of the 4 iterations"));
  }
  CHECK_THROWS_AS(compare_timelines(timeline("pm_result_h2.json"), log, skip(-1)), FieldError);
}

TEST_CASE("distribution: mean, median and p90 errors and the noise floor of a hand-made run", "[compare]") {
  // pm_result_h1_100ms.json predicts 0.1 s per iteration (H = 1); log_spread_5.jsonl measured
  // 0.1, 0.2, 0.1, 0.1, 0.5 s (sorted 0.1, 0.1, 0.1, 0.2, 0.5). With --skip 0:
  //   mean   predicted 0.1, measured 1.0 / 5 = 0.2:                 error (0.2 - 0.1) / 0.2 = 50 %
  //   median predicted 0.1, measured 0.1:                           error 0 %
  //   p90    predicted 0.1, measured at h = 4 x 0.9 = 3.6: 0.2 + 0.6 x 0.3 = 0.38:
  //                                                                 error 0.28 / 0.38 = 73.68 %
  //   MAPE: |m - 0.1| / m = 0, 0.5, 0, 0, 0.8, so 1.3 / 5 = 26 %.
  //   Noise floor: the run's own median 0.1 predicts it with the same 26 % (this prediction is that
  //   median: within the noise); p90 / median = 3.8.
  //   The mean's floor is 2 bootstrap standard errors, about 2 x population sd / sqrt(5) / 0.2:
  //   deviations -0.1, 0, -0.1, -0.1, 0.3, variance 0.12 / 5 = 0.024, sd 0.1549, so
  //   2 x 0.0693 / 0.2 = 69.3 % (the bootstrap's own error a few %): the 50 % error is within it.
  const Timeline predicted = timeline("pm_result_h1_100ms.json");
  const Timeline measured = timeline("log_spread_5.jsonl");
  const PairComparison pair = compare_timelines(predicted, measured, skip(0));
  CHECK(pair.mean.predicted_s == Approx(0.1));
  CHECK(pair.mean.measured_s == Approx(0.2));
  CHECK(pair.mean.error_percent() == Approx(50));
  CHECK(pair.median.measured_s == Approx(0.1));
  CHECK(pair.median.error_percent() == Approx(0).margin(1e-9));
  CHECK(pair.p90.measured_s == Approx(0.38));
  CHECK(pair.p90.error_percent() == Approx(28.0 / 0.38));
  CHECK(pair.mape_percent == Approx(26));
  CHECK(pair.noise_floor.median_mape_percent == Approx(26));
  CHECK(pair.noise_floor.p90_over_median == Approx(3.8));
  CHECK(pair.mape_within_noise());
  CHECK(pair.mean.noise_floor_percent == Approx(69.3).epsilon(0.1));
  CHECK(pair.mean.within_noise());
  CHECK(pair.median.within_noise());
  // The document carries them.
  CompareReport report;
  report.skip = 0;
  report.pairs.push_back(pair);
  const Json document = compare_to_json(report)["pairs"][0];
  CHECK(document["statistics"]["p90"]["measured_s"].get<double>() == Approx(0.38));
  CHECK(document["statistics"]["p90"]["error_percent"].get<double>() == Approx(28.0 / 0.38));
  CHECK(document["statistics"]["mean"]["within_noise"] == true);
  CHECK(document["noise_floor"]["median_mape_percent"].get<double>() == Approx(26));
  CHECK(document["noise_floor"]["p90_over_median"].get<double>() == Approx(3.8));
  CHECK(document["noise_floor"]["mape_within_noise"] == true);

  // --skip 1 leaves 0.2, 0.1, 0.1, 0.5: mean 0.225; median at h = 1.5, 0.1 + 0.5 x 0.1 = 0.15; p90 at
  // h = 2.7, 0.2 + 0.7 x 0.3 = 0.41. The run's median 0.15 predicts it with
  // 100 / 4 x (0.05/0.2 + 0.05/0.1 + 0.05/0.1 + 0.35/0.5) = 48.75 %, the prediction's 0.1 with
  // 100 / 4 x (0.5 + 0 + 0 + 0.8) = 32.5 % (within the noise); the median's error is 0.05 / 0.15.
  const PairComparison skipped = compare_timelines(predicted, measured, skip(1));
  CHECK(skipped.mean.measured_s == Approx(0.225));
  CHECK(skipped.median.measured_s == Approx(0.15));
  CHECK(skipped.p90.measured_s == Approx(0.41));
  CHECK(skipped.noise_floor.median_mape_percent == Approx(48.75));
  CHECK(skipped.mape_percent == Approx(32.5));
  CHECK(skipped.median.error_percent() == Approx(100.0 / 3));
}

TEST_CASE("distribution: a DES result drawn from a spread, its own draws' statistics", "[compare]") {
  // des_result_spread_5.json draws 0.1, 0.3, 0.2, 0.1, 0.4 s (sorted 0.1, 0.1, 0.2, 0.3, 0.4):
  // mean 0.22, median 0.2, p90 at h = 3.6: 0.3 + 0.6 x 0.1 = 0.36 (the result's own
  // median_iteration_s and p90_iteration_s). Against log_spread_5.jsonl (mean 0.2, median 0.1,
  // p90 0.38), --skip 0: errors (0.2 - 0.22) / 0.2 = -10 %, (0.1 - 0.2) / 0.1 = -100 %,
  // (0.38 - 0.36) / 0.38 = 5.26 %. Per iteration |m - p| / m = 0, 0.5, 1, 0, 0.2: MAPE 34 %, above
  // the run's own 26 %.
  const PairComparison pair =
      compare_timelines(timeline("des_result_spread_5.json"), timeline("log_spread_5.jsonl"), skip(0));
  CHECK(pair.mean.predicted_s == Approx(0.22));
  CHECK(pair.median.predicted_s == Approx(0.2));
  CHECK(pair.p90.predicted_s == Approx(0.36));
  CHECK(pair.mean.error_percent() == Approx(-10));
  CHECK(pair.median.error_percent() == Approx(-100));
  CHECK(pair.p90.error_percent() == Approx(2.0 / 0.38));
  CHECK(pair.mape_percent == Approx(34));
  CHECK_FALSE(pair.mape_within_noise());
}

}  // namespace syncplan
