"""GPU copies and exchange (issue 4): bandwidth ratios against cudaMemcpyAsync
and our own contiguous copy, and per-call exchange against PyTorch.

    python benchmarks/gpu.py [--quick]

Needs a GPU and PyTorch built for CUDA (CuPy too, for cudaMemcpyAsync and its
ascontiguousarray); without them every row is reported skipped, saying why.
GPU work is timed with CUDA events on the legacy default stream, where both
dlbridge and PyTorch's default stream queue it: median of 20 timed runs after
2 warm-up runs, on buffers of 256 MiB. Each row's two sides run in this
process on the same buffers, alternating run by run.
"""
from __future__ import annotations

import statistics

import dlbridge
from _harness import Row, compare, gbps, loop, ns

MIB = 1 << 20
NBYTES = 256 * MIB
RUNS, WARMUP = 20, 2
# (benchmark, op, goal): the goals of issue 4; None marks rows shown beside ours.
ROWS = [("contiguous copy", ">=", 0.90), ("fill", ">=", 0.90), ("same-size cast", ">=", 0.90),
        ("2-D transpose", ">=", 0.80), ("N-d strided copy", ">=", 0.50), ("pinned host to device", ">=", 0.90),
        ("pinned device to host", ">=", 0.90), ("from_dlpack(torch cuda)", "<=", 1.0),
        ("torch .contiguous() (transpose)", None, None), ("cupy ascontiguousarray (transpose)", None, None)]


def _gpu_missing() -> str:
    info = dlbridge.build_info()
    if info["gpu_count"] == 0:
        return f"no usable GPU ({info['cuda_status']})"
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "this PyTorch has no CUDA support"
    return ""


def _median_ms(sides: dict, runs: int) -> dict[str, float]:
    """Median milliseconds per call of each side, timed with CUDA events,
    the sides alternating run by run."""
    import torch
    times: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(WARMUP + runs):
        for name, fn in sides.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            if i >= WARMUP:
                times[name].append(start.elapsed_time(end))
    return {name: statistics.median(t) for name, t in times.items()}


def _bandwidth(name, nbytes, ours, peer, op, goal, runs, note, what=("ours", "peer")):
    t = _median_ms({what[0]: ours, what[1]: peer}, runs)
    o, p = t[what[0]], t[what[1]]
    return Row("gpu", name, gbps(nbytes, o * 1e6), gbps(nbytes, p * 1e6), p / o, op, goal, note=note)


