// How much host memory a job may allocate: checked before the buffers of a CPU profile, a link
// sweep or a discrete-event simulation are made, so that too large a request is a one-line error, not std::bad_alloc.
#pragma once

namespace syncplan {

/// Bytes this process can allocate: MemAvailable of /proc/meminfo (free memory plus reclaimable
/// caches; else the free physical pages, sysconf), and under an address-space limit (RLIMIT_AS,
/// `ulimit -v`) at most the limit less the process's VmSize.
double available_memory_bytes();

}  // namespace syncplan
