"""loom_execute.py's main() run in a forked copy of the test process.

Importing PyTorch and its pipelining runtime takes seconds, and most tests
run the executor once or more. This module imports them once; each call
forks, runs main() with the given arguments in the child, its standard
output and error on pipes, and returns what subprocess.run would: the exit
status and both texts. The child is a fresh copy of this process, so no
state passes from one call to the next. Tests that check the script's own
entry point or need another environment (LD_PRELOAD) still start it with
subprocess."""

import os
import select
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402,F401  (imported once, inherited by every fork)
import torch.distributed.pipelining  # noqa: E402,F401

import loom_execute  # noqa: E402

EXECUTOR = os.path.join(os.path.dirname(HERE), "loom_execute.py")


def _child(argv, out_w, err_w):
    """Runs main(argv) with fds 1 and 2 on the pipes; never returns."""
    rc = 1
    try:
        os.setpgid(0, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        sys.argv = [EXECUTOR] + argv
        rc = loom_execute.main(argv)
    except SystemExit as e:  # argparse's --help and usage errors
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException:  # what the interpreter would print, and status 1
        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)


def _drain(fds, pid, deadline):
    """Reads both pipes to their end; kills the child's group at the deadline."""
    chunks = {fd: [] for fd in fds}
    open_fds = list(fds)
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            os.killpg(pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(EXECUTOR, 0)
        ready, _, _ = select.select(open_fds, [], [], min(left, 1.0))
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.remove(fd)
    return [b"".join(chunks[fd]).decode() for fd in fds]


def run(argv, timeout=300):
    """loom_execute.py ARGV in a fork: a CompletedProcess with text output."""
    argv = [str(a) for a in argv]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(err_r)
        _child(argv, out_w, err_w)
    os.close(out_w)
    os.close(err_w)
    try:
        out, err = _drain([out_r, err_r], pid, time.monotonic() + timeout)
    finally:
        os.close(out_r)
        os.close(err_r)
        _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    return subprocess.CompletedProcess([EXECUTOR] + argv, rc, out, err)
