"""The argument path (issue 12): one 2-D float64 C-contiguous host array
taken by a compiled function, with each tool an extension author could pick,
on NumPy, PyTorch and dlbridge inputs (1x1, so that only the argument costs).

benchmarks/arguments/ holds the same function written with dlbridge's
argument converter (cpp.array_argument), the two routes it replaces (a typed
`Array` argument, and `dlbridge.asarray` then the view, as the Cython guide
showed before), Cython's typed memoryview and cnp.ndarray, nanobind's
nb::ndarray and pybind11's py::array_t, and both tools with dlbridge's
casters (dlbridge/python/nanobind.hpp, pybind11.hpp). It is built here with Meson against
the installed dlbridge and the nanobind and pybind11 from PyPI
(tests/requirements.txt), and cached under build/benchmarks/.

Every value is per call, net of a bare one-argument Cython call (`def
bare(x)`) timed in the same interleaved run; a route that refuses an input
has no row for it. The goal rows are ratios of those net costs:

- NumPy input: converter <= 0.6x cnp.ndarray (Cython's fastest route);
- torch input: converter <= 0.1x nanobind;
- dlbridge.Array input: converter <= 1.2x the typed `Array` argument;
- JAX input (a CPU jax.Array): converter <= 1.0x Cython's typed memoryview.

The return rows (issue 24) time a function that takes the NumPy input,
makes a new 1-element float64 array, writes its element and returns it to
the caller as a numpy.ndarray: dlbridge from Cython (`wrap_like(t, x)`) and
from plain C++ (`dlb::python::to_python_like`, benchmarks/arguments/
args_plain.cpp), nanobind's `nb::ndarray<nb::numpy, double, nb::ndim<1>>`
with a capsule owner (as its documentation returns one), and for reference
NumPy's own np.empty and PyArray_EMPTY from Cython and pybind11's
`py::array_t<double>(1)`. Goal: each dlbridge route <= 0.8x nanobind's,
net of the bare call.

Without --quick, callgrind counts (instructions per call, net of the bare
call) are given beside each goal row and each kernel row, where valgrind is
installed.

Apache TVM FFI (apache-tvm-ffi), which takes a torch tensor through
PyTorch's DLPack exchange table as the converter does: its testing.nop
taking a NumPy array, a torch tensor and its own Tensor, net of nop(1), its
own bare call, beside the converter on the same inputs (its own: a
dlbridge.Array) net of the bare Cython call; goal on torch input: the
converter <= 1.0x TVM FFI. The row of the converter's PyTorch state checks
(requires grad, conjugate and negative bits, which TVM FFI does not make)
says what they cost alone.

Multi-dtype dispatch, on every input: the converter taking float32 or
float64 (a float64 input: the second view) <= 1.1x the single-dtype converter.

The kernel rows (issue 24) compare two real kernels written with Cython's
typed memoryviews, with nanobind, and with dlbridge (the downstream package
tests/downstream/kernels, and in C++ through dlbridge's nanobind casters):
the code lines each needs outside the kernel
loops (its glue; goal: dlbridge's Cython version has fewer than the
memoryview version), and time per call on small NumPy inputs.

    python benchmarks/arguments.py [--quick]    # these rows only
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np

import dlbridge
import _harness
import instructions
from _harness import Row, compare, loop, ns

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "benchmarks" / "arguments"
CACHE = ROOT / "build" / "benchmarks"

# (module, function) of each route, and the inputs it takes.
ROUTES = {
    "dlbridge converter": ("args_cython", "converter", ("NumPy", "torch", "Array", "JAX")),
    "dlbridge typed Array argument": ("args_cython", "typed_array", ("Array",)),
    "dlbridge asarray then view": ("args_cython", "through_asarray", ("NumPy", "torch", "Array", "JAX")),
    "Cython typed memoryview": ("args_cython", "memoryview_route", ("NumPy", "Array", "JAX")),
    "Cython cnp.ndarray": ("args_cython", "cnp_route", ("NumPy",)),
    "dlbridge converter, float32 or float64": ("args_cython", "converter_two", ("NumPy", "torch", "Array", "JAX")),
    "nanobind nb::ndarray": ("args_nanobind", "view", ("NumPy", "torch", "Array")),
    "pybind11 py::array_t": ("args_pybind11", "view", ("NumPy", "torch", "Array")),
    "nanobind with dlbridge's caster": ("args_nanobind", "caster", ("NumPy", "torch", "Array")),
    "pybind11 with dlbridge's caster": ("args_pybind11", "caster", ("NumPy", "torch", "Array")),
}
INPUTS = ("NumPy", "torch", "Array", "JAX")
# (input, peer route, goal) of each gated ratio: converter / peer, net of the bare call.
GOALS = [("NumPy", "Cython cnp.ndarray", 0.6), ("torch", "nanobind nb::ndarray", 0.1),
         ("Array", "dlbridge typed Array argument", 1.2), ("JAX", "Cython typed memoryview", 1.0)]


# Returning a new array to a NumPy caller: (module, function) of each route.
RETURNS = {
    "dlbridge wrap_like from Cython": ("args_cython", "return_wrap_like"),
    "dlbridge to_python_like from C++": ("args_plain", "new_like"),
    "nanobind nb::ndarray<nb::numpy> with a capsule": ("args_nanobind", "new_array"),
    "NumPy np.empty from Cython": ("args_cython", "return_np_empty"),
    "NumPy PyArray_EMPTY from Cython": ("args_cython", "return_pyarray_empty"),
    "pybind11 py::array_t<double>(1)": ("args_pybind11", "new_array"),
}
RETURN_PEER = "nanobind nb::ndarray<nb::numpy> with a capsule"
# (route, goal) of each gated ratio: route / RETURN_PEER, net of the bare call.
RETURN_GOALS = [("dlbridge wrap_like from Cython", 0.8), ("dlbridge to_python_like from C++", 0.8)]


# The TVM FFI rows: (input, dlbridge's input of the same kind), the inputs of
# the ratio rows (each tool's own array has none: TVM FFI's nop takes its
# Tensor in less time than nop(1), and a net cost below zero divides nothing),
# and the goal on torch.
TVM_INPUTS = {"NumPy": "NumPy", "torch": "torch", "own array": "Array"}
TVM_RATIOS = ("NumPy", "torch")
TVM_GOAL = ("torch", 1.0)


def tvm_goal_name(input_: str) -> str:
    return f"argument, {input_} input: converter / TVM FFI testing.nop, each net of its own bare call"


def tvm_route_name(input_: str) -> str:
    return f"argument, {input_} input: TVM FFI testing.nop, ns over nop(1)"


TORCH_CHECKS = "argument, torch input: the converter's PyTorch state checks alone, ns over a bare call"


def tvm_names() -> list[str]:
    return [tvm_goal_name(i) for i in TVM_RATIOS] + [tvm_route_name(i) for i in TVM_INPUTS] + [TORCH_CHECKS]


def return_goal_name(route: str) -> str:
    return f"return to NumPy: {route} / {RETURN_PEER}, net of a bare call"


def return_route_name(route: str) -> str:
    return f"return to NumPy: {route}, ns over a bare call"


# The two kernels of the glue comparison (issue 24): a float32-or-float64
# corner detector returning a new array, and an in-place H x W x 3 uint8
# kernel, each version in one file (module, source).
KERNELS = {
    "Cython typed memoryview": ("kernels_memoryview", SOURCE / "kernels_memoryview.pyx"),
    "nanobind nb::ndarray": ("kernels_nanobind", SOURCE / "kernels_nanobind.cpp"),
    "dlbridge, Cython": ("dlb_kernels", ROOT / "tests" / "downstream" / "kernels" / "dlb_kernels.pyx"),
    "dlbridge, C++ with nanobind": ("kernels_dlbridge_nanobind", SOURCE / "kernels_dlbridge_nanobind.cpp"),
}
GLUE_GOAL = ("dlbridge, Cython", "Cython typed memoryview")  # fewer glue lines: a difference <= -1
KERNEL_CALLS = ("corner_moravec(6x6 float32 ndarray)", "brighten_(4x4x3 uint8 ndarray)")
KERNEL_BARE = "kernels"  # the input name of the kernel rows' bare call (bare@kernels)


def code_lines(path: pathlib.Path) -> tuple[int, int]:
    """(glue, kernel): the code lines of one source file outside and inside
    its `begin kernel` ... `end kernel` blocks. Blank lines, comments and
    docstrings are not code; everything else an author writes is."""
    glue = kernel = 0
    in_kernel = in_docstring = False
    for line in path.read_text().splitlines():
        text = line.strip()
        if text.endswith(("begin kernel", "end kernel")):
            in_kernel = text.endswith("begin kernel")
            continue
        if in_docstring or text.startswith('"""'):
            in_docstring = in_docstring != (text.count('"""') % 2 == 1)
            continue
        if not text or text.startswith(("#", "//")):
            continue
        if in_kernel:
            kernel += 1
        else:
            glue += 1
    return glue, kernel


