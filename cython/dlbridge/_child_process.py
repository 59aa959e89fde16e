"""A Python child process that runs code dlbridge does not trust (a library
under the doctor's probe, a subject of the conformance kit) and cannot take
its parent down, hang it or speak for it.

The parent starts ``python -m MODULE FD CONFIG ARGS...`` in a session of
its own (``ChildProcess``). The child calls ``open_channel`` with its argv:
it gets the parent's ``sys.path`` from the CONFIG file (a file, as a path of
any length or type fits there and not in an environment variable) and a
``Channel`` on file descriptor FD, on which it sends events, one JSON line
``[pid, event, value]`` each. The parent keeps only the lines of the process
it started: a copy made by ``fork`` (multiprocessing, a server started at
import) that writes on the inherited pipe speaks for nobody. The child's
standard error goes to a pipe of the parent, which keeps its first and last lines
for the verdict of a crash (the error, then where it happened), so that no
backtrace of a crashing library is printed above the parent's report.

The parent learns that the child ended from its exit status, not from the
end of the pipe, which a forked helper may hold open: it then reads what
is already written, ends the child's whole process group and stops reading.
Every read is bounded (``MAX_LINE`` per event, ``STDERR_KEPT`` bytes of
each end of standard error) and no wait outlasts ``TICK``, so a flood of output or a deadline
of any size is harmless. ``stop_children_on_signals`` makes a command line
end its children when it is itself ended (SIGTERM, SIGHUP: a CI time-out).
"""
from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterable

MAX_LINE = 1 << 22      # bytes of one event; the children bound what they send well below it
STDERR_KEPT = 1 << 13   # bytes of standard error kept at each end
TICK = 0.05             # seconds: the longest wait, so exits and deadlines are seen at once
_READ = 1 << 16
_DRAIN = 1 << 23        # bytes read at most once the child has ended (forked helpers may write on)

_running: set[ChildProcess] = set()


def _path_entries(path: Iterable[Any]) -> list[str]:
    """sys.path as JSON can carry it: os.PathLike and bytes entries as str, others left out."""
    entries = []
    for entry in path:
        try:
            entry = os.fsdecode(os.fspath(entry))
        except TypeError:
            continue
        entries.append(entry)
    return entries


# The flags of sys.flags a child shares, and their options.
_FLAGS = (("isolated", "-I"), ("ignore_environment", "-E"), ("no_user_site", "-s"), ("dont_write_bytecode", "-B"),
          ("safe_path", "-P"))


def interpreter_options() -> list[str]:
    """The command-line options of this interpreter that its children must
    share: those that change what it imports (-I, -E, -s, -P), -B, -O, -b,
    every -W and every -X."""
    flags = sys.flags
    options = [option for name, option in _FLAGS if getattr(flags, name, 0)]  # safe_path: Python 3.11 on
    options += ["-O"] * flags.optimize + ["-b"] * flags.bytes_warning
    options += [f"-W{warning}" for warning in sys.warnoptions]
    options += [f"-X{name}" if value is True else f"-X{name}={value}" for name, value in sys._xoptions.items()]
    return options


