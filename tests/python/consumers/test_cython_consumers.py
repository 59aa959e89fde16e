"""Cython consumers of the installed package (docs/cython-guide.md).

tests/downstream/cython is a separate meson-python package that does
`from dlbridge cimport Array, wrap, cpp`: checked typed views of Arrays,
arrays made in C++ and wrapped as Arrays, and memory adopted through a
dlb::cuda view. It is built with pip against the INSTALLED dlbridge (its
shipped .pxd files and headers), and used from NumPy and PyTorch with
the build on sys.path (consumers.run_example).
"""
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import dlbridge
from consumers import INSTALLED, clang_with_modules, run_example as run
from gpu import needs_gpu
from paths import DOCS, DOWNSTREAM, ROOT

EXAMPLE = DOWNSTREAM / "cython"
PACKAGE = pathlib.Path(os.path.abspath(dlbridge.__file__)).parent

GUIDE = DOCS / "cython-guide.md"

@pytest.fixture
def example(cython_example):
    """The example, built once per run (conftest.py): (target, build folder)."""
    return cython_example


def test_builds_against_the_installed_package(example):
    target, build = example
    assert list(target.glob("dlb_example*.so")) or list(target.glob("dlb_example*.pyd"))
    # The headers reach the C++ compiler and the .pxd files Cython, from the installed package.
    ninja = (build / "build.ninja").read_text()
    assert f"-I{dlbridge.get_include()}" in ninja
    assert re.search(rf"ARGS = .*--cplus -I{re.escape(str(PACKAGE.parent))}$", ninja, re.M)  # --cython-flags
    for pxd in ("__init__.pxd", "cpp.pxd", "_array.pxd", "_types.pxd", "_dlpack.pxd"):
        assert (PACKAGE / pxd).is_file(), pxd
    # The example depends on the installed minor series (docs/cython-guide.md, "Which dlbridge to depend on").
    major, minor = dlbridge.__version__.split(".")[:2]
    ranges = re.findall(r'"dlbridge([^"]*)"', (EXAMPLE / "pyproject.toml").read_text())
    assert ranges == [f">={major}.{minor},<{major}.{int(minor) + 1}"] * 2, ranges


def test_signatures_show_the_demands(example):
    run(example, """
        import inspect, pydoc
        assert str(inspect.signature(ex.row_sums)) == "(x: 'float32[*, *] C-contiguous cpu read-only')"
        assert str(inspect.signature(ex.norms)) == "(points: 'float64[*, 3] cpu read-only')"
        assert str(inspect.signature(ex.scale_)) == "(x: 'float32[*, *] cpu writable', factor)"
        assert str(inspect.signature(ex.dot)) == "(x: 'float64[*] cpu read-only', y: 'float64[*] cpu read-only')"
        text = pydoc.render_doc(ex.row_sums, renderer=pydoc.plaintext)
        assert "row_sums(x: 'float32[*, *] C-contiguous cpu read-only')" in text, text
        assert str(inspect.signature(ex.grid)) == "(rows, cols)"  # no array argument, nothing added
    """)


