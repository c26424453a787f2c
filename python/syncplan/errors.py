"""The package's two bad-input errors: command-line usage and plan/model mismatches (exit code 2, one line)."""


class UsageError(Exception):
    """Bad arguments, model or output path of a command: one line on stderr, exit code 2."""


class PlanError(ValueError):
    """A plan, strategy or profile that does not fit the model or the process group (docs/torch.md,
    "PlanExecutor", "Checks before training"): the message is one line naming the file, the field or
    the layer; the scripts print it and exit 2. Raised on every rank alike (the ranks agree first)."""