class ChildProcess:
    """``python -m module`` with this interpreter and its options
    (interpreter_options), this
    process's ``sys.path``, and `args`; see the module's docstring."""

    def __init__(self, module: str, args: Iterable[str]):
        self.events: list[tuple[str, Any]] = []  # (event, value), in the order sent, not yet taken
        self.returncode: int | None = None       # set once the child has ended and its events are read
        self._pending = bytearray()
        self._skipping = False                   # inside a line longer than MAX_LINE
        self._stderr_head = bytearray()
        self._stderr = bytearray()  # the tail
        self._stderr_dropped = False
        with tempfile.NamedTemporaryFile("w", prefix="dlbridge-child-", suffix=".json", delete=False) as config:
            json.dump({"path": _path_entries(sys.path)}, config)
        self._config = config.name
        fds: list[int] = []
        try:
            self._events_fd, write = os.pipe()
            fds += [self._events_fd, write]
            self._stderr_fd, stderr_write = os.pipe()
            fds += [self._stderr_fd, stderr_write]
            for fd in (self._events_fd, self._stderr_fd):
                os.set_blocking(fd, False)
            # A session of its own: killed as a group, with whatever it started, and spared the
            # terminal's Ctrl-C (which reaches the parent, that then ends it).
            self.process = subprocess.Popen([sys.executable, *interpreter_options(), "-m", module, str(write),
                                             self._config, *args],
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=stderr_write, pass_fds=(write,), start_new_session=True)
        except BaseException:
            for fd in fds:
                os.close(fd)
            os.unlink(self._config)
            raise
        os.close(write)
        os.close(stderr_write)
        _running.add(self)

    def read(self) -> None:
        """Takes what the child has written so far (never blocks); sets
        `returncode` once the child has ended, after reading what it wrote."""
        if self.returncode is not None:
            return
        ended = self.process.poll()  # before reading: what it wrote before it ended is in the pipe now
        self._read_stderr()
        limit = _DRAIN if ended is not None else _READ * 16
        while limit > 0:
            try:
                data = os.read(self._events_fd, _READ)
            except BlockingIOError:
                break
            if not data:
                break
            limit -= len(data)
            self._take(data)
        if ended is not None:
            self.returncode = ended
            self.stop()

    def _take(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                if not self._skipping:
                    self._pending += data[start:]
                    if len(self._pending) > MAX_LINE:
                        self._pending.clear()
                        self._skipping = True
                return
            if self._skipping:
                self._skipping = False
            else:
                self._pending += data[start:end]
                self._event(bytes(self._pending))
            self._pending.clear()
            start = end + 1

    def _event(self, line: bytes) -> None:
        try:
            pid, event, value = json.loads(line)
        except (ValueError, TypeError):
            return  # not a line of the channel's: a helper's, or cut short
        if pid == self.process.pid and isinstance(event, str):
            self.events.append((event, value))

    def _read_stderr(self) -> None:
        for _ in range(16):
            try:
                data = os.read(self._stderr_fd, _READ)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            room = STDERR_KEPT - len(self._stderr_head)
            if room > 0:
                self._stderr_head += data[:room]
                data = data[room:]
            self._stderr += data
            if len(self._stderr) > STDERR_KEPT:
                del self._stderr[:-STDERR_KEPT]
                self._stderr_dropped = True

    def stderr_excerpt(self, lines: int = 10) -> str:
        """The first and the last `lines` lines the child wrote on standard
        error (all of it where that is no more)."""
        said = self._stderr_head + (b"\n...\n" if self._stderr_dropped else b"") + self._stderr
        kept = said.decode("utf-8", "backslashreplace").rstrip("\n").splitlines()
        if len(kept) <= 2 * lines:
            return "\n".join(kept)
        return "\n".join([*kept[:lines], f"... ({len(kept) - 2 * lines} lines left out)", *kept[-lines:]])

    def fileno(self) -> int:
        return self._events_fd

    def stop(self) -> None:
        """Ends the child's process group (the child and what it started),
        reaps the child and closes the pipes; again is a no-op."""
        if self not in _running:
            return
        _running.discard(self)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):  # the group is gone
            pass
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:  # stuck in the kernel (a hung driver), where no signal reaches it
            code = -signal.SIGKILL
        if self.returncode is None:
            self.returncode = code
        self._read_stderr()
        os.close(self._events_fd)
        os.close(self._stderr_fd)
        try:
            os.unlink(self._config)
        except OSError:
            pass


def wait(children: Iterable[ChildProcess], deadline: float) -> None:
    """Returns when one of `children` may have written, or after TICK
    seconds, or at `deadline` (time.monotonic()), whichever is first."""
    timeout = min(TICK, max(0.0, deadline - time.monotonic()))
    with selectors.DefaultSelector() as selector:
        for child in children:
            if child.returncode is None:
                selector.register(child.fileno(), selectors.EVENT_READ)
                selector.register(child._stderr_fd, selectors.EVENT_READ)
        if selector.get_map():
            selector.select(timeout)
        else:
            time.sleep(timeout)


def ending(returncode: int) -> str:
    """How a child process that did not finish ended (the doctor's and the kit's words)."""
    if returncode < 0:
        try:
            return f"crashed: signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"crashed: signal {-returncode}"
    return f"crashed: exit status {returncode}"


def stop_children() -> None:
    for child in list(_running):
        child.stop()


atexit.register(stop_children)


def _on_signal(signum: int, frame: Any) -> None:
    stop_children()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # ends this process as the signal would have


def stop_children_on_signals() -> None:
    """For a command line (python -m dlbridge, its check): SIGTERM and SIGHUP
    end the children too, then this process as the signal would."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, _on_signal)


# -- the child's side ------------------------------------------------------------------

class Channel:
    """The child's end: events to the parent, one line each."""

    def __init__(self, fd: int):
        os.set_inheritable(fd, False)  # a program this child starts does not get it
        self._fd = fd

    def send(self, event: str, value: Any = None) -> None:
        data = (json.dumps([os.getpid(), event, value]) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data):]


def open_channel(argv: list[str]) -> tuple[Channel, list[str]]:
    """In the child, with its ``sys.argv[1:]`` (FD CONFIG ARGS...): sets
    ``sys.path`` to the parent's; returns the channel and ARGS."""
    fd, config, *args = argv
    with open(config) as file:
        sys.path[:] = json.load(file)["path"]
    return Channel(int(fd)), args
