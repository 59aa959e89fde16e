"""Per-call cost of DLPack exchanges, as ratios against a peer doing the same work.

Method (docs/performance.md): both sides run in this process on the same
input, interleaved in random order over many short samples; each side's
minimum is kept and the ratio of minima is reported. Lower is better for
dlbridge; a ratio of 1.0 is parity.

    python benchmarks/exchange.py            # full run
    python benchmarks/exchange.py --quick    # smoke pass (CI): a few samples, no verdicts
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Callable

import numpy as np

import dlbridge


def per_call_ns(fn: Callable[[], object], loops: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(loops):
        fn()
    return (time.perf_counter_ns() - start) / loops


def ratio(ours: Callable[[], object], peer: Callable[[], object], samples: int, loops: int) -> tuple[float, float]:
    """Minimum per-call time of each side over interleaved samples."""
    best = {"ours": float("inf"), "peer": float("inf")}
    sides = [("ours", ours), ("peer", peer)]
    for fn in (ours, peer):  # warm up
        per_call_ns(fn, loops)
    for _ in range(samples):
        random.shuffle(sides)
        for name, fn in sides:
            best[name] = min(best[name], per_call_ns(fn, loops))
    return best["ours"], best["peer"]


def cases():
    a = np.ones((4, 4), dtype=np.float32)
    d = dlbridge.from_dlpack(a)
    yield ("dlbridge.from_dlpack(np_arr) / np.from_dlpack(np_arr)",
           lambda: dlbridge.from_dlpack(a), lambda: np.from_dlpack(a))
    yield ("np.from_dlpack(dlb_arr) / np.from_dlpack(np_arr)",
           lambda: np.from_dlpack(d), lambda: np.from_dlpack(a))
    yield ("dlb_arr.__dlpack__() / np_arr.__dlpack__()",
           lambda: d.__dlpack__(), lambda: a.__dlpack__())
    try:
        import torch
    except ImportError:
        return
    t = torch.ones((4, 4))
    yield ("torch.from_dlpack(dlb_arr) / torch.from_dlpack(np_arr)",
           lambda: torch.from_dlpack(d), lambda: torch.from_dlpack(a))
    yield ("dlbridge.from_dlpack(torch_t) / torch.from_dlpack(torch_t)",
           lambda: dlbridge.from_dlpack(t), lambda: torch.from_dlpack(t))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke pass: few samples")
    args = parser.parse_args(argv)
    samples, loops = (3, 200) if args.quick else (200, 2000)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, dlbridge {dlbridge.__version__}")
    print(f"{'case':62} {'ours ns':>9} {'peer ns':>9} {'ratio':>6}")
    for name, ours, peer in cases():
        o, p = ratio(ours, peer, samples, loops)
        print(f"{name:62} {o:9.1f} {p:9.1f} {o / p:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
