"""syncplan.torch: the plan executor for PyTorch training loops (syncplan.executor.PlanExecutor,
docs/torch.md "PlanExecutor"), with its errors and the schedule it executes.

This module is named for what it serves; inside the package `import torch` still finds PyTorch
(absolute imports). Run the package's tools as `python3 -m syncplan.X`, never as a file inside
python/syncplan/, whose folder first on sys.path would shadow PyTorch with this module.
"""

from .errors import PlanError, UsageError
from .executor import PlanExecutor, SyncError
from .schedule import Schedule, plan_schedule, strategy_schedule

__all__ = ["PlanExecutor", "PlanError", "Schedule", "SyncError", "UsageError", "plan_schedule", "strategy_schedule"]
