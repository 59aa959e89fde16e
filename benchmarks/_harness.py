"""The shared method of every benchmark here (docs/performance.md, "Method").

Both sides of a ratio run in this process on the same input. Each side is a
statement compiled into its own loop function whose names are local variables
(the timeit way: no global or attribute lookups besides what the statement
itself does), so the harness adds the same few nanoseconds to both sides.
The sides are interleaved in random order over many short samples with the
garbage collector off; the minimum per-call time of each side is kept and
the ratio of minima is reported. Medians are recorded, never gated on.

A Row is one line of the results table: a measured value, its goal, and
whether the goal is met. No benchmark raises or asserts on a timing.
"""
from __future__ import annotations

import dataclasses
import gc
import os
import pathlib
import platform
import random
import statistics
import subprocess
import time
from typing import Any

_perf = time.perf_counter_ns


def loop(stmt: str, **names: Any):
    """A function run(n) -> ns that executes `stmt` n times, with `names` as locals."""
    params = ", ".join(names)
    source = (f"def _make({params}):\n"
              f"    def _run(_n, _perf=_perf):\n"
              f"        _t0 = _perf()\n"
              f"        for _ in range(_n):\n"
              f"            {stmt}\n"
              f"        return _perf() - _t0\n"
              f"    return _run\n")
    scope = {"_perf": _perf}
    exec(compile(source, f"<benchmark: {stmt}>", "exec"), scope)
    # Closure variables are as cheap as locals (LOAD_DEREF).
    return scope["_make"](**names)


@dataclasses.dataclass
class Timing:
    """Per-call nanoseconds of one side: minimum and median over the samples."""
    min_ns: float
    median_ns: float
    samples: int
    loops: int


def compare(sides: dict[str, Any], *, sample_ns: float, samples: int, min_samples: int = 2,
            budget_s: float | None = None) -> dict[str, Timing]:
    """Times each side (name -> run(n) from loop()) interleaved in random order.

    Each sample runs `loops` calls, chosen so that the slowest side's sample
    takes about `sample_ns`. `samples` rounds are taken, fewer if `budget_s`
    would be exceeded, never fewer than `min_samples`.
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        # Warm-up (one call of each side: first touches, allocator growth),
        # then calibration: one more call unless calls are long, then more
        # calls while short.
        per_call = {name: run(1) for name, run in sides.items()}
        if max(per_call.values()) < sample_ns:
            per_call = {name: run(1) for name, run in sides.items()}
        loops = 1
        while max(per_call.values()) * loops < sample_ns / 4 and loops < 1 << 24:
            loops *= 4
            per_call = {name: run(loops) / loops for name, run in sides.items()}
        loops = max(1, int(sample_ns / max(max(per_call.values()), 1.0)))
        if budget_s is not None:
            round_ns = sum(per_call.values()) * loops
            samples = max(min_samples, min(samples, int(budget_s * 1e9 / max(round_ns, 1.0))))
        times: dict[str, list[float]] = {name: [] for name in sides}
        order = list(sides.items())
        for _ in range(samples):
            random.shuffle(order)
            for name, run in order:
                times[name].append(run(loops) / loops)
    finally:
        if was_enabled:
            gc.enable()
    return {name: Timing(min(t), statistics.median(t), len(t), loops) for name, t in times.items()}


def cpu_model() -> str:
    """The CPU's model name, the hypervisor where this is a guest, and the
    data caches one core sees: copy speeds depend on them."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    model = fields.get("Model name", platform.processor() or platform.machine()).strip()
    hypervisor = fields.get("Hypervisor vendor", "").strip()
    return model + (f" ({hypervisor} guest)" if hypervisor else "") + f", caches {cpu_caches()}"


def cpu_caches() -> str:
    """'L1d 32K, L2 512K, L3 32768K (shared by CPUs 0-1)': the data and
    unified caches of CPU 0, as Linux reports them; 'unknown' elsewhere."""
    caches = []
    for index in sorted(pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size, shared = ((index / name).read_text().strip()
                                         for name in ("level", "type", "size", "shared_cpu_list"))
        except OSError:
            continue
        if kind == "Instruction":
            continue
        caches.append(f"L{level}{'d' if kind == 'Data' else ''} {size}"
                      + (f" (shared by CPUs {shared})" if "-" in shared or "," in shared else ""))
    return ", ".join(caches) or "unknown"


@dataclasses.dataclass
class Row:
    """One line of the results table.

    value is compared with goal by op ("<=" or ">="); op None makes an
    informational row (no goal). value None means the row was not measured
    (`note` says why).
    """
    group: str
    name: str
    ours: str
    peer: str
    value: float | None
    op: str | None
    goal: float | None
    unit: str = "x"
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "skipped"
        if self.op is None:
            return "info"
        met = self.value <= self.goal if self.op == "<=" else self.value >= self.goal
        return "met" if met else "NOT met"

    def cells(self) -> list[str]:
        value = "n/a" if self.value is None else (f"{self.value:.1f} {self.unit}" if self.unit == "ns"
                                                    else f"{self.value:.2f}")
        goal = "-" if self.op is None else (f"{self.op} {self.goal:.0f} {self.unit}" if self.unit == "ns"
                                            else f"{self.op} {self.goal:.2f}")
        return [self.name, self.ours, self.peer, value, goal, self.verdict]


HEADER = ["benchmark", "ours", "peer", "value", "goal", "verdict"]


def table(rows: list[Row]) -> str:
    """A Markdown table of the rows, one group heading row where the group changes."""
    cells = [HEADER] + [r.cells() for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    right = {1, 2, 3, 4}

    def line(c):
        return "| " + " | ".join(v.rjust(w) if i in right else v.ljust(w)
                                 for i, (v, w) in enumerate(zip(c, widths))) + " |"

    out = [line(HEADER), "| " + " | ".join(("-" * (w - 1) + ":") if i in right else "-" * w
                                          for i, w in enumerate(widths)) + " |"]
    out += [line(r.cells()) for r in rows]
    return "\n".join(out)


def ns(t: float) -> str:
    return f"{t:.1f} ns" if t < 10_000 else f"{t / 1000:.1f} us"


def gbps(nbytes: int, t_ns: float) -> str:
    return f"{nbytes / t_ns:.2f} GB/s"


def main(doc: str, rows_fn, argv: list[str] | None = None) -> int:
    """The command line of one benchmark script: its table, full or --quick."""
    import argparse
    import sys

    import numpy as np

    import dlbridge

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke pass: few samples")
    args = parser.parse_args(argv)
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, dlbridge {dlbridge.__version__}")
    rows = rows_fn(args.quick)
    print(table(rows))
    print("notes:")
    for i, r in enumerate(rows, 1):
        print(f"  {i}. {r.name}: {r.note}")
    return 0

