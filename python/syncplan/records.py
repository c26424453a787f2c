"""The measured trace of a PyTorch run in the schema of `syncplan run --trace` (docs/formats.md
"Measured trace", runtime/trace.hpp), so that `syncplan compare` reads the executor's runs as it
reads the C++ runtime's."""

import json

MICROSECONDS_PER_SECOND = 1e6  # Chrome trace times


def allreduce_event_name(layers):
    """The DES's name: "all-reduce FIRST" or "all-reduce FIRST .. LAST (n layers)", backprop order."""
    return "all-reduce " + layers[0] + (f" .. {layers[-1]} ({len(layers)} layers)" if len(layers) > 1 else "")


class MeasuredTrace:
    """One rank's complete ("X") events: pid = `rank`, ts/dur in microseconds from `origin_s` (seconds
    on the run's clock; the ranks take it right after a collective, so their clocks roughly agree)."""

    def __init__(self, rank, origin_s):
        self.rank = rank
        self.origin_s = origin_s
        self.events = []

    def event(self, name, category, tid, start_s, end_s, args, iteration):
        """One event of `iteration` from start_s to end_s (s on the run clock); tid 0 compute, 1 link."""
        self.events.append({"name": name, "cat": category, "ph": "X", "pid": self.rank, "tid": tid,
                            "ts": (start_s - self.origin_s) * MICROSECONDS_PER_SECOND,
                            "dur": max(0.0, end_s - start_s) * MICROSECONDS_PER_SECOND,
                            "args": dict(args, iteration=iteration)})

    def compute(self, iteration, start_s, forward_end_s, backward_start_s, ready, step_s, after_step_s):
        """An iteration's compute on tid 0: "forward (whole model)" (the executor does not time each
        module's forward), "backward NAME" from one synced layer's gradients being ready to the next
        one's (`ready`: (name, time) in order; a span holds the backward of the layers without
        parameters before it) and "update" (the optimizer step, step_s to after_step_s, when known)."""
        self.event("forward (whole model)", "forward", 0, start_s, forward_end_s, {"layer": "(whole model)"}, iteration)
        previous = backward_start_s
        for name, ready_s in ready:
            self.event(f"backward {name}", "backward", 0, previous, ready_s, {"layer": name}, iteration)
            previous = ready_s
        if step_s is not None and after_step_s is not None:
            self.event("update", "update", 0, step_s, after_step_s, {}, iteration)

    def allreduce(self, layers, size_bytes, launch_s, complete_s, iteration, delay=0):
        """A bucket's all-reduce on tid 1, filed under its launch iteration; a delayed one (delay d > 0)
        with args delay and applied_iteration = iteration + d."""
        args = {"layer": layers[0]} if len(layers) == 1 else {"layers": list(layers)}
        args["bytes"] = size_bytes
        if delay > 0:
            args.update(delay=delay, applied_iteration=iteration + delay)
        self.event(allreduce_event_name(layers), "allreduce", 1, launch_s, complete_s, args, iteration)


def trace_text(per_rank_events, description):
    """Every rank's events (a list per rank) and the "syncplan" object (`description`, with
    "source": "measured") as the text of one Chrome trace."""
    events = []
    for rank in range(len(per_rank_events)):
        events.append({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": f"rank {rank}"}})
        events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": "compute"}})
        events.append({"name": "thread_name", "ph": "M", "pid": rank, "tid": 1, "args": {"name": "comm stream 0"}})
    for rank_events in per_rank_events:
        events.extend(rank_events)
    document = {"traceEvents": events, "displayTimeUnit": "ms", "syncplan": dict(description, source="measured")}
    return json.dumps(document, allow_nan=False) + "\n"
