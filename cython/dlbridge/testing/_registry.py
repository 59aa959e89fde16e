"""Every clause of the kit, in the order of the report, and running them.

The clause modules register their clauses into _model.CLAUSES as they are
imported; this module imports them all, and none of them imports it (nor
does _model), so the kit's modules import one another without a cycle.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from dlbridge.testing import _consumer, _exchange, _gpu, _interfaces, _producer
from dlbridge.testing._model import CLAUSES, Clause, Consumer, Producer, Result, run_clause

# The clause modules, in the order of the report.
_MODULES = tuple(module.__name__ for module in (_producer, _interfaces, _exchange, _consumer, _gpu))


def clauses(side: str) -> list[Clause]:
    """Every clause of `side`, in the order of the report: the GPU tier
    last, then by module, then as each module defines them; whatever order
    the modules were imported in (a child process must number them as its
    parent does)."""
    return sorted((c for c in CLAUSES if c.side == side),
                  key=lambda c: (c.tier == "gpu", _MODULES.index(c.check.__module__)))


def selected(side: str, only: str | Iterable[str] | None = None) -> list[Clause]:
    """The clauses of `side` to run, in the order of the report: every one,
    or those whose ids `only` names (one id, or an iterable of them).
    Raises ValueError for an id that is no clause of `side`."""
    order = clauses(side)
    if only is None:
        return order
    try:
        wanted = {only} if isinstance(only, str) else set(only)  # read once
    except TypeError:  # not iterable, or holding what no id is
        wanted = None
    if wanted is None or not all(isinstance(i, str) for i in wanted):
        raise TypeError(f"only: expected a clause id or an iterable of clause ids (str), got {type(only).__name__}")
    unknown = sorted(str(i) for i in wanted - {c.id for c in order})
    if unknown:
        raise ValueError(f"no {side} clause {unknown[0]!r} (python -m dlbridge check's report and "
                         f"dlbridge.testing.clauses({side!r}) name each clause by its id)")
    return [c for c in order if c.id in wanted]


def run(subject: Producer | Consumer, only: str | Iterable[str] | None = None) -> Iterator[Result]:
    """The verdict of each clause of the subject's side, in order; `only`
    restricts them to those ids (selected)."""
    for check in selected(subject.side, only):
        yield run_clause(check, subject)
