"""dlbridge's nanobind and pybind11 casters (dlbridge/python/nanobind.hpp, dlbridge/python/pybind11.hpp).

tests/downstream/bindings builds one module per tool (dlb_nanobind,
dlb_pybind11) binding the same kernels (kernels.hpp) with dlb::view and
dlb::python::array_argument parameters, against the INSTALLED dlbridge and
the nanobind and pybind11 from PyPI; dlb::tensor results become
dlbridge.Arrays, dlb::python::like results the caller's kind of array. Each
test runs against both modules, imported here.
"""
import ctypes
import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import dlbridge

from dlbridge.testing._abi import ManagedTensor, Producer
from paths import DOCS, DOWNSTREAM

SOURCE = DOWNSTREAM / "bindings"
TOOLS = ["dlb_nanobind", "dlb_pybind11"]


@pytest.fixture
def build_folder(bindings):
    """Both modules, built once per run (conftest.py): the folder that holds them."""
    return bindings


@pytest.fixture(params=TOOLS)
def m(request, build_folder):
    sys.path.insert(0, str(build_folder))
    try:
        return importlib.import_module(request.param)
    finally:
        sys.path.remove(str(build_folder))


def test_builds_against_the_installed_package(build_folder):
    log = (build_folder / "meson-logs" / "meson-log.txt").read_text()
    assert f"Message: dlbridge headers: {dlbridge.get_include()}" in log
    for header in ("bindings.hpp", "nanobind.hpp", "pybind11.hpp"):
        assert os.path.isfile(os.path.join(dlbridge.get_include(), "dlbridge", "python", header)), header


# Each function's array parameter and the annotation its signature shows.
SIGNATURES = {
    "total": ['x: typing.Annotated[typing.Any, "float32[*, *] C-contiguous cpu read-only"]',
              'x: typing.Annotated[typing.Any, "float64[*, *] C-contiguous cpu read-only"]'],
    "scale": ['x: typing.Annotated[typing.Any, "float32[*, *] cpu writable"]'],
    "fill_rgb": ['image: typing.Annotated[typing.Any, "uint8[*, *, 3] cpu writable"]'],
    "lower_left": ['x: typing.Annotated[typing.Any, "float64[2, *] Fortran-contiguous cpu read-only"]'],
    "last": ['x: typing.Annotated[typing.Any, "int64[*] contiguous cpu read-only"]'],
    # An array_argument names its whole set, in dlb::describe's words.
    "sum": ['x: typing.Annotated[typing.Any, "(float32 | float64)[*, *] C-contiguous cpu read-only"]'],
    "twice": ['x: typing.Annotated[typing.Any, "(float32 | float64)[*, *] C-contiguous cpu read-only"]'],
    # An array_parameter's signature is the same as its views'.
    "checked_twice": ['x: typing.Annotated[typing.Any, "(float32 | float64)[*, *] C-contiguous cpu read-only"]'],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_shows_the_view_demands(m, name):
    doc = getattr(m, name).__doc__
    for parameter in SIGNATURES[name]:
        assert f"({parameter}" in doc, doc


def test_nanobind_stubgen_writes_the_demands(build_folder, tmp_path):
    pytest.importorskip("nanobind.stubgen")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(build_folder), *sys.path]))
    result = subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-m", "dlb_nanobind", "-O", str(tmp_path)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    stub = (tmp_path / "dlb_nanobind.pyi").read_text()
    assert "from typing import Annotated, Any" in stub, stub
    assert 'def total(x: Annotated[Any, "float64[*, *] C-contiguous cpu read-only"]) -> tuple[str, float]: ...' in stub
    assert ('def fill_rgb(image: Annotated[Any, "uint8[*, *, 3] cpu writable"], r: int, g: int, b: int) -> None: ...'
            in stub), stub
    assert "import dlbridge" in stub and 'float32[*] cpu read-only"]) -> dlbridge.Array: ...' in stub, stub
    assert 'def twice(x: Annotated[Any, "(float32 | float64)[*, *] C-contiguous cpu read-only"]) -> Any: ...' in stub


def producers():
    """(name, make): make(values, dtype name) -> a 2-D array of that producer."""
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    return [
        ("numpy", lambda v, d: np.asarray(v, dtype=d)),
        ("torch", lambda v, d: torch.tensor(v, dtype=getattr(torch, d))),
        ("jax", lambda v, d: jnp.asarray(v, dtype=d)),
        ("dlbridge", lambda v, d: dlbridge.asarray(np.asarray(v, dtype=d))),
        ("memoryview", lambda v, d: memoryview(np.asarray(v, dtype=d))),
    ]


