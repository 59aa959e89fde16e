"""The child process of dlbridge.testing._runner (its docstring says what
it sends); a module of its own so that ``-m`` runs it before anything has
imported it."""
from __future__ import annotations

import dataclasses
import faulthandler
import os
import sys

from dlbridge._child_process import open_channel
from dlbridge.testing._model import run_clause
from dlbridge.testing._registry import clauses
from dlbridge.testing._runner import SpecError, subject


def main(argv: list[str]) -> None:
    channel, (side, spec, ids) = open_channel(argv)
    try:
        tested = subject(side, spec)
    except SpecError as error:
        channel.send("error", str(error))
        os._exit(2)
    faulthandler.enable()  # a crash says where, on the standard error the parent keeps
    by_id = {check.id: check for check in clauses(side)}
    for check in (by_id[i] for i in ids.split(",") if i):  # the parent's selection, from where it is
        channel.send("start", check.id)
        channel.send("result", dataclasses.asdict(run_clause(check, tested)))
    channel.send("done")
    sys.stdout.flush()
    os._exit(0)  # no interpreter shutdown: a library's atexit hooks and threads could still hang


if __name__ == "__main__":
    main(sys.argv[1:])
