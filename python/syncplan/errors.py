"""The package's two bad-input errors (command-line usage and plan/model mismatches: exit code 2,
one line) and how a name or path from the input is shown in their messages."""

import unicodedata


class UsageError(Exception):
    """Bad arguments, model or output path of a command: one line on stderr, exit code 2."""


class PlanError(ValueError):
    """A plan, strategy or profile that does not fit the model or the process group (docs/torch.md,
    "PlanExecutor", "Checks before training"): the message is one line naming the file, the field or
    the layer; the scripts print it and exit 2. Raised on every rank alike (the ranks agree first)."""


# Characters that end or garble a message's line: the C0 and C1 controls with DEL (category Cc)
# and the line and paragraph separators, all of which str.splitlines() splits at.
_LINE_BREAKING = ("Cc", "Zl", "Zp")


def printable(text):
    """`text` (a layer name, a path) as a message shows it: each control character, DEL, C1
    control and line or paragraph separator escaped as Python's repr escapes it (\\n, \\x7f,
    \\u2028), the rest as it is, so that the message stays one line."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _LINE_BREAKING else c for c in str(text))


def quoted(name):
    """A name in a message: 'NAME', escaped by printable()."""
    return f"'{printable(name)}'"


def control_character(name):
    """The first (byte offset, character) of `name` that the C++ readers refuse in a layer name
    (bytes 0x00-0x1F and 0x7F, core/json_io.hpp require_printable_name), or None."""
    for index, character in enumerate(name):
        if ord(character) < 0x20 or ord(character) == 0x7F:
            return len(name[:index].encode("utf-8", "surrogatepass")), character
    return None


def require_printable_name(name, where):
    """PlanError "WHERE: field 'name': control character U+00XX at byte N (...)" for a name that
    holds one, worded as the C++ readers word it; `where` must not quote the name."""
    found = control_character(name)
    if found is not None:
        offset, character = found
        raise PlanError(f"{where}: field 'name': control character U+{ord(character):04X} at byte {offset} "
                        "(names are printed in messages and tables)")