def test_each_overload_is_reached_from_every_producer(m):
    values = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]
    for name, make in producers():
        for dtype in ("float32", "float64"):
            if name == "jax" and dtype == "float64":
                continue  # JAX makes float64 only with jax_enable_x64
            assert m.total(make(values, dtype)) == (dtype, 21.5), (name, dtype)
            assert m.total(x=make(values, dtype)) == (dtype, 21.5), (name, dtype)


def test_one_overload_takes_either_dtype_from_every_producer(m):
    values = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]
    for name, make in producers():
        for dtype in ("float32", "float64"):
            if name == "jax" and dtype == "float64":
                continue  # JAX makes float64 only with jax_enable_x64
            assert m.sum(make(values, dtype)) == (dtype, 21.5), (name, dtype)
            assert m.sum(x=make(values, dtype)) == (dtype, 21.5), (name, dtype)
        # A dtype of none of the views: the tool's TypeError, nothing left set.
        with pytest.raises(TypeError, match=r"^sum\(\): incompatible function arguments") as caught:
            m.sum(make([[1, 2]], "int32"))
        assert caught.value.__cause__ is None and caught.value.__context__ is None, name
    for _, function, args in unmet_calls():
        if function == "total":  # (sum demands what total's overloads do)
            with pytest.raises(TypeError, match=r"^sum\(\): incompatible function arguments"):
                m.sum(*args)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.sum(y=np.ones((1, 1)))
    assert m.sum(np.ones((1, 1), np.float32)) == ("float32", 1.0)


def test_like_results_are_the_callers_kind_of_array(m):
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    kinds = {"numpy": np.ndarray, "torch": torch.Tensor, "jax": jax.Array, "dlbridge": dlbridge.Array,
             "memoryview": dlbridge.Array}  # (no from_dlpack on memoryview: dlbridge's own)
    for name, make in producers():
        for dtype in ("float32", "float64"):
            if name == "jax" and dtype == "float64":
                continue
            out, address = m.twice_at(make([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]], dtype))
            assert isinstance(out, kinds[name]) and (name == "jax" or type(out) is kinds[name]), (name, type(out))
            assert sys.getrefcount(out) == 2, name  # the caller's alone (and getrefcount's)
            host = np.from_dlpack(out)
            assert host.dtype == np.dtype(dtype) and host.tolist() == [[2, 4, 6], [8, 10, 13]], (name, dtype)
            # Zero copy: the result is on the memory the kernel wrote.
            assert host.__array_interface__["data"][0] == address, (name, dtype)
    assert type(m.twice(np.ones((0, 3)))) is np.ndarray
    # A like result holding nothing: to_python_like's ValueError, raised as it is.
    with pytest.raises(ValueError) as caught:
        m.nothing_like(np.ones((1, 1)))
    assert str(caught.value) == NOTHING_LIKE
    assert caught.value.__cause__ is None and caught.value.__context__ is None



def test_a_parameter_checked_in_the_body_takes_every_producer(m):
    for name, make in producers():
        for dtype in ("float32", "float64"):
            if name == "jax" and dtype == "float64":
                continue
            out = m.checked_twice(make([[1.0, 2.0], [3.0, 4.5]], dtype))
            host = np.from_dlpack(out)
            assert host.dtype == np.dtype(dtype) and host.tolist() == [[2, 4], [6, 9]], (name, dtype)
            assert type(out) is type(m.twice(make([[1.0]], dtype))), name


def test_a_parameter_checked_in_the_body_raises_dlbridges_errors(m):
    """Through the translator the module registers: the message names the
    function and argument, as dlbridge's own functions do; a producer's
    malformed tensor is BufferError and its own exception is raised as it is."""
    label = "checked_twice(): argument 'x': "
    for (_, function, args) in unmet_calls():
        if function != "total" or (args[0] is None and m.__name__ == "dlb_nanobind"):
            continue  # (nanobind passes None only to an argument marked .none(): its own TypeError)
        with pytest.raises(TypeError) as caught:
            m.checked_twice(*args)
        assert str(caught.value).startswith(label), str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__context__ is None
    with pytest.raises(TypeError) as caught:
        m.checked_twice(np.zeros((2, 3), np.int32))
    assert str(caught.value) == label + "expected float32 or float64, got int32"
    with pytest.raises(TypeError) as caught:
        m.checked_twice(np.zeros((2, 3), np.float32, order="F"))
    assert str(caught.value) == label + "expected C-contiguous strides, got strides (1, 2)"

    class Failing:
        def __dlpack__(self, **kwargs):
            raise ZeroDivisionError("the producer's own error")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(ZeroDivisionError, match="^the producer's own error$"):
        m.checked_twice(Failing())
    malformed = Producer(ManagedTensor([0.0] * 6, shape=(2, 3), dtype=(2, 32, 1), ctype=ctypes.c_float, ndim=-1))
    with pytest.raises(BufferError, match=r"^invalid tensor: ndim: "):
        m.checked_twice(malformed)
    assert m.checked_twice(np.ones((1, 1))).tolist() == [[2.0]]  # nothing left set
    if m.__name__ == "dlb_nanobind":
        with pytest.raises(TypeError, match=r"^checked_twice\(\): incompatible function arguments"):
            m.checked_twice(None)


