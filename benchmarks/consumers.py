"""Per-argument cost of a downstream Cython function that takes a dlbridge
Array and builds a checked typed view (goal: <= 100 ns per argument).

The downstream package is tests/downstream/cython (dlb_example), built here
against the INSTALLED dlbridge exactly as tests/python/test_cython_consumers.py
builds it (`pip install --no-build-isolation --target DIR`), and cached under
build/benchmarks/ (keyed on its sources, the installed dlbridge and Python).

dlb_example has no function that only builds a view. The two cheapest are
timed, each on a 1x1 float32 dlbridge Array (so `dlbridge.asarray(x)` inside
them takes its Array fast path):

- ``ex.scale_(d, 1.0)``: ``dlbridge.asarray``, then ``a.t.as_[matrix_view]()``
  (the checked typed view: dtype, ndim, device, writability), then a loop over
  the one element (multiplying it by 1.0), and returns the Array;
- ``ex.explain(d)``: ``dlbridge.asarray``, then ``dlb::check`` against the
  demands of rows_view (no view built, no exception), and returns None.

The baseline is what any Python call of a C function costs, with the same
number of positional arguments, measured the same way in the same run:
``isinstance(d, T)`` (T = type(d): the exact-type fast path, nothing else) for
the two-argument scale_, ``len(t)`` on a 1-tuple for the one-argument
explain. The value is (function - baseline) per-call minimum, in ns per array
argument (each takes one array). This charges the function with everything
beyond a bare C call: Cython's argument parsing, the asarray lookup and call,
the check, the view, and scale_'s one-element loop; so it is an upper bound of
the view's own cost.

    python benchmarks/consumers.py [--quick]    # these rows only
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys

import numpy as np

import dlbridge
import _harness
from _harness import Row, compare, loop, ns

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "downstream" / "cython"
CACHE = ROOT / "build" / "benchmarks"


def _key() -> str:
    h = hashlib.sha256(sys.version.encode())
    for f in sorted(EXAMPLE.iterdir()):
        if f.is_file():
            h.update(f.name.encode() + f.read_bytes())
    package = pathlib.Path(os.path.abspath(dlbridge.__file__)).parent
    for f in sorted(package.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            st = f.stat()
            h.update(f"{f.relative_to(package)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def build_example() -> tuple[pathlib.Path | None, str]:
    """(folder holding dlb_example, "") or (None, why it could not be built)."""
    if not os.path.isdir(dlbridge.get_include()):
        return None, "dlbridge is not an installed wheel (no headers): pip install ."
    root = CACHE / f"cython-{_key()}"
    target = root / "target"
    if list(target.glob("dlb_example*")):
        return target, ""
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
           "--disable-pip-version-check", "--target", str(target),
           f"--config-settings=build-dir={root / 'build'}", str(EXAMPLE)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        return None, "building tests/downstream/cython failed: " + (result.stdout + result.stderr)[-500:]
    return target, ""


def rows(quick: bool = False) -> list[Row]:
    names = ["Cython ex.scale_(d, 1.0) - isinstance(d, T), per array argument",
             "Cython ex.explain(d) - len(t), per array argument"]
    target, why = build_example()
    if target is None:
        return [Row("cython", n, "-", "-", None, "<=", 100.0, unit="ns", note=why) for n in names]
    sys.path.insert(0, str(target))
    try:
        import dlb_example as ex
    finally:
        sys.path.remove(str(target))
    d = dlbridge.asarray(np.ones((1, 1), dtype=np.float32))
    assert ex.explain(d) is None and ex.scale_(d, 1.0) is d
    samples, sample_ns = (15, 1e6) if quick else (300, 2e6)
    r = compare({"scale_": loop("f(x, s)", f=ex.scale_, x=d, s=1.0),
                 "isinstance": loop("f(x, T)", f=isinstance, x=d, T=type(d)),
                 "explain": loop("f(x)", f=ex.explain, x=d),
                 "len": loop("f(t)", f=len, t=(0,))}, sample_ns=sample_ns, samples=samples)
    out = []
    for name, (fn, base) in zip(names, [("scale_", "isinstance"), ("explain", "len")]):
        f, b = r[fn], r[base]
        out.append(Row("cython", name, ns(f.min_ns), ns(b.min_ns), f.min_ns - b.min_ns, "<=", 100.0, unit="ns",
                       note=f"medians {ns(f.median_ns)} / {ns(b.median_ns)}, "
                            f"{f.samples} samples x {f.loops} calls"))
    return out


def main(argv: list[str] | None = None) -> int:
    return _harness.main(__doc__, rows, argv)


if __name__ == "__main__":
    sys.exit(main())
