// DreamDDP artifact importers: flat {layer: seconds} time files and schedule files.
#include "profiler/import_dreamddp.hpp"
#include "core/field_error.hpp"

#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/printable.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace syncplan {

namespace {

std::string list_names(const std::vector<std::string>& names);

// One time file: layer names in file order with their seconds. Non-finite values are collected
// first, so that a file with many of them (DreamDDP's LoRA backward files: empty adapters, NaN)
// is named in one message with their count.
// Under kZero the zeroed layers are added to `zeroed` as "PATH: N non-finite times read as 0 ...".
std::vector<std::pair<std::string, double>> read_time_file(const std::string& path, NonfinitePolicy nonfinite,
                                                           std::vector<std::string>& zeroed) {
  const std::vector<std::pair<std::string, Json>> document =
      read_json_object_in_order(path, "a JSON object {layer name: seconds}");
  if (document.empty()) throw InputError(path + ": no layers (empty object)");
  std::vector<std::pair<std::string, double>> times;
  std::vector<std::string> nonfinite_layers;
  const Json* first_nonfinite = nullptr;
  std::string first_nonfinite_where;
  for (const auto& [key, value] : document) {
    if (key.empty()) throw InputError(path + ": empty layer name");
    // The profile's name rules, said of this file's shape (a layer name is a key here, not a field
    // 'name' of layers[i]: the helper's re-check), before the name is quoted in any message.
    const std::string opening = printable_text(std::string_view(key).substr(0, 40), false) + (key.size() > 40 ? "..." : "");
    if (key.size() > limits::kLongestLayerName)
      throw InputError(path + ": the layer name '" + opening + "' has " + std::to_string(key.size()) +
                       " bytes, at most " + std::to_string(limits::kLongestLayerName));
    if (const auto [at, unit] = first_unprintable(key); at != std::string::npos)
      throw InputError(path + ": the layer name '" + opening + "' has " + describe_text_unit(unit) + " at byte " +
                       std::to_string(at) + " (names are printed in messages and tables)");
    const std::string where = path + ": layer '" + key + "'";
    double seconds = 0;
    if (is_nonfinite_token(value)) {
      if (nonfinite == NonfinitePolicy::kZero) {
        nonfinite_layers.push_back(key);  // read as 0, said once below
      } else {
        if (!first_nonfinite) {
          first_nonfinite = &value;
          first_nonfinite_where = where;
        }
        nonfinite_layers.push_back(key);
      }
    } else {
      seconds = read_nonnegative_number(value, where);
    }
    times.emplace_back(key, seconds);
  }
  if (nonfinite == NonfinitePolicy::kZero) {
    if (!nonfinite_layers.empty())
      zeroed.push_back(path + ": " + std::to_string(nonfinite_layers.size()) + " non-finite time" +
                       (nonfinite_layers.size() == 1 ? "" : "s") + " read as 0 (--nonfinite zero): " +
                       list_names(nonfinite_layers));
    return times;
  }
  if (nonfinite_layers.size() == 1) read_nonnegative_number(*first_nonfinite, first_nonfinite_where);  // throws
  if (!nonfinite_layers.empty())
    throw InputError(path + ": " + std::to_string(nonfinite_layers.size()) + " layers have a non-finite time: " +
                     list_names(nonfinite_layers) + " (--nonfinite zero reads them as 0 s)");
  return times;
}

std::string list_names(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 5;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i)
    out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kShown) out += " and " + std::to_string(names.size() - kShown) + " more";
  return out;
}

// Applies --tied LAYER=OWNER to the imported layers and validates the ties. `read` holds every
// layer of the bp file (a member or owner --missing-comm drop removed is named as such). Throws
// FieldError ("tied") on a malformed, unknown, dropped or doubly tied layer, or a tie
// validate_profile refuses.
void apply_ties(Profile& profile, const std::vector<std::string>& ties, const std::map<std::string, double>& read,
                const std::string& bp_path, const std::string& comm_path) {
  for (const std::string& tie : ties) {
    const auto equals = tie.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == tie.size())
      throw FieldError("tied", "tied: expected LAYER=OWNER, got '" + tie + "'");
    const std::string member = tie.substr(0, equals), owner = tie.substr(equals + 1);
    const auto index = profile.find(member);
    if (!index) {
      // A layer of the file that --missing-comm drop removed is named as such (the helper's
      // re-check: "not a layer of" a file that holds it).
      if (read.count(member))
        throw FieldError("tied", "tied: '" + member + "' was dropped (--missing-comm drop: no all-reduce time in " +
                                     comm_path + ")");
      throw FieldError("tied", "tied: '" + member + "' is not a layer of " + bp_path);
    }
    if (profile.layers[*index].tied_to)
      throw FieldError("tied", "tied: '" + member + "' is tied twice");
    if (!profile.find(owner) && read.count(owner))  // an unknown owner is validate_profile's to name
      throw FieldError("tied", "tied: '" + owner + "', the owner of '" + member +
                                   "', was dropped (--missing-comm drop: no all-reduce time in " + comm_path + ")");
    profile.layers[*index].tied_to = owner;
  }
  if (!ties.empty()) {
    try {
      validate_profile(profile, "tied");  // its message starts with the origin: the field
    } catch (const FieldError&) {
      throw;
    } catch (const InputError& e) {
      throw FieldError("tied", e.what());
    }
  }
}

}  // namespace

