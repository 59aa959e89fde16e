"""Instructions per call, counted by valgrind's callgrind: the deterministic
cross-check of the timings (docs/performance.md, "Method").

Each target runs in its own `valgrind --tool=callgrind` subprocess, once with
N and once with 2N iterations of the same loop; the difference of the two
whole-run totals divided by N is the cost of one iteration, with interpreter
start-up, imports and teardown cancelled out. Runs use PYTHONHASHSEED=0,
one OpenBLAS/OpenMP thread (idle pool threads spin and make the totals vary)
and, where it works, `setarch -R` (no address randomisation); so set up, two
runs of the same program collect the same total to the instruction. Targets:

- dlbridge: ``dlbridge.from_dlpack(np_arr)``;
- numpy:    ``np.from_dlpack(np_arr)`` (the peer);
- baseline: ``len(t)`` on a 1-tuple: the loop plus a bare C call
  (not run by --quick).

Every child imports NumPy and dlbridge and builds the same 4x4 float32 array,
whatever it then loops over. The gated ratio is dlbridge / numpy per
iteration, loop included, like the timings (goal <= 0.7); the net figures
(baseline subtracted) are given beside it.

    python benchmarks/instructions.py [--quick] [-n N]    # this row only
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Row, table  # noqa: E402

TARGETS = ("dlbridge", "numpy", "baseline")
NAME = "callgrind Ir: dlbridge.from_dlpack(np_arr) / np.from_dlpack(np_arr)"
GOAL = 0.7
FULL_N, QUICK_N = 20_000, 2_000


def child(target: str, n: int) -> None:
    """The measured program (runs under valgrind)."""
    import numpy as np

    import dlbridge
    a = np.ones((4, 4), dtype=np.float32)
    f, x = {"dlbridge": (dlbridge.from_dlpack, a), "numpy": (np.from_dlpack, a),
            "baseline": (len, (0,))}[target]

    def run(f, x, n):
        for _ in range(n):
            f(x)

    run(f, x, n)


def setarch_prefix() -> list[str]:
    """["setarch", <arch>, "-R"] if it works here (containers may forbid it), else []."""
    cmd = ["setarch", platform.machine(), "-R"]
    if shutil.which("setarch"):
        try:
            if subprocess.run(cmd + ["true"], capture_output=True, timeout=30).returncode == 0:
                return cmd
        except (OSError, subprocess.TimeoutExpired):
            pass
    return []


def count(target: str, n: int, prefix: list[str], script: str = __file__) -> int:
    """Total instructions (Ir) callgrind collected over a child run
    (`script --child TARGET N`)."""
    # One thread per library: idle OpenBLAS/OpenMP workers spin, and their
    # instructions vary from run to run.
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    cmd = prefix + ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                    sys.executable, os.path.abspath(script), "--child", target, str(n)]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    found = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or not found:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr[-1000:]}")
    return int(found.group(1))


def valgrind_version() -> str | None:
    if not shutil.which("valgrind"):
        return None
    return subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()


def per_call(n: int, targets=TARGETS, jobs: int | None = None, script: str = __file__) -> tuple[dict[str, float], str]:
    """Ir per iteration of each target (of `script --child`), and a description of the setup."""
    prefix = setarch_prefix()
    work = [(t, k) for t in targets for k in (n, 2 * n)]
    jobs = jobs or max(1, min(len(work), os.cpu_count() or 1))
    with ThreadPoolExecutor(jobs) as pool:
        totals = dict(zip(work, pool.map(lambda w: count(w[0], w[1], prefix, script), work)))
    setup = (f"{valgrind_version()}, N={n} and 2N={2 * n}, PYTHONHASHSEED=0, "
             f"{'setarch -R' if prefix else 'ASLR on (setarch -R unavailable)'}")
    return {t: (totals[t, 2 * n] - totals[t, n]) / n for t in targets}, setup


def rows(quick: bool = False, n: int | None = None) -> list[Row]:
    if not shutil.which("valgrind"):
        return [Row("callgrind", NAME, "-", "-", None, "<=", GOAL, note="valgrind is not installed")]
    n = n or (QUICK_N if quick else FULL_N)
    try:
        ir, setup = per_call(n, TARGETS[:2] if quick else TARGETS)
    except RuntimeError as e:  # valgrind is there but failed: say so in the table
        return [Row("callgrind", NAME, "-", "-", None, "<=", GOAL, note=str(e).replace("\n", " ")[-600:])]
    ours, peer = ir["dlbridge"], ir["numpy"]
    note = setup
    if "baseline" in ir:
        base = ir["baseline"]
        note += (f"; loop + bare C call (len) {base:.0f} Ir; net of it: {ours - base:.0f} / {peer - base:.0f} Ir"
                 f" = {(ours - base) / (peer - base):.2f}")
    return [Row("callgrind", NAME, f"{ours:.0f} Ir", f"{peer:.0f} Ir", ours / peer, "<=", GOAL, note=note)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"N={QUICK_N} instead of {FULL_N}, and no baseline (net) runs")
    parser.add_argument("-n", type=int, help="iterations of the shorter run")
    parser.add_argument("--child", nargs=2, metavar=("TARGET", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    out = rows(args.quick, args.n)
    print(table(out))
    for r in out:
        print(f"  {r.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