def rows(quick: bool = False) -> list[Row]:
    missing = _gpu_missing()
    if missing:
        return [Row("gpu", name, "-", "-", None, op, goal, note=missing) for name, op, goal in ROWS]
    import torch
    try:
        import cupy
    except ImportError:
        cupy = None
    runs = 3 if quick else RUNS
    n = NBYTES // 4
    src = dlbridge.full(n, 1.5, dtype="float32", device="cuda")
    t_src = torch.from_dlpack(src)
    t_dst = torch.empty_like(t_src)

    def memcpy():  # cudaMemcpyAsync device to device, through PyTorch's copy_
        t_dst.copy_(t_src)

    note_copy = "dlbridge copy() against cudaMemcpyAsync device to device (torch copy_ of contiguous tensors)"
    out = [
        _bandwidth("contiguous copy", NBYTES, src.copy, memcpy, ">=", 0.90, runs, note_copy),
        _bandwidth("fill", NBYTES, lambda: dlbridge.full(n, 2.0, dtype="float32", device="cuda"), memcpy,
                   ">=", 0.90, runs, "dlbridge.full (allocation included) against the same memcpy"),
        _bandwidth("same-size cast", NBYTES, lambda: dlbridge.asarray(src, dtype="int32"), memcpy, ">=", 0.90,
                   runs, "float32 -> int32 against the same memcpy"),
    ]
    contiguous_ms = _median_ms({"copy": src.copy}, runs)["copy"]
    side = 1 << 13  # 8192 x 8192 float32 = 256 MiB
    square = dlbridge.full((side, side), 1.0, dtype="float32", device="cuda")
    t = _median_ms({"T": lambda: square.T.copy()}, runs)["T"]
    out.append(Row("gpu", "2-D transpose", gbps(NBYTES, t * 1e6), gbps(NBYTES, contiguous_ms * 1e6),
                   contiguous_ms / t, ">=", 0.80, note="square.T.copy() against our contiguous copy"))
    # A tiled layout: the source's contiguous axis (3) is the destination's
    # outermost, which the tiles take as their rows.
    cube = dlbridge.full((64, 32, 128, 256), 1.0, dtype="float32", device="cuda")
    t = _median_ms({"nd": lambda: cube.transpose(3, 1, 0, 2).copy()}, runs)["nd"]
    out.append(Row("gpu", "N-d strided copy", gbps(NBYTES, t * 1e6), gbps(NBYTES, contiguous_ms * 1e6),
                   contiguous_ms / t, ">=", 0.50, note="4-D permutation (3, 1, 0, 2) against our contiguous copy"))

    pinned = dlbridge.full(n, 1.0, dtype="float32", device="cuda_host")
    t_pinned = torch.from_dlpack(pinned)
    device = dlbridge.empty(n, dtype="float32", device="cuda")
    t_device = torch.from_dlpack(device)
    out.append(_bandwidth("pinned host to device", NBYTES, lambda: pinned.to_device("cuda"),
                          lambda: t_device.copy_(t_pinned, non_blocking=True), ">=", 0.90, runs,
                          "to_device from pinned memory against cudaMemcpyAsync (torch copy_, non_blocking)"))
    out.append(_bandwidth("pinned device to host", NBYTES, lambda: device.to_device("cuda_host"),
                          lambda: t_pinned.copy_(t_device, non_blocking=True), ">=", 0.90, runs,
                          "to_device into new pinned memory (cudaMallocHost included) against cudaMemcpyAsync into existing pinned memory"))

    small = torch.zeros(4, device="cuda")
    timing = compare({"ours": loop("f(x)", f=dlbridge.from_dlpack, x=small),
                      "peer": loop("f(x)", f=torch.from_dlpack, x=small)},
                     sample_ns=2e5, samples=20 if quick else 200, min_samples=3, budget_s=10)
    o, p = timing["ours"].min_ns, timing["peer"].min_ns
    out.append(Row("gpu", "from_dlpack(torch cuda)", ns(o), ns(p), o / p, "<=", 1.0,
                   note="dlbridge.from_dlpack / torch.from_dlpack of one CUDA tensor, per call"))

    t_square = torch.from_dlpack(square)
    t = _median_ms({"torch": lambda: t_square.T.contiguous()}, runs)["torch"]
    ours_t = _median_ms({"ours": lambda: square.T.copy()}, runs)["ours"]
    out.append(Row("gpu", "torch .contiguous() (transpose)", gbps(NBYTES, ours_t * 1e6), gbps(NBYTES, t * 1e6),
                   t / ours_t, None, None, note="the same transpose by PyTorch, beside ours"))
    if cupy is None:
        out.append(Row("gpu", "cupy ascontiguousarray (transpose)", "-", "-", None, None, None,
                       note="CuPy is not installed"))
    else:
        c_square = cupy.from_dlpack(square)
        t = _median_ms({"cupy": lambda: cupy.ascontiguousarray(c_square.T)}, runs)["cupy"]
        out.append(Row("gpu", "cupy ascontiguousarray (transpose)", gbps(NBYTES, ours_t * 1e6),
                       gbps(NBYTES, t * 1e6), t / ours_t, None, None,
                       note="the same transpose by CuPy, beside ours"))
    return out


def main(argv: list[str] | None = None) -> int:
    import _harness
    return _harness.main(__doc__, rows, argv)


if __name__ == "__main__":
    import sys
    sys.exit(main())
