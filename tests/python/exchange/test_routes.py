"""Issue 24's fast routes, and that they answer as the slow ones do.

copy=False through a producer's DLPack C exchange table (it copies nothing,
so it serves copy=False as well as copy=None; a table that says it copied,
IS_COPIED, is refused), and JAX's host arrays through the buffer protocol of
jaxlib's ArrayImpl instead of its __dlpack__, falling back to __dlpack__
wherever the buffer cannot describe the array (dtypes with no buffer format,
sharded, deleted and GPU arrays).
"""
from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import warnings
from ctypes import POINTER, PYFUNCTYPE, c_int, c_void_p, py_object

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import FLAG_IS_COPIED, DLPackExchangeAPI, exchange_capsule
from consumers import run_example
from messages import exactly
from test_exchange_api import OURS, producer

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)


@pytest.fixture(autouse=True, scope="module")
def _jax_x64():
    """64-bit JAX types (int64, uint64, float64, complex128) for this module only."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", old)


# -- copy=False through exchange tables ---------------------------------------


@pytest.mark.parametrize("convert", [dlbridge.from_dlpack, dlbridge.asarray], ids=["from_dlpack", "asarray"])
def test_copy_false_takes_torchs_table(convert, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("__dlpack__ was called; PyTorch's exchange table should have been used")

    monkeypatch.setattr(torch.Tensor, "__dlpack__", refuse)
    t = torch.arange(12.0).reshape(3, 4)
    before = sys.getrefcount(t)
    a = convert(t.T, copy=False)
    assert a.data_ptr == t.data_ptr() and a.shape == (4, 3) and a.strides == (1, 4) and not a.readonly
    np.asarray(a)[1, 0] = 42.0
    assert t[0, 1] == 42.0
    for _ in range(100):
        convert(t, copy=False)
    del a
    gc.collect()
    assert sys.getrefcount(t) == before


@pytest.mark.parametrize("convert", [dlbridge.from_dlpack, dlbridge.asarray], ids=["from_dlpack", "asarray"])
def test_copy_false_takes_a_producers_table(convert):
    kind, x = producer({})
    a = convert(x, copy=False)
    assert a.data_ptr == x.data_ptr and kind.calls == []


class CopyingTable:
    """dlbridge's table, with a managed_tensor_from_py_object_no_sync that
    flags its tensor IS_COPIED (as a producer's table that copied would) and
    counts its deleter's calls."""

    def __init__(self):
        self.deletions = 0
        self.table = DLPackExchangeAPI.from_buffer_copy(OURS.struct)
        self.slot = PYFUNCTYPE(c_int, py_object, POINTER(c_void_p))(self._from_object)
        self.table.managed_tensor_from_py_object_no_sync = ctypes.cast(self.slot, c_void_p).value
        self.capsule = exchange_capsule(ctypes.addressof(self.table))
        self.deleter = ctypes.CFUNCTYPE(None, c_void_p)(self._delete)
        self.deleters = {}

    def _from_object(self, obj, out):
        m = OURS.managed(obj)
        m.flags |= FLAG_IS_COPIED
        self.deleters[ctypes.addressof(m)] = m.deleter
        m.deleter = ctypes.cast(self.deleter, c_void_p).value
        out[0] = ctypes.addressof(m)
        return 0

    def _delete(self, address):
        self.deletions += 1
        ctypes.CFUNCTYPE(None, c_void_p)(self.deleters.pop(address))(address)


@pytest.mark.parametrize("convert", [dlbridge.from_dlpack, dlbridge.asarray], ids=["from_dlpack", "asarray"])
def test_a_table_that_copied_is_refused_for_copy_false(convert):
    copying = CopyingTable()
    kind, x = producer({"__dlpack_c_exchange_api__": copying.capsule})
    before = sys.getrefcount(x)
    with pytest.raises(ValueError, match=exactly(
            f"{convert.__name__}: copy=False, but Producer copied the data (its DLPack tensor has IS_COPIED set)")):
        convert(x, copy=False)
    assert copying.deletions == 1 and kind.calls == []  # the copy was released, once
    # Without copy=False a copy is fine: the Array holds it until it dies.
    a = convert(x)
    assert a.tolist() == x.tolist() and copying.deletions == 1
    del a
    gc.collect()
    assert copying.deletions == 2 and sys.getrefcount(x) == before


class CopyingProducer:
    """Hands out a copy flagged IS_COPIED whatever copy it is asked for."""

    def __init__(self):
        self.base = dlbridge.asarray([1.0, 2.0])

    def __dlpack__(self, **kwargs):
        return self.base.__dlpack__(**dict(kwargs, copy=True))

    def __dlpack_device__(self):
        return self.base.__dlpack_device__()


def test_a_capsule_flagged_copied_is_refused_for_copy_false():
    x = CopyingProducer()
    for convert in (dlbridge.from_dlpack, dlbridge.asarray):
        with pytest.raises(ValueError, match=exactly(f"{convert.__name__}: copy=False, but CopyingProducer copied "
                                                     "the data (its DLPack tensor has IS_COPIED set)")):
            convert(x, copy=False)
        assert convert(x).tolist() == [1.0, 2.0]


# -- JAX host arrays through the buffer protocol --------------------------------

# Dtypes jaxlib's buffer protocol has a format for; the others (bfloat16, the
# float8 and float4 types) come through __dlpack__.
BUFFER_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64", "complex64", "complex128"]
DLPACK_DTYPES = ["bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                 "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn"]
SHAPES = [(), (0,), (3, 0), (5,), (2, 3, 4), (1,) * 32]


def jax_array(name, shape):
    values = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 3
    if name == "float8_e8m0fnu":
        values = 2.0 ** values  # powers of two only (no zero)
    return jnp.asarray(values.astype(getattr(ml_dtypes, name, None) or np.dtype(name)))


class ThroughDunderDlpack:
    """x's protocol route: the same array, reached only through __dlpack__."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def same_array(a, b):
    assert (a.dtype, a.shape, a.strides, a.readonly, a.device) == (b.dtype, b.shape, b.strides, b.readonly, b.device)
    if a.size:
        assert a.data_ptr == b.data_ptr
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)) or "0d")
@pytest.mark.parametrize("name", BUFFER_DTYPES + DLPACK_DTYPES)
@pytest.mark.parametrize("convert", [dlbridge.from_dlpack, dlbridge.asarray], ids=["from_dlpack", "asarray"])
def test_jax_host_arrays_arrive_as_through_dunder_dlpack(convert, name, shape):
    x = jax_array(name, shape)
    before = sys.getrefcount(x)
    a = convert(x)
    assert str(a.dtype) == name and a.readonly
    same_array(a, dlbridge.from_dlpack(ThroughDunderDlpack(x)))
    # The buffer route's memoryview holds x; __dlpack__'s tensor holds JAX's buffer only.
    assert sys.getrefcount(x) == before + (name in BUFFER_DTYPES)
    del a
    assert sys.getrefcount(x) == before


def test_jax_results_of_computations_and_copies():
    x = jnp.arange(24.0).reshape(2, 3, 4)
    for y in (x.transpose(2, 0, 1), x[:, 1:, ::2], x[::-1], jnp.conj(x + 1j)):
        same_array(dlbridge.asarray(y), dlbridge.from_dlpack(ThroughDunderDlpack(y)))
    c = dlbridge.asarray(x, copy=True)  # a copy is the way to a writable array
    assert not c.readonly and c.data_ptr != x.unsafe_buffer_pointer() and c.tolist() == x.tolist()


def test_jax_memory_outlives_the_array_deleted_or_donated():
    x = jnp.arange(6.0)
    a = dlbridge.asarray(x)
    x.delete()
    assert x.is_deleted()
    garbage = [jnp.full(6, 7.0) for _ in range(20)]  # would reuse freed memory
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    y = jnp.arange(6.0)
    b = dlbridge.asarray(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        z = jax.jit(lambda v: v * 2, donate_argnums=0)(y)
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and z.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    del garbage, x, y
    gc.collect()
    assert a.tolist() == b.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_deleted_jax_array_gets_the_dunder_dlpack_answer():
    x = jnp.arange(3.0)
    x.delete()
    for convert in (dlbridge.from_dlpack, dlbridge.asarray):
        with pytest.raises(TypeError, match=r"\(from ArrayImpl\.__dlpack_device__\(\); got dtype float64\)$"):
            convert(x)


@pytest.mark.parametrize("name", ["int4", "uint4", "int2"])
def test_jax_subbyte_ints_get_the_dunder_dlpack_answer(name):
    x = jnp.zeros(4, getattr(ml_dtypes, name))
    with pytest.raises(jax.errors.JaxRuntimeError, match="no DLPack equivalent"):
        dlbridge.asarray(x)


def test_only_jaxs_own_type_takes_the_buffer_route():
    """A class that takes the name of jaxlib's ArrayImpl gets no trust: its
    __dlpack__ answers (it used to have its buffer taken), and, seen first,
    it does not keep JAX's own arrays off their buffer route for the rest of
    the process (a fresh interpreter: the route is chosen once per process)."""
    code = textwrap.dedent("""
        import numpy as np, dlbridge, jax.numpy as jnp, jaxlib._jax
        def refuse(self, **kwargs):
            raise BufferError("refused")
        Fake = type("jaxlib._jax.ArrayImpl", (), {"__dlpack__": refuse, "__dlpack_device__": lambda self: (1, 0),
                                                  "__buffer__": lambda self, flags: memoryview(np.arange(3.0))})
        for convert in (dlbridge.from_dlpack, dlbridge.asarray):
            try:
                convert(Fake())
            except BufferError as e:
                print(e)
        def no_dunder_dlpack(self, *args, **kwargs):
            raise AssertionError("JAX's __dlpack__ was called: its buffer route was not taken")
        jaxlib._jax.ArrayImpl.__dlpack__ = no_dunder_dlpack
        print(dlbridge.from_dlpack(jnp.arange(3.0)).tolist())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["refused (from jaxlib._jax.ArrayImpl.__dlpack__())"] * 2 + ["[0.0, 1.0, 2.0]"]


def test_sharded_and_other_device_jax_arrays():
    """Two CPU devices (set before JAX starts, hence the fresh interpreter):
    an array sharded over both, or replicated on both, has no buffer and
    gets __dlpack__'s refusal; one on the second device comes in through its
    buffer, labelled cpu:0 as its __dlpack_device__ says."""
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        import dlbridge
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices()), ("a",))
        for spec in (P("a"), P()):
            x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, spec))
            for convert in (dlbridge.from_dlpack, dlbridge.asarray):
                try:
                    convert(x)
                except BufferError as e:
                    assert "only supported for unsharded arrays" in str(e), e
                else:
                    raise AssertionError(f"{spec}: no BufferError")
        y = jax.device_put(jnp.arange(3.0), jax.devices()[1])
        a = dlbridge.asarray(y)
        assert y.__dlpack_device__() == (1, 0) and a.device == dlbridge.Device("cpu")
        assert a.tolist() == [0.0, 1.0, 2.0] and a.data_ptr == y.unsafe_buffer_pointer()
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


