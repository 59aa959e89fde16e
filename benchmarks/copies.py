"""CPU copies: dlbridge's copy engine against NumPy and against itself, as
bandwidth ratios.

For float32 and float64 at 2 MiB (in cache) and 128 MiB (DRAM):

- contiguous copy: ``dlb_arr.copy()`` against ``np.copyto(dst, src)`` into a
  preallocated destination, and against ``np_arr.copy()``, which like ours
  allocates its result;
- 2-D transpose into C order: ``dlb_arr.T.copy()`` against our contiguous
  copy of the same array and against ``np.ascontiguousarray(np_arr.T)``;
  and, for scale, PyTorch's ``t.T.contiguous()`` against its ``t.clone()``
  (PyTorch's own transpose against its own copy; its threads as it sets
  them) and against ours (information, no goal; not measured where
  PyTorch is not installed);
- N-d permutations, ``dlb_arr.transpose(p).copy()`` against our contiguous
  copy and against ``np.ascontiguousarray(np_arr.transpose(p))``: a 3-d
  reversal (2, 1, 0) and the 4-d NCHW -> NHWC permute (0, 2, 3, 1);
- casts that change the element size (float32 <-> float64), into C order:
  ``dlbridge.asarray(x, dtype=...)`` of the array and of its transpose
  against ``np_arr.astype(...)`` and ``np.ascontiguousarray(np_arr.T,
  dtype=...)``.

dlb_arr is dlbridge's zero-copy view of np_arr: both sides read the same
memory. A copy's two sides move the same number of bytes, so a bandwidth
ratio is the inverse time ratio (peer time / our time); higher is better for
dlbridge. Bandwidth is bytes of the source per second (not read + written).
Method as in benchmarks/_harness.py: minimum against minimum, sides
interleaved in random order; 128 MiB samples are single calls, and few.
Copies of 8 MiB and more use dlbridge.get_copy_threads() threads.

    python benchmarks/copies.py [--quick]    # these rows only
"""
from __future__ import annotations

import gc
import sys

import numpy as np

import dlbridge
import _harness
from _harness import Row, compare, gbps, loop

MIB = 1 << 20
SIZES = (2 * MIB, 128 * MIB)
DTYPES = ("float32", "float64")
PERMUTATIONS = ((2, 1, 0), (0, 2, 3, 1))


