// The late-rank watch of a training run (runtime/late_rank_watch.hpp).
#include "runtime/late_rank_watch.hpp"

#include <algorithm>

namespace syncplan {

LateRankWatch::LateRankWatch(Arrivals& arrivals, int period, FatalSignalLine* line)
    : arrivals_(arrivals), period_(period), line_(line) {}

BucketWatch LateRankWatch::hooks() {
  BucketWatch watch;
  watch.started = [this](std::int64_t iteration, const std::string& first_layer) {
    return bucket_started(iteration, first_layer);
  };
  watch.waiting = [this](std::int64_t sequence, double waited_s) { bucket_waiting(sequence, waited_s); };
  return watch;
}

std::int64_t LateRankWatch::bucket_started(std::int64_t iteration, const std::string& first_layer) {
  // A new period (not merely position 0: flsgd starts buckets only in its last iteration).
  if (place_iteration_ < 0 || iteration / period_ != place_iteration_ / period_) period_buckets_.clear();
  place_iteration_ = iteration;
  const std::int64_t sequence = agreement_started();
  period_buckets_[sequence] = first_layer;
  if (line_) line_->set_place(iteration, first_layer);
  return sequence;
}

void LateRankWatch::bucket_waiting(std::int64_t sequence, double waited_s) {
  agreement_waiting(newest_);
  if (line_ && waited_s > kQuiet_s && (sequence != noted_sequence_ || waited_s - noted_s_ > kNoteInterval_s)) {
    const auto waited = period_buckets_.find(sequence);
    line_->set_place(place_iteration_, waited != period_buckets_.end() ? waited->second : std::string(), late(sequence));
    noted_sequence_ = sequence;
    noted_s_ = waited_s;
  }
}

std::int64_t LateRankWatch::agreement_started() {
  const std::int64_t sequence = next_sequence_++;
  arrivals_.arrive(sequence);
  newest_ = sequence;
  return sequence;
}

void LateRankWatch::agreement_waiting(std::int64_t sequence) {
  arrivals_.progress();
  arrivals_.heartbeat(sequence);
}

std::string LateRankWatch::late(std::int64_t sequence) {
  arrivals_.progress();
  for (std::int64_t s = sequence; s <= std::max(sequence, newest_); ++s) {
    const LateRanks ranks = arrivals_.late(s, kQuiet_s);
    if (ranks.absent.empty() && ranks.behind.empty() && ranks.silent.empty()) continue;
    const auto named = s != sequence ? period_buckets_.find(s) : period_buckets_.end();
    return (named != period_buckets_.end() ? "at bucket '" + named->second + "': " : std::string()) +
           late_ranks_text(ranks, kQuiet_s);
  }
  return late_ranks_text(LateRanks{}, kQuiet_s);
}

}  // namespace syncplan