# -- the argument converter, on JAX host arrays ------------------------------------


def test_converter_takes_jax_host_arrays_through_their_buffer(cython_example):
    run_example(cython_example, """
        import sys
        import jax, jax.numpy as jnp
        x = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
        before = sys.getrefcount(x)
        for _ in range(200):
            assert ex.row_sums(x).tolist() == [6.0, 22.0, 38.0]
        assert sys.getrefcount(x) == before  # the buffer is released after each call
        for call, message in [
                (lambda: ex.scale_(x, 2.0), "scale_(): argument 'x': expected writable data, got read-only data"),
                # bfloat16 has no buffer format: __dlpack__ answers, as before.
                (lambda: ex.row_sums(x.astype(jnp.bfloat16)),
                 "row_sums(): argument 'x': expected float32, got bfloat16"),
                (lambda: ex.row_sums(x[None]), "row_sums(): argument 'x': expected ndim 2, got 3")]:
            try:
                call()
            except TypeError as e:
                assert str(e) == message, e
            else:
                raise AssertionError(f"no TypeError: {message}")
        y = jnp.ones((2, 3), jnp.float32)
        y.delete()
        try:
            ex.row_sums(y)
        except TypeError as e:  # __dlpack_device__'s answer, as before
            assert "(from ArrayImpl.__dlpack_device__(); got dtype float32)" in str(e), e
        else:
            raise AssertionError("a deleted array was read")
    """)
