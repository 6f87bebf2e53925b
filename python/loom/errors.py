"""Loom's status codes (enum loom_status in <loom/common.h>) and the
exceptions that carry them."""

from __future__ import annotations

# enum loom_status, by code.
STATUS_NAMES = {
    0: "LOOM_OK",
    -1: "LOOM_EINVAL",
    -2: "LOOM_ENOMEM",
    -3: "LOOM_EABI",
    -4: "LOOM_ENOTFOUND",
    -5: "LOOM_EINFEASIBLE",
    -6: "LOOM_DECLINED",
    -7: "LOOM_EPLUGIN",
    -8: "LOOM_EDEADLOCK",
    -9: "LOOM_EIO",
    -10: "LOOM_ETIMEOUT",
    -11: "LOOM_EINTERRUPTED",
}
STATUS_CODES = {name: code for code, name in STATUS_NAMES.items()}


def status_name(code: int) -> str:
    """The name of a status code, e.g. "LOOM_EINVAL"; "LOOM_E?" when unknown
    (what loom_status_name() says)."""
    return STATUS_NAMES.get(code, "LOOM_E?")


class LoomError(Exception):
    """A failure reported by Loom.

    `message` is Loom's own text (file, JSON path, expected / found, or the
    plugin's id), `status` the status name ("LOOM_EINVAL", ...) and `code`
    its number. str(error) is the message.
    """

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = int(code)
        self.status = status_name(self.code)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%s, %r)" % (type(self).__name__, self.status, self.message)


class LoomInputError(LoomError, ValueError):
    """Bad input: a sample, an option, a manifest, model or cluster file
    (LOOM_EINVAL), something not found (LOOM_ENOTFOUND), a file that cannot
    be read or written (LOOM_EIO)."""


class LoomLibraryError(LoomInputError):
    """libloom.so could not be found or loaded (status LOOM_ENOTFOUND); the
    message names every place that was tried."""


class LoomPluginError(LoomError):
    """A plugin failed (LOOM_EPLUGIN; the message names the plugin), declined
    its input (LOOM_DECLINED) or does not match this Loom's ABI (LOOM_EABI)."""


class LoomPlanError(LoomError):
    """No plan came out: infeasible under the memory cap (LOOM_EINFEASIBLE),
    a schedule that cannot run (LOOM_EDEADLOCK), out of time
    (LOOM_ETIMEOUT) or interrupted (LOOM_EINTERRUPTED)."""


_CLASS_OF = {
    -1: LoomInputError,
    -4: LoomInputError,
    -9: LoomInputError,
    -3: LoomPluginError,
    -6: LoomPluginError,
    -7: LoomPluginError,
    -5: LoomPlanError,
    -8: LoomPlanError,
    -10: LoomPlanError,
    -11: LoomPlanError,
}


def error_for(code: int, message: str) -> LoomError:
    """The exception of the class that matches `code`."""
    return _CLASS_OF.get(int(code), LoomError)(code, message)


def input_error(message: str) -> LoomInputError:
    """A LOOM_EINVAL input error raised by the Python side's own checks."""
    return LoomInputError(-1, message)