def glue_name() -> str:
    return f"kernels: glue lines, {GLUE_GOAL[0]} minus {GLUE_GOAL[1]}"


def kernel_names() -> list[str]:
    return [glue_name()] + [f"kernels: {v}, {what}" for v in KERNELS
                            for what in ("glue lines",) + tuple(f"{c}, ns per call" for c in KERNEL_CALLS)]


def kernel_modules(folder: pathlib.Path) -> dict[str, object]:
    import importlib
    sys.path.insert(0, str(folder))
    try:
        return {v: importlib.import_module(m) for v, (m, _) in KERNELS.items()}
    finally:
        sys.path.remove(str(folder))


def kernel_call(module, call: str) -> tuple[object, np.ndarray]:
    """(function, input) of one of KERNEL_CALLS."""
    if call == KERNEL_CALLS[0]:
        return module.corner_moravec, np.random.default_rng(0).random((6, 6)).astype(np.float32)
    return module.brighten_, np.zeros((4, 4, 3), np.uint8)


def kernel_rows(folder: pathlib.Path, samples: int, sample_ns: float, counts=None) -> list[Row]:
    """Glue lines of each version of the two kernels, and their time per call
    on small NumPy inputs (the kernels' loops do little there), with their
    callgrind counts where `counts` has them."""
    modules = kernel_modules(folder)
    lines = {v: code_lines(path) for v, (_, path) in KERNELS.items()}
    mine, peer = (lines[v][0] for v in GLUE_GOAL)
    out = [Row("arguments", glue_name(), str(mine), str(peer), mine - peer, "<=", -1, unit="lines",
               note="code lines outside the kernel loops: " + "; ".join(
                   f"{v} {g} (+ {k} kernel)" for v, (g, k) in lines.items()))]
    timed = {}
    for call in KERNEL_CALLS:
        f = {v: kernel_call(m, call)[0] for v, m in modules.items()}
        x = kernel_call(modules[GLUE_GOAL[1]], call)[1]
        want = f[GLUE_GOAL[1]](x) if call == KERNEL_CALLS[0] else None
        for v in modules:  # each version computes the same
            got = f[v](x)
            assert want is None or (type(got) is np.ndarray and np.array_equal(got, want)), v
        timed[call] = compare({v: loop("f(x)", f=f[v], x=x) for v in modules}, sample_ns=sample_ns, samples=samples)
    for v in KERNELS:
        out.append(Row("arguments", f"kernels: {v}, glue lines", str(lines[v][0]), str(lines[GLUE_GOAL[1]][0]),
                       lines[v][0] / lines[GLUE_GOAL[1]][0], None, None,
                       note=f"{lines[v][1]} kernel lines beside; peer: {GLUE_GOAL[1]}"))
        for call, r in timed.items():
            base = r[GLUE_GOAL[1]].min_ns
            out.append(Row("arguments", f"kernels: {v}, {call}, ns per call", ns(r[v].min_ns), ns(base),
                           r[v].min_ns / base, None, None,
                           note=f"peer: {GLUE_GOAL[1]}; median {ns(r[v].median_ns)}; {r[v].samples} samples"
                                + _kernel_callgrind_note(counts, v, call)))
    return out


