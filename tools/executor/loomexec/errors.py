"""The executor's two kinds of failure and their exit codes."""


class InputError(Exception):
    """Bad input (a file, a field, a plan that does not fit the model): exit 2."""

    exit_code = 2


class CheckError(Exception):
    """The run finished but a check failed (or the run deadlocked): exit 1."""

    exit_code = 1


def describe(value):
    """A short printable form of a JSON value for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"%s"' % (value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
