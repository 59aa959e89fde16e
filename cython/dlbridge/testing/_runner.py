"""Runs the kit's clauses in child processes, so that a library which
crashes, exits, hangs or forks on a clause fails that clause and not the run.

``python -m dlbridge.testing._child FD CONFIG SIDE SPEC IDS`` loads SPEC
(``MODULE:NAME``), runs the clauses of SIDE that IDS names (comma-separated,
in order: those of the run not yet done), and sends its events on the
channel of dlbridge._child_process: ``start`` with a clause's id before the
clause, ``result`` after it, ``done`` when no clause is left, ``error`` when
SPEC cannot be loaded. A clause's verdict is
taken only from the child the kit started, and a child that ends before
``done``, or with a non-zero status, fails the clause in flight (the next
one, between clauses; the last one, after it), with the end of what it
wrote on standard error; the parent then starts a new child from the next
clause.
"""
from __future__ import annotations

import importlib
import time
from typing import Any, Callable, Iterable

from dlbridge._child_process import ChildProcess, ending, wait
from dlbridge.testing._model import FAIL, Consumer, Producer, Result, describe
from dlbridge.testing._registry import clauses, selected


class SpecError(Exception):
    """A MODULE:NAME that does not name a callable, or whose module does not load."""


def load(spec: str) -> Callable[..., Any]:
    """The callable named by ``MODULE:NAME`` (NAME may be dotted), in this process."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise SpecError(f"expected MODULE:NAME, got {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
    except BaseException as error:  # SystemExit and KeyboardInterrupt at import included
        raise SpecError(f"cannot load {spec}: {describe(error)}") from None
    if not callable(target):
        raise SpecError(f"{spec} is {type(target).__name__}, not callable")
    return target


def subject(side: str, spec: str) -> Producer | Consumer:
    return (Producer if side == "producer" else Consumer)(load(spec), spec)


def seconds(value: Any, what: str = "timeout") -> float:
    """`value` as a positive, finite number of seconds; ValueError naming it otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0 < number < float("inf"):
        raise ValueError(f"{what}: expected a positive number of seconds, got {value!r}")
    return number


def seconds_argument(text: str) -> float:
    """`seconds` as an argparse type (the kit's and the doctor's command lines)."""
    import argparse
    try:
        return seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None


def run_isolated(side: str, spec: str, *, timeout: float = 60.0, load_timeout: float = 120.0,
                 only: str | Iterable[str] | None = None) -> list[Result]:
    """The verdict of every clause of `side` (or of those `only` names:
    _registry.selected) on the subject `spec`, each clause given `timeout`
    seconds (and each child `load_timeout` to import the subject). Raises
    SpecError when the spec does not load."""
    timeout, load_timeout = seconds(timeout), seconds(load_timeout, "load_timeout")
    order = selected(side, only)
    results: list[Result] = []
    while len(results) < len(order):
        results += _child(side, spec, len(results), order, timeout, load_timeout)
    return results


def check_loads(side: str, spec: str, *, load_timeout: float = 120.0) -> None:
    """Raises SpecError unless `spec` loads, in a child process (a module that
    crashes or exits at import takes only the child down)."""
    order, limit = clauses(side), seconds(load_timeout, "load_timeout")
    _child(side, spec, len(order), order, limit, limit)


def _child(side: str, spec: str, first: int, order: list, timeout: float, load_timeout: float) -> list[Result]:
    """The results one child gives, from clause `first` on; where it ends
    before it is done, the last is the failing verdict of the clause it was in."""
    child = ChildProcess("dlbridge.testing._child", [side, spec, ",".join(c.id for c in order[first:])])
    results: list[Result] = []
    current: str | None = None
    done = False
    how = ""
    deadline = time.monotonic() + load_timeout
    try:
        while child.returncode is None:
            wait([child], deadline)
            child.read()
            for event, value in child.events:
                if event == "error":
                    raise SpecError(str(value))
                if event == "start":
                    current, deadline = str(value), time.monotonic() + timeout
                elif event == "result" and current is not None:
                    results.append(_result(value, order[first + len(results)]))
                    current = None
                elif event == "done":
                    done = True
            child.events.clear()
            if child.returncode is None and time.monotonic() >= deadline:
                how = f"timed out after {timeout if current or done else load_timeout:g} s"
                break
    finally:
        child.stop()
    if done and child.returncode == 0:
        return results
    if not how:
        how = ending(child.returncode) if child.returncode else "ended before it was done (exit status 0)"
        said = child.stderr_excerpt()
        if said:
            how += "; what it wrote on standard error:\n" + said
    if current is None and not results and first < len(order):
        raise SpecError(f"loading {spec}: {how}")
    if current is None and first + len(results) == len(order):  # after the last clause
        last = results.pop() if results else None
        if last is None:
            raise SpecError(f"loading {spec}: {how}")
        how = f"{how} (after this clause, which had found: {last.verdict}: {last.observed})"
    check = order[first + len(results)]
    results.append(Result(check.id, FAIL, how, check.title, check.source, check.cites))
    return results


def _result(value: Any, check: Any) -> Result:
    """A result event as a Result of `check`; one that is not (written by
    the subject over the kit's channel) is a failure of the clause."""
    try:
        result = Result(**value)
    except TypeError:
        result = None
    if result is None or result.clause != check.id:
        return Result(check.id, FAIL, f"the clause's result was not the kit's: {str(value)[:200]}", check.title,
                      check.source, check.cites)
    return result