def test_the_translator_leaves_other_exceptions_to_the_tool(m):
    for which, kind, message in [
            (0, TypeError, "f(): argument 'x': expected float32, got int8"),
            (1, BufferError, "invalid tensor: dtype: expected a DLPack dtype, got code 99"),
            (2, KeyError, "'set in the body'"),
            (3, ValueError, "another library's invalid_argument"),
            (4, RuntimeError, "another library's runtime_error")]:
        with pytest.raises(kind) as caught:
            m.throw_in_body(which)
        assert str(caught.value) == message, (which, str(caught.value))


NOTHING_LIKE = ("to_python_like: expected a dlb::tensor holding an array, got an empty one "
                "(default-constructed or moved from)")


def test_writes_reach_the_callers_memory(m):
    torch = pytest.importorskip("torch")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    m.scale(a)  # the keyword's default, 2.0
    assert a.tolist() == [[0, 2, 4], [6, 8, 10]]
    m.scale(factor=0.5, x=a)
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]
    f = np.asfortranarray(a)
    m.scale(f[:, ::2], 10.0)  # any strides: the view demands no order
    assert f.tolist() == [[0, 1, 20], [30, 4, 50]]
    t = torch.ones(2, 2)
    m.scale(t, 3.0)
    assert t.tolist() == [[3, 3], [3, 3]]
    d = dlbridge.zeros((1, 2), dtype="float32")
    m.scale(d, 2.0)
    image = np.zeros((2, 2, 3), np.uint8)
    m.fill_rgb(image, 1, 2, b=3)
    assert image.reshape(-1, 3).tolist() == [[1, 2, 3]] * 4
    assert m.lower_left(np.asfortranarray([[1.0, 2.0], [3.0, 4.0]])) == 3.0
    assert m.last(np.arange(5)[::-1].copy()) == 0 and m.last(np.zeros(0, np.int64)) == -1


