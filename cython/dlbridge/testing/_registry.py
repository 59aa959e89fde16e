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


def run(subject: Producer | Consumer, only: Iterable[str] | None = None) -> Iterator[Result]:
    """The verdict of each clause of the subject's side, in order; `only`
    restricts them to those ids."""
    wanted = None if only is None else set(only)
    for check in clauses(subject.side):
        if wanted is None or check.id in wanted:
            yield run_clause(check, subject)