def _kernel_callgrind_note(counts, version: str, call: str) -> str:
    """"; callgrind net Ir a / b = ratio (setup)" against the peer version, or nothing."""
    if not isinstance(counts, dict):
        return ""
    ours, peer = (counts[v, call] - counts["bare", KERNEL_BARE] for v in (version, GLUE_GOAL[1]))
    return f"; callgrind net Ir {ours:.0f} / {peer:.0f} = {ours / peer:.2f} ({counts['setup', '']})"


def goal_name(input_: str, peer: str) -> str:
    return f"argument, {input_} input: converter / {peer}, net of a bare call"


def route_name(input_: str, route: str) -> str:
    return f"argument, {input_} input: {route}, ns over a bare call"


# (route, goal) of each ratio gated against the single-dtype converter, on every input it takes.
CONVERTER_GOALS = [("dlbridge converter, float32 or float64", 1.1)]


def converter_goal_name(input_: str, route: str) -> str:
    return f"argument, {input_} input: {route} / dlbridge converter, net of a bare call"


def names() -> list[str]:
    """Every row this group reports, in order."""
    out = []
    for input_ in INPUTS:
        out += [goal_name(i, peer) for i, peer, _ in GOALS if i == input_]
        out += [converter_goal_name(input_, r) for r, _ in CONVERTER_GOALS if input_ in ROUTES[r][2]]
        out += [route_name(input_, r) for r, (_, _, takes) in ROUTES.items() if input_ in takes]
    out += [return_goal_name(r) for r, _ in RETURN_GOALS] + [return_route_name(r) for r in RETURNS]
    return out + tvm_names() + kernel_names()


