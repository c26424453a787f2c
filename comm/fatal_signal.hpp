// The one line a rank prints when SIGTERM or SIGINT ends it: when one rank dies, mpirun sends
// SIGTERM to the others about a second later, and each must still say where it was.
#pragma once

#include <cstdint>
#include <string_view>

namespace syncplan {

/// While it lives, SIGTERM and SIGINT write this rank's line to stderr (file descriptor 2) and end
/// the process with _exit(1) (unless muted). The line is preformatted by the training loop (set_place) into one
/// of two buffers and published by an atomic index, so the handler only reads a finished buffer
/// and calls write(2) and _exit(2), both async-signal-safe (POSIX.1-2017, section 2.4.3):
///   "PREFIX: ended by a signal in iteration I, bucket FIRST_LAYER (another rank failed or mpirun
///   stopped the job)"
/// A signal handler can only reach state through a global: the buffers are static in the .cpp,
/// owned by the one FatalSignalLine alive (a second is an InternalError). The destructor restores
/// the handlers that were there before. A handler running on another thread while set_place
/// is called twice in a row could read a buffer being rewritten; set_place runs once per bucket,
/// milliseconds apart, against the microseconds of one write(2).
class FatalSignalLine {
 public:
  /// Installs the handlers (sigaction); `prefix` starts the line, e.g. "syncplan run: rank 1"
  /// (cut to fit the buffer). Until set_place is called the line says "before the first iteration".
  explicit FatalSignalLine(std::string_view prefix);
  ~FatalSignalLine();
  FatalSignalLine(const FatalSignalLine&) = delete;
  FatalSignalLine& operator=(const FatalSignalLine&) = delete;

  /// The place the line names: iteration `iteration` and the bucket whose first layer is
  /// `bucket_first_layer` ("in iteration I" alone when it is empty: no bucket in flight), and,
  /// when `note` is not empty, "; NOTE" after it (e.g. a long wait's "rank 1 did not arrive").
  void set_place(std::int64_t iteration, std::string_view bucket_first_layer, std::string_view note = {});
  /// A place in words, e.g. "while writing the checkpoint of step 200": "PREFIX: ended by a
  /// signal WHERE (another ...)".
  void set_place(std::string_view where);

  /// Just before this rank prints its own one-line error (a timeout naming the late ranks) and
  /// ends itself: SIGTERM and SIGINT are from now on ignored (the handler returns), so that
  /// mpirun's SIGTERM neither adds a second line nor ends the process before its line is out.
  /// set_place undoes it.
  void mute();

  /// Ends this rank after its own one-line error (e.g. a timeout naming the late ranks): mute(),
  /// `line` and a newline to stderr, a grace of `grace_s` seconds, then _exit(1). Not MPI_Abort:
  /// mpirun ends the other ranks as after a kill -9 (SIGTERM, their own lines), while output
  /// written after an MPI_Abort may be lost (Open MPI's banner: "You may or may not see output
  /// from other processes"; seen on 4 ranks here). The grace lets ranks stuck in the same bucket
  /// reach their own deadlines and print while the job is whole (docs/comm.md section 7).
  [[noreturn]] void end_rank(std::string_view line, double grace_s = 2.0);

  /// The line a signal would print now, without its newline (empty when muted; for tests).
  std::string_view line() const;
};

}  // namespace syncplan
