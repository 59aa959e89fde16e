"""Runs the kit's clauses in child processes, so that a library which
crashes, exits or hangs on a clause fails that clause and not the run.

``python -m dlbridge.testing._child SIDE SPEC FD FIRST`` loads SPEC
(``MODULE:NAME``), runs the clauses of SIDE from the one numbered FIRST on,
and writes one JSON line per event on file descriptor FD: ``["start", id]``
before a clause, ``["result", {...}]`` after it, ``["error", message]``
when SPEC cannot be loaded. The parent (``run_isolated``) gives the clause
in flight a failing verdict when its child ends or times out, and starts a
new child from the next clause. The child's ``sys.path`` is the parent's.
"""
from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Any, Callable

from dlbridge.testing._model import FAIL, Consumer, Producer, Result, clauses, describe

PATH_VARIABLE = "DLBRIDGE_KIT_PATH"


class SpecError(Exception):
    """A MODULE:NAME that does not name a callable."""


def load(spec: str) -> Callable[..., Any]:
    """The callable named by ``MODULE:NAME`` (NAME may be dotted)."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise SpecError(f"expected MODULE:NAME, got {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
    except Exception as error:
        raise SpecError(f"cannot load {spec}: {describe(error)}") from None
    if not callable(target):
        raise SpecError(f"{spec} is {type(target).__name__}, not callable")
    return target


def subject(side: str, spec: str) -> Producer | Consumer:
    return (Producer if side == "producer" else Consumer)(load(spec), spec)


def ending(returncode: int) -> str:
    """How a child process that wrote no more ended (also the doctor's words)."""
    if returncode < 0:
        try:
            return f"crashed: signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"crashed: signal {-returncode}"
    return f"crashed: exit status {returncode}"


def run_isolated(side: str, spec: str, *, timeout: float = 60.0, load_timeout: float = 120.0) -> list[Result]:
    """The verdict of every clause of `side` on the subject `spec`, each
    clause given `timeout` seconds (and the child `load_timeout` to import
    the subject). Raises SpecError when the spec does not load."""
    order = clauses(side)
    results: list[Result] = []
    while len(results) < len(order):
        results += _child(side, spec, len(results), order, timeout, load_timeout)
    return results


def _child(side: str, spec: str, first: int, order: list, timeout: float, load_timeout: float) -> list[Result]:
    """The results one child gives, from clause `first` on, ending with the
    failing verdict of the clause it was in when it died or hung."""
    read, write = os.pipe()
    try:
        command = [sys.executable, *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
                   "-m", "dlbridge.testing._child", side, spec, str(write), str(first)]
        env = dict(os.environ, **{PATH_VARIABLE: json.dumps(sys.path)})
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                                   pass_fds=(write,), start_new_session=True)
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    results: list[Result] = []
    current: str | None = None
    pending = b""
    deadline = time.monotonic() + load_timeout
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(read, selectors.EVENT_READ)
            while True:
                if not selector.select(max(0.0, deadline - time.monotonic())):
                    how = f"timed out after {timeout if current else load_timeout:g} s"
                    break
                data = os.read(read, 1 << 16)
                if not data:
                    how = ending(_reap(process))
                    break
                *lines, pending = (pending + data).split(b"\n")
                for line in lines:
                    event, value = json.loads(line)
                    if event == "error":
                        raise SpecError(value)
                    if event == "start":
                        current, deadline = value, time.monotonic() + timeout
                    else:
                        results.append(Result(**value))
                        current = None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        _reap(process)
        os.close(read)
    done = first + len(results)
    if done < len(order):  # the child stopped inside a clause, or while loading the subject
        if current is None and not results:
            raise SpecError(f"loading {spec}: {how}")
        check = order[done]
        results.append(Result(check.id, FAIL, how, check.title, check.source, check.cites))
    return results


def _reap(process: subprocess.Popen) -> int:
    try:
        return process.wait(10)
    except subprocess.TimeoutExpired:  # stuck in the kernel
        return -signal.SIGKILL
