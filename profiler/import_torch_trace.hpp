// Importer for PyTorch profiler Chrome traces: per-layer forward and backward times from module
// annotations (docs/torch.md).
#pragma once

#include "core/json_io.hpp"
#include "core/profile.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace syncplan {

/// What to do with a layer that has forward events in the trace but no backward events.
enum class MissingBackwardPolicy {
  kError,  ///< an error naming the layer (default)
  kNull,   ///< backward_s null (unknown)
  kZero,   ///< backward_s 0: the layer did no backward work (it ran without gradients)
};

/// Options of `syncplan import torch-trace`.
struct TorchTraceImportOptions {
  std::optional<std::string> model;  ///< profile's `model`; std::nullopt when not given
  MissingBackwardPolicy missing_backward = MissingBackwardPolicy::kError;
};

/// How the layers and their backward times were found (docs/torch.md, "Conventions").
enum class TorchTraceConvention {
  kAnnotations,    ///< record_function ranges "syncplan.forward:NAME" / "syncplan.backward:NAME"
  kModuleEvents,   ///< torch.profiler's "nn.Module: Class_N" events (with_stack / with_modules)
};

/// Where the backward times came from.
enum class TorchTraceBackward {
  kAnnotations,      ///< "syncplan.backward:NAME" ranges
  kSequenceNumbers,  ///< autograd nodes linked to forward ops by "Sequence number" (fwdbwd links)
  kNone,             ///< the trace has neither; every layer's backward is missing
};

/// A profile imported from a trace, with what the import found.
struct TorchTraceImport {
  Profile profile;                      ///< source "imported:torch-trace"; forward_s, backward_s per layer
  TorchTraceConvention convention = TorchTraceConvention::kAnnotations;
  TorchTraceBackward backward = TorchTraceBackward::kNone;
  std::size_t iterations = 0;           ///< complete iterations the medians are over
  std::size_t incomplete_iterations = 0;///< iterations left out: a layer had no forward or backward event
};

/// Builds a per-layer profile from a PyTorch profiler Chrome trace: a JSON object with a
/// `traceEvents` array, or a bare array of events (the format of torch builds without Kineto).
/// Layers are the leaf annotated modules in order of their first forward; an iteration starts at
/// each forward of the first layer; each time is the median over complete iterations of the
/// per-iteration sum of the layer's event durations (`dur`, microseconds, converted to seconds).
/// The rules (conventions, backward linking, limits) are docs/torch.md's.
/// `origin` names the trace in errors. Throws InputError for: a document that is neither an object
/// with a `traceEvents` array nor an array; an event that is not an object; a used event (an
/// annotation, a module event, an op with a sequence number) without a string name, with a missing
/// or non-numeric `ts`, a negative `ts` or one past 2^53 us (no clock reading), or a missing,
/// negative, non-finite or over-a-day `dur` (> 8.64e10 us: no
/// plausible range, and it would enclose every later one); an empty layer name after the prefix; no
/// module annotations at all; backward annotations for a layer without forward ones; a layer
/// without backward events (under MissingBackwardPolicy::kError); no complete iteration.
TorchTraceImport torch_trace_to_profile(const Json& trace, const std::string& origin,
                                        const TorchTraceImportOptions& options);

/// Reads the trace file at `trace_path` (read_json_file) and imports it with torch_trace_to_profile.
TorchTraceImport import_torch_trace(const std::string& trace_path, const TorchTraceImportOptions& options);

/// "annotations" or "nn.Module events", and "backward annotations", "sequence numbers" or "none",
/// for messages.
const char* convention_name(TorchTraceConvention convention);
const char* backward_name(TorchTraceBackward backward);

}  // namespace syncplan
