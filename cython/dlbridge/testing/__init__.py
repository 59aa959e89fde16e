"""dlbridge.testing: a DLPack conformance kit for any array library, and its pytest plugin.

Each clause checks one requirement of the DLPack specification (or of the
CUDA array interface, NumPy's array interface or the buffer protocol) on a
library's arrays, and cites it. A library takes part through one of two
callables (docs/check-your-library.md):

- a FACTORY, called as ``FACTORY(shape, dtype, *, read_only=False)`` with
  `shape` a tuple of ints and `dtype` a NumPy name such as ``"float32"``,
  returns one of the library's arrays holding 0, 1, 2, ... in C order
  (converted as NumPy's ``astype`` does: for bool, 0 is False and the rest
  True): read-only data when `read_only` is true, otherwise the library's
  usual array (writable where the library has writable arrays); the GPU
  tier also passes ``device="cuda"``.
  It raises NotImplementedError to decline a case;
- a FUNCTION, called with a producer object, returns the library's array
  made from it (the kit reads it back through DLPack or the buffer
  protocol). It raises NotImplementedError to decline a case; a library
  whose arrays have only some numbers of dimensions sets
  ``FUNCTION.dlpack_ndims`` (such as ``(1,)``).

Run the clauses with ``pytest -p dlbridge.testing --dlpack-producer
MODULE:FACTORY`` (or ``--dlpack-consumer MODULE:FUNCTION``): one test per
clause, ``dlpack::<clause id>``, marked ``dlpack``; a clause that does not
apply is skipped with the reason. Or without pytest: ``python -m dlbridge
check --producer MODULE:FACTORY``, or ``check(side, spec)`` here. Either
way each subject runs in child processes, so a library that crashes or
hangs on a clause fails that clause, not the run; ``check_producer`` and
``check_consumer`` run in this process instead (for a debugger).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterable

from dlbridge.testing._model import (FAIL, NOT_APPLICABLE, PASS, WARN, Clause, Consumer, Producer, Result,
                                     nothing_checked)
from dlbridge.testing._registry import clauses, run
from dlbridge.testing._runner import SpecError, check_loads, run_isolated, seconds_argument

__all__ = ["PASS", "WARN", "FAIL", "NOT_APPLICABLE", "Clause", "Result", "SpecError", "KitWarning", "clauses",
           "check", "check_producer", "check_consumer"]


class KitWarning(UserWarning):
    """A WARN verdict in the pytest plugin: the clause passes, and this says
    what the library does that is not what the specification recommends."""


def check(side: str, spec: str, *, timeout: float = 60.0, only: str | Iterable[str] | None = None) -> list[Result]:
    """Every clause of `side` ("producer" or "consumer"), or those whose ids
    `only` names (one id or several), on the callable that `spec`
    ("MODULE:NAME") names, in child processes; `timeout` seconds per clause.
    Raises SpecError when `spec` does not load, ValueError for an id that is
    no clause of `side`."""
    if side not in ("producer", "consumer"):
        raise ValueError(f"expected side 'producer' or 'consumer', got {side!r}")
    return run_isolated(side, spec, timeout=timeout, only=only)


def check_producer(factory: Callable[..., Any], only: str | Iterable[str] | None = None) -> list[Result]:
    """Every producer clause (or those of `only`) on `factory`, in this process."""
    return list(run(Producer(factory, _name(factory)), only))


def check_consumer(function: Callable[[Any], Any], only: str | Iterable[str] | None = None) -> list[Result]:
    """Every consumer clause (or those of `only`) on `function`, in this process."""
    return list(run(Consumer(function, _name(function)), only))


def _name(subject: Any) -> str:
    """How the report names a callable given in this process."""
    try:
        return str(getattr(subject, "__qualname__", None) or type(subject).__qualname__)
    except Exception:  # a callable whose attribute lookup raises
        return type(subject).__qualname__


# -- the pytest plugin (pytest -p dlbridge.testing) ------------------------------------

_OPTIONS = (("producer", "--dlpack-producer", "MODULE:FACTORY"), ("consumer", "--dlpack-consumer", "MODULE:FUNCTION"))


def pytest_addoption(parser) -> None:
    group = parser.getgroup("dlpack", "DLPack conformance kit (dlbridge.testing)")
    for side, option, metavar in _OPTIONS:
        group.addoption(option, action="append", default=[], metavar=metavar,
                        help=f"run the kit's {side} clauses on this callable (repeatable)")
    group.addoption("--dlpack-timeout", type=seconds_argument, default=60.0, metavar="SECONDS",
                    help="time each clause has before it fails as hung (default: 60)")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "dlpack: a clause of dlbridge's DLPack conformance kit")


def pytest_collection_modifyitems(session, config, items) -> None:
    import pytest
    item_type = _item_type()
    for side, option, _ in _OPTIONS:
        specs = config.getoption(option.lstrip("-").replace("-", "_"))
        for spec in specs:
            try:
                check_loads(side, spec)  # in a child: a module that crashes or exits at import is a usage error
            except SpecError as error:
                raise pytest.UsageError(f"{option}: {error}") from None
            for c in clauses(side):
                name = c.id if len(specs) == 1 else f"{c.id}[{spec}]"
                item = item_type.from_parent(session, name=name, nodeid=f"dlpack::{name}", side=side, spec=spec,
                                             clause=c)
                item.add_marker("dlpack")
                items.append(item)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    for subject in config.__dict__.get("_dlbridge_kit_unchecked", []):
        terminalreporter.write_line(f"dlbridge.testing: nothing was checked on {subject}: no clause applied (each "
                                    f"skip says why; a factory that declines every case is no pass)", red=True)


def pytest_sessionfinish(session, exitstatus) -> None:
    import pytest
    if session.config.__dict__.get("_dlbridge_kit_unchecked") and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@functools.cache
def _item_type() -> Any:
    import pytest

    class ClauseFailed(Exception):
        pass

    class DLPackClause(pytest.Item):
        """One clause of the kit on one subject; all the subject's clauses run
        (in child processes) when its first item runs."""

        def __init__(self, *, side: str, spec: str, clause: Clause, **kwargs):
            super().__init__(**kwargs)
            self.side, self.spec, self.clause = side, spec, clause

        def runtest(self) -> None:
            found = self.config.__dict__.setdefault("_dlbridge_kit_results", {})
            if (self.side, self.spec) not in found:
                timeout = self.config.getoption("dlpack_timeout")
                found[self.side, self.spec] = {r.clause: r for r in run_isolated(self.side, self.spec,
                                                                                 timeout=timeout)}
                if nothing_checked(found[self.side, self.spec].values()):
                    self.config.__dict__.setdefault("_dlbridge_kit_unchecked", []).append(f"{self.side} {self.spec}")
            result = found[self.side, self.spec][self.clause.id]
            if result.verdict == NOT_APPLICABLE:
                pytest.skip(f"not applicable: {result.observed}")
            if result.verdict == WARN:  # passes: what is required holds
                import warnings
                warnings.warn(KitWarning(f"{self.clause.id} on {self.spec}: {result.observed}"))
            if result.verdict == FAIL:
                raise ClauseFailed(result)

        def repr_failure(self, excinfo, style=None):
            if isinstance(excinfo.value, ClauseFailed):
                r = excinfo.value.args[0]
                return f"{r.title}\nobserved: {r.observed}\n{r.source}: \"{r.cites}\""
            return super().repr_failure(excinfo)

        def reportinfo(self):
            return self.path, None, f"dlpack {self.side} clause {self.clause.id} on {self.spec}"

    return DLPackClause