def _key() -> str:
    h = hashlib.sha256(sys.version.encode() + sys.executable.encode())
    for f in sorted(SOURCE.iterdir()) + [KERNELS["dlbridge, Cython"][1]]:
        h.update(f.name.encode() + f.read_bytes())
    package = pathlib.Path(os.path.abspath(dlbridge.__file__)).parent
    for f in sorted(package.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            st = f.stat()
            h.update(f"{f.relative_to(package)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def build(quick: bool = False) -> tuple[pathlib.Path | None, str]:
    """(folder holding the three modules, "") or (None, why they could not be
    built). --quick's smoke pass builds them at -O0, in a folder of its own:
    its figures are no results, and optimizing is a large part of its work."""
    if not os.path.isdir(dlbridge.get_include()):
        return None, "dlbridge is not an installed wheel (no headers): pip install ."
    folder = CACHE / f"arguments-{'quick-' if quick else ''}{_key()}"
    if (folder / "built").is_file():
        return folder, ""
    shutil.rmtree(folder, ignore_errors=True)  # a build that stopped half way
    options = ["-Doptimization=0"] if quick else []
    for step in (["meson", "setup", str(folder), str(SOURCE), f"-Dpython={sys.executable}", *options],
                 ["meson", "compile", "-C", str(folder)]):
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            return None, f"building benchmarks/arguments failed ({' '.join(step[:2])}): " + \
                (result.stdout + result.stderr)[-500:].replace("\n", " ")
    (folder / "built").write_text("")
    return folder, ""


def inputs() -> dict[str, object]:
    import jax
    import torch
    jax.config.update("jax_enable_x64", True)  # float64 arrays (this process holds no other JAX work)
    a = np.ones((1, 1))
    return {"NumPy": a, "torch": torch.ones(1, 1, dtype=torch.float64), "Array": dlbridge.asarray(a),
            "JAX": jax.numpy.ones((1, 1))}


def functions(folder: pathlib.Path) -> dict[str, object]:
    import importlib
    sys.path.insert(0, str(folder))
    try:
        modules = {m: importlib.import_module(m)
                   for m in ("args_cython", "args_nanobind", "args_pybind11", "args_plain")}
    finally:
        sys.path.remove(str(folder))
    return {route: getattr(modules[m], f) for route, (m, f, _) in ROUTES.items()} | {
        route: getattr(modules[m], f) for route, (m, f) in RETURNS.items()} | {
        "bare": modules["args_cython"].bare, "torch_state_checks": modules["args_cython"].torch_state_checks}


def child(target: str, n: int) -> None:
    """The measured program (under valgrind): `route@input`, N calls."""
    folder = pathlib.Path(os.environ["DLB_ARGUMENTS_BUILD"])
    route, input_ = target.split("@")
    # The kernel rows and their bare call: NumPy only. (A child that imports
    # torch and JAX, as the other rows' do, counted its bare call at about
    # 1,450 Ir against 465 without them (N=500): work that N and 2N do not
    # cancel.)
    if route in KERNELS:
        f, x = kernel_call(kernel_modules(folder)[route], input_)
    elif input_ == KERNEL_BARE:
        f, x = functions(folder)["bare"], None
    else:
        f, x = functions(folder)[route], inputs()[input_]

    def run(f, x, n):
        for _ in range(n):
            f(x)

    run(f, x, n)


def instruction_counts(folder: pathlib.Path) -> dict[tuple[str, str], float] | str:
    """Ir per call of the bare call and of each goal row's two routes, or why there are none."""
    # One bare call serves every input: it does nothing with its argument.
    targets = sorted({f"{r}@{i}" for i, peer, _ in GOALS for r in ("dlbridge converter", peer)} | {"bare@NumPy"} |
                     {f"{r}@{i}" for r, _ in CONVERTER_GOALS for i in INPUTS if i in ROUTES[r][2]} |
                     {f"dlbridge converter@{i}" for i in INPUTS} |
                     {f"{r}@NumPy" for r, _ in RETURN_GOALS} | {f"{RETURN_PEER}@NumPy"} |
                     {f"{v}@{c}" for v in KERNELS for c in KERNEL_CALLS} | {f"bare@{KERNEL_BARE}"})
    os.environ["DLB_ARGUMENTS_BUILD"] = str(folder)
    try:
        ir, setup = instructions.per_call(instructions.QUICK_N, targets, script=__file__)
    except RuntimeError as e:
        return str(e).replace("\n", " ")[-300:]
    return {tuple(t.split("@")): v for t, v in ir.items()} | {("setup", ""): setup}


def _callgrind_note(counts, route: str, peer: str, input_: str) -> str:
    """"; callgrind net Ir a / b = ratio (setup)", or why there are none."""
    if isinstance(counts, str):
        return f"; callgrind failed: {counts}"
    if not counts:
        return ""
    ours, theirs = (counts[r, input_] - counts["bare", "NumPy"] for r in (route, peer))
    return f"; callgrind net Ir {ours:.0f} / {theirs:.0f} = {ours / theirs:.2f} ({counts['setup', '']})"


def rows(quick: bool = False, callgrind: bool = True) -> list[Row]:
    folder, why = build(quick)
    if folder is None:
        goals = {goal_name(i, p): g for i, p, g in GOALS} | {
            converter_goal_name(i, r): g for i in INPUTS for r, g in CONVERTER_GOALS} | {glue_name(): -1} | {
            return_goal_name(r): g for r, g in RETURN_GOALS} | {tvm_goal_name(TVM_GOAL[0]): TVM_GOAL[1]}
        return [Row("arguments", n, "-", "-", None, "<=" if n in goals else None, goals.get(n), note=why)
                for n in names()]
    f, x = functions(folder), inputs()
    counts = instruction_counts(folder) if callgrind and not quick and instructions.valgrind_version() else None
    samples, sample_ns = (10, 1e6) if quick else (200, 2e6)
    out = []
    for input_ in INPUTS:
        taking = [r for r, (_, _, takes) in ROUTES.items() if input_ in takes]
        for r in taking:  # each route takes the input and reaches its data
            assert f[r](x[input_]) in (0, 1), r
        r_ = compare({name: loop("f(x)", f=f[name], x=x[input_]) for name in ["bare"] + taking},
                     sample_ns=sample_ns, samples=samples)
        bare = r_["bare"].min_ns
        net = {name: r_[name].min_ns - bare for name in taking}
        run_note = f"bare call {ns(bare)}; {r_['bare'].samples} samples x {r_['bare'].loops} calls"
        for i, peer, goal in GOALS:
            if i != input_:
                continue
            note = f"{ns(net['dlbridge converter'])} / {ns(net[peer])} net; {run_note}"
            note += _callgrind_note(counts, "dlbridge converter", peer, input_)
            out.append(Row("arguments", goal_name(input_, peer), ns(r_["dlbridge converter"].min_ns),
                           ns(r_[peer].min_ns), net["dlbridge converter"] / net[peer], "<=", goal, note=note))
        for r, goal in CONVERTER_GOALS:
            if r in taking:
                out.append(Row("arguments", converter_goal_name(input_, r), ns(r_[r].min_ns),
                               ns(r_["dlbridge converter"].min_ns), net[r] / net["dlbridge converter"], "<=", goal,
                               note=f"{ns(net[r])} / {ns(net['dlbridge converter'])} net; {run_note}"
                                    + _callgrind_note(counts, r, "dlbridge converter", input_)))
        for name in taking:
            out.append(Row("arguments", route_name(input_, name), ns(r_[name].min_ns), ns(bare), net[name], None,
                           None, unit="ns", note=f"median {ns(r_[name].median_ns)}; {run_note}"))
    return (out + return_rows(f, x["NumPy"], counts, sample_ns, samples) + tvm_rows(f, x, sample_ns, samples)
            + kernel_rows(folder, samples, sample_ns, counts))


def tvm_rows(f: dict[str, object], x: dict[str, object], sample_ns: float, samples: int) -> list[Row]:
    """The TVM FFI rows: its nop and dlbridge's converter on each kind of
    input, each net of its own tool's bare call, in one interleaved run."""
    try:
        import tvm_ffi
        import tvm_ffi.testing
    except ImportError as e:
        return [Row("arguments", n, "-", "-", None, "<=" if n == tvm_goal_name(TVM_GOAL[0]) else None,
                    TVM_GOAL[1] if n == tvm_goal_name(TVM_GOAL[0]) else None,
                    note=f"TVM FFI is not importable ({e}): pip install apache-tvm-ffi") for n in tvm_names()]
    nop = tvm_ffi.testing.nop
    theirs = {i: x[d] for i, d in TVM_INPUTS.items()} | {"own array": tvm_ffi.from_dlpack(x["torch"])}
    sides = {"bare": loop("f(x)", f=f["bare"], x=x["NumPy"]), "TVM FFI bare": loop("f(1)", f=nop),
             "checks": loop("f(x)", f=f["torch_state_checks"], x=x["torch"])}
    for i, d in TVM_INPUTS.items():
        sides[f"dlbridge {i}"] = loop("f(x)", f=f["dlbridge converter"], x=x[d])
        sides[f"TVM FFI {i}"] = loop("f(x)", f=nop, x=theirs[i])
    r_ = compare(sides, sample_ns=sample_ns, samples=samples)
    bare, tvm_bare = r_["bare"].min_ns, r_["TVM FFI bare"].min_ns
    run_note = (f"bare calls {ns(bare)} (Cython) and {ns(tvm_bare)} (nop(1)); "
                f"{r_['bare'].samples} samples x {r_['bare'].loops} calls")
    out = []
    for i in TVM_RATIOS:
        ours, theirs_net = r_[f"dlbridge {i}"].min_ns - bare, r_[f"TVM FFI {i}"].min_ns - tvm_bare
        goal = TVM_GOAL[1] if i == TVM_GOAL[0] else None
        out.append(Row("arguments", tvm_goal_name(i), ns(r_[f"dlbridge {i}"].min_ns), ns(r_[f"TVM FFI {i}"].min_ns),
                       ours / theirs_net, "<=" if goal else None, goal,
                       note=f"{ns(ours)} / {ns(theirs_net)} net; {run_note}"))
    for i in TVM_INPUTS:
        out.append(Row("arguments", tvm_route_name(i), ns(r_[f"TVM FFI {i}"].min_ns), ns(tvm_bare),
                       r_[f"TVM FFI {i}"].min_ns - tvm_bare, None, None, unit="ns",
                       note=f"dlbridge's converter on its {TVM_INPUTS[i]} input: "
                            f"{ns(r_[f'dlbridge {i}'].min_ns - bare)} over the bare Cython call; " + run_note))
    out.append(Row("arguments", TORCH_CHECKS, ns(r_["checks"].min_ns), ns(bare), r_["checks"].min_ns - bare, None,
                   None, unit="ns", note="requires_grad, is_neg (a real tensor); " + run_note))
    return out


def return_rows(f: dict[str, object], x: np.ndarray, counts, sample_ns: float, samples: int) -> list[Row]:
    """The return rows: each route called with the NumPy input x, timed beside the bare call."""
    for r in RETURNS:  # each route returns a new ndarray holding 1.0
        out = f[r](x)
        assert type(out) is np.ndarray and out.shape == (1,) and out.dtype == np.float64 and out[0] == 1.0, r
    r_ = compare({name: loop("f(x)", f=f[name], x=x) for name in ["bare", *RETURNS]},
                 sample_ns=sample_ns, samples=samples)
    bare = r_["bare"].min_ns
    net = {name: r_[name].min_ns - bare for name in RETURNS}
    run_note = f"bare call {ns(bare)}; {r_['bare'].samples} samples x {r_['bare'].loops} calls"
    out = []
    for r, goal in RETURN_GOALS:
        note = f"{ns(net[r])} / {ns(net[RETURN_PEER])} net; {run_note}"
        if isinstance(counts, dict):
            ours, peer = (counts[name, "NumPy"] - counts["bare", "NumPy"] for name in (r, RETURN_PEER))
            note += f"; callgrind net Ir {ours:.0f} / {peer:.0f} = {ours / peer:.2f} ({counts['setup', '']})"
        elif isinstance(counts, str):
            note += f"; callgrind failed: {counts}"
        out.append(Row("arguments", return_goal_name(r), ns(r_[r].min_ns), ns(r_[RETURN_PEER].min_ns),
                       net[r] / net[RETURN_PEER], "<=", goal, note=note))
    for name in RETURNS:
        out.append(Row("arguments", return_route_name(name), ns(r_[name].min_ns), ns(bare), net[name], None, None,
                       unit="ns", note=f"median {ns(r_[name].median_ns)}; {run_note}"))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        child(args[1], int(args[2]))
        return 0
    return _harness.main(__doc__, rows, argv)


if __name__ == "__main__":
    sys.exit(main())
