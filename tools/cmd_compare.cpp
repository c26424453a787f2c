// `syncplan compare`: parse the options, run the comparison (runtime/compare.hpp), print its
// tables and write --json.
#include "core/errors.hpp"
#include "core/json_io.hpp"
#include "core/report.hpp"
#include "runtime/compare.hpp"
#include "tools/cli_common.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

namespace syncplan::cli {

namespace {

struct CompareCliOptions {
  std::vector<std::string> files;  // PREDICTED MEASURED [PREDICTED MEASURED ...]
  int skip = CompareOptions{}.skip;
  std::string json_path;
};

// Two decimals; rounding noise (a MAPE of 6.6e-15% between two ways to the same times) reads 0.00%.
std::string percent_text(double percent) { return format_percent(percent / 100.0); }

// measured - predicted (s), with the rounding of two ways to one time (-5.2e-18 s for 0.02 - 0.02,
// within 1e-12 of the times) read as 0.
std::string difference_text(double measured_s, double predicted_s) {
  const double difference = measured_s - predicted_s;
  return seconds_text(std::fabs(difference) <= 1e-12 * std::max(std::fabs(measured_s), std::fabs(predicted_s))
                          ? 0.0 : difference);
}

// "embed", or "embed .. head (3 layers)" as the trace names a bucket.
std::string layers_text(const std::vector<std::string>& layers) {
  if (layers.size() == 1) return layers.front();
  return layers.front() + " .. " + layers.back() + " (" + std::to_string(layers.size()) + " layers)";
}

// At most this many rows of a long table: its first and last halves.
constexpr std::size_t kShownRows = 20;

template <class Row, class Cells>
void print_rows(const std::vector<std::string>& header, const std::vector<Row>& rows, Cells cells) {
  std::vector<std::vector<std::string>> table = {header};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows.size() > kShownRows && i == kShownRows / 2) {
      table.push_back({"...", std::to_string(rows.size() - kShownRows) + " more"});
      i = rows.size() - kShownRows / 2;
    }
    table.push_back(cells(rows[i]));
  }
  print_table(std::cout, table);
}

void print_pair(const PairComparison& pair, std::size_t index, int skip) {
  std::cout << "run " << index + 1 << ": predicted " << pair.predicted_path << " (" << to_string(pair.predicted_kind);
  if (pair.predicted_period) std::cout << ", H = " << *pair.predicted_period << " repeated";
  std::cout << ")\n       measured " << pair.measured_path << " (" << to_string(pair.measured_kind) << ", "
            << pair.measured_ranks << (pair.measured_ranks == 1 ? " rank" : " ranks")
            << "; per iteration the slowest rank's time)\n";
  print_rows({"iteration", "predicted_s", "measured_s", "error_s", "error"}, pair.iterations,
             [](const IterationComparison& row) {
               return std::vector<std::string>{std::to_string(row.iteration), seconds_text(row.predicted_s),
                                               seconds_text(row.measured_s), difference_text(row.measured_s, row.predicted_s),
                                               percent_text(row.error_percent()) + (row.skipped ? " (skipped)" : "")};
             });
  std::cout << "MAPE " << percent_text(pair.mape_percent) << " over " << pair.compared << " iterations (first "
            << skip << " skipped); mean predicted " << seconds_text(pair.mean_predicted_s) << " s, measured "
            << seconds_text(pair.mean_measured_s) << " s\n";
  // The distribution of the compared iterations, each statistic against the run's own noise in it.
  std::vector<std::vector<std::string>> table = {
      {"statistic", "predicted_s", "measured_s", "error", "noise_floor", "within_noise"}};
  for (const auto& [name, row] : {std::pair<const char*, const StatisticComparison&>{"mean", pair.mean},
                                  {"median", pair.median},
                                  {"p90", pair.p90}})
    table.push_back({name, seconds_text(row.predicted_s), seconds_text(row.measured_s),
                     percent_text(row.error_percent()), percent_text(row.noise_floor_percent),
                     row.within_noise() ? "yes" : "no"});
  print_table(std::cout, table);
  std::cout << "noise floor (the run against itself): its own median predicts its iterations with a MAPE of "
            << percent_text(pair.noise_floor.median_mape_percent) << ", p90/median "
            << format_short(pair.noise_floor.p90_over_median, 3) << "; the MAPE "
            << percent_text(pair.mape_percent) << (pair.mape_within_noise() ? " is within it" : " is above it")
            << "; statistics within their noise floor (2 bootstrap standard errors) marked yes\n";
  if (!pair.positions.empty()) {
    // A plan's positions sync different layers: which of them the model misses (docs/compare.md 4.1).
    std::cout << "by position in the period (H = " << pair.period << "; h = iteration mod H, the compared iterations' means):\n";
    std::vector<std::vector<std::string>> rows = {{"h", "iterations", "predicted_s", "measured_s", "error"}};
    for (const PositionComparison& row : pair.positions)
      rows.push_back({std::to_string(row.position), std::to_string(row.iterations), seconds_text(row.predicted_s),
                      seconds_text(row.measured_s), percent_text(row.error_percent())});
    print_table(std::cout, rows);
  }
  if (!pair.allreduces) return;
  const AllreduceSummary& allreduces = *pair.allreduces;
  std::cout << "all-reduces (times from the iteration's start, s):\n";
  print_rows({"iteration", "layers", "predicted_start", "measured_start", "start_error", "predicted_end", "measured_end",
              "end_error"},
             allreduces.matched, [](const AllreduceComparison& row) {
               return std::vector<std::string>{std::to_string(row.iteration), layers_text(row.layers),
                                               seconds_text(row.predicted_start_s), seconds_text(row.measured_start_s),
                                               difference_text(row.measured_start_s, row.predicted_start_s), seconds_text(row.predicted_end_s),
                                               seconds_text(row.measured_end_s), difference_text(row.measured_end_s, row.predicted_end_s)};
             });
  std::cout << allreduces.matched.size() << " matched, " << allreduces.predicted_only << " only predicted, "
            << allreduces.measured_only << " only measured; mean |start error| "
            << seconds_text(allreduces.mean_abs_start_error_s) << " s, mean |end error| "
            << seconds_text(allreduces.mean_abs_end_error_s) << " s\n";
}