def shape_for(nbytes: int, itemsize: int, ndim: int) -> tuple[int, ...]:
    """A power-of-two shape of `ndim` axes holding nbytes, extents as equal as can be."""
    exponent = (nbytes // itemsize).bit_length() - 1
    assert 1 << exponent == nbytes // itemsize
    parts = [exponent // ndim + (1 if i < exponent % ndim else 0) for i in range(ndim)]
    return tuple(1 << p for p in sorted(parts))


def label(nbytes: int, dtype: str) -> str:
    return f"{dtype.replace('float', 'f')} {nbytes // MIB} MiB"


def _settings(nbytes: int, quick: bool) -> dict:
    if nbytes <= 8 * MIB:
        return dict(sample_ns=4e6, samples=15 if quick else 150, min_samples=5,
                    budget_s=0.3 if quick else 2.0)
    return dict(sample_ns=1.0, samples=2 if quick else 5, min_samples=2 if quick else 3,
                budget_s=1.0 if quick else 6.0)


def _bandwidth_row(name, nbytes, ours, peer, goal, settings, *, shape, op=">=", what=("ours", "peer")):
    r = compare({"ours": ours, "peer": peer}, **settings)
    o, p = r["ours"], r["peer"]
    return Row("copies", name, gbps(nbytes, o.min_ns), gbps(nbytes, p.min_ns), p.min_ns / o.min_ns, op, goal,
               note=f"shape {shape}: {what[0]} {o.min_ns / 1e6:.3f} ms, {what[1]} {p.min_ns / 1e6:.3f} ms "
                    f"(medians {o.median_ns / 1e6:.3f} / {p.median_ns / 1e6:.3f}), "
                    f"{o.samples} samples x {o.loops} calls")


def rows(quick: bool = False) -> list[Row]:
    try:
        import torch  # (only for the rows that time PyTorch, for scale)
    except ImportError:
        torch = None

    out = []
    for nbytes in SIZES:
        for dtype in DTYPES:
            item = np.dtype(dtype).itemsize
            settings = _settings(nbytes, quick)
            tag = label(nbytes, dtype)

            # Contiguous.
            a = np.random.default_rng(0).random(nbytes // item).astype(dtype)
            d = dlbridge.from_dlpack(a)
            dst = np.empty_like(a)
            dst[...] = 0
            ours = loop("x.copy()", x=d)
            out.append(_bandwidth_row(f"copy {tag}: d.copy() vs np.copyto(dst, a)", nbytes, ours,
                                      loop("f(y, x)", f=np.copyto, x=a, y=dst), 0.95, settings, shape=a.shape))
            out.append(_bandwidth_row(f"copy {tag}: d.copy() vs a.copy()", nbytes, ours, loop("x.copy()", x=a),
                                      1.0, settings, shape=a.shape))
            del a, d, dst, ours

            # 2-D transpose into C order.
            a = np.random.default_rng(1).random(shape_for(nbytes, item, 2)).astype(dtype)
            d = dlbridge.from_dlpack(a)
            ours = loop("x.T.copy()", x=d)
            out.append(_bandwidth_row(f"2-d T {tag}: d.T.copy() vs d.copy()", nbytes, ours, loop("x.copy()", x=d),
                                      0.8, settings, shape=a.shape, what=("transpose", "contiguous")))
            out.append(_bandwidth_row(f"2-d T {tag}: d.T.copy() vs np.ascontiguousarray(a.T)", nbytes, ours,
                                      loop("f(x.T)", f=np.ascontiguousarray, x=a), 2.0, settings, shape=a.shape))
            # PyTorch's tiled transpose, for scale: its own transpose against its own copy.
            torch_rows = (f"2-d T {tag}: torch t.T.contiguous() vs t.clone()",
                          f"2-d T {tag}: d.T.copy() vs torch t.T.contiguous()")
            if torch is None:
                out += [Row("copies", name, "-", "-", None, None, None, note="torch is not installed")
                        for name in torch_rows]
            else:
                t = torch.from_numpy(a)
                threads = f"torch with {torch.get_num_threads()} threads"
                torch_transpose = loop("x.T.contiguous()", x=t)
                out.append(_bandwidth_row(torch_rows[0], nbytes, torch_transpose, loop("x.clone()", x=t), None,
                                          settings, shape=a.shape, op=None,
                                          what=(f"transpose ({threads})", "contiguous")))
                out.append(_bandwidth_row(torch_rows[1], nbytes, ours, torch_transpose, None, settings,
                                          shape=a.shape, op=None, what=("ours", threads)))
            del a, d, ours

            # N-d permutations.
            for perm in PERMUTATIONS:
                a = np.random.default_rng(2).random(shape_for(nbytes, item, len(perm))).astype(dtype)
                d = dlbridge.from_dlpack(a)
                ours = loop("x.transpose(p).copy()", x=d, p=perm)
                out.append(_bandwidth_row(
                    f"{len(perm)}-d {tag}: d.transpose{perm}.copy() vs d.copy()", nbytes, ours, loop("x.copy()", x=d),
                    0.8 if len(perm) == 4 else None, settings, shape=a.shape, op=">=" if len(perm) == 4 else None,
                    what=("permutation", "contiguous")))
                out.append(_bandwidth_row(
                    f"{len(perm)}-d {tag}: d.transpose{perm}.copy() vs np.ascontiguousarray(a.transpose{perm})",
                    nbytes, ours, loop("f(x.transpose(p))", f=np.ascontiguousarray, x=a, p=perm), 1.0, settings,
                    shape=a.shape))
                del a, d, ours

            # Casts that change the element size, to C order.
            other = "float64" if dtype == "float32" else "float32"
            a = np.random.default_rng(3).random(shape_for(nbytes, item, 2)).astype(dtype)
            d = dlbridge.from_dlpack(a)
            out.append(_bandwidth_row(
                f"cast {tag} to {other}: asarray(d, dtype={other}) vs a.astype({other})", nbytes,
                loop("f(x, dtype=t)", f=dlbridge.asarray, x=d, t=other), loop("x.astype(t)", x=a, t=other), 1.0,
                settings, shape=a.shape))
            out.append(_bandwidth_row(
                f"cast T {tag} to {other}: asarray(d.T, dtype={other}) vs np.ascontiguousarray(a.T, dtype={other})",
                nbytes, loop("f(x.T, dtype=t)", f=dlbridge.asarray, x=d, t=other),
                loop("f(x.T, dtype=t)", f=np.ascontiguousarray, x=a, t=other), 1.0, settings, shape=a.shape))
            del a, d
            gc.collect()
    return out


def main(argv: list[str] | None = None) -> int:
    return _harness.main(__doc__, rows, argv)


if __name__ == "__main__":
    sys.exit(main())
