"""GPU copies and exchange (issue 4): bandwidth ratios against cudaMemcpyAsync
and our own contiguous copy, and per-call exchange against PyTorch.

    python benchmarks/gpu.py [--quick]

Needs a GPU and PyTorch built for CUDA (CuPy too, for its row); without them
every row is reported skipped, saying why, and with DLBRIDGE_REQUIRE_GPU=1
(tests/gpu/run sets it) the script fails instead.

Method (docs/performance.md): both sides of a row run in this process on the
same 256 MiB buffers, interleaved in random order round by round, 20 timed
rounds after 2 warm-up rounds, minimum against minimum (medians in the
notes). Bandwidth counts the bytes read plus the bytes written on the GPU,
and the bytes moved for transfers between host and device.

Each call is timed with CUDA events on the legacy default stream, where
dlbridge and PyTorch's default stream both queue their work, and is queued
behind a spin kernel, as nvbandwidth does: the events time the GPU work the
call queued and none of its host work. dlbridge's calls allocate their
result (the Python API has no destination argument), which the peers,
writing into buffers allocated once, do not; that host work is outside the
events, and a sample whose host work outlasted the spin is taken again with
a longer one. Results are released after the end event: releasing pinned
memory (cudaFreeHost) waits for the whole device.
"""
from __future__ import annotations

import os
import random
import statistics
import subprocess
import time

import dlbridge
from _harness import Row, compare, gbps, loop, ns

MIB = 1 << 20
NBYTES = 256 * MIB
RUNS, WARMUP = 20, 2
# A call whose host work takes longer than this waits for the GPU: its GPU
# work cannot be timed apart from it.
MAX_SPIN_MS = 2000.0
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


def environment() -> list[str]:
    """The GPU the figures come from: model, driver and CUDA builds (the CPU
    is printed beside every table)."""
    info = dlbridge.build_info()
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        smi = ""
    try:
        import torch
        torch_cuda = f"torch {torch.__version__} (CUDA {torch.version.cuda})"
    except ImportError:
        torch_cuda = "torch not installed"
    seen = f"{info['gpu_count']} GPU(s)" if info["gpu_count"] else f"no GPU ({info['cuda_status']})"
    return [f"gpu: {smi.splitlines()[0] if smi else 'nvidia-smi lists none'} (name, driver, memory, compute capability)",
            f"cuda: dlbridge's static runtime {info['cuda_version']} sees {seen}; {torch_cuda}"]


class _HostBound(Exception):
    """A call whose host work outlasted the longest spin: it waits for the GPU."""


class _Timer:
    """CUDA-event timing of calls queued behind a spin kernel (the docstring above)."""

    def __init__(self):
        import torch
        self.torch = torch
        # torch.cuda._sleep spins for a number of GPU clock cycles: how many make a millisecond.
        cycles = 1 << 24
        torch.cuda._sleep(cycles)
        start, end = self._events()
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        self.cycles_per_ms = cycles / max(start.elapsed_time(end), 1e-3)

    def _events(self):
        return (self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True))

    def _once(self, fn, spin_ms: float) -> tuple[float | None, float]:
        """(GPU milliseconds of fn's work, or None where the GPU reached the
        start event before fn's work was queued; host milliseconds of fn)."""
        start, end = self._events()
        self.torch.cuda._sleep(int(spin_ms * self.cycles_per_ms))
        start.record()
        t0 = time.perf_counter()
        result = fn()
        host_ms = (time.perf_counter() - t0) * 1e3
        end.record()
        queued_in_time = not start.query()
        end.synchronize()
        del result
        return (start.elapsed_time(end) if queued_in_time else None), host_ms

    def times(self, sides: dict, runs: int) -> dict[str, list[float]]:
        """Milliseconds per call of each side, the sides in random order each round."""
        spin = dict.fromkeys(sides, 1.0)
        times: dict[str, list[float]] = {name: [] for name in sides}
        order = list(sides.items())
        for i in range(WARMUP + runs):
            random.shuffle(order)
            for name, fn in order:
                while True:
                    ms, host_ms = self._once(fn, spin[name])
                    # Twice the longest host work seen: its times vary from call to call.
                    spin[name] = max(spin[name], 2 * host_ms + 1)
                    if ms is not None:
                        break
                    if spin[name] > MAX_SPIN_MS:
                        raise _HostBound(f"{name}: its host work outlasted every spin up to {MAX_SPIN_MS:.0f} ms "
                                         f"(the last call's took {host_ms:.0f} ms), so it waits for the GPU")
                if i >= WARMUP:
                    times[name].append(ms)
        return times


