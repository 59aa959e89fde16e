"""The child process of dlbridge.testing._runner (its docstring says what
it writes); a module of its own so that ``-m`` runs it before anything has
imported it."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from dlbridge.testing._model import clauses, run_clause
from dlbridge.testing._runner import PATH_VARIABLE, SpecError, subject


def main(argv: list[str]) -> None:
    side, spec, fd, first = argv
    sys.path[:] = json.loads(os.environ.get(PATH_VARIABLE, "null")) or sys.path
    os.set_inheritable(int(fd), False)
    out = os.fdopen(int(fd), "w", closefd=False)

    def send(event: str, value: Any) -> None:
        out.write(json.dumps([event, value]) + "\n")
        out.flush()
    try:
        tested = subject(side, spec)
    except SpecError as error:
        send("error", str(error))
        os._exit(2)
    import faulthandler
    faulthandler.enable()  # a crash says where on stderr
    for check in clauses(side)[int(first):]:
        send("start", check.id)
        send("result", dataclasses.asdict(run_clause(check, tested)))
    sys.stdout.flush()
    os._exit(0)  # no interpreter shutdown: a library's atexit hooks and threads could still hang


if __name__ == "__main__":
    main(sys.argv[1:])
