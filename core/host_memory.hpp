// How much host memory a job may allocate: checked before the buffers of a CPU profile, a link
// sweep or a discrete-event simulation are made, so that too large a request is a one-line error, not std::bad_alloc.
#pragma once

namespace syncplan {

/// Bytes this process can allocate: MemAvailable of /proc/meminfo (free memory plus reclaimable
/// caches; else the free physical pages, sysconf), and under an address-space limit (RLIMIT_AS,
/// `ulimit -v`) at most the limit less the process's VmSize.
double available_memory_bytes();

/// Makes the process keep the memory it frees (glibc: no allocation served by its own mmap, and the
/// heap's free top never given back; `mallopt(M_MMAP_MAX, 0)`, `mallopt(M_TRIM_THRESHOLD, ...)`).
/// Why: glibc serves a large block with mmap and unmaps it when freed, and trims the heap's top, so
/// a loop that allocates and frees large temporaries (Eigen's GEMM workspaces, MPI's buffers)
/// faults every page in again each iteration; measured on tiny-gpt, a CPU step 1.6x slower until
/// glibc's dynamic mmap threshold happened to grow (after the first all-reduce), and the profile
/// measured the slow state the run left (docs/runtime.md section 7, STYLE pattern 19).
/// With this set, profile and run compute in the same steady state from the first iteration.
/// The cost: the process's resident size stays at its peak. Call it once, first thing in main();
/// idempotent. Returns false where the C library has no such setting (not glibc): nothing changed.
bool keep_freed_memory();

/// Minor page faults of this process so far (getrusage's ru_minflt; 0 where unavailable): a page
/// touched for the first time, as after an allocation the kernel had to map. A steady loop adds
/// none per iteration (tests/kernels' steady-state test).
long minor_page_faults();

}  // namespace syncplan
