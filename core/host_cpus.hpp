// How many CPUs this process may run on, and the warning for a run that puts more CPU ranks on a
// machine than it has CPUs (docs/runtime.md section 7.1, "Oversubscribed ranks").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace syncplan {

/// The CPUs this process may run on as a bit mask, bit c of byte c / 8 for CPU c (Linux:
/// sched_getaffinity, which `taskset`, `mpirun --bind-to` and a container's cpuset limit), of a
/// fixed size (CPU_SETSIZE bits); elsewhere the first std::thread::hardware_concurrency() bits.
/// The OR of the masks of a node's ranks (MpiSession::node_cpus) is what they share: Open MPI
/// binds each of 2 ranks to a core of its own, so one rank's mask alone says 1 CPU.
std::vector<unsigned char> affinity_mask_bytes();

/// The CPUs set in a mask of affinity_mask_bytes (at least 1).
int count_cpus(const std::vector<unsigned char>& mask);

/// The warning for `ranks` ranks of one run on one machine, each computing on one thread (the CPU
/// trainer's kernels are single-threaded), when the ranks together may run on `cpus` CPUs: none
/// when ranks <= cpus. Otherwise the ranks compute in the kernel's time slices (a few ms each),
/// which a profile's per-layer median does not see, while the DES gives every worker a processor
/// of its own: measured here, 4 ranks on 2 cores computed 1.2-1.6 times the profile's step, and 2
/// ranks on 1 core (taskset) ran 13-25% slower than predicted where 2 ranks on 2 cores came
/// within 3.4% (docs/runtime.md section 7.1). Arguments < 1 count as 1.
std::optional<std::string> oversubscription_warning(int ranks, int cpus);

}  // namespace syncplan
