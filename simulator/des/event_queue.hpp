// A discrete-event queue in simulated seconds with typed payloads (std::variant), owned by value.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace syncplan {

/// Events ordered by time, then by the order they were scheduled (so equal times run FIFO and
/// every run of the same input processes events in the same order).
template <typename Payload>
class EventQueue {
 public:
  struct Event {
    double time_s;           ///< simulated seconds
    std::uint64_t sequence;  ///< tie-breaker: scheduling order
    Payload payload;
  };

  void schedule(double time_s, Payload payload) { heap_.push(Event{time_s, next_sequence_++, std::move(payload)}); }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  /// Removes and returns the earliest event. Precondition: !empty().
  Event pop() {
    Event event = heap_.top();
    heap_.pop();
    return event;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_s != b.time_s ? a.time_s > b.time_s : a.sequence > b.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace syncplan