// "run 2 < run 1 = run 3": runs in `order` by their `means` (s), "=" where they tie.
std::string order_text(const std::vector<int>& order, const std::vector<double>& means) {
  std::string text;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i > 0) text += means_tie(means[order[i - 1]], means[order[i]]) ? " = " : " < ";
    text += "run " + std::to_string(order[i] + 1);
  }
  return text;
}

int run_compare(const CompareCliOptions& options) {
  if (options.files.size() % 2 != 0)
    throw InputError("compare: give PREDICTED MEASURED pairs; got " + std::to_string(options.files.size()) +
                     (options.files.size() == 1 ? " file (it has no partner)" : " files (the last one has no partner)"));
  std::vector<NamedPath> inputs;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i < options.files.size(); i += 2) {
    inputs.push_back({"PREDICTED", options.files[i]});
    inputs.push_back({"MEASURED", options.files[i + 1]});
    pairs.emplace_back(options.files[i], options.files[i + 1]);
  }
  check_output_paths({{"--json", options.json_path}}, inputs);
  CompareOptions compare;
  compare.skip = options.skip;
  const CompareReport report = with_flags({{"skip", "--skip"}}, [&] { return compare_files(pairs, compare); });
  for (std::size_t i = 0; i < report.pairs.size(); ++i) {
    if (i > 0) std::cout << '\n';
    print_pair(report.pairs[i], i, report.skip);
  }
  if (report.ranking) {
    const RankingComparison& ranking = *report.ranking;
    std::vector<double> predicted, measured;
    for (const PairComparison& pair : report.pairs) {
      predicted.push_back(pair.mean_predicted_s);
      measured.push_back(pair.mean_measured_s);
    }
    std::cout << "\nranking by mean iteration time: predicted " << order_text(ranking.predicted_order, predicted)
              << "; measured " << order_text(ranking.measured_order, measured) << "; " << ranking.concordant_pairs << " of "
              << ranking.run_pairs << " pairs of runs ordered alike: "
              << (ranking.same() ? "the prediction ranks the runs as measured"
                                 : "the prediction does not rank the runs as measured")
              << '\n';
  }
  if (!options.json_path.empty()) {
    OutputFiles outputs;
    outputs.add_json(options.json_path, compare_to_json(report), "--json");
    outputs.commit();
    std::cout << "comparison written to " << options.json_path << '\n';
  }
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<CompareCliOptions>();
  CLI::App* compare = app.add_subcommand(
      "compare", "Compare predicted with measured iteration times (s): per iteration the error, the mean absolute "
                 "percentage error (MAPE), the errors (%) of the mean, median and p90 iteration with the run's own "
                 "noise floor (2 bootstrap standard errors; the MAPE of the run's median), per all-reduce the start "
                 "and end error (traces on both sides), and with several pairs whether the prediction ranks the "
                 "runs as measured (docs/compare.md)");
  compare->add_option("files", options->files,
                      "PREDICTED MEASURED [PREDICTED MEASURED ...]: PREDICTED a `simulate -o` result or `simulate "
                      "--trace` trace (a period-model one repeats its H iterations), MEASURED a `run --trace` trace "
                      "or `run --log` log")
      ->required();
  compare->add_option("--skip", options->skip,
                      "measured iterations left out of the MAPE and the all-reduce errors at the start of each run "
                      "(warm-up; default: 1)");
  compare->add_option("--json", options->json_path, "write the comparison as JSON (syncplan.compare/v1, docs/formats.md)");
  compare->callback([&action, options] { action = [options] { return run_compare(*options); }; });
}

}  // namespace syncplan::cli
