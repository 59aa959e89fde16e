"""python -m dlbridge check: the conformance kit without pytest.

Runs every clause of the kit on a library's producer (``--producer
MODULE:FACTORY``) and/or consumer (``--consumer MODULE:FUNCTION``), each
subject in child processes (dlbridge.testing._runner), and prints each
clause's verdict (pass, warn, fail, n/a), what was observed and the
sentence of the specification it checks; ``--json`` prints one JSON object
instead. Exit status: 0 when no applicable clause fails (a WARN leaves it
0), 1 when one fails, 2 for a usage error or a subject that does not load,
3 when a subject had no applicable clause at all (nothing was checked: a
factory that declines every case is no pass). The text report shows at most ``SHOWN_LINES`` lines
of each observation; ``--json`` gives them whole.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap

from dlbridge._child_process import stop_children_on_signals
from dlbridge.testing._model import FAIL, NOT_APPLICABLE, PASS, VERDICTS, WARN, Result, nothing_checked
from dlbridge.testing._registry import clauses
from dlbridge.testing._runner import SpecError, run_isolated, seconds_argument

Section = tuple[str, str, list[Result]]  # (side, spec, results)
SHOWN_LINES = 12  # of an observation, in the text report


def summary(results: list[Result]) -> dict[str, int]:
    return {verdict: sum(r.verdict == verdict for r in results) for verdict in VERDICTS}


def format_text(sections: list[Section], width: int = 100) -> str:
    lines = []
    for side, spec, results in sections:
        lines.append(f"{side} {spec}")
        for r in results:
            lines.append(f"  {r.verdict.upper():4}  {r.clause}: {r.title}")
            observed = r.observed.splitlines() or [""]
            if len(observed) > SHOWN_LINES:
                observed = observed[:SHOWN_LINES] + [f"... ({len(observed) - SHOWN_LINES} lines more: --json has all)"]
            for text in [f"observed: {observed[0]}", *observed[1:], f"{r.source}: \"{r.cites}\""]:
                lines += textwrap.wrap(text, width=width, initial_indent=" " * 8, subsequent_indent=" " * 10)
        counts = summary(results)
        lines.append(f"  {counts[PASS]} passed, {counts[WARN]} warned, {counts[FAIL]} failed, "
                     f"{counts[NOT_APPLICABLE]} not applicable")
        lines.append("")
    return "\n".join(lines)


def as_json(sections: list[Section]) -> dict:
    import dlbridge
    return {"kit": f"dlbridge {dlbridge.__version__}",
            "subjects": [{"side": side, "spec": spec, "summary": summary(results),
                          "results": [dataclasses.asdict(r) for r in results]}
                         for side, spec, results in sections]}


def escape_unencodable_output() -> None:
    """Standard output writes what its encoding cannot (a lone surrogate in a
    library's message) as escapes, where it is a text stream that can."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def _only(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, list[str] | None]:
    """The clauses --clause names, by side (None: every clause); an id that
    is no clause, or a side checked with none of its clauses named, is a
    usage error."""
    if args.clause is None:
        return {"producer": None, "consumer": None}
    side_of = {c.id: side for side in ("producer", "consumer") for c in clauses(side)}
    unknown = [i for i in args.clause if i not in side_of]
    if unknown:
        parser.error(f"argument --clause: no clause {unknown[0]!r} (the report names each clause by its id)")
    only: dict[str, list[str] | None] = {side: [i for i in args.clause if side_of[i] == side]
                                         for side in ("producer", "consumer")}
    for side, specs in (("producer", args.producer), ("consumer", args.consumer)):
        if specs and not only[side]:
            parser.error(f"argument --clause: no {side} clause named, and a --{side} is checked")
    return only


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlbridge check", description=__doc__.splitlines()[0])
    parser.add_argument("--producer", action="append", default=[], metavar="MODULE:FACTORY",
                        help="FACTORY(shape, dtype, *, read_only=False) returns the library's array of 0, 1, 2, ...")
    parser.add_argument("--consumer", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="FUNCTION(producer) returns the library's array made from the producer")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.add_argument("--timeout", type=seconds_argument, default=60.0, metavar="SECONDS",
                        help="time each clause has before it fails as hung (default: %(default)g)")
    parser.add_argument("--clause", action="append", metavar="ID",
                        help="run only this clause (its id, as the report names it; again for more)")
    args = parser.parse_args(argv)
    if not args.producer and not args.consumer:
        parser.error("name a --producer MODULE:FACTORY, a --consumer MODULE:FUNCTION, or both")
    only = _only(parser, args)
    stop_children_on_signals()
    sections: list[Section] = []
    try:
        for side, specs in (("producer", args.producer), ("consumer", args.consumer)):
            sections += [(side, spec, run_isolated(side, spec, timeout=args.timeout, only=only[side]))
                         for spec in specs]
    except SpecError as error:
        print(f"python -m dlbridge check: {error}", file=sys.stderr)
        return 2
    escape_unencodable_output()
    print(json.dumps(as_json(sections), indent=2) if args.json else format_text(sections))
    if any(r.verdict == FAIL for _, _, results in sections for r in results):
        return 1
    empty = [f"{side} {spec}" for side, spec, results in sections if nothing_checked(results)]
    if empty:
        print(f"python -m dlbridge check: nothing was checked on {', '.join(empty)}: no clause applied "
              f"(each observation says why; a factory that declines every case is no pass)", file=sys.stderr)
        return 3
    return 0