DreamddpImport import_dreamddp_files(const std::string& bp_path, const std::string& comm_path,
                                     const DreamddpImportOptions& options) {
  std::vector<std::string> zeroed;
  const auto backward = read_time_file(bp_path, options.nonfinite, zeroed);
  const auto sync = read_time_file(comm_path, options.nonfinite, zeroed);
  std::map<std::string, double> sync_by_name(sync.begin(), sync.end());
  std::map<std::string, double> backward_by_name(backward.begin(), backward.end());

  std::vector<std::string> only_backward, only_sync;
  for (const auto& [name, seconds] : backward)
    if (!sync_by_name.count(name)) only_backward.push_back(name);
  for (const auto& [name, seconds] : sync)
    if (!backward_by_name.count(name)) only_sync.push_back(name);
  // An all-reduce time without a backward time has no place on the backprop clock: always an error.
  if (!only_sync.empty())
    throw InputError(comm_path + ": layer(s) " + list_names(only_sync) + " missing from " + bp_path);
  if (!only_backward.empty() && options.missing_comm == MissingCommPolicy::kError)
    throw InputError(bp_path + ": layer(s) " + list_names(only_backward) + " missing from " + comm_path +
                     " (--missing-comm drop leaves them out, --missing-comm frozen keeps them unsynced)");

  DreamddpImport imported;
  imported.without_comm = only_backward;
  Profile& profile = imported.profile;
  profile.model = options.model;
  profile.source = "imported:dreamddp";
  profile.workers = options.workers;
  for (const auto& [name, seconds] : backward) {
    LayerProfile layer;
    layer.name = name;
    layer.backward_s = seconds;
    const auto synced = sync_by_name.find(name);
    if (synced != sync_by_name.end()) layer.sync_s = synced->second;
    else if (options.missing_comm == MissingCommPolicy::kDrop) continue;
    else layer.frozen = true;  // kFrozen: its backward runs, nothing is averaged
    profile.layers.push_back(std::move(layer));
  }
  validate_profile(profile, bp_path);
  apply_ties(profile, options.tied, backward_by_name, bp_path, comm_path);
  // Read back with the profile reader, so that an import never yields a profile the tool then
  // refuses (a time past a day: core/limits.hpp); the error names the bp file.
  profile_from_json(profile_to_json(imported.profile), bp_path + " (as imported)");
  imported.zeroed = std::move(zeroed);
  return imported;
}

Profile import_dreamddp(const std::string& bp_path, const std::string& comm_path,
                        const DreamddpImportOptions& options) {
  return import_dreamddp_files(bp_path, comm_path, options).profile;
}

Plan import_dreamddp_schedule(const std::string& schedule_path, const Profile& profile) {
  const Json document = read_json_file(schedule_path);
  ObjectReader top(document, schedule_path);
  const std::int64_t period = top.required_integer("H", 1, kMaxPeriod);
  const Json& schedule = top.required("schedule");
  top.reject_unknown_keys();
  if (!schedule.is_object())
    throw InputError(schedule_path + ": field 'schedule': expected an object {layer: iteration}, got " +
                     json_type_name(schedule));

  std::map<std::string, std::vector<int>> iterations_by_name;
  for (const auto& item : schedule.items()) {
    const std::string where = schedule_path + ": layer '" + item.key() + "'";
    if (!profile.find(item.key())) throw InputError(where + ": not a layer of the profile");
    std::vector<int> iterations;
    const auto add = [&](const Json& value) {
      const std::optional<std::int64_t> whole = whole_number_value(value);  // 1.0 as H's 2.0 is read
      if (!whole)
        throw InputError(where + ": expected an iteration number or a list of them, got " +
                         json_type_name(value) + (value.is_number() ? " " + value.dump() : ""));
      const std::int64_t h = *whole;
      if (h < 0 || h >= period)
        throw InputError(where + ": iteration " + std::to_string(h) + " is outside 0.." +
                         std::to_string(period - 1));
      iterations.push_back(static_cast<int>(h));
    };
    if (item.value().is_array()) {
      if (item.value().empty()) throw InputError(where + ": empty list of iterations");
      for (const Json& value : item.value()) add(value);
    } else {
      add(item.value());
    }
    std::sort(iterations.begin(), iterations.end());
    if (std::adjacent_find(iterations.begin(), iterations.end()) != iterations.end())
      throw InputError(where + ": an iteration is listed twice");
    iterations_by_name[item.key()] = std::move(iterations);
  }

  Plan plan;
  plan.model = profile.model;
  plan.period = static_cast<int>(period);
  plan.algorithm = "imported:dreamddp-schedule";
  for (const LayerProfile& layer : profile.layers) {
    auto it = iterations_by_name.find(layer.name);
    // DreamDDP schedules only the layers it syncs; a frozen one is listed as syncing in iteration 0,
    // which no engine runs (docs/formats.md "frozen").
    if (it == iterations_by_name.end() && layer.frozen) {
      plan.layers.push_back(LayerSchedule{layer.name, {0}});
      continue;
    }
    if (it == iterations_by_name.end())
      throw InputError(schedule_path + ": layer '" + layer.name + "': in the profile but not in the schedule");
    plan.layers.push_back(LayerSchedule{layer.name, std::move(it->second)});
  }
  return plan;
}

}  // namespace syncplan
