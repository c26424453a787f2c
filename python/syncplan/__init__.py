"""syncplan for PyTorch users: the per-module torch profiler (syncplan.torch_profile), the torch link
sweep (syncplan.torch_link), the shared models (syncplan.models) and the plan executor
(syncplan.torch.PlanExecutor), on torch >= 1.13. Plain Python; planning and simulating are the C++
`syncplan` tool's, whose file formats (/work/shared/SPEC.md sections 3, 4 and 8) this package reads
and writes. docs/torch.md describes it.

Importing the package does not import torch.
"""

__version__ = "0.1.0"
