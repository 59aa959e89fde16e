"""A smoke pass of the benchmarks so they never rot. No timing is asserted:
the tests check that every row is there with numeric values, never a verdict."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import dlbridge
from paths import ROOT

BENCHMARKS = ROOT / "benchmarks"

EXCHANGE = [
    "dlbridge.from_dlpack(np_arr) / np.from_dlpack(np_arr)",
    "np.from_dlpack(dlb_arr) / np.from_dlpack(np_arr)",
    "dlb_arr.__dlpack__() / np_arr.__dlpack__()",
    "torch.from_dlpack(dlb_arr) / torch.from_dlpack(np_arr)",
    "dlbridge.from_dlpack(torch_t) / torch.from_dlpack(torch_t)",
    "dlbridge.asarray(torch_t, copy=False) / dlbridge.asarray(torch_t)",
]
sys.path.insert(0, str(BENCHMARKS))
import arguments  # noqa: E402  (the row names only)

pytestmark = pytest.mark.any_python  # a smoke pass of the benchmarks: the same on every Python (conftest.py)

ARGUMENTS = arguments.names()
COPIES = [
    f"{kind} {dtype} {size}: {what}"
    for size in ("2 MiB", "128 MiB")
    for dtype in ("f32", "f64")
    for kind, what in [
        ("copy", "d.copy() vs np.copyto(dst, a)"),
        ("copy", "d.copy() vs a.copy()"),
        ("2-d T", "d.T.copy() vs d.copy()"),
        ("2-d T", "d.T.copy() vs np.ascontiguousarray(a.T)"),
        ("2-d T", "torch t.T.contiguous() vs t.clone()"),
        ("2-d T", "d.T.copy() vs torch t.T.contiguous()"),
    ]
] + [
    f"{len(p)}-d {dtype} {size}: d.transpose{p}.copy() vs {peer}"
    for size in ("2 MiB", "128 MiB") for dtype in ("f32", "f64") for p in ((2, 1, 0), (0, 2, 3, 1))
    for peer in ("d.copy()", f"np.ascontiguousarray(a.transpose{p})")
] + [
    row
    for size in ("2 MiB", "128 MiB") for dtype, other in (("f32", "float64"), ("f64", "float32"))
    for row in (f"cast {dtype} {size} to {other}: asarray(d, dtype={other}) vs a.astype({other})",
                f"cast T {dtype} {size} to {other}: asarray(d.T, dtype={other}) "
                f"vs np.ascontiguousarray(a.T, dtype={other})")
]
CALLGRIND = ["callgrind Ir: dlbridge.from_dlpack(np_arr) / np.from_dlpack(np_arr)"]
GPU = ["contiguous copy", "fill", "same-size cast", "2-D transpose", "N-d strided copy", "pinned host to device",
       "pinned device to host", "from_dlpack(torch cuda)", "torch .contiguous() (transpose)",
       "cupy ascontiguousarray (transpose)"]


def table_rows(stdout):
    """{benchmark: [ours, peer, value, goal, verdict]} from the Markdown table."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 6 and cells[0] != "benchmark" and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells[1:]
    return rows


def number(cell):
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?: (?:ns|us|GB/s|Ir))?", cell)
    assert match, cell
    return float(match.group(1))


def check_row(name, cells, may_skip=False, stdout=""):
    ours, peer, value, goal, verdict = cells
    if verdict == "skipped":
        assert may_skip, f"{name} was skipped (the notes say why):\n{stdout[-3000:]}"
        return
    assert verdict in ("met", "NOT met", "info"), (name, verdict)
    assert number(ours) > 0 and number(peer) > 0, (name, cells)
    number(value)
    if verdict == "info":
        assert goal == "-"
    else:
        assert re.fullmatch(r"(<=|>=) -?\d+(\.\d+)?( ns)?", goal), (name, goal)


@pytest.mark.unsanitized(reason="callgrind (valgrind) cannot run under the preloaded ASan runtime")
def test_run_quick_has_every_row():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "run.py"), "--quick"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)
    expected = EXCHANGE + ARGUMENTS + COPIES + CALLGRIND + GPU
    assert sorted(rows) == sorted(expected), result.stdout
    try:
        import torch  # noqa: F401
        has_torch = True
    except ImportError:
        has_torch = False
    out = result.stdout
    for name in EXCHANGE:
        check_row(name, rows[name], may_skip=not has_torch and "torch" in name, stdout=out)
    for name in ARGUMENTS:
        # Skipped only where dlbridge is not an installed wheel (the peers build against its headers).
        check_row(name, rows[name], may_skip=not os.path.isdir(dlbridge.get_include()), stdout=out)
    for name in COPIES:
        check_row(name, rows[name], may_skip=not has_torch and "torch" in name, stdout=out)
    check_row(CALLGRIND[0], rows[CALLGRIND[0]], may_skip=shutil.which("valgrind") is None, stdout=out)
    for name in GPU:
        check_row(name, rows[name], may_skip=dlbridge.build_info()["gpu_count"] == 0 or "cupy" in name,
                  stdout=out)
    assert re.search(r"^machine: .+, \d+ logical CPUs", result.stdout, re.M), result.stdout
    assert re.search(r"^goals met: \d+ of \d+", result.stdout, re.M), result.stdout


@pytest.mark.parametrize("script", ["exchange.py"])
def test_group_script_runs_alone(script):
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = table_rows(result.stdout)
    assert sorted(rows) == sorted(EXCHANGE), result.stdout
    for name in EXCHANGE:
        check_row(name, rows[name], may_skip="torch" in name)


@pytest.mark.no_sanitized_code  # a C++ program built without the sanitizers (conftest.py)
def test_copy_engine_builds_and_prints_every_row():
    # The engine benchmark (benchmarks/copy_engine.py) compiles against the
    # installed headers; its rows, each with a bandwidth and a ratio.
    if shutil.which(os.environ.get("CXX", "c++").split()[0]) is None:
        pytest.skip("no C++ compiler: copy_engine.py builds its program with one")
    result = subprocess.run([sys.executable, str(BENCHMARKS / "copy_engine.py"), "--quick"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if re.match(r"\| \d+ MiB f(32|64) \|", line)]
    for size in ("2 MiB", "128 MiB"):
        for dtype in ("f32", "f64"):
            names = [line.split("|")[2].strip() for line in lines if line.startswith(f"| {size} {dtype} |")]
            assert names[:2] == ["memcpy", "16-byte loads and stores"], result.stdout
            assert "transpose, power-of-two rows, as copy_strided chooses" in names, result.stdout
            assert "transpose, rows padded, 16-byte, streaming" in names, result.stdout
            for row in ("memcpy", "transpose, power-of-two rows, 16-byte, cached",
                        "transpose, power-of-two rows, 16-byte, streaming"):
                assert f"{row}, then its output read once" in names, result.stdout
    for line in lines:
        gbps, ratio = (float(cell) for cell in line.strip("|").split("|")[2:4])
        assert gbps > 0 and ratio > 0, line
