// The syncplan.result/v1 writers (core/result.hpp).
#include "core/result.hpp"

namespace syncplan {

namespace {
// "plan": path, or "strategy": name.
void add_subject_target(Json& document, const ResultSubject& subject) {
  if (!subject.plan.empty()) document["plan"] = subject.plan;
  else document["strategy"] = subject.strategy;
}
Json model_json(const ResultSubject& subject) { return subject.model ? Json(*subject.model) : Json(nullptr); }
}  // namespace

Json result_to_json(const PeriodModelResult& result) {
  Json document;
  document["format"] = kResultFormat;
  document["engine"] = kPeriodModelEngine;
  document["model"] = model_json(result.subject);
  document["profile"] = result.subject.profile;
  add_subject_target(document, result.subject);
  document["period"] = result.period;
  document["period_s"] = result.period_s;
  document["mean_iteration_s"] = result.period_s / result.period;
  document["wait_s"] = result.wait_s;
  document["iteration_s"] = result.iteration_s;
  document["iteration_wait_s"] = result.iteration_wait_s;
  document["lower_bound_period_s"] = result.lower_bound_period_s;
  return document;
}

Json result_to_json(const DesRunResult& result) {
  Json document;
  document["format"] = kResultFormat;
  document["engine"] = kDesEngine;
  document["model"] = model_json(result.subject);
  document["profile"] = result.subject.profile;
  document["cluster"] = result.cluster;
  add_subject_target(document, result.subject);
  document["period"] = result.period;
  document["iterations"] = result.iterations;
  document["sync_time"] = result.sync_time;
  if (result.link) document["link"] = *result.link;
  document["workers"] = result.workers;
  document["simulated_workers"] = result.simulated_workers;
  document["period_s"] = result.period_s();
  document["total_s"] = result.total_s;
  document["mean_iteration_s"] = result.total_s / result.iterations;
  if (result.median_iteration_s) document["median_iteration_s"] = *result.median_iteration_s;
  if (result.p90_iteration_s) document["p90_iteration_s"] = *result.p90_iteration_s;
  document["iteration_s"] = result.iteration_s;
  document["worker_iteration_s"] = result.worker_iteration_s;
  document["exposed_comm_s"] = result.exposed_comm_s;
  document["worker_exposed_comm_s"] = result.worker_exposed_comm_s;
  document["comm_busy_s"] = result.comm_busy_s;
  document["overlap_fraction"] = result.overlap_fraction;
  Json bytes = Json::array();  // an array: an object's key lookups would make this quadratic
  for (const auto& [link, carried] : result.link_bytes) bytes.push_back(Json{{"link", link}, {"bytes", carried}});
  document["link_bytes"] = std::move(bytes);
  return document;
}

}  // namespace syncplan
