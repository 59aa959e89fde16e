"""Every dlbridge benchmark, as one table of ratios with their goals (issue 5).

    python benchmarks/run.py                  # the full suite (a few minutes)
    python benchmarks/run.py --quick          # smoke pass for CI (under about a minute)
    python benchmarks/run.py --no-callgrind   # without the valgrind instruction counts
    python benchmarks/run.py --only exchange,arguments

Groups, in the order they run:

- exchange  (exchange.py): per-call DLPack exchange against NumPy and PyTorch;
- arguments (arguments.py): a compiled function's array argument, with
  dlbridge's converter against Cython, nanobind and pybind11 (issue 12);
- copies    (copies.py): CPU copies against NumPy, as bandwidth ratios;
- callgrind (instructions.py): instructions per from_dlpack call (valgrind);
- gpu       (gpu.py): GPU copies against cudaMemcpyAsync and exchange against
  PyTorch on CUDA (issue 4); every row skipped, saying why, without a GPU.

Method (docs/performance.md; benchmarks/_harness.py): each ratio is measured
in this one process on the same input, the two sides interleaved in random
order over many short samples, minimum against minimum; callgrind counts are
N and 2N iterations differenced. Every row shows its goal and whether it is
met; nothing asserts, and the exit status is 0 whatever the verdicts.
--quick takes few samples (and N=2,000 for callgrind): its figures are for
checking that the suite runs, not for quoting.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import dlbridge  # noqa: E402
import arguments  # noqa: E402
import copies  # noqa: E402
import exchange  # noqa: E402
import gpu  # noqa: E402
import instructions  # noqa: E402
from _harness import cpu_model, table  # noqa: E402

GROUPS = ("exchange", "arguments", "copies", "callgrind", "gpu")


def environment() -> list[str]:
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch_version = "not installed"
    info = dlbridge.build_info()
    return [
        f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}",
        f"python {platform.python_version()} ({platform.python_implementation()}), numpy {np.__version__}, "
        f"torch {torch_version}, dlbridge {dlbridge.__version__} ({info['compiler']}, {info['cpp_std']}), "
        f"{instructions.valgrind_version() or 'valgrind not installed'}",
        f"dlbridge from {os.path.dirname(os.path.abspath(dlbridge.__file__))}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke pass: few samples, small callgrind N")
    parser.add_argument("--no-callgrind", action="store_true",
                        help="skip the valgrind instruction counts (the callgrind group and the arguments' notes)")
    parser.add_argument("--only", help=f"comma-separated groups to run, of {','.join(GROUPS)}")
    parser.add_argument("-n", type=int, help=f"callgrind iterations N (default {instructions.FULL_N}, "
                                             f"--quick {instructions.QUICK_N})")
    args = parser.parse_args(argv)
    chosen = set(GROUPS) if not args.only else {g.strip() for g in args.only.split(",")}
    if chosen - set(GROUPS):
        parser.error(f"unknown groups {sorted(chosen - set(GROUPS))}; choose from {','.join(GROUPS)}")
    groups = tuple(g for g in GROUPS if g in chosen)
    if args.no_callgrind:
        groups = tuple(g for g in groups if g != "callgrind")

    start = time.perf_counter()
    command = "python benchmarks/run.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    print(f"command: {command}")
    for line in environment() + (gpu.environment() if "gpu" in groups else []):
        print(line)
    print(flush=True)

    rows = []
    timings = []
    for group in groups:
        t0 = time.perf_counter()
        if group == "exchange":
            rows += exchange.rows(args.quick)
        elif group == "arguments":
            rows += arguments.rows(args.quick, callgrind=not args.no_callgrind)
        elif group == "copies":
            rows += copies.rows(args.quick)
        elif group == "callgrind":
            rows += instructions.rows(args.quick, args.n)
        elif group == "gpu":
            rows += gpu.rows(args.quick)
        timings.append(f"{group} {time.perf_counter() - t0:.0f} s")

    print(table(rows))
    print()
    print("notes:")
    width = len(str(len(rows)))
    for i, r in enumerate(rows, 1):
        print(f"  {i:>{width}}. {r.name}: {r.note}")
    goals = [r for r in rows if r.verdict in ("met", "NOT met")]
    met = sum(r.verdict == "met" for r in goals)
    skipped = sum(r.verdict == "skipped" for r in rows)
    print()
    print(f"goals met: {met} of {len(goals)}" + (f" ({skipped} skipped)" if skipped else "")
          + ("; --quick figures are a smoke pass, not results" if args.quick else ""))
    print(f"elapsed: {time.perf_counter() - start:.0f} s ({', '.join(timings)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