class _BlockingTimer:
    """Host timing of calls each followed by a device synchronisation, for
    transfers into or out of pinned memory: dlbridge waits for those before
    returning (the host may touch that memory next), so the peer's copy is
    waited for too. Results are released outside the timing."""

    def __init__(self):
        import torch
        self.torch = torch

    def times(self, sides: dict, runs: int) -> dict[str, list[float]]:
        times: dict[str, list[float]] = {name: [] for name in sides}
        order = list(sides.items())
        self.torch.cuda.synchronize()
        for i in range(WARMUP + runs):
            random.shuffle(order)
            for name, fn in order:
                t0 = time.perf_counter()
                result = fn()
                self.torch.cuda.synchronize()
                ms = (time.perf_counter() - t0) * 1e3
                del result
                self.torch.cuda.synchronize()
                if i >= WARMUP:
                    times[name].append(ms)
        return times


def _ratio_row(timer, name, ours, peer, ours_bytes, peer_bytes, op, goal, runs, note) -> Row:
    """Bandwidth of ours over the peer's, minimum against minimum."""
    try:
        t = timer.times({"ours": ours, "peer": peer}, runs)
    except _HostBound as e:
        return Row("gpu", name, "-", "-", None, op, goal, note=f"not measured: {e}")
    o, p = min(t["ours"]), min(t["peer"])
    medians = f"medians {statistics.median(t['ours']):.3f} and {statistics.median(t['peer']):.3f} ms"
    return Row("gpu", name, gbps(ours_bytes, o * 1e6), gbps(peer_bytes, p * 1e6),
               (ours_bytes / o) / (peer_bytes / p), op, goal, note=f"{note}; {medians}")


