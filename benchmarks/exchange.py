"""Per-call cost of DLPack exchanges, as ratios against a peer doing the same work.

Method (docs/performance.md, benchmarks/_harness.py): both sides run in this
process on the same input, a 4x4 float32 array, interleaved in random order
over many short samples (about 2 ms each); each side's minimum is kept and the
ratio of minima is reported. Lower is better for dlbridge; 1.0 is parity.

    python benchmarks/exchange.py            # these rows only (run.py runs everything)
    python benchmarks/exchange.py --quick    # smoke pass (CI): a few samples
"""
from __future__ import annotations

import sys

import numpy as np

import dlbridge
import _harness
from _harness import Row, compare, loop, ns

# (name, (ours statement, names), (peer statement, names), goal); names are
# filled in by cases() from the inputs.
CASES = [
    ("dlbridge.from_dlpack(np_arr) / np.from_dlpack(np_arr)", "f(x)", "f(x)", 0.7),
    ("np.from_dlpack(dlb_arr) / np.from_dlpack(np_arr)", "f(x)", "f(x)", 1.0),
    ("dlb_arr.__dlpack__() / np_arr.__dlpack__()", "x.__dlpack__()", "x.__dlpack__()", 1.0),
    ("torch.from_dlpack(dlb_arr) / torch.from_dlpack(np_arr)", "f(x)", "f(x)", 1.0),
    ("dlbridge.from_dlpack(torch_t) / torch.from_dlpack(torch_t)", "f(x)", "f(x)", 0.5),
    # copy=False takes PyTorch's exchange table too (issue 24).
    ("dlbridge.asarray(torch_t, copy=False) / dlbridge.asarray(torch_t)", "f(x, copy=False)", "f(x)", 1.1),
]


def cases():
    """(name, ours loop, peer loop, goal) for each case; loops are None without torch."""
    a = np.ones((4, 4), dtype=np.float32)
    d = dlbridge.from_dlpack(a)
    try:
        import torch
    except ImportError:
        torch = None
    t = torch.ones((4, 4)) if torch else None
    sides = [
        (dict(f=dlbridge.from_dlpack, x=a), dict(f=np.from_dlpack, x=a)),
        (dict(f=np.from_dlpack, x=d), dict(f=np.from_dlpack, x=a)),
        (dict(x=d), dict(x=a)),
        (torch and dict(f=torch.from_dlpack, x=d), torch and dict(f=torch.from_dlpack, x=a)),
        (torch and dict(f=dlbridge.from_dlpack, x=t), torch and dict(f=torch.from_dlpack, x=t)),
        (torch and dict(f=dlbridge.asarray, x=t), torch and dict(f=dlbridge.asarray, x=t)),
    ]
    for (name, ours_stmt, peer_stmt, goal), (ours, peer) in zip(CASES, sides):
        if ours is None:
            yield name, None, None, goal
        else:
            yield name, loop(ours_stmt, **ours), loop(peer_stmt, **peer), goal


def rows(quick: bool = False) -> list[Row]:
    samples, sample_ns = (15, 1e6) if quick else (300, 2e6)
    out = []
    for name, ours, peer, goal in cases():
        if ours is None:
            out.append(Row("exchange", name, "-", "-", None, "<=", goal, note="torch is not installed"))
            continue
        r = compare({"ours": ours, "peer": peer}, sample_ns=sample_ns, samples=samples)
        o, p = r["ours"], r["peer"]
        out.append(Row("exchange", name, ns(o.min_ns), ns(p.min_ns), o.min_ns / p.min_ns, "<=", goal,
                       note=f"medians {ns(o.median_ns)} / {ns(p.median_ns)}, "
                            f"{o.samples} samples x {o.loops} calls"))
    return out


def main(argv: list[str] | None = None) -> int:
    return _harness.main(__doc__, rows, argv)


if __name__ == "__main__":
    sys.exit(main())
