// The one table of limits every reader and command-line option checks its numbers against, each
// with the reason for its value (docs/formats.md, "Limits").
//
// A limit is where a number stops being a description of a real training job and becomes a typo,
// an overflow or a fuzzer's input: past it the simulator would exhaust memory, overflow a sum to
// infinity or print figures nobody can read. Every limit is far beyond any real job, so that no
// real input is refused.
#pragma once

#include <cstddef>
#include <cstdint>

namespace syncplan::limits {

// ---- counts --------------------------------------------------------------------------------------

/// Workers of a cluster, a link fit, a profile, a DES result or an nccl-tests log: at most 2^24 =
/// 16,777,216, about 170 times the 100,000-GPU jobs a what-if study asks about. Nothing stores
/// per-worker state for identical workers (docs/des.md section 5: the topology is arithmetic, the
/// DES runs one representative), so the bound is where the arithmetic stops being exact: worker
/// and directed-link ids are `int` (2 links per worker and 2 per node: at most 2^26 < 2^31),
/// worker x iteration counts (2^24 x 10^5 < 2^41) and the ring's 2(p-1) latency steps stay exact
/// integers in a double (below 2^53). Runs that do simulate every
/// worker (stragglers, jitter) are bounded by memory instead (des_memory_bytes, docs/des.md).
inline constexpr std::int64_t kMaxWorkers = std::int64_t{1} << 24;

/// The period H of a plan, a schedule or --period: at most 10,000. Every iteration of a period is
/// stored and timed; local SGD periods in practice are below 1,000.
inline constexpr int kMaxPeriod = 10'000;

/// Iterations one DES run simulates (--iterations): at most 100,000. The DES keeps a time per
/// simulated worker and iteration; real comparisons run tens to thousands of iterations.
inline constexpr std::int64_t kMaxIterations = 100'000;

/// Sequences per step and worker (--batch of profile, plan and whatif; a strong-scaling sweep's
/// global batch divided among a point's workers): at most 2^20 = 1,048,576, far above any
/// per-GPU batch; past it a model's activation bytes overflow what an estimate can describe.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;

/// Tokens per sequence (--seq of profile, plan and whatif): at most 2^24 = 16,777,216, beyond the
/// longest contexts trained; a model spec's own context limits it further.
inline constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;

/// Points of one what-if sweep (workers x bandwidths x latencies x periods x strategies): at most
/// 100,000. Each point is a DES run (and a planning job for plans), 0.01-1 s on one core: a
/// sweep at the limit is hours; four 100-value lists (10^8 points) would be years, and the
/// points' rows must fit in memory before the first runs.
inline constexpr std::int64_t kMaxWhatifPoints = 100'000;

/// Branch-and-bound nodes of plan's exact method (--exact-nodes): at most 10^12. At about 0.25 us a
/// node that is days of search; the job's time limit cuts it sooner (docs/time-model.md 14).
inline constexpr long long kMaxExactNodes = 1'000'000'000'000LL;

/// Timed repeats behind one layer's spread (profile `samples` of `forward_spread` and the like):
/// at most 10^9. `profile --repeats` times whole training steps, thousands at the most; the
/// count must stay an exact int.
inline constexpr std::int64_t kMaxSpreadSamples = 1'000'000'000;

/// Communication streams per worker in the DES (--comm-streams): at most 64; frameworks use one to
/// a few (NCCL's channels are below the stream level).
inline constexpr std::int64_t kMaxCommStreams = 64;

/// The latest event time of a Chrome trace (microseconds): 1e15 us, about 31 years, past any run.
/// compare refuses later `ts`/`dur`, so simulate refuses to write a trace of a longer run (what
/// the tool writes it reads back; the helper's re-check: a profile at the 2^50-byte limit).
inline constexpr double kLongestTraceTime_us = 1e15;

/// The longest iteration a `syncplan.result/v1` may hold (s): 1e12 s, about 31,700 years, past any
/// profile's own times (a day per layer and pass), so that compare's sums over 100,000 iterations stay
/// finite. compare refuses a longer `iteration_s`, so simulate refuses to write one (what the tool
/// writes it reads back; the helper's re-check: 2^50-byte layers on a 1 kbit/s link).
inline constexpr double kLongestPredictedIteration_s = 1e12;

/// Bytes of a layer name (UTF-8): at most 1,024. Module paths are far shorter; a huge name would also
/// overflow std::regex's recursion (plan --every-iteration).
inline constexpr std::size_t kLongestLayerName = 1024;

/// Characters of a `--every-iteration` pattern: at most 4096 (a list of every layer of a
/// 100-block model by name is about that long) ...
inline constexpr std::size_t kLongestPattern = 4096;
/// ... compiled by RE2 within 8 MiB (RE2's default budget; a larger program is refused).
inline constexpr std::int64_t kPatternMemoryBytes = std::int64_t{8} << 20;
/// ... and matched against the layer names within this much work: RE2's program size
/// (instructions) times the bytes of all names. Matching costs about that many steps when RE2's
/// DFA gives up and it simulates the automaton (counted repetitions such as '.{1000}'; the helper's
/// new-user check: 36 ms per 1,004-character name, more than 30 s on 2,000 layers); 5e8 is about a
/// second on this project's 2-core machine. A pattern past it is refused, not run.
inline constexpr double kPatternMatchWork = 5e8;

// ---- times and sizes -----------------------------------------------------------------------------

/// Seconds of one measured or configured time (a layer's forward, backward, update or all-reduce
/// time, a link fit's alpha, a trace event): at most a day. A layer or a collective that takes
/// longer is no measurement; with every time bounded, sums over layers, iterations and periods
/// stay finite.
inline constexpr double kLongestTime_s = 86'400;

/// Seconds of one measured collective (a link sample's all-reduce time, an imported nccl-tests
/// time) that is not 0: at least 1e-9 (1 ns, a few clock cycles; the fastest all-reduce nccl-tests
/// prints is microseconds). A shorter one is no measurement, and next to a large one its
/// logarithm sends the link's interpolation to infinity.
inline constexpr double kShortestMeasuredTime_s = 1e-9;

/// Bytes of one message, bucket, parameter block or link-sweep size: at most 2^50 (1 PiB). The
/// largest models' whole gradients are terabytes; past 2^53 bytes a double no longer counts bytes
/// exactly.
inline constexpr std::int64_t kMaxSizeBytes = std::int64_t{1} << 50;

// ---- links ---------------------------------------------------------------------------------------

/// A link's bandwidth per direction (cluster `bandwidth_Gbps`), Gbit/s: at least 1e-6 (1 kbit/s,
/// below any network a training job runs on; a 56k modem is 5.6e-5) ...
inline constexpr double kMinBandwidth_Gbps = 1e-6;
/// ... and at most 1e6 (1 Pbit/s, about 70x NVLink 5's 14.4 Tbit/s per GPU).
inline constexpr double kMaxBandwidth_Gbps = 1e6;

/// A link's one-way latency (cluster `latency_us`), microseconds: at most 1e7 (10 s). A
/// geostationary satellite hop is about 0.25 s; a larger number is a unit mistake.
inline constexpr double kMaxLatency_us = 1e7;

// ---- stragglers and jitter -----------------------------------------------------------------------

/// A worker's compute-time factor (cluster `compute_slowdown`): in [1e-3, 1e3]. Stragglers reported
/// in the literature are a few times slower than their peers, never a thousand times.
inline constexpr double kMinSlowdown = 1e-3;
inline constexpr double kMaxSlowdown = 1e3;

/// The jitter's sigma (cluster `jitter.sigma`): at most 2. Lognormal sigma 2 already gives a median
/// factor of e^-2 = 0.14 and a 99th percentile of e^(2 x 2.33 - 2) = 14 around the mean 1; measured
/// compute noise is a few percent (sigma 0.01-0.1). Normal sigma 2 cuts a third of the factors at 0.
inline constexpr double kMaxJitterSigma = 2;

}  // namespace syncplan::limits