class CudaLabelled:
    """A valid float32 tensor that says it lives on CUDA device 0 (never
    read), a new export each time it is asked, as producers make them (each
    overload asks again)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        managed = ManagedTensor([0.0] * 6, shape=(2, 3), dtype=(2, 32, 1), ctype=ctypes.c_float, device=(2, 0))
        return Producer(managed, device=(2, 0)).__dlpack__(**kwargs)


def cuda_labelled():
    return CudaLabelled()


def unmet_calls():
    """(demand, function, arguments): calls whose array fits no overload, one per unmet demand, and no array."""
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    read_only = np.ones((2, 3), np.float32)
    read_only.flags.writeable = False
    return [
        ("dtype", "total", (np.zeros((2, 3), np.int32),)),
        ("dtype", "total", (torch.zeros(2, 3, dtype=torch.float16),)),
        ("ndim", "total", (np.zeros((2, 3, 4), np.float32),)),
        ("ndim", "total", (dlbridge.zeros((3,), dtype="float64"),)),
        ("order", "total", (np.zeros((2, 3), np.float32, order="F"),)),
        ("order", "total", (torch.zeros(3, 4).T,)),
        ("order", "lower_left", (np.zeros((2, 3)),)),
        ("order", "last", (np.zeros(6, np.int64)[::2],)),
        ("extent", "fill_rgb", (np.zeros((2, 2, 4), np.uint8), 0, 0, 0)),
        ("extent", "lower_left", (np.zeros((3, 2), order="F"),)),
        ("device", "total", (cuda_labelled(),)),
        ("writable", "scale", (read_only,)),
        ("writable", "scale", (jnp.ones((2, 3), jnp.float32),)),
        ("writable", "scale", (memoryview(bytes(8)).cast("f", (1, 2)),)),
        ("no array", "total", (None,)),
        ("no array", "total", ([[1.0]],)),
        ("no array", "total", (object(),)),
    ]


def test_every_unmet_demand_is_the_tools_type_error(m):
    for demand, name, args in unmet_calls():
        with pytest.raises(TypeError, match=rf"^{name}\(\): incompatible function arguments") as caught:
            getattr(m, name)(*args)
        # dlbridge's own refusal was cleared, not chained.
        assert caught.value.__cause__ is None and caught.value.__context__ is None, (demand, name)
    # And left no exception set: the next call succeeds.
    assert m.total(np.ones((1, 1), np.float32)) == ("float32", 1.0)


class Raising:
    """A producer whose __dlpack__ raises `error`, counting its calls."""

    def __init__(self, error):
        self.error, self.calls = error, 0

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        self.calls += 1
        raise self.error


@pytest.mark.parametrize("function", ["total", "sum"])  # a view (two overloads), an array_argument
@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(3), MemoryError(), BufferError("its own reason")],
                         ids=lambda e: type(e).__name__)
def test_failures_that_are_no_mismatch_are_raised_as_they_are(m, function, error):
    # They used to become "incompatible function arguments", after __dlpack__
    # was asked once per overload.
    producer = Raising(error)
    with pytest.raises(type(error)) as caught:
        getattr(m, function)(producer)
    # dlbridge names the producer in the message of the protocol's errors, as everywhere.
    assert (caught.value is error if type(error) is not BufferError
            else str(caught.value) == "its own reason (from Raising.__dlpack__())")
    assert producer.calls == 1
    assert m.total(np.ones((1, 1), np.float32)) == ("float32", 1.0)  # nothing left set


@pytest.mark.needs_torch
def test_a_tensor_that_requires_grad_is_raised_as_such(m):
    import torch
    for function in ("total", "sum"):
        with pytest.raises(BufferError, match="requires gradient, which DLPack cannot express; call .detach"):
            getattr(m, function)(torch.ones(2, 2, requires_grad=True))


def test_a_producers_type_error_is_a_mismatch(m):
    # TypeError says the input is not what the function takes: another
    # overload may take it, and the tool's own TypeError follows.
    producer = Raising(TypeError("not this one"))
    with pytest.raises(TypeError, match=r"^total\(\): incompatible function arguments") as caught:
        m.total(producer)
    assert caught.value.__context__ is None and producer.calls >= 2  # both overloads asked


def test_read_only_data_is_never_written(m):
    jnp = pytest.importorskip("jax.numpy")
    frozen = jnp.ones((2, 3), jnp.float32)
    with pytest.raises(TypeError):
        m.scale(frozen, 5.0)
    assert np.asarray(frozen).tolist() == [[1.0] * 3] * 2
    assert m.total(frozen) == ("float32", 6.0)  # a read-only view takes it


def test_keywords_are_the_tools(m):
    a = np.ones((1, 2), np.float32)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.scale(y=a)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        m.scale(a, 1.0, 2.0)


def test_arguments_hold_no_reference_after_the_call(m):
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    for x in (np.ones((2, 3), np.float32), torch.ones(2, 3), dlbridge.full((2, 3), 1.0, dtype="float32"),
              memoryview(np.ones((2, 3), np.float32)), jnp.ones((2, 3), jnp.float32), np.ones((2, 3), np.int32)):
        before = sys.getrefcount(x)
        for _ in range(1000):
            for call in (m.total, m.sum, m.twice, lambda x: m.scale(x, 1.0)):
                try:
                    call(x)
                except TypeError:
                    pass  # refused: the reference taken for the check is released too
        assert sys.getrefcount(x) == before, type(x)


def test_tensor_results_are_arrays(m):
    torch = pytest.importorskip("torch")
    assert m.doubled.__doc__.rstrip().endswith("-> dlbridge.Array"), m.doubled.__doc__
    for x in (np.arange(3, dtype=np.float32), torch.arange(3, dtype=torch.float32), dlbridge.asarray(np.arange(3, dtype=np.float32))):
        out = m.doubled(x)
        assert type(out) is dlbridge.Array
        assert (out.shape, out.dtype, out.device, out.tolist()) == ((3,), "float32", "cpu", [0.0, 2.0, 4.0])
        assert sys.getrefcount(out) == 2  # the caller's alone
        assert not out.readonly and np.asarray(out).flags.writeable  # new memory, the caller's to write
    assert m.doubled(np.zeros(0, np.float32)).shape == (0,)
    # A dlb::tensor holding nothing: to_python's ValueError, raised as it is.
    with pytest.raises(ValueError) as caught:
        m.nothing()
    assert str(caught.value) == ("to_python: expected a dlb::tensor holding an array, got an empty one "
                                 "(default-constructed or moved from)")
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_cpp_guide_quotes_the_modules():
    guide = (DOCS / "cpp-guide.md").read_text()
    section = guide.split("## nanobind and pybind11\n", 1)[1].split("\n## ", 1)[0]
    for fence, names, count in (("cpp", ("kernels.hpp", "dlb_nanobind.cpp"), 7), ("meson", ("meson.build",), 2)):
        sources = "\n".join((SOURCE / name).read_text() for name in names)
        blocks = section.split(f"```{fence}\n")[1:]
        assert len(blocks) == count, fence
        for block in blocks:
            code = block.split("```", 1)[0]
            assert code in sources, f"docs/cpp-guide.md quotes code that tests/downstream/bindings does not have:\n{code}"