def test_stubs_of_the_example(example, tmp_path):
    target, _ = example
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(target), os.environ.get("PYTHONPATH")) if p))
    result = subprocess.run([sys.executable, "-m", "dlbridge", "stubs", "dlb_example", "-o", str(tmp_path)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0 and result.stdout == f"{tmp_path / 'dlb_example.pyi'}\n", result
    lines = (tmp_path / "dlb_example.pyi").read_text().splitlines()
    for line in ("def row_sums(x: Annotated[Any, 'float32[*, *] C-contiguous cpu read-only']): ...",
                 "def norms(points: Annotated[Any, 'float64[*, 3] cpu read-only']): ...",
                 "def scale_(x: Annotated[Any, 'float32[*, *] cpu writable'], factor): ...",
                 "def grid(rows, cols): ...",
                 "def __getattr__(name: str) -> Any: ..."):
        assert line in lines, lines
    # A stub type checkers accept.
    checked = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", str(tmp_path / "dlb_example.pyi")],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.needs_torch
def test_checked_view_reads_numpy_and_torch(example):
    run(example, """
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        sums = ex.row_sums(a)
        assert type(sums) is dlbridge.Array, type(sums)  # made in C++, wrapped as Array
        assert (sums.shape, sums.dtype, sums.device) == ((3,), "float32", "cpu")
        assert sums.tolist() == [6.0, 22.0, 38.0]
        assert ex.row_sums(torch.arange(6, dtype=torch.float32).reshape(2, 3)).tolist() == [3.0, 12.0]
        read_only = a.copy()
        read_only.flags.writeable = False
        assert ex.row_sums(read_only).tolist() == [6.0, 22.0, 38.0]  # the view type says dlb::ro
        assert ex.row_sums(np.zeros((0, 5), np.float32)).shape == (0,)
        assert ex.norms(np.array([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0]])) == [5.0, 3.0]
    """)


# Each call, and the message of the TypeError it must raise: a valid array
# that does not fit the argument's view type.
UNMET = [
    ("ex.row_sums(np.zeros((2, 3)))", "row_sums(): argument 'x': expected float32, got float64"),
    ("ex.row_sums(torch.zeros(2, 3, dtype=torch.int32))", "row_sums(): argument 'x': expected float32, got int32"),
    ("ex.row_sums(np.zeros((2, 3, 4), np.float32))", "row_sums(): argument 'x': expected ndim 2, got 3"),
    ("ex.row_sums(torch.zeros(3, dtype=torch.float32))", "row_sums(): argument 'x': expected ndim 2, got 1"),
    ("ex.row_sums(np.float32(1.0))", "row_sums(): argument 'x': expected ndim 2, got 0"),
    ("ex.row_sums(np.zeros((2, 3), np.float32, order='F'))",
     "row_sums(): argument 'x': expected C-contiguous strides, got strides (1, 2)"),
    ("ex.row_sums(torch.zeros(3, 4).T)", "row_sums(): argument 'x': expected C-contiguous strides, got strides (1, 4)"),
    ("ex.row_sums(np.zeros((2, 6), np.float32)[:, ::2])",
     "row_sums(): argument 'x': expected C-contiguous strides, got strides (6, 2)"),
    ("ex.row_sums(dlbridge.zeros((2, 3, 1), dtype='float32'))", "row_sums(): argument 'x': expected ndim 2, got 3"),
    ("ex.row_sums(memoryview(np.zeros(4, np.float32)))", "row_sums(): argument 'x': expected ndim 2, got 1"),
    ("ex.scale_(read_only, 2.0)", "scale_(): argument 'x': expected writable data, got read-only data"),
    ("ex.scale_(jnp.ones((2, 3), jnp.float32), 2.0)", "scale_(): argument 'x': expected writable data, got read-only data"),
    ("ex.scale_(np.zeros((2, 3), np.float16), 2.0)", "scale_(): argument 'x': expected float32, got float16"),
    ("ex.scale_(ex.bytes_view(bytes(8)), 2.0)", "scale_(): argument 'x': expected float32, got uint8"),
    ("ex.norms(np.zeros((2, 4)))", "norms(): argument 'points': axis 1: expected extent 3, got 4"),
    ("ex.norms(np.zeros((2, 3), np.float32))", "norms(): argument 'points': expected float64, got float32"),
    ("ex.dot(np.zeros(3), np.zeros(3, np.float32))", "dot(): argument 'y': expected float64, got float32"),
    ("ex.dot(np.zeros(3, bool), np.zeros(3))", "dot(): argument 'x': expected float64, got bool"),
    ("ex.row_sums(ex.cuda_vector_at_address(0x10000, 6))", "row_sums(): argument 'x': expected device cpu, got cuda"),
    # No array at all: no copy is made, so a list is refused too.
    *[(f"ex.row_sums({arg})", "row_sums(): argument 'x': expected an array (an object with __dlpack__, "
       f"__cuda_array_interface__, __array_interface__ or the buffer protocol), got {name}")
      for arg, name in (("None", "NoneType"), ("[[1.0]]", "list"), ("'abc'", "str"), ("object()", "object"))],
]


# Code that evaluates each (call, message) of `cases` and fails naming every
# call that did not raise TypeError(message).
EXPECT_TYPE_ERRORS = textwrap.dedent("""
        failures = []
        for call, message in cases:
            try:
                eval(call)
            except TypeError as e:
                if str(e) != message:
                    failures.append(f"{call}: TypeError({str(e)!r}), expected {message!r}")
            except Exception as e:
                failures.append(f"{call}: {type(e).__name__}({str(e)!r}), expected TypeError")
            else:
                failures.append(f"{call}: no TypeError")
        assert not failures, "\\n".join(failures)
""")


@pytest.mark.needs_torch
def test_unmet_constraint_is_type_error_naming_the_argument(example):
    run(example, f"cases = {UNMET!r}\n" + textwrap.dedent("""
        import jax.numpy as jnp
        read_only = np.ones((2, 3), np.float32)
        read_only.flags.writeable = False
    """) + EXPECT_TYPE_ERRORS)


@pytest.mark.needs_torch
def test_arguments_from_every_producer_share_memory(example):
    run(example, """
        import array
        import jax.numpy as jnp

        class Sub(np.ndarray):
            pass

        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        sums = [6.0, 22.0, 38.0]
        for x in (a, torch.from_numpy(a), dlbridge.asarray(a), memoryview(a), jnp.asarray(a), a.view(Sub),
                  np.arange(24, dtype=np.float32).reshape(2, 3, 4)[0],  # a view at an offset of its base
                  dlbridge.from_dlpack(torch.from_numpy(a)), type("A", (dlbridge.Array,), {})(a)):
            assert ex.row_sums(x).tolist() == sums, type(x)
        # Any strides where the view allows them: reversed, sliced, transposed.
        v = np.arange(6.0)
        assert ex.dot(v[::-2], v[1::2]) == 5 * 1 + 3 * 3 + 1 * 5
        assert ex.dot(torch.arange(6.0, dtype=torch.float64)[::3], array.array("d", [2.0, 1.0])) == 3.0
        assert ex.dot(np.zeros(0), torch.zeros(0, dtype=torch.float64)) == 0.0
        assert ex.norms(torch.tensor([[3.0, 4.0, 0.0]], dtype=torch.float64)) == [5.0]
        assert ex.norms(np.zeros((0, 3))) == []
        # Writes reach the producer's memory; the function returns its argument.
        for make in (lambda: np.ones((2, 3), np.float32), lambda: torch.ones(2, 3), lambda: dlbridge.full((2, 3), 1.0, dtype="float32"),
                     lambda: np.ones((2, 3), np.float32).view(Sub), lambda: np.ones((3, 2), np.float32).T):
            x = make()
            assert ex.scale_(x, 3.0) is x
            assert np.asarray(dlbridge.asarray(x)).tolist() == [[3.0] * 3] * 2, type(x)
        backing = np.ones((2, 3), np.float32)
        ex.scale_(memoryview(backing), 2.0)
        assert backing.sum() == 12.0
        # Unaligned NumPy data (the ndarray table passes it to __dlpack__).
        unaligned = np.zeros(4 * 6 + 1, np.uint8)[1:].view(np.float32).reshape(2, 3)
        assert not unaligned.flags.aligned
        unaligned[:] = 1.0
        assert ex.row_sums(unaligned).tolist() == [3.0, 3.0]
    """)


@pytest.mark.needs_torch
def test_exchanges_that_fail_stay_the_protocols_errors(example):
    run(example, """
        class Impostor:
            # Claims a table whose slots refuse it; its __dlpack__ answers.
            def __init__(self, base):
                self.base = base

            def __dlpack__(self, **kwargs):
                return self.base.__dlpack__(**kwargs)

            def __dlpack_device__(self):
                return self.base.__dlpack_device__()

        for table in (torch.Tensor.__dlpack_c_exchange_api__, dlbridge.Array.__dlpack_c_exchange_api__):
            kind = type("Impostor", (Impostor,), {"__dlpack_c_exchange_api__": table})
            assert ex.dot(kind(np.arange(3.0)), np.ones(3)) == 3.0

        class Refusing(torch.Tensor):
            def __dlpack__(self, *args, **kwargs):
                raise BufferError("Refusing.__dlpack__ refuses")

        class Empty(dlbridge.Array):
            def __init__(self):
                pass

        class Raising:
            def __dlpack__(self, **kwargs):
                raise RuntimeError("the producer failed")

            def __dlpack_device__(self):
                return (1, 0)

        cases = [
            ("ex.row_sums(np.ones((2, 3), '>f4'))", BufferError,
             "DLPack only supports native byte order. (from ndarray.__dlpack__(); got dtype >f4)"),
            ("ex.dot(np.ones(3, object), np.ones(3))", BufferError,
             "DLPack only supports signed/unsigned integers, float and complex dtypes. "
             "(from ndarray.__dlpack__(); got dtype object)"),
            ("ex.row_sums(torch.ones(2, 3, requires_grad=True))", BufferError,
             "from_dlpack: the Tensor requires gradient, which DLPack cannot express; call .detach() first"),
            ("ex.dot(torch.ones(2, dtype=torch.complex128).conj().imag, np.ones(2))", BufferError,
             "from_dlpack: the Tensor has its negative bit set, which DLPack cannot express; call .resolve_neg() first"),
            # An integer tensor cannot require grad, but can have its negative bit set (torch._neg_view).
            ("ex.int_sum(torch._neg_view(torch.arange(3, dtype=torch.int32)))", BufferError,
             "from_dlpack: the Tensor has its negative bit set, which DLPack cannot express; call .resolve_neg() first"),
            ("ex.dot(torch.arange(3.0, dtype=torch.float64).as_subclass(Refusing), np.ones(3))", BufferError,
             "Refusing.__dlpack__ refuses (from Refusing.__dlpack__(); got dtype torch.float64)"),
            ("ex.dot(Raising(), np.ones(3))", RuntimeError, "the producer failed"),
            # An Array made by __new__ alone holds no memory: the argument says so, as every method does.
            ("ex.row_sums(dlbridge.Array.__new__(dlbridge.Array))", ValueError,
             "this Array holds no array: it was made by Array.__new__ without Array.__init__ "
             "(a subclass's __init__ must call it)"),
            ("ex.row_sums(Empty())", ValueError, "this Empty holds no array: it was made by Empty.__new__ "
             "without Array.__init__ (a subclass's __init__ must call it)"),
        ]
        for call, kind, message in cases:
            try:
                eval(call)
            except kind as e:
                assert str(e) == message, (call, str(e))
            else:
                raise AssertionError(f"{call}: no {kind.__name__}")
    """)


def test_a_producer_without_dlpack_device_is_an_argument(example):
    # The device is the tensor's, as for from_dlpack; versioned capsules carry
    # write access, legacy ones are read-only.
    run(example, """
        import dlb_plain

        class Versioned:
            def __init__(self, base):
                self.base = base

            def __dlpack__(self, **kwargs):
                return self.base.__dlpack__(**kwargs)

        class Legacy(Versioned):
            def __dlpack__(self, **kwargs):
                return self.base.__dlpack__()

        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        for kind in (Versioned, Legacy):
            assert ex.row_sums(kind(a)).tolist() == [3.0, 12.0]
            assert dlb_plain.row_sums(kind(a.astype(np.float64))) == [3.0, 12.0]
        assert ex.scale_(Versioned(a), 2.0) is not a and a[1, 2] == 10.0  # written through
        try:
            ex.scale_(Legacy(a), 2.0)
        except TypeError as e:
            assert str(e) == "scale_(): argument 'x': expected writable data, got read-only data", e
        else:
            raise AssertionError("a legacy capsule was written")
    """)


@pytest.mark.needs_torch
def test_arguments_hold_no_reference_after_the_call(example):
    run(example, """
        import sys
        import weakref
        for x in (np.ones((2, 3), np.float32), torch.ones(2, 3), dlbridge.full((2, 3), 1.0, dtype="float32"),
                  memoryview(np.ones((2, 3), np.float32))):
            before = sys.getrefcount(x)
            for _ in range(200):
                ex.row_sums(x)
                ex.scale_(x, 1.0)
                try:
                    ex.norms(x)
                except TypeError:
                    pass
            assert sys.getrefcount(x) == before, type(x)
        # The Array made for a buffer lives only for the call: the memory is free once x goes.
        backing = np.ones((2, 3), np.float32)
        x = memoryview(backing)
        ex.row_sums(x)
        del x
        gc.collect()
        backing.resize((4, 3), refcheck=True)  # raises while any buffer export is alive
    """)


@pytest.mark.needs_torch
def test_arguments_from_threads(example):
    run(example, """
        import threading
        inputs = [np.full((4, 5), i, np.float32) for i in range(4)] + [torch.full((4, 5), 4.0 + i) for i in range(4)]
        errors = []

        def work(x, expected):
            try:
                for _ in range(500):
                    assert ex.row_sums(x).tolist() == [expected] * 4
                    try:
                        ex.norms(x)
                    except TypeError:
                        pass
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(x, 5.0 * i)) for i, x in enumerate(inputs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    """)


def test_check_without_exceptions(example):
    run(example, """
        a = np.ones((2, 3), np.float32)
        assert ex.explain(a) is None
        assert ex.explain(a.T) == "strides: expected C-contiguous strides, got strides (1, 3)"
        assert ex.explain([[1.0, 2.0]]) == "dtype: expected float32, got float64"
        assert ex.explain_vector(np.zeros(4), 4) is None
        assert ex.explain_vector(np.zeros(3), 4) == ("shape", 0, "shape: axis 0: expected extent 4, got 3")
        read_only = np.zeros(4)
        read_only.flags.writeable = False
        assert ex.explain_vector(read_only, 4) == ("flags", -1, "flags: expected writable data, got read-only data")
    """)


@pytest.mark.needs_torch
def test_writes_through_to_numpy_and_torch(example):
    run(example, """
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        assert ex.scale_(a, 2.0) is a
        assert a.tolist() == [[0, 2, 4], [6, 8, 10]]
        t = torch.ones(4, 6)
        ex.scale_(t[:, ::2].T, 3.0)  # strided: the in-place view accepts any strides
        assert t[:, ::2].eq(3).all() and t[:, 1::2].eq(1).all()
    """)


def test_c_level_description(example):
    run(example, """
        a = np.arange(24, dtype=np.float32).reshape(4, 6)[1:, ::2].T
        d = ex.describe(a)
        arr = dlbridge.asarray(a)
        assert d["data"] == arr.data_ptr == a.ctypes.data
        assert d["device"] == (1, 0) and d["ndim"] == 2 and d["dtype"] == (2, 32, 1)
        assert d["shape"] == d["tensor_shape"] == arr.shape == (3, 3)
        assert d["strides"] == d["tensor_strides"] == arr.strides == (2, 6)
        assert d["byte_offset"] == 0 and d["readonly"] is False
    """)


@pytest.mark.needs_torch
def test_array_made_in_cpp_is_zero_copy(example):
    run(example, """
        g = ex.grid(3, 4)
        assert type(g) is dlbridge.Array and g.dtype == "float32" and g.shape == (3, 4)
        assert g.__dlpack_device__() == (1, 0)
        n = np.from_dlpack(g)
        t = torch.from_dlpack(g)
        assert n.ctypes.data == t.data_ptr() == g.data_ptr
        assert n.tolist() == [[4.0 * i + j for j in range(4)] for i in range(3)]
        t[2, 3] = -1.0  # (np.from_dlpack's arrays are read-only before NumPy 2.2)
        assert n[2, 3] == -1.0 and float(g[2, 3]) == -1.0
        del g
        gc.collect()
        assert n[2, 3] == -1.0 and t.sum().item() == n.sum()  # the exports keep the memory alive
        assert dlbridge.from_dlpack(t).data_ptr == n.ctypes.data
        try:
            ex.grid(-1, 2)
        except ValueError as e:
            assert "negative extent" in str(e), e
        else:
            raise AssertionError("no ValueError")
    """)


def test_memory_python_owns_stays_alive(example):
    run(example, """
        import sys
        data = bytes(range(10)) * 3
        refs = sys.getrefcount(data)
        view = ex.bytes_view(data)
        assert (view.dtype, view.shape, view.readonly) == ("uint8", (30,), True)
        n = np.from_dlpack(view)
        assert not n.flags.writeable and n.ctypes.data == view.data_ptr and n.tobytes() == data
        assert sys.getrefcount(data) == refs + 1
        del view
        gc.collect()
        assert sys.getrefcount(data) == refs + 1  # n still holds the memory
        del n
        gc.collect()
        assert sys.getrefcount(data) == refs
    """)


def test_memory_wrapped_through_a_cuda_view_is_labelled_cuda(example):
    run(example, """
        c = ex.cuda_vector_at_address(0x10000, 8)
        assert c.__dlpack_device__() == (2, 0)
        assert c.device == "cuda:0" and str(c.device) == "cuda:0"
        assert (c.shape, c.dtype, c.data_ptr) == ((8,), "float32", 0x10000)
        assert ex.cuda_vector_at_address(0x10000, 8, 1).__dlpack_device__() == (2, 1)
        assert ex.describe(c)["device"] == (2, 0)
        # Nobody reads it as host memory: NumPy refuses the device, dlbridge too.
        for read in (np.from_dlpack, np.asarray, lambda x: x.tolist(), memoryview):
            try:
                read(c)
            except (BufferError, RuntimeError) as e:
                assert "device" in str(e) or "cuda:0" in str(e), e
            else:
                raise AssertionError(f"{read} read CUDA memory")
        # The release runs once, when the Array and its exports are gone.
        gc.collect()
        before = ex.releases()
        capsule = c.__dlpack__(max_version=(1, 3))
        del c
        gc.collect()
        assert ex.releases() == before
        del capsule
        gc.collect()
        assert ex.releases() == before + 1
    """)


def test_guide_quotes_the_example_verbatim():
    """Code blocks the guides mark "from tests/downstream/cython/<file>" are
    taken from that file, so the guide shows the code this module runs."""
    text = GUIDE.read_text() + (GUIDE.parent / "cpp-guide.md").read_text()
    blocks = re.findall(r"<!-- from (tests/downstream/cython/[\w.]+) -->\n```\w+\n(.*?)```", text, re.S)
    assert len(blocks) >= 14, blocks
    root = ROOT
    for name, block in blocks:
        assert block in (root / name).read_text(), f"{name} no longer contains:\n{block}"


@pytest.mark.needs_torch
def test_plain_cpp_extension_takes_every_producer(example):
    # dlb_plain.cpp: the same converter from C++ with no Cython
    # (dlb::python::array_argument, <dlbridge/python/argument.hpp>).
    run(example, """
        import sys
        import dlb_plain
        a = np.arange(6.0).reshape(2, 3)
        for x in (a, a.T, torch.from_numpy(a), dlbridge.asarray(a), a[:, ::-2], memoryview(a)):
            assert dlb_plain.row_sums(x) == np.asarray(x).sum(axis=1).tolist(), x
        y = np.zeros(4)
        before = sys.getrefcount(y)
        for _ in range(200):
            dlb_plain.fill_(y, 2.5)
        assert y.tolist() == [2.5] * 4 and sys.getrefcount(y) == before
        t = torch.zeros(3, dtype=torch.float64)
        dlb_plain.fill_(t, 1.0)
        assert t.tolist() == [1.0] * 3
        frozen = np.zeros(3)
        frozen.flags.writeable = False
        cases = [
            (lambda: dlb_plain.row_sums(np.zeros((2, 3), np.float32)), "row_sums(): argument 'x': expected float64, got float32"),
            (lambda: dlb_plain.row_sums(np.zeros(3)), "row_sums(): argument 'x': expected ndim 2, got 1"),
            (lambda: dlb_plain.fill_(frozen, 1.0), "fill_(): argument 'y': expected writable data, got read-only data"),
            (lambda: dlb_plain.fill_(np.zeros(6)[::2], 1.0), "fill_(): argument 'y': expected C-contiguous strides, got strides (2,)"),
            (lambda: dlb_plain.row_sums([[1.0]]), "row_sums(): argument 'x': expected an array (an object with __dlpack__, "
                                                  "__cuda_array_interface__, __array_interface__ or the buffer protocol), got list"),
        ]
        for call, message in cases:
            try:
                call()
            except TypeError as e:
                assert str(e) == message, (str(e), message)
            else:
                raise AssertionError(f"no TypeError: {message}")
        try:
            dlb_plain.row_sums(np.arange(3, dtype=">f8").reshape(1, 3))
        except BufferError as e:
            assert "native byte order" in str(e), e
        else:
            raise AssertionError("byte-swapped data was taken")
        assert sys.getrefcount(frozen) == 2
    """)


def test_set_copy_threads_reaches_the_consumers_copies(example):
    # One copy state per process, dlbridge's (dlbridge._backend's): the Cython module's copy
    # calls (cpp.pxd) use it before they copy, and a C++ module's from the
    # first argument it takes (get_argument_api).
    run(example, """
        import dlb_plain
        default = dlbridge.get_copy_threads()
        dlbridge.set_copy_threads(3)
        assert ex.copy_threads() == 3
        dlb_plain.row_sums(np.zeros((1, 1)))
        assert dlb_plain.copy_threads() == 3
        dlbridge.set_copy_threads(None)
        assert ex.copy_threads() == dlb_plain.copy_threads() == default
        dlbridge.set_copy_threads(5)
        assert ex.copy_threads() == dlb_plain.copy_threads() == dlbridge.get_copy_threads() == 5
        dlbridge.set_copy_threads(None)
    """)


# dlb_contracts.cpp: argument.hpp and core.hpp (dlbridge/python/) called with the NULL
# pointers their contract allows, from a compiled extension. Each case is a
# call and the exception it must raise (None: it returns).
RAISES = """
def raises(call, kind, message):
    try:
        call()
    except kind as e:
        assert str(e) == message, (str(e), message)
    else:
        raise AssertionError(f"no {kind.__name__}: {message}")
"""

# Ways of naming an argument (None: NULL) and how its errors begin.
NAMINGS = [("total", "x", "total(): argument 'x'"), (None, "x", "argument 'x'"), ("total", None, "total(): argument"),
           (None, None, "argument")]


@pytest.mark.needs_torch
def test_null_names_are_left_out_of_the_messages(example):
    run(example, RAISES + f"namings = {NAMINGS!r}\n" + textwrap.dedent("""
        import dlb_contracts as c
        for function, name, label in namings:
            # An ndarray's fields, an Array lent inline, anything else through asarray's protocols.
            for x in (np.arange(4.0), dlbridge.asarray(np.arange(4.0)), memoryview(np.arange(4.0))):
                assert c.total(x, function, name) == 6.0
            for x, unmet in ((np.zeros(3, np.float32), "expected float64, got float32"),
                             (dlbridge.zeros((2, 2)), "expected ndim 1, got 2"),
                             (torch.zeros(3, dtype=torch.int64), "expected float64, got int64"),
                             ([1.0, 2.0], "expected an array (an object with __dlpack__, __cuda_array_interface__, "
                                          "__array_interface__ or the buffer protocol), got list")):
                raises(lambda: c.total(x, function, name), TypeError, f"{label}: {unmet}")
    """))


@pytest.mark.needs_torch
def test_null_objects_and_pointers_are_errors_or_nothing(example):
    run(example, RAISES + textwrap.dedent("""
        import sys
        import dlb_contracts as c
        raises(lambda: c.argument_of_null(False), ValueError, "f(): argument 'x': expected an object, got NULL")
        # NULL from a call that failed: that call's exception stands.
        raises(lambda: c.argument_of_null(True), LookupError, "the call that made the object failed")
        for x in (np.arange(3.0), dlbridge.zeros(3), torch.zeros(3, dtype=torch.float64), [1.0]):
            before = sys.getrefcount(x)
            raises(lambda: c.borrow_into_null(x), ValueError,
                   "f(): argument 'x': expected a borrowed_array to fill, got out=NULL")
            assert sys.getrefcount(x) == before
        assert c.release_nothing() is True
        raises(lambda: c.import_null(True), ValueError, "tensor::import: expected a DLManagedTensorVersioned, got NULL")
        raises(lambda: c.import_null(False), ValueError, "tensor::import: expected a DLManagedTensor, got NULL")
    """))


# -- Returning arrays made in C++ (wrap_like, to_python, to_python_like) --------

@pytest.mark.needs_torch
def test_arrays_return_like_their_input(example):
    # NumPy in, ndarray out (a subclass gives a base-class ndarray); torch in,
    # torch out; JAX in, JAX out; anything else a dlbridge.Array. Zero copy:
    # the returned array's data is the C++ tensor's.
    run(example, """
        import jax
        import jax.numpy as jnp
        import dlb_contracts as c
        import dlb_plain
        jax.config.update("jax_enable_x64", True)  # float64 stays float64 (else JAX copies it to float32)

        class Sub(np.ndarray):
            pass

        def address(r):
            if isinstance(r, torch.Tensor):
                return r.data_ptr()
            if isinstance(r, jax.Array):
                return r.unsafe_buffer_pointer()
            return dlbridge.asarray(r).data_ptr

        cases = [(np.zeros(1), np.ndarray), (np.zeros(1).view(Sub), np.ndarray), (torch.zeros(1), torch.Tensor),
                 (jnp.zeros(1), jax.Array), (dlbridge.zeros(1), dlbridge.Array),
                 (type("A", (dlbridge.Array,), {})(np.zeros(1)), dlbridge.Array), (memoryview(b"x"), dlbridge.Array),
                 ([1.0], dlbridge.Array), (None, dlbridge.Array)]  # None: to_python
        for like, kind in cases:
            for readonly in (False, True):
                if kind in (torch.Tensor, jax.Array) and readonly:
                    continue  # BufferError: test_returned_arrays_are_truthful
                r, data = c.returned_like(like, 5, readonly, "float64")
                assert isinstance(r, kind) and (kind is not np.ndarray or type(r) is np.ndarray), (like, type(r))
                assert address(r) == data, like
                a = dlbridge.asarray(r)
                assert (a.shape, a.strides, a.dtype, a.tolist()) == ((5,), (1,), "float64", [0.0, 1.0, 2.0, 3.0, 4.0])
                if kind is np.ndarray:
                    assert r.flags.writeable is not readonly and r.flags.c_contiguous and r.flags.aligned
                    assert type(r.base) is dlbridge.Array and r.base.readonly is readonly
                elif kind is dlbridge.Array:
                    assert r.readonly is readonly
        # Empty and 0-d tensors, and every layout a kernel returns.
        r, _ = c.returned_like(np.zeros(1), 0, False, "float64")
        assert type(r) is np.ndarray and r.shape == (0,) and r.dtype == np.float64
        assert type(ex.counts(0, np.zeros(1))) is np.ndarray
        f = ex.filled(2, 3, 1.5, np.zeros(1))
        assert (f.dtype, f.shape, f.strides, f.tolist()) == (np.float32, (2, 3), (12, 4), [[1.5] * 3] * 2)
        t = ex.counts(4, torch.zeros(1))
        assert (t.dtype, t.tolist()) == (torch.int32, [0, 0, 0, 0])
        j = ex.filled(1, 2, -2.0, jnp.zeros(1))
        assert isinstance(j, jax.Array) and j.dtype == jnp.float32 and j.tolist() == [[-2.0, -2.0]]
        assert type(ex.filled(1, 1, 0.0, dlbridge.zeros(1))) is dlbridge.Array
        # The kernels of the guides, from Cython and plain C++.
        for negated in (ex.negated, dlb_plain.negated):
            for x, kind in ((np.arange(3.0), np.ndarray), (torch.arange(3.0, dtype=torch.float64), torch.Tensor),
                            (dlbridge.asarray(np.arange(3.0)), dlbridge.Array), (np.arange(6.0)[::2], np.ndarray)):
                r = negated(x)
                assert type(r) is kind, (negated, type(x), type(r))
                assert dlbridge.asarray(r).tolist() == [-v for v in dlbridge.asarray(x).tolist()]
    """)


def test_returns_follow_each_inputs_own_namespace(example):
    # __array_namespace__ is asked of each input: two instances of one type
    # from two namespaces get each its own kind of array (the first one's
    # namespace used to be kept for the type).
    run(example, """
        import types
        import dlb_contracts as c

        class Wrapped:
            def __init__(self, namespace):
                self.namespace = namespace

            def __array_namespace__(self, api_version=None):
                return self.namespace

            def __dlpack_device__(self):
                return (1, 0)

        def namespace(name):
            return types.SimpleNamespace(from_dlpack=lambda x: (name, dlbridge.asarray(x).tolist()))

        first, second = Wrapped(namespace("first")), Wrapped(namespace("second"))
        for like, name in ((first, "first"), (second, "second"), (first, "first")):
            r, _ = c.returned_like(like, 3, False, "float64")
            assert r == (name, [0.0, 1.0, 2.0]), (name, r)
        # A namespace without from_dlpack: the type's modules are asked, and
        # this test's module has none, so a dlbridge.Array.
        r, _ = c.returned_like(Wrapped(types.SimpleNamespace()), 3, False, "float64")
        assert type(r) is dlbridge.Array
    """)


def test_returned_ndarrays_have_numpys_own_dtype(example):
    # Each dtype NumPy has arrives as the type number NumPy itself gives it
    # (int64 is NPY_LONG where long is 64-bit), on the same memory.
    run(example, """
        for name in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                     "float32", "float64", "complex64", "complex128"):
            a = dlbridge.asarray(np.arange(3).astype(name))
            r = ex.rewrapped_like(a, np.zeros(1))
            assert type(r) is np.ndarray and r.dtype.num == np.dtype(name).num, (name, r.dtype.num)
            assert r.ctypes.data == a.data_ptr and r.tolist() == a.tolist(), name
    """)


@pytest.mark.needs_torch
def test_returned_arrays_are_truthful(example):
    # What a library cannot hold as it is, it does not get: device memory is
    # not NumPy's, read-only data not PyTorch's, bfloat16 not NumPy's dtype.
    run(example, RAISES + textwrap.dedent("""
        import jax.numpy as jnp
        import dlb_contracts as c
        gc.collect()
        before = c.releases()
        raises(lambda: c.returned_like(np.zeros(1), 3, False, "cuda"), BufferError,
               "cannot return an array on cuda:0 like a numpy.ndarray: NumPy holds host memory only")
        raises(lambda: c.returned_like(torch.zeros(1), 3, True, "float64"), BufferError,
               "cannot return a read-only array like a torch.Tensor: its library's arrays are always writable "
               "(return it like a numpy.ndarray or a dlbridge.Array)")
        raises(lambda: c.returned_like(np.zeros(1), 3, False, "bfloat16"), BufferError,
               "cannot return a bfloat16 array like a numpy.ndarray: NumPy has no such dtype")
        # JAX's from_dlpack asks for a legacy capsule, which cannot say read-only.
        raises(lambda: c.returned_like(jnp.zeros(1), 3, True, "float64"), BufferError,
               "a read-only array cannot be exported as a legacy DLPack capsule (it has no read-only flag); "
               "pass max_version=(1, 3)")
        gc.collect()
        assert c.releases() == before + 4  # each refused tensor released, once
        # A CUDA tensor returned as an Array or a torch.Tensor is labelled cuda:0.
        r, data = c.returned_like(dlbridge.zeros(1), 3, False, "cuda")
        assert (r.device, r.data_ptr) == ("cuda:0", data)
        r, data = c.returned_like(torch.zeros(1), 3, False, "cuda")
        assert (str(r.device), r.data_ptr()) == ("cuda:0", data)
        del r
        gc.collect()
        assert c.releases() == before + 6
        b, _ = c.returned_like(None, 2, False, "bfloat16")
        assert (type(b), b.dtype) == (dlbridge.Array, "bfloat16")
    """))


@pytest.mark.needs_torch
def test_returned_arrays_release_their_tensor_once(example):
    run(example, """
        import sys
        import weakref
        import dlb_contracts as c
        for like in (np.zeros(1), torch.zeros(1), dlbridge.zeros(1), None):
            refs = sys.getrefcount(like)
            gc.collect()
            before = c.releases()
            for _ in range(1000):
                r, _ = c.returned_like(like, 1, False, "float64")
                del r
            assert sys.getrefcount(like) == refs, type(like)
            assert c.releases() == before + 1000, type(like)  # no collection needed: nothing cycles
        # The ndarray's base keeps the memory; the last view going releases it.
        gc.collect()
        before = c.releases()
        r, data = c.returned_like(np.zeros(1), 4, False, "float64")
        base = weakref.ref(r.base)
        view = r[1:]
        del r
        assert c.releases() == before and base() is not None and view.tolist() == [1.0, 2.0, 3.0]
        del view
        assert c.releases() == before + 1 and base() is None
    """)


def test_returns_refuse_empty_tensors_and_null(example):
    run(example, RAISES + textwrap.dedent("""
        import dlb_contracts as c
        empty = "expected a dlb::tensor holding an array, got an empty one (default-constructed or moved from)"
        raises(lambda: c.empty_returned(None), ValueError, "to_python: " + empty)
        raises(lambda: c.empty_returned(np.zeros(1)), ValueError, "to_python_like: " + empty)
        raises(lambda: c.returned_like_null(False), ValueError,
               "to_python_like: expected an object to return the array like, got NULL")
        # NULL from a call that failed: that call's exception stands.
        raises(lambda: c.returned_like_null(True), LookupError, "the call that made the object failed")
    """))


def test_argument_api_table_from_another_release_is_import_error(example):
    # A module checks the table's head before using it: another ABI version
    # (any change but appended slots), or a table older than the module's.
    run(example, RAISES + textwrap.dedent("""
        import dlb_contracts as c
        c.table_of(3, 10 ** 4)  # a newer dlbridge of the same ABI: appended slots are fine
        raises(lambda: c.table_of(2, 10 ** 4), ImportError,
               "the installed dlbridge's argument API is ABI version 2; this module was built for ABI version 3: "
               "rebuild it against the installed dlbridge")
        raises(lambda: c.table_of(3, 40), ImportError,
               "the installed dlbridge's argument API (ABI version 3) has 40 bytes; this module was built with a "
               "newer one of 72 bytes: install a dlbridge at least as new as the one it was built with")
    """))


def test_c_level_creation(example):
    run(example, RAISES + textwrap.dedent("""
        assert ex.filled(2, 2, 0.1, None).tolist() == [[np.float32(0.1).item()] * 2] * 2
        assert ex.counts(3, None).dtype == "int32"  # cpp.dtype_of[int32_t]()
        raises(lambda: ex.counts(-1, None), ValueError, "negative extent")
        z = ex.negated(np.zeros(0))
        assert z.shape == (0,)
        # zeros_like on a device dlbridge cannot allocate on.
        if not dlbridge.build_info()["cuda"]:
            raises(lambda: ex.cuda_zeros_like(0x10000, 4), BufferError,
                   "zeros_like: cannot allocate memory on cuda:0: no CUDA device is available "
                   "(dlbridge was built without the CUDA backend)")
    """))



@pytest.mark.needs_torch
@needs_gpu
def test_arrays_made_on_a_gpu_return_labelled_cuda(example):
    # zeros_like of a CUDA view allocates on that GPU, labelled cuda:0.
    run(example, RAISES + textwrap.dedent("""
        x = torch.zeros(4, device="cuda")
        z = ex.cuda_zeros_like(x.data_ptr(), 4)
        assert (z.device, z.shape, z.dtype) == ("cuda:0", (4,), "float32")
        assert torch.from_dlpack(z).eq(0).all()
        raises(lambda: ex.negated(x.double()), TypeError, "negated(): argument 'x': expected device cpu, got cuda")
    """))


# -- Several dtypes (cpp.array_argument[image32, image64], copy_if_needed) ---------

# A producer of each kind, as `make(numpy_array)`: each shares the array's memory.
PRODUCERS = """
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import dlb_plain

def data_address(x):
    return dlbridge.asarray(x).data_ptr

producers = {
    "NumPy": lambda a: a,
    "torch": torch.from_numpy,
    "JAX": jnp.asarray,
    "Array": dlbridge.asarray,
    "memoryview": memoryview,
}
"""


@pytest.mark.needs_torch
def test_several_dtypes_pick_the_view_from_every_producer(example):
    run(example, PRODUCERS + textwrap.dedent("""
        for name, make in producers.items():
            for dtype, bits, index in ((np.float32, 32, 0), (np.float64, 64, 1)):
                x = make(np.arange(6, dtype=dtype).reshape(2, 3))
                assert ex.image_sum(x) == dlb_plain.image_sum(x) == 15.0, (name, dtype)
                # One borrow, no copy: the view sees the producer's memory.
                assert ex.image_seen(x) == (data_address(x), bits, index), (name, dtype)
                assert ex.image_seen(x, True) == (data_address(x), bits, index), (name, dtype)  # fits: no copy
                assert dlb_plain.image_dtype(x) == (f"float{bits}", data_address(x)), (name, dtype)
        # Three views, any strides; empty arrays.
        for dtype in ("int8", "int16", "int32"):
            assert ex.int_sum(np.arange(7, dtype=dtype)[::-2]) == 6 + 4 + 2 + 0, dtype
        assert ex.int_sum(torch.arange(4, dtype=torch.int16)) == 6
        assert ex.image_sum(np.zeros((0, 3), np.float32)) == 0.0
        try:
            ex.get_the_other_view(np.ones((1, 1)))
        except RuntimeError as e:
            assert str(e) == "array_argument::get<V>: the argument holds the float64 view, not V's float32", e
        else:
            raise AssertionError("get[W]() of the view not held returned")
    """))



@pytest.mark.needs_torch
def test_visit_new_returns_the_kernels_array_like_the_input(example):
    run(example, PRODUCERS + textwrap.dedent("""
        import jax
        kinds = {"NumPy": np.ndarray, "torch": torch.Tensor, "JAX": jax.Array, "Array": dlbridge.Array}
        for name, make in producers.items():
            for dtype in (np.float32, np.float64):
                values = np.arange(6, dtype=dtype).reshape(2, 3)
                x = make(values.copy())
                out = ex.image_scaled(x, 1.5)
                got = np.asarray(out.cpu() if name == "torch" else out)
                assert isinstance(out, kinds.get(name, dlbridge.Array)), (name, type(out))
                assert got.dtype == dtype and got.shape == (2, 3), (name, got.dtype)
                np.testing.assert_array_equal(got, (1.5 * values).astype(dtype), err_msg=name)
                assert data_address(out) != data_address(x), name  # a new array
                np.testing.assert_array_equal(np.asarray(x), values, err_msg=name)  # the input unchanged
        assert ex.image_scaled(np.zeros((0, 4), np.float32), 2.0).shape == (0, 4)
        # The output's dtype is the kernel's output view's, its shape the input's.
        for dtype in (np.uint8, np.uint16):
            halves = ex.halves(np.array([0, 1, 3, 200], dtype)[::-1])
            assert halves.dtype == np.float32 and halves.tolist() == [100.0, 1.5, 0.5, 0.0], dtype
        np.testing.assert_array_equal(ex.roots(np.array([4.0, 9.0])), [2.0, 3.0])
        assert ex.roots(torch.tensor([16.0])).tolist() == [4.0]
    """))


@pytest.mark.needs_torch
def test_visit_passes_what_follows_the_kernels_and_copies_if_asked(example):
    run(example, PRODUCERS + textwrap.dedent("""
        for name, make in producers.items():
            for dtype in ("int8", "int16", "int32"):
                assert ex.int_sum(make(np.arange(5, dtype=dtype))) == 10, (name, dtype)
        # cpp.copy_if_needed before the kernels: a list, another dtype, another memory order.
        assert ex.image_sum_of_any([[1, 2.5]]) == 3.5
        assert ex.image_sum_of_any(np.asfortranarray(np.ones((2, 3), np.int16))) == 6.0
        # The kernel runs without the GIL.
        assert ex.gil_held_in_kernel(np.zeros(2, np.float32)) == 0
    """))


def test_visit_kernel_errors_are_raised_and_release_everything(example):
    run(example, textwrap.dedent("""
        import sys
        x = np.array([1.0, -2.0, 3.0])
        for _ in range(3):
            try:
                ex.roots(x)
            except ValueError as e:
                assert str(e) == "roots(): x[1] is negative: -2.0", e
            else:
                raise AssertionError("roots() of a negative number returned")
        before = sys.getrefcount(x)
        for _ in range(1000):
            try:
                ex.roots(x)
            except ValueError:
                pass
            ex.roots(np.abs(x))
        assert sys.getrefcount(x) == before
        try:
            ex.minus_one(np.zeros(1, np.float32))
        except SystemError as e:
            assert str(e) == "a cpp.visit kernel returned -1 without setting a Python exception", e
        else:
            raise AssertionError("a kernel's -1 was not raised")
    """))


def test_kernels_and_arguments_describe_their_demands(example):
    run(example, """
        import inspect
        demands = "(float32 | float64)[*, *] C-contiguous cpu read-only"
        assert str(inspect.signature(ex.image_sum)) == f"(x: '{demands}')"
        assert ex.image_argument_description() == demands.encode()
    """)


# Each call, and its TypeError: a dtype out of the set names the set; a dtype
# in it reports its own view's unmet demand (the misreport: a
# float32 F-order array is not "expected float64, got float32").
SEVERAL_UNMET = [
    *[(f"{f}(np.zeros((2, 3), '{dtype}'))", f"image_sum(): argument 'x': expected float32 or float64, got {dtype}")
      for dtype in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                    "complex64", "complex128")
      for f in ("ex.image_sum", "dlb_plain.image_sum")],
    ("ex.image_sum(torch.zeros(2, 3, dtype=torch.bfloat16))", "image_sum(): argument 'x': expected float32 or float64, got bfloat16"),
    ("ex.image_sum(jnp.zeros((2, 3), jnp.int32))", "image_sum(): argument 'x': expected float32 or float64, got int32"),
    ("ex.image_sum(dlbridge.zeros((2, 3), dtype='int32'))", "image_sum(): argument 'x': expected float32 or float64, got int32"),
    ("ex.image_sum(np.zeros((2, 3), np.float32, order='F'))", "image_sum(): argument 'x': expected C-contiguous strides, got strides (1, 2)"),
    ("ex.image_sum(torch.zeros(3, 2, dtype=torch.float64).T)", "image_sum(): argument 'x': expected C-contiguous strides, got strides (1, 2)"),
    ("dlb_plain.image_sum(np.zeros((2, 3), np.float32, order='F'))", "image_sum(): argument 'x': expected C-contiguous strides, got strides (1, 2)"),
    ("ex.image_sum(np.zeros(3))", "image_sum(): argument 'x': expected ndim 2, got 1"),
    ("ex.image_sum(dlbridge.zeros((2, 3, 1), dtype='float32'))", "image_sum(): argument 'x': expected ndim 2, got 3"),
    ("ex.image_sum(ex.cuda_vector_at_address(0x10000, 6))", "image_sum(): argument 'x': expected device cpu, got cuda"),
    ("ex.image_sum([[1.0]])", "image_sum(): argument 'x': expected an array (an object with __dlpack__, "
     "__cuda_array_interface__, __array_interface__ or the buffer protocol), got list"),
    ("ex.int_sum(np.zeros(3, np.int64))", "int_sum(): argument 'x': expected int8, int16 or int32, got int64"),
    ("ex.int_sum(np.zeros(3, np.uint8))", "int_sum(): argument 'x': expected int8, int16 or int32, got uint8"),
    ("ex.int_sum(np.zeros((3, 1), np.int16))", "int_sum(): argument 'x': expected ndim 1, got 2"),
    ("ex.image_scaled(np.zeros((2, 3), np.int32), 2.0)", "image_scaled(): argument 'x': expected float32 or float64, got int32"),
    ("ex.image_scaled(np.zeros((2, 3), order='F'), 2.0)", "image_scaled(): argument 'x': expected C-contiguous strides, got strides (1, 2)"),
    ("ex.halves(np.zeros(3, np.int8))", "halves(): argument 'x': expected uint8 or uint16, got int8"),
    ("ex.roots(np.zeros((1, 1)))", "roots(): argument 'x': expected ndim 1, got 2"),
    ("ex.roots([1.0])", "roots(): argument 'x': expected an array (an object with __dlpack__, "
     "__cuda_array_interface__, __array_interface__ or the buffer protocol), got list"),
    # copy_if_needed: never narrowing, never to another device, never a shape.
    *[(f"{f}(np.zeros((2, 3), '{dtype}'))",
       f"{name}(): argument 'x': expected float32 or float64, got {dtype} (converting would lose precision)")
      for dtype in ("int64", "uint64", "complex64", "complex128")
      for f, name in (("ex.image_sum_of_any", "image_sum_of_any"), ("dlb_plain.image_dtype", "image_dtype"))],
    ("ex.image_sum_of_any([[1, 2]])", "image_sum_of_any(): argument 'x': expected float32 or float64, got int64 (converting would lose precision)"),
    # PyTorch's float4_e2m1fn_x2 arrives as dlbridge's float4_e2m1fn, which converts to nothing else.
    *[(f"{f}(torch.zeros(2, 3, dtype=torch.uint8).view(torch.float4_e2m1fn_x2))",
       f"{name}(): argument 'x': expected float32 or float64, got float4_e2m1fn{tail}")
      for f, name, tail in (("ex.image_sum", "image_sum", ""),
                            ("ex.image_sum_of_any", "image_sum_of_any", " (converting would lose precision)"),
                            ("dlb_plain.image_dtype", "image_dtype", " (converting would lose precision)"))],
    ("ex.image_sum_of_any(np.zeros((2, 3), np.int32)[None])", "image_sum_of_any(): argument 'x': expected ndim 2, got 3"),
    ("ex.image_sum_of_any(np.zeros(3, np.float32))", "image_sum_of_any(): argument 'x': expected ndim 2, got 1"),
    ("ex.image_sum_of_any(ex.cuda_vector_at_address(0x10000, 6))", "image_sum_of_any(): argument 'x': expected device cpu, got cuda"),
    ("ex.image_sum_of_any(None)", "image_sum_of_any(): argument 'x': expected an array (an object with "
     "__dlpack__, __cuda_array_interface__, __array_interface__ or the buffer protocol), a nested sequence or a "
     "scalar, got NoneType"),
]


@pytest.mark.needs_torch
def test_several_dtypes_errors_name_the_set(example):
    run(example, PRODUCERS + f"cases = {SEVERAL_UNMET!r}\n" + EXPECT_TYPE_ERRORS)


@pytest.mark.needs_torch
def test_copy_if_needed_converts_only_what_does_not_fit(example):
    run(example, PRODUCERS + textwrap.dedent("""
        expected = np.arange(6).reshape(2, 3)
        # (input, the dtype the copy has): the first view whose dtype holds the input's exactly.
        for x, bits in ((np.arange(6, dtype=np.int32).reshape(2, 3), 64), (np.arange(6, dtype=np.int16).reshape(2, 3), 32),
                        (np.arange(6, dtype=np.uint16).reshape(2, 3), 32), (np.arange(6, dtype=np.uint32).reshape(2, 3), 64),
                        (np.arange(6, dtype=np.float16).reshape(2, 3), 32), (torch.arange(6, dtype=torch.int8).reshape(2, 3), 32),
                        (np.asfortranarray(expected, np.float32), 32), (np.asfortranarray(expected, np.float64), 64),
                        ((np.arange(12.0).reshape(2, 6) / 2)[:, ::2], 64), (jnp.arange(6, dtype=jnp.int32).reshape(2, 3), 64),
                        (dlbridge.asarray(np.arange(6, dtype=np.uint8).reshape(3, 2)).T, 32),
                        ([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], 64), ([[True, False]], 32)):
            address, got_bits, index = ex.image_seen(x, True)
            assert (got_bits, index) == (bits, bits // 32 - 1), (x, got_bits)
            assert address != (None if isinstance(x, list) else data_address(x)), x  # a copy
            assert ex.image_sum_of_any(x) == float(np.asarray(x, np.float64).sum()), x
            assert dlb_plain.image_dtype(x)[0] == f"float{bits}", x
        half = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)  # bfloat16 is float32 with fewer digits
        assert ex.image_seen(half, True)[1:] == (32, 0) and ex.image_sum_of_any(half) == 15.0
        # What fits is not copied: the view sees the producer's memory.
        for name, make in producers.items():
            for dtype in (np.float32, np.float64):
                x = make(np.arange(6, dtype=dtype).reshape(2, 3))
                assert ex.image_seen(x, True)[0] == data_address(x) == dlb_plain.image_dtype(x)[1], (name, dtype)
        # The copy holds the input's values, F-order and strided inputs included.
        f_order = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
        assert ex.image_sum_of_any(f_order) == 15.0 and ex.image_sum_of_any(f_order[:, ::2]) == 0 + 2 + 3 + 5
    """))


@pytest.mark.needs_torch
def test_several_dtypes_and_conversions_hold_no_reference(example):
    run(example, PRODUCERS + textwrap.dedent("""
        import sys
        for name, make in producers.items():
            for dtype in (np.float32, np.float64, np.int32, np.int64):
                x = make(np.ones((2, 3), dtype))
                before = sys.getrefcount(x)
                for _ in range(1000):
                    for f in (ex.image_sum, ex.image_sum_of_any, dlb_plain.image_sum, dlb_plain.image_dtype):
                        try:
                            f(x)
                        except TypeError:
                            pass
                assert sys.getrefcount(x) == before, (name, dtype)
        # The copy lives as long as the argument: nothing keeps it after the call.
        import weakref
        listed = [[1.0, 2.0]]
        before = sys.getrefcount(listed)
        for _ in range(1000):
            ex.image_sum_of_any(listed)
        assert sys.getrefcount(listed) == before
        backing = np.ones((2, 3), np.int32)
        ex.image_sum_of_any(memoryview(backing))
        gc.collect()
        backing.resize((3, 3), refcheck=True)  # raises while any buffer export is alive
    """))


# Each C++ misuse of array_argument, cpp.visit and cpp.visit_new, and the static_assert text it must stop at.
MISUSES = {
    "two views of one dtype": (
        "dlb::python::array_argument<dlb::view<float, dlb::ndim<1>>, dlb::view<const float, dlb::ndim<2>>> a;",
        "the views' element types must differ"),
    "copy_if_needed with a writable view": (
        "dlb::python::array_argument<dlb::view<float, dlb::ndim<1>>> a(nullptr, nullptr, nullptr, "
        "dlb::python::copy_if_needed);", "copy_if_needed: the views must be read-only"),
    "holds of a view not in the set": (
        "dlb::python::array_argument<dlb::view<float, dlb::ndim<1>>> a; (void)a.holds<dlb::view<double, dlb::ndim<1>>>();",
        "holds<V>: V is none of the argument's views"),
    # cpp.visit and cpp.visit_new (dlbridge/python/visit.hpp); kernels as Cython passes them, function pointers.
    "visit with no kernel": ("dlb::cython::visit(nullptr, nullptr, nullptr, 1.0);", "cpp.visit: give the kernels"),
    "a kernel returning a double": (
        "dlb::cython::visit(nullptr, nullptr, nullptr, +[](dlb::view<const float, dlb::ndim<1>>) { return 1.0; });",
        "a kernel returns void (noexcept) or int (except -1)"),
    "visit_new without an output view": (
        "dlb::cython::visit_new(nullptr, nullptr, nullptr, +[](dlb::view<const float, dlb::ndim<1>>, double) {}, 1.0);",
        "a kernel's second parameter is the output's cpp.view"),
    "a read-only output": (
        "dlb::cython::visit_new(nullptr, nullptr, nullptr, "
        "+[](dlb::view<const float, dlb::ndim<1>>, dlb::view<const float, dlb::ndim<1>>) {});",
        "an output view must be writable"),
    "an output of another rank": (
        "dlb::cython::visit_new(nullptr, nullptr, nullptr, "
        "+[](dlb::view<const float, dlb::ndim<1>>, dlb::view<float, dlb::ndim<2>>) {});",
        "as many axes as its input view"),
    "a Fortran-order output": (
        "dlb::cython::visit_new(nullptr, nullptr, nullptr, "
        "+[](dlb::view<const float, dlb::ndim<2>>, dlb::view<float, dlb::ndim<2>, dlb::f_contig>) {});",
        "cannot demand dlb::f_contig"),
    "an output fixing an extent": (
        "dlb::cython::visit_new(nullptr, nullptr, nullptr, "
        "+[](dlb::view<const float, dlb::ndim<1>>, dlb::view<float, dlb::shape<3>>) {});",
        "may fix only the extents its input view fixes"),
    "an output demanding a device": (
        "dlb::cython::visit_new(nullptr, nullptr, nullptr, "
        "+[](dlb::view<const float, dlb::ndim<1>>, dlb::view<float, dlb::ndim<1>, dlb::cpu>) {});",
        "may demand a device only where its input view demands the same one"),
}


def _syntax_check(tmp_path, body, flags=("-fsyntax-only",), compiler=None):
    """The compiler's stderr and exit status on `body` in a function, with
    dlbridge's visit.hpp and Python's headers."""
    import shutil
    import sysconfig
    compiler = shutil.which(compiler or os.environ.get("CXX", "c++"))
    if compiler is None or not INSTALLED:
        pytest.skip("needs a C++ compiler and an installed dlbridge (its headers)")
    source = tmp_path / "misuse.cpp"
    source.write_text("#include <dlbridge/python/visit.hpp>\nvoid f() {\n  " + body + "\n}\n")
    result = subprocess.run([compiler, "-std=c++20", *flags, "-I", dlbridge.get_include(),
                             "-I", sysconfig.get_paths()["include"], str(source)], capture_output=True, text=True)
    return result.returncode, result.stderr


# The compiler's verdict on dlbridge's headers: no dlbridge code runs, and it
# is the same on every Python (conftest.py's markers).
@pytest.mark.no_sanitized_code
@pytest.mark.any_python
@pytest.mark.parametrize("misuse", sorted(MISUSES))
def test_array_argument_misuse_does_not_compile(misuse, tmp_path):
    body, message = MISUSES[misuse]
    returncode, stderr = _syntax_check(tmp_path, body)
    assert returncode != 0 and message in stderr, stderr[-3000:]


@pytest.mark.no_sanitized_code
@pytest.mark.any_python
def test_array_argument_misuse_control_compiles(tmp_path):
    # The misuses' control: read-only views of distinct dtypes, and a kernel
    # whose output view meets every rule, compile.
    returncode, stderr = _syntax_check(tmp_path, (
        "dlb::python::array_argument<dlb::view<const float, dlb::ndim<1>>, dlb::view<const double, dlb::ndim<1>>> a;\n"
        "  (void)a.holds<dlb::view<const double, dlb::ndim<1>>>();\n"
        "  (void)dlb::cython::visit_new(nullptr, nullptr, nullptr, dlb::python::copy_if_needed, "
        "+[](dlb::view<const float, dlb::ndim<1>, dlb::cpu>, dlb::view<double, dlb::shape<dlb::any_extent>, "
        "dlb::c_contig, dlb::cpu>, int) {}, 2);"))
    assert returncode == 0, stderr[-3000:]


@pytest.mark.no_sanitized_code
@pytest.mark.any_python
@pytest.mark.parametrize("compiler", ["c++", "clang++"])
def test_several_views_compile_without_warnings(compiler, tmp_path):
    # An extension's own build at -O3 with strict warnings sees none of
    # dlbridge's: the Cython pattern (holds, then get of the other view) once
    # had GCC 12 warn (-Warray-bounds) inside dtype(), clang warned
    # (-Wunused-value) at every several-view argument, and both
    # (-Wsign-conversion) in the validation of every tensor. (Not
    # -Wpedantic or -Wold-style-cast: Python's own headers and macros warn.)
    if compiler == "clang++":
        compiler = clang_with_modules() or pytest.skip("needs clang >= 17 (tests/run installs clang-19)")
    returncode, stderr = _syntax_check(tmp_path, (
        "using f32 = dlb::view<const float, dlb::ndim<2>>;\n"
        "  using f64 = dlb::view<const double, dlb::ndim<2>>;\n"
        "  dlb::python::array_argument<f32, f64> a(nullptr, \"f\", \"x\");\n"
        "  volatile const void* p = a.holds<f64>() ? static_cast<const void*>(a.get<f64>().data())\n"
        "                                          : static_cast<const void*>(a.get<f32>().data());\n"
        "  volatile int code = a.dtype().code + int(a.index());\n"
        "  (void)p; (void)code;"),
        flags=("-c", "-O3", "-Wall", "-Wextra", "-Wconversion", "-Wsign-conversion", "-Wshadow", "-Werror",
               "-o", os.devnull),
        compiler=compiler)
    assert returncode == 0, stderr[-3000:]