def rows(quick: bool = False) -> list[Row]:
    missing = _gpu_missing()
    if missing and os.environ.get("DLBRIDGE_REQUIRE_GPU") == "1":
        raise SystemExit(f"benchmarks/gpu.py: DLBRIDGE_REQUIRE_GPU=1, but {missing}")
    if missing:
        return [Row("gpu", name, "-", "-", None, op, goal, note=missing) for name, op, goal in ROWS]
    import torch
    try:
        import cupy
    except ImportError:
        cupy = None
    runs = 3 if quick else RUNS
    timer = _Timer()
    n = NBYTES // 4
    moved = 2 * NBYTES  # a copy reads and writes every byte
    src = dlbridge.full(n, 1.5, dtype="float32", device="cuda")
    t_src = torch.from_dlpack(src)
    t_dst = torch.empty_like(t_src)

    def memcpy():  # cudaMemcpyAsync device to device, through PyTorch's copy_
        return t_dst.copy_(t_src)

    note_copy = "dlbridge copy() against cudaMemcpyAsync device to device (torch copy_ of contiguous tensors)"
    out = [
        _ratio_row(timer, "contiguous copy", src.copy, memcpy, moved, moved, ">=", 0.90, runs, note_copy),
        _ratio_row(timer, "fill", lambda: dlbridge.full(n, 2.0, dtype="float32", device="cuda"), memcpy,
                   NBYTES, moved, ">=", 0.90, runs,
                   "dlbridge.full (writes 256 MiB) against the same memcpy (reads and writes 256 MiB)"),
        _ratio_row(timer, "same-size cast", lambda: dlbridge.asarray(src, dtype="int32"), memcpy, moved, moved,
                   ">=", 0.90, runs, "float32 -> int32 against the same memcpy"),
    ]
    side = 1 << 13  # 8192 x 8192 float32 = 256 MiB
    square = dlbridge.full((side, side), 1.0, dtype="float32", device="cuda")
    out.append(_ratio_row(timer, "2-D transpose", lambda: square.T.copy(), src.copy, moved, moved, ">=", 0.80, runs,
                          "square.T.copy() against our contiguous copy"))
    # A tiled layout: the source's contiguous axis (3) is the destination's
    # outermost, which the tiles take as their rows.
    cube = dlbridge.full((64, 32, 128, 256), 1.0, dtype="float32", device="cuda")
    out.append(_ratio_row(timer, "N-d strided copy", lambda: cube.transpose(3, 1, 0, 2).copy(), src.copy, moved, moved,
                          ">=", 0.50, runs, "4-D permutation (3, 1, 0, 2) against our contiguous copy"))

    pinned = dlbridge.full(n, 1.0, dtype="float32", device="cuda_host")
    t_pinned = torch.from_dlpack(pinned)
    device = dlbridge.empty(n, dtype="float32", device="cuda")
    t_device = torch.from_dlpack(device)
    blocking = _BlockingTimer()
    out.append(_ratio_row(blocking, "pinned host to device", lambda: pinned.to_device("cuda"),
                          lambda: t_device.copy_(t_pinned, non_blocking=True), NBYTES, NBYTES, ">=", 0.90, runs,
                          "to_device from pinned memory against cudaMemcpyAsync (torch copy_, non_blocking), "
                          "each waited for (dlbridge returns once the host may write the source again)"))
    out.append(_ratio_row(blocking, "pinned device to host", lambda: device.to_device("cuda_host"),
                          lambda: t_pinned.copy_(t_device, non_blocking=True), NBYTES, NBYTES, ">=", 0.90, runs,
                          "to_device into new pinned memory, ready for the host on return (its cudaMallocHost "
                          "included: the API allocates its result) against cudaMemcpyAsync into pinned memory "
                          "allocated once, waited for"))

    small = torch.zeros(4, device="cuda")
    timing = compare({"ours": loop("f(x)", f=dlbridge.from_dlpack, x=small),
                      "peer": loop("f(x)", f=torch.from_dlpack, x=small)},
                     sample_ns=2e5, samples=20 if quick else 200, min_samples=3, budget_s=10)
    o, p = timing["ours"].min_ns, timing["peer"].min_ns
    out.append(Row("gpu", "from_dlpack(torch cuda)", ns(o), ns(p), o / p, "<=", 1.0,
                   note="dlbridge.from_dlpack / torch.from_dlpack of one CUDA tensor, per call"))

    t_square = torch.from_dlpack(square)
    out.append(_ratio_row(timer, "torch .contiguous() (transpose)", lambda: square.T.copy(),
                          lambda: t_square.T.contiguous(), moved, moved, None, None, runs,
                          "the same transpose by PyTorch, beside ours (ours first)"))
    if cupy is None:
        out.append(Row("gpu", "cupy ascontiguousarray (transpose)", "-", "-", None, None, None,
                       note="CuPy is not installed"))
    else:
        c_square = cupy.from_dlpack(square)
        out.append(_ratio_row(timer, "cupy ascontiguousarray (transpose)", lambda: square.T.copy(),
                              lambda: cupy.ascontiguousarray(c_square.T), moved, moved, None, None, runs,
                              "the same transpose by CuPy, beside ours (ours first)"))
    return out


def main(argv: list[str] | None = None) -> int:
    import _harness
    for line in environment():
        print(line)
    return _harness.main(__doc__, rows, argv)


if __name__ == "__main__":
    import sys
    sys.exit(main())
