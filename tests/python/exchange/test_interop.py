"""Interop matrix: dlbridge against NumPy, ml_dtypes, PyTorch, JAX and
array_api_strict, in both directions, over DLPack, the buffer protocol and
``__array_interface__``.

Each exchange checks: zero copy (pointer equality, and for writable memory a
write seen on the other side), values, shape, strides (dlbridge counts
ELEMENTS, NumPy counts bytes), dtype name and read-only state. Where a library
refuses a dtype or layout, the test asserts the exception it raises.

Reference: ../shared/reference/dlpack.md (beside the repo), sections 3 (protocol),
5 (NumPy / PyTorch behaviour) and 6 (pitfalls).
"""
import ctypes
import gc
import itertools
import math
import os
import re
import subprocess
import sys
import textwrap

import array_api_strict as xp
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import dlbridge
from dlbridge.testing._abi import (FLAG_IS_COPIED, FLAG_READ_ONLY, PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS,
                                   PyBUF_F_CONTIGUOUS, PyBUF_FULL_RO, PyBUF_ND, PyBUF_SIMPLE, PyBUF_STRIDES,
                                   PyBUF_WRITABLE, capsule_name, capsule_struct, get_buffer, release_buffer)
from gpu import NO_GPU
from peers import (JAX_HONOURS_COPY_FALSE, JAX_IMPORTS_FLOAT4, JAX_KNOWS_FLOAT6,
                   NUMPY_FROM_DLPACK_KEEPS_WRITABLE, numpy_from_dlpack_writable)

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)


@pytest.fixture(scope="module", autouse=True)
def _jax_x64():
    """64-bit JAX types (int64, uint64, float64, complex128) for this module only."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", old)


# ---------------------------------------------------------------------------
# dtypes

NUMPY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128"]
FLOAT8 = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
MINIFLOATS = FLOAT8 + ["float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"]  # all 11 in ml_dtypes
ML_DTYPES = ["bfloat16"] + MINIFLOATS
TORCH_FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]
TORCH_DTYPES = NUMPY_DTYPES + ["bfloat16"] + TORCH_FLOAT8
TORCH_REFUSED = [n for n in MINIFLOATS if n not in TORCH_FLOAT8]
JAX_DTYPES = NUMPY_DTYPES + ["bfloat16"] + FLOAT8
XP_DTYPES = [n for n in NUMPY_DTYPES if n != "float16"]

# Values every dtype represents exactly (so converting through float64 is lossless).
_VALUES = {
    "bool": [True, False, False, True, True],
    "int8": [0, -128, 127, -1, 5, 42],
    "int16": [0, -32768, 32767, -3, 7, 300],
    "int32": [0, -2**31, 2**31 - 1, -9, 11, 70000],
    "int64": [0, -2**63, 2**63 - 1, -13, 17, 2**40],
    "uint8": [0, 255, 1, 128, 7],
    "uint16": [0, 65535, 1, 300, 9],
    "uint32": [0, 2**32 - 1, 1, 70000, 3],
    "uint64": [0, 2**64 - 1, 1, 2**63, 5],
    "complex64": [1 + 2j, -0.5j, 3.0, -1.25 + 0.5j, 0j],
    "complex128": [1 + 2j, -0.5j, 3.0, -1.25 + 0.5j, 0j],
    "float8_e8m0fnu": [1.0, 2.0, 0.5, 4.0, 0.25, 16.0],  # powers of two only, no zero, no sign
}
_FLOAT_VALUES = [0.0, 1.0, -2.0, 0.5, 3.0, -0.5, 6.0, 1.5]  # exact down to float4_e2m1fn


def values_for(name):
    return _VALUES.get(name, _FLOAT_VALUES)


def np_dtype(name):
    """The NumPy dtype for a dlbridge dtype name (ml_dtypes for the minifloats)."""
    return np.dtype(getattr(ml_dtypes, name)) if name in ML_DTYPES else np.dtype(name)


def is_exotic(name):
    return name in ML_DTYPES


def np_base(name, shape):
    """A C-contiguous NumPy array of `shape` with values of `name`, exactly
    representable. For ml_dtypes types the returned array is float64 (NumPy
    cannot export those over DLPack; callers convert where they need to)."""
    n = math.prod(shape)
    vals = list(itertools.islice(itertools.cycle(values_for(name)), n))
    dt = np.float64 if is_exotic(name) else np_dtype(name)
    return np.array(vals, dtype=dt).reshape(shape)


def dlb_base(name, shape):
    """The same values built by dlbridge itself (its own allocation)."""
    return dlbridge.asarray(np_base(name, shape).tolist(), dtype=name)


def torch_base(name, shape):
    t = torch.from_numpy(np_base(name, shape).copy())
    return t.to(getattr(torch, name)) if is_exotic(name) else t


def jax_base(name, shape):
    a = np_base(name, shape)
    if is_exotic(name):
        a = a.astype(np_dtype(name))
    return jnp.asarray(a)


def as_py(x):
    """Values of any array as nested Python lists, widening exotic floats."""
    if isinstance(x, dlbridge.Array):
        return x.tolist()
    if isinstance(x, torch.Tensor):
        if x.dtype in (torch.bfloat16,) or "float8" in str(x.dtype):
            x = x.to(torch.float64)
        return x.tolist()
    a = np.asarray(x)
    if a.dtype.name in ML_DTYPES:
        a = a.astype(np.float64)
    return a.tolist()


def itemsize(name):
    return np_dtype(name).itemsize


# ---------------------------------------------------------------------------
# layouts: (base shape, view). The views use only basic indexing and
# transposes, which NumPy, dlbridge and (without negative steps) PyTorch share.

def _permute(x):
    if isinstance(x, torch.Tensor):
        return x.permute(2, 0, 1)
    return x.transpose(2, 0, 1)


LAYOUTS = {
    "0d": ((), lambda x: x),
    "empty1": ((0,), lambda x: x),
    "empty2": ((3, 0), lambda x: x),
    "empty_view": ((4, 5), lambda x: x[1:1, ::2]),
    "ones32": ((1,) * 32, lambda x: x),
    "contig3d": ((2, 3, 4), lambda x: x),
    "step": ((10,), lambda x: x[1::3]),
    "step2d": ((4, 6), lambda x: x[::2, 1::2]),
    "transpose": ((3, 4), lambda x: x.T),
    "permute": ((2, 3, 4), _permute),
    "offset": ((10,), lambda x: x[3:]),
    "offset2d": ((4, 5), lambda x: x[1:, 2:]),
    "size1_axis": ((1, 6), lambda x: x[:, ::2]),
    "neg": ((6,), lambda x: x[::-1]),
    "neg2d": ((4, 6), lambda x: x[::-1, ::-2]),
    "neg_offset": ((3, 5), lambda x: x.T[1:, ::-1]),
}
NEGATIVE = {"neg", "neg2d", "neg_offset"}
TORCH_LAYOUTS = [k for k in LAYOUTS if k not in NEGATIVE]
SMALL_LAYOUTS = ["0d", "empty2", "ones32", "contig3d", "transpose", "offset2d"]

# The exchanges are tested along axes, not over every (dtype, layout) cell:
# a dtype changes the element (its size, its values, its scalars), a layout
# the strides and the offset, and what one does is independent of the other
# but for the element size strides are counted in. So every dtype goes
# through a 0-d array (its scalars) and a strided view with an offset (its
# size in the strides), and every layout through a few dtypes that differ in
# size and kind. A failure's id names the path: test_...[int16-step2d].
DTYPE_AXIS_LAYOUTS = ("0d", "step2d")
LAYOUT_AXIS_DTYPES = ("bool", "uint16", "float32", "complex128", "bfloat16", "float8_e4m3fn")


def axes(dtypes, layouts, on=DTYPE_AXIS_LAYOUTS, special=()):
    """(dtype, layout) pairs: every dtype on the layouts `on` (those of them in
    `layouts`), every layout on LAYOUT_AXIS_DTYPES (those in `dtypes`), and
    the `special` pairs, each pair once."""
    pairs = [(name, layout) for layout in on if layout in layouts for name in dtypes]
    pairs += [(name, layout) for layout in layouts for name in LAYOUT_AXIS_DTYPES if name in dtypes]
    return list(dict.fromkeys(pairs + list(special)))


def np_view(name, layout):
    shape, view = LAYOUTS[layout]
    return view(np_base(name, shape))


def dlb_view(name, layout):
    shape, view = LAYOUTS[layout]
    return view(dlb_base(name, shape))


def expected(name, layout):
    return as_py(np_view(name, layout))


def elem_strides(a):
    """NumPy byte strides in elements."""
    return tuple(s // a.itemsize for s in a.strides)


def check_dlb_matches_numpy(d, a, name):
    """`d` (dlbridge) views the same memory as NumPy array `a`."""
    assert isinstance(d, dlbridge.Array)
    assert str(d.dtype) == name
    assert d.shape == a.shape
    assert d.ndim == a.ndim
    assert d.size == a.size
    assert d.itemsize == a.itemsize
    if a.size:
        assert d.strides == elem_strides(a)
        assert d.data_ptr == a.ctypes.data == a.__array_interface__["data"][0]
    assert d.tolist() == as_py(a)


class ByteOffsetProducer:
    """A DLPack producer that follows the header's alignment advice: `data`
    points at the start of the buffer and `byte_offset` locates the first
    element (most producers fold the offset into `data` instead). Built by
    rewriting a NumPy capsule; NumPy's deleter only reads manager_ctx."""

    def __init__(self, base, view):
        self.base = base  # owns the memory
        self.view = view

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        capsule = self.view.__dlpack__(max_version=(1, 0))
        _, m = capsule_struct(capsule)
        offset = self.view.ctypes.data - self.base.ctypes.data
        assert offset > 0
        m.dl_tensor.data = self.base.ctypes.data
        m.dl_tensor.byte_offset = offset
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


class InterfaceOnly:
    """Exposes only `__array_interface__` of the array it wraps (and keeps it alive)."""

    def __init__(self, arr):
        self.arr = arr
        self.__array_interface__ = arr.__array_interface__


# ===========================================================================
# NumPy -> dlbridge

@pytest.mark.parametrize("name, layout", axes(NUMPY_DTYPES, list(LAYOUTS)))
@pytest.mark.parametrize("entry", ["from_dlpack", "asarray"])
def test_numpy_to_dlbridge(entry, name, layout):
    a = np_view(name, layout)
    d = getattr(dlbridge, entry)(a)
    check_dlb_matches_numpy(d, a, name)
    assert d.readonly is False
    assert d.device == dlbridge.Device("cpu")
    assert d.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("name, layout", axes(NUMPY_DTYPES, ["contig3d", "transpose", "neg2d", "offset2d", "empty2", "0d"],
                                              on=("0d", "neg2d")))
@pytest.mark.parametrize("path", ["buffer", "array_interface"])
def test_numpy_to_dlbridge_without_dlpack(path, name, layout):
    """asarray through the buffer protocol and through __array_interface__ alone."""
    a = np_view(name, layout)
    src = memoryview(a) if path == "buffer" else InterfaceOnly(a)
    d = dlbridge.asarray(src)
    check_dlb_matches_numpy(d, a, name)
    assert d.readonly is False


@pytest.mark.parametrize("name", ML_DTYPES)
def test_ml_dtypes_numpy_cannot_export(name):
    """NumPy 2.4's __dlpack__ refuses every ml_dtypes type (it exports only
    bool/int/uint/float/complex), so neither dlbridge entry point can take
    them from NumPy; the producer's BufferError propagates unchanged."""
    a = np_base(name, (4,)).astype(np_dtype(name))
    with pytest.raises(BufferError, match="DLPack only supports"):
        a.__dlpack__(max_version=(1, 0))
    with pytest.raises(BufferError, match="DLPack only supports"):
        dlbridge.from_dlpack(a)
    with pytest.raises(BufferError, match="DLPack only supports"):
        dlbridge.asarray(a)


@pytest.mark.parametrize("name", ML_DTYPES)
def test_ml_dtypes_numpy_cannot_import(name):
    """np.from_dlpack has no mapping for bfloat16 and the minifloat codes;
    NumPy raises RuntimeError. dlbridge's own export refuses the array
    interface and buffer protocol for them with BufferError."""
    d = dlb_base(name, (4,))
    assert str(d.dtype) == name
    assert d.dtype == np_dtype(name)  # DType compares equal to the ml_dtypes dtype
    assert d.tolist() == as_py(np_base(name, (4,)))
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        np.from_dlpack(d)
    with pytest.raises(BufferError, match="typestr"):
        d.__array_interface__
    with pytest.raises(BufferError, match="typestr"):
        np.asarray(d)
    with pytest.raises(BufferError, match="buffer-protocol format"):
        memoryview(d)


@pytest.mark.parametrize("name", ML_DTYPES)
def test_ml_dtypes_values_reach_dlbridge_via_jax(name):
    """The ml_dtypes values that NumPy cannot export travel via JAX (which
    stores them natively) and decode identically in dlbridge."""
    a = np_base(name, (2, 4)).astype(np_dtype(name))
    if name.startswith("float6"):
        # No JAX holds float6 arrays on CPU (peers.JAX_KNOWS_FLOAT6).
        if JAX_KNOWS_FLOAT6:
            with pytest.raises(jax.errors.JaxRuntimeError, match="F6E"):
                jnp.asarray(a)
        else:
            with pytest.raises(TypeError):
                jnp.asarray(a)
        return
    x = jnp.asarray(a)
    d = dlbridge.from_dlpack(x)
    assert str(d.dtype) == name
    assert d.shape == (2, 4)
    assert d.data_ptr == x.unsafe_buffer_pointer()
    assert d.tolist() == as_py(a)


# ===========================================================================
# dlbridge -> NumPy (DLPack, buffer protocol, __array_interface__)

@pytest.mark.parametrize("name, layout", axes(NUMPY_DTYPES, list(LAYOUTS)))
def test_dlbridge_to_numpy_from_dlpack(name, layout):
    d = dlb_view(name, layout)
    n = np.from_dlpack(d)
    assert n.dtype == np.dtype(name)
    assert n.shape == d.shape
    if d.size:
        assert n.ctypes.data == d.data_ptr
        assert elem_strides(n) == d.strides
    assert n.tolist() == d.tolist() == expected(name, layout)
    assert n.flags.writeable is numpy_from_dlpack_writable(True, d.size)


@pytest.mark.parametrize("name, layout", axes(NUMPY_DTYPES, list(LAYOUTS)))
def test_dlbridge_to_numpy_buffer_protocol(name, layout):
    d = dlb_view(name, layout)
    mv = memoryview(d)
    assert mv.readonly is False
    assert mv.shape == d.shape
    assert mv.ndim == d.ndim
    assert mv.itemsize == itemsize(name)
    assert mv.strides == tuple(s * itemsize(name) for s in d.strides)
    n = np.asarray(mv)
    assert n.dtype == np.dtype(name)
    if d.size:
        assert n.ctypes.data == d.data_ptr
    assert n.tolist() == expected(name, layout)
    assert n.flags.writeable


@pytest.mark.parametrize("name, layout", axes(NUMPY_DTYPES, list(LAYOUTS)))
def test_dlbridge_to_numpy_array_interface(name, layout):
    d = dlb_view(name, layout)
    ai = d.__array_interface__
    assert ai["version"] == 3
    assert ai["shape"] == d.shape
    assert np.dtype(ai["typestr"]) == np.dtype(name)
    assert ai["data"] == (d.data_ptr, False)
    if ai["strides"] is not None:
        assert ai["strides"] == tuple(s * itemsize(name) for s in d.strides)
    n = np.asarray(InterfaceOnly(d))
    assert n.dtype == np.dtype(name)
    assert n.shape == d.shape
    if d.size:
        assert n.ctypes.data == d.data_ptr
        assert elem_strides(n) == d.strides or ai["strides"] is None
    assert n.tolist() == expected(name, layout)
    assert n.flags.writeable
    # np.asarray on the Array itself (NumPy picks buffer protocol or interface)
    m = np.asarray(d)
    if d.size:
        assert m.ctypes.data == d.data_ptr
    assert m.tolist() == expected(name, layout)


@pytest.mark.parametrize("name", ["float16", "int32", "uint8", "bool", "complex64", "float64"])
def test_buffer_formats(name):
    d = dlb_base(name, (2, 3))
    mv = memoryview(d)
    expected_format = {"bool": "?", "int32": "i", "uint8": "B", "float16": "e",
                       "float64": "d", "complex64": "Zf"}[name]
    assert mv.format == expected_format
    assert mv.nbytes == d.nbytes == 6 * itemsize(name)
    assert mv.c_contiguous
    assert not memoryview(d.T).c_contiguous


# ===========================================================================
# shapes and strides that need care

@pytest.mark.parametrize("name", ["float64", "int16", "complex128", "bool"])
def test_broadcast_zero_strides_numpy(name):
    """np.broadcast_to is read-only with zero strides; both survive."""
    base = np_base(name, (3,))
    b = np.broadcast_to(base, (4, 3))
    d = dlbridge.from_dlpack(b)
    assert d.strides == (0, 1)
    assert d.readonly is True
    assert d.data_ptr == base.ctypes.data
    assert d.tolist() == b.tolist()
    n = np.from_dlpack(d)
    assert n.strides == (0, itemsize(name))
    assert n.flags.writeable is False
    assert n.ctypes.data == base.ctypes.data
    t = torch.from_dlpack(d)
    assert t.stride() == (0, 1)
    assert t.data_ptr() == base.ctypes.data
    assert as_py(t) == b.tolist()


def test_broadcast_zero_strides_writable_shared():
    """A writable zero-stride view (as_strided): a write to the single stored
    row shows in every broadcast row on all sides."""
    base = np.arange(3, dtype=np.float32)
    b = np.lib.stride_tricks.as_strided(base, shape=(4, 3), strides=(0, 4))
    d = dlbridge.from_dlpack(b)
    assert d.readonly is False
    assert d.strides == (0, 1)
    t = torch.from_dlpack(d)
    assert t.stride() == (0, 1)
    base[1] = 50
    assert t[:, 1].tolist() == [50.0] * 4
    assert [row[1] for row in d.tolist()] == [50.0] * 4
    assert np.from_dlpack(d)[:, 1].tolist() == [50.0] * 4
    assert memoryview(d).strides == (0, 4)


def test_torch_expand_zero_strides():
    t = torch.arange(3, dtype=torch.int64).expand(4, 3)
    assert t.stride() == (0, 1)
    d = dlbridge.from_dlpack(t)
    assert d.strides == (0, 1)
    assert d.data_ptr == t.data_ptr()
    assert d.tolist() == t.tolist()
    n = np.from_dlpack(d)
    assert n.strides == (0, 8)
    assert n.tolist() == t.tolist()


@pytest.mark.parametrize("name", ["float64", "int32", "complex64", "uint16"])
@pytest.mark.parametrize("consumer", ["dlbridge", "numpy_via_dlbridge", "torch_via_dlbridge"])
def test_nonzero_byte_offset_honoured(consumer, name):
    """A producer that leaves `data` at the buffer start and sets byte_offset
    (dlpack.h's advice): dlbridge must read from data + byte_offset, and on
    re-export fold the offset into data (byte_offset 0, pitfall 6)."""
    base = np_base(name, (12,))
    view = base[5:]
    d = dlbridge.from_dlpack(ByteOffsetProducer(base, view))
    assert d.data_ptr == view.ctypes.data
    assert d.tolist() == view.tolist()
    assert d.shape == view.shape and d.strides == (1,)
    if consumer == "dlbridge":
        _, m = capsule_struct(d.__dlpack__(max_version=(1, 3)))
        assert m.dl_tensor.byte_offset == 0
        assert m.dl_tensor.data == view.ctypes.data
    elif consumer == "numpy_via_dlbridge":
        n = np.from_dlpack(d)
        assert n.ctypes.data == view.ctypes.data
        assert n.tolist() == view.tolist()
    else:
        t = torch.from_dlpack(d)
        assert t.data_ptr() == view.ctypes.data
        assert as_py(t) == view.tolist()


def test_nonzero_byte_offset_2d_strided():
    base = np.arange(40, dtype=np.int64).reshape(5, 8)
    view = base[1:, 3::2]
    d = dlbridge.from_dlpack(ByteOffsetProducer(base, view))
    assert d.data_ptr == view.ctypes.data
    assert d.strides == (8, 2)
    assert d.tolist() == view.tolist()
    assert torch.from_dlpack(d).tolist() == view.tolist()


@pytest.mark.parametrize("max_ndim_lib", ["numpy", "torch", "jax"])
def test_32_and_64_dims(max_ndim_lib):
    for ndim in (32, 64):
        shape = (1,) * (ndim - 1) + (2,)
        if max_ndim_lib == "numpy":
            src = np.arange(2, dtype=np.float32).reshape(shape)
            ptr = src.ctypes.data
        elif max_ndim_lib == "torch":
            src = torch.arange(2, dtype=torch.float32).reshape(shape)
            ptr = src.data_ptr()
        else:
            src = jnp.arange(2, dtype=jnp.float32).reshape(shape)
            ptr = src.unsafe_buffer_pointer()
        d = dlbridge.from_dlpack(src)
        assert d.shape == shape
        assert d.data_ptr == ptr
        assert d[(0,) * (ndim - 1)].tolist() == [0.0, 1.0]


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(data=st.data())
def test_random_strided_views_numpy_dlbridge_numpy(data):
    """Random basic slices (any step sign) of a 3-d array: dlbridge views the
    same elements, and NumPy sees them again through DLPack and the buffer."""
    base = np.arange(5 * 6 * 7, dtype=np.int32).reshape(5, 6, 7)
    key = []
    for n in base.shape:
        start = data.draw(st.integers(-n, n))
        stop = data.draw(st.integers(-n - 1, n + 1))
        step = data.draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
        key.append(slice(start, stop, step))
    perm = data.draw(st.permutations([0, 1, 2]))
    a = base[tuple(key)].transpose(perm)
    d = dlbridge.from_dlpack(a)
    check_dlb_matches_numpy(d, a, "int32")
    # the same view taken inside dlbridge gives the same layout
    e = dlbridge.from_dlpack(base)[tuple(key)].transpose(perm)
    assert e.shape == d.shape
    assert e.tolist() == a.tolist()
    if a.size:
        assert e.strides == d.strides and e.data_ptr == d.data_ptr
    n = np.from_dlpack(d)
    assert n.tolist() == a.tolist()
    assert np.asarray(memoryview(d)).tolist() == a.tolist()


# ===========================================================================
# PyTorch

def torch_view(name, layout):
    shape, view = LAYOUTS[layout]
    return view(torch_base(name, shape))


@pytest.mark.parametrize("name, layout", axes(TORCH_DTYPES, TORCH_LAYOUTS))
@pytest.mark.parametrize("entry", ["from_dlpack", "asarray"])
def test_torch_to_dlbridge(entry, name, layout):
    t = torch_view(name, layout)
    d = getattr(dlbridge, entry)(t)
    assert str(d.dtype) == name
    assert str(t.dtype) == "torch." + name
    assert d.dtype == t.dtype
    assert d.shape == tuple(t.shape)
    if t.numel():
        assert d.strides == t.stride()
        assert d.data_ptr == t.data_ptr()
    assert d.readonly is False
    assert d.tolist() == as_py(t) == expected(name, layout)


@pytest.mark.parametrize("name, layout", axes(TORCH_DTYPES, TORCH_LAYOUTS))
def test_dlbridge_to_torch(name, layout):
    d = dlb_view(name, layout)
    t = torch.from_dlpack(d)
    assert t.dtype == getattr(torch, name)
    assert tuple(t.shape) == d.shape
    if d.size:
        assert t.stride() == d.strides
        assert t.data_ptr() == d.data_ptr
    assert as_py(t) == d.tolist() == expected(name, layout)


@pytest.mark.parametrize("name", TORCH_REFUSED)
def test_torch_refuses_dtypes(name):
    """PyTorch has no float8_e3m4/e4m3/e4m3b11fnuz, no float6, and wants
    float4 as (17, 4, lanes 2): it raises BufferError on dlbridge's export."""
    d = dlb_base(name, (4,))
    with pytest.raises(BufferError, match="Unsupported"):
        torch.from_dlpack(d)
    assert d.tolist() == as_py(np_base(name, (4,)))  # still usable after the refusal


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_torch_complex32_refused_by_dlbridge():
    """torch.complex32 is exported as (5, 32, 1), which dlbridge does not
    support: BufferError (never a crash), after which the tensor is still
    intact. (torch.float4_e2m1fn_x2, (17, 4, 2), is taken: test_float4_pairs.py.)"""
    c = torch.zeros(3, dtype=torch.complex32)
    with pytest.raises(BufferError, match="code 5, bits 32"):
        dlbridge.from_dlpack(c)
    with pytest.raises(BufferError, match="code 5, bits 32"):
        dlbridge.asarray(c)
    assert c.to(torch.complex64).tolist() == [0j] * 3


@pytest.mark.parametrize("case", ["requires_grad", "conj"])
def test_torch_producer_errors_propagate(case):
    if case == "requires_grad":
        t = torch.zeros(3, requires_grad=True)
        match = "gradient"
    else:
        t = torch.zeros(3, dtype=torch.complex64).conj()
        match = "conjugate"
    with pytest.raises(BufferError, match=match):
        dlbridge.from_dlpack(t)
    with pytest.raises(BufferError, match=match):
        dlbridge.asarray(t)


_NEG_STRIDE_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import torch
    import dlbridge
    a = np.arange(6.0)[::-1]
    src = dlbridge.from_dlpack(a) if sys.argv[1] == "dlbridge" else a
    try:
        t = torch.from_dlpack(src)
    except Exception as e:
        print("raised", type(e).__name__)
    else:
        print("ok", t.tolist())
""")


def test_torch_negative_strides_same_as_numpy_producer():
    """PyTorch has no negative strides (pitfall 3: torch aborts the process on
    them). dlbridge exports a[::-1] exactly as NumPy does, so PyTorch must react
    to dlbridge's capsule the same way it reacts to NumPy's. Run in
    subprocesses because the reaction may be an abort."""
    outcomes = {}
    for producer in ("numpy", "dlbridge"):
        r = subprocess.run([sys.executable, "-c", _NEG_STRIDE_SCRIPT, producer], env=dict(os.environ),
                           capture_output=True, text=True, timeout=120)
        outcomes[producer] = (r.returncode, r.stdout.strip())
    assert outcomes["dlbridge"] == outcomes["numpy"]
    if outcomes["dlbridge"][1].startswith("ok"):
        assert outcomes["dlbridge"][1] == "ok [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]"


@pytest.mark.parametrize("name", ["float32", "int64", "bfloat16", "float8_e4m3fn", "complex128"])
def test_torch_copy_true(name):
    d = dlb_base(name, (3, 4)).T
    t = torch.from_dlpack(d, copy=True)
    assert t.data_ptr() != d.data_ptr
    assert as_py(t) == d.tolist()
    t2 = torch_base(name, (3, 4))
    e = dlbridge.from_dlpack(t2, copy=True)
    assert e.data_ptr != t2.data_ptr()
    assert e.readonly is False
    assert e.tolist() == as_py(t2)


# ===========================================================================
# JAX

JAX_LAYOUTS_IN = ["0d", "empty1", "empty2", "ones32", "contig3d"]


def jax_view(name, layout):
    shape, view = LAYOUTS[layout]
    return view(jax_base(name, shape))


# JAX makes C-contiguous arrays only: every dtype on a 0-d and a 3-d one.
@pytest.mark.parametrize("name, layout", axes(JAX_DTYPES + ["float4_e2m1fn"], JAX_LAYOUTS_IN, on=("0d", "contig3d")))
@pytest.mark.parametrize("entry", ["from_dlpack", "asarray"])
def test_jax_to_dlbridge(entry, name, layout):
    """JAX answers max_version=(1, 0) with a legacy 'dltensor' capsule, which
    cannot carry READ_ONLY; dlbridge (like NumPy) imports legacy capsules
    read-only, which is right for immutable JAX buffers."""
    x = jax_view(name, layout)
    d = getattr(dlbridge, entry)(x)
    assert str(d.dtype) == name == str(x.dtype)
    assert d.shape == x.shape
    if x.size:
        assert d.data_ptr == x.unsafe_buffer_pointer()
        c_strides = tuple(int(np.prod(x.shape[i + 1:])) for i in range(x.ndim))
        assert d.strides == c_strides
    assert d.readonly is True
    assert d.tolist() == as_py(x) == expected(name, layout)


def test_jax_reports_legacy_capsule():
    x = jnp.arange(4.0)
    name, m = capsule_struct(x.__dlpack__(max_version=(1, 0)))
    assert name == b"dltensor"
    assert m.dl_tensor.data == x.unsafe_buffer_pointer()
    n = np.from_dlpack(x)
    assert n.flags.writeable is False  # NumPy reads JAX the same way dlbridge does
    d = dlbridge.from_dlpack(x)
    assert d.readonly is True
    assert memoryview(d).readonly is True
    with pytest.raises(TypeError, match="read-only"):
        memoryview(d)[0] = 1.0
    # a copy is the way to a writable array
    c = dlbridge.asarray(x, copy=True)
    assert c.readonly is False and c.data_ptr != x.unsafe_buffer_pointer()
    assert c.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("name", ["int4", "uint4", "int2"])
def test_jax_subbyte_ints_refused_by_producer(name):
    x = jnp.asarray(np.zeros(4, dtype=getattr(ml_dtypes, name)))
    with pytest.raises(jax.errors.JaxRuntimeError, match="no DLPack equivalent"):
        dlbridge.from_dlpack(x)


@pytest.mark.parametrize("name, layout", axes(JAX_DTYPES, ["0d", "empty1", "empty2", "ones32", "contig3d", "transpose",
                                                          "permute"], on=("0d", "permute")))
@pytest.mark.parametrize("entry", ["jax.dlpack", "jnp"])
def test_dlbridge_to_jax(entry, name, layout):
    """dlbridge allocations are 64-byte aligned, so XLA imports them without a
    copy, transposed layouts included."""
    d = dlb_view(name, layout)
    f = jax.dlpack.from_dlpack if entry == "jax.dlpack" else jnp.from_dlpack
    x = f(d)
    assert str(x.dtype) == name
    assert x.shape == d.shape
    if d.size:
        assert x.unsafe_buffer_pointer() == d.data_ptr
    assert as_py(x) == d.tolist() == expected(name, layout)


def test_dlbridge_to_jax_unaligned_copies():
    """Pitfall 6: XLA needs 64-byte alignment; an unaligned view is copied
    silently with copy=None and refused with ValueError under copy=False
    (JAX 0.8.0 copies then too: peers.JAX_HONOURS_COPY_FALSE)."""
    aligned = dlbridge.asarray(list(range(16)), dtype="float64")  # dlbridge allocates 64-byte aligned
    assert aligned.data_ptr % 64 == 0
    v = aligned[1:]
    assert v.data_ptr % 64 == 8
    x = jax.dlpack.from_dlpack(v)
    assert x.unsafe_buffer_pointer() != v.data_ptr
    assert as_py(x) == v.tolist()
    if JAX_HONOURS_COPY_FALSE:
        with pytest.raises(ValueError, match="aligned"):
            jax.dlpack.from_dlpack(v, copy=False)
    else:
        x = jax.dlpack.from_dlpack(v, copy=False)
        assert x.unsafe_buffer_pointer() != v.data_ptr
        assert as_py(x) == v.tolist()


@pytest.mark.parametrize("name", ["float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"])
def test_jax_refuses_dtypes(name):
    """XLA has no DLPack import for float6 (unknown codes 15, 16) and, from
    JAX 0.9.2, refuses packed float4 on CPU (even its own float4 arrays);
    before, float4 arrives zero-copy with its values (peers.JAX_IMPORTS_FLOAT4)."""
    d = dlb_base(name, (4,))
    if name == "float4_e2m1fn" and JAX_IMPORTS_FLOAT4:
        for source in (d, jax_base(name, (4,))):
            x = jax.dlpack.from_dlpack(source)
            assert str(x.dtype) == name
            assert as_py(x) == as_py(np_base(name, (4,)))
        x = jax.dlpack.from_dlpack(d)
        assert x.unsafe_buffer_pointer() == d.data_ptr
        return
    with pytest.raises(jax.errors.JaxRuntimeError, match="type code|default layout"):
        jax.dlpack.from_dlpack(d)
    if name == "float4_e2m1fn":
        own = jax_base(name, (4,))
        with pytest.raises(jax.errors.JaxRuntimeError, match="default layout"):
            jax.dlpack.from_dlpack(own)


@pytest.mark.parametrize("layout", ["neg", "neg2d"])
def test_jax_refuses_negative_strides(layout):
    d = dlb_view("float32", layout)
    with pytest.raises(jax.errors.JaxRuntimeError, match="compact"):
        jax.dlpack.from_dlpack(d)


def test_jax_refuses_broadcast():
    base = np.arange(3, dtype=np.float32)
    d = dlbridge.from_dlpack(np.lib.stride_tricks.as_strided(base, shape=(4, 3), strides=(0, 4)))
    with pytest.raises(jax.errors.JaxRuntimeError, match="broadcasting"):
        jax.dlpack.from_dlpack(d)


def test_jax_readonly_export_refused_as_legacy():
    """JAX asks for a legacy capsule (no max_version). A read-only Array has
    no legacy form (the legacy struct cannot say read-only), so dlbridge raises
    BufferError exactly as NumPy does for its read-only arrays (section 5)."""
    a = np.arange(4.0)
    a.flags.writeable = False
    d = dlbridge.from_dlpack(a)
    with pytest.raises(BufferError, match="read-only"):
        jax.dlpack.from_dlpack(d)
    with pytest.raises(BufferError, match="read-only"):
        jnp.from_dlpack(d)
    # NumPy's own message (since NumPy 2 it adds "(supported by newer DLPack version).")
    with pytest.raises(BufferError, match="^Cannot export readonly array since signalling readonly is unsupported "
                                          "by DLPack"):
        jax.dlpack.from_dlpack(a)  # the reference producer behaves the same
    # so a JAX array cannot go JAX -> dlbridge -> JAX without a copy ...
    x = jnp.arange(3.0)
    with pytest.raises(BufferError, match="read-only"):
        jax.dlpack.from_dlpack(dlbridge.from_dlpack(x))
    # ... but a writable copy goes through
    y = jax.dlpack.from_dlpack(dlbridge.from_dlpack(x, copy=True))
    assert y.tolist() == [0.0, 1.0, 2.0]


# ===========================================================================
# array_api_strict

@pytest.mark.parametrize("name, layout", axes(XP_DTYPES, ["0d", "empty2", "ones32", "contig3d", "transpose", "neg2d",
                                                         "offset2d"], on=("0d", "neg2d")))
def test_array_api_strict_both_ways(name, layout):
    a = np_view(name, layout)
    x = xp.asarray(a, copy=False)
    ptr = np.from_dlpack(x).ctypes.data
    for entry in (dlbridge.from_dlpack, dlbridge.asarray):
        d = entry(x)
        assert str(d.dtype) == name
        assert d.shape == x.shape
        if a.size:
            assert d.data_ptr == ptr == a.ctypes.data
            assert d.strides == elem_strides(a)
        assert d.tolist() == a.tolist()
        assert d.readonly is False
    d = dlb_view(name, layout)
    y = xp.from_dlpack(d)
    assert y.dtype == getattr(xp, name)
    assert y.shape == d.shape
    n = np.from_dlpack(y)
    if d.size:
        assert n.ctypes.data == d.data_ptr
        assert elem_strides(n) == d.strides
    assert n.tolist() == expected(name, layout)
    # back into dlbridge: still the same memory
    e = dlbridge.from_dlpack(y)
    if d.size:
        assert e.data_ptr == d.data_ptr


def test_array_api_strict_refusals():
    with pytest.raises(TypeError, match="float16"):
        xp.from_dlpack(dlb_base("float16", (3,)))
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        xp.from_dlpack(dlb_base("bfloat16", (3,)))


def test_array_api_strict_mutation():
    d = dlb_base("int32", (2, 3))
    y = xp.from_dlpack(d)
    if NUMPY_FROM_DLPACK_KEEPS_WRITABLE:
        y[0, 1] = 77
        assert d.tolist()[0][1] == 77
        np.from_dlpack(d)[1, 2] = -8
    else:  # array_api_strict wraps np.from_dlpack, read-only before NumPy 2.2
        with pytest.raises(ValueError, match="read-only"):
            y[0, 1] = 77
        np.asarray(d)[1, 2] = -8
    assert int(y[1, 2]) == -8


# ===========================================================================
# zero copy by mutation: NumPy -> dlbridge -> PyTorch and back

@pytest.mark.parametrize("name", ["float32", "int64", "float16", "complex64", "bool", "uint8"])
@pytest.mark.parametrize("layout", ["contig3d", "transpose", "step2d", "offset2d", "permute"])
def test_mutation_numpy_dlbridge_torch(name, layout):
    a = np_view(name, layout)
    d = dlbridge.from_dlpack(a)
    t = torch.from_dlpack(d)
    assert t.data_ptr() == d.data_ptr == a.ctypes.data
    idx = (0,) * a.ndim
    last = tuple(s - 1 for s in a.shape)
    one, two = values_for(name)[1], values_for(name)[2]
    # write in torch, read in numpy and dlbridge
    t[idx] = one
    assert a[idx].item() == one
    assert dlbridge.from_dlpack(a)[idx].tolist() == one
    # write in numpy, read in torch and dlbridge
    a[last] = two
    assert as_py(t[last]) == two
    assert d[last].tolist() == two
    # and back: torch -> dlbridge -> numpy, write in numpy, read in torch
    n = np.from_dlpack(dlbridge.from_dlpack(t))
    assert n.ctypes.data == a.ctypes.data
    assert n.flags.writeable is numpy_from_dlpack_writable(True, n.size)
    if not n.flags.writeable:  # NumPy < 2.2: write through dlbridge's array interface instead
        n = np.asarray(dlbridge.from_dlpack(t))
    n[idx] = two
    assert as_py(t[idx]) == two
    assert a[idx].item() == two
    # dlbridge's own buffer protocol writes through as well
    mv = memoryview(d)
    assert mv.readonly is False
    np.asarray(mv)[last] = one
    assert as_py(t[last]) == one


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_mutation_torch_dlbridge_torch_exotic(name):
    """Types NumPy cannot hold: torch -> dlbridge -> torch shares memory."""
    t = torch_base(name, (3, 4))
    d = dlbridge.from_dlpack(t)
    t2 = torch.from_dlpack(d)
    assert t2.data_ptr() == t.data_ptr() == d.data_ptr
    t2[1, 1] = 4.0
    assert as_py(t[1, 1]) == 4.0
    assert d[1, 1].tolist() == 4.0
    t[2, 3] = -0.5
    assert d.tolist()[2][3] == -0.5
    assert as_py(t2[2, 3]) == -0.5


def test_mutation_torch_to_numpy_via_dlbridge_buffer():
    t = torch.zeros(2, 3, dtype=torch.float64)
    d = dlbridge.asarray(t)
    m = memoryview(d)
    m[1, 2] = 9.5
    assert t[1, 2].item() == 9.5
    InterfaceOnly(d)  # keeps d alive alongside
    n = np.asarray(InterfaceOnly(d))
    n[0, 0] = -1.0
    assert t[0, 0].item() == -1.0


# ===========================================================================
# read-only propagation

def _readonly_numpy(name="float64", shape=(2, 3)):
    a = np_base(name, shape)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("entry", ["from_dlpack", "asarray"])
@pytest.mark.parametrize("name", ["float64", "int8", "bool", "complex64", "uint64"])
def test_readonly_numpy_roundtrip(entry, name):
    a = _readonly_numpy(name)
    d = getattr(dlbridge, entry)(a)
    assert d.readonly is True
    check_dlb_matches_numpy(d, a, name)
    # versioned export carries READ_ONLY; NumPy honours it
    n = np.from_dlpack(d)
    assert n.flags.writeable is False
    assert n.ctypes.data == a.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        n[0, 0] = n[0, 1]
    # buffer protocol and array interface say read-only too
    mv = memoryview(d)
    assert mv.readonly is True
    assert d.__array_interface__["data"] == (a.ctypes.data, True)
    assert np.asarray(d).flags.writeable is False
    assert np.asarray(InterfaceOnly(d)).flags.writeable is False
    # and so do views and a dlbridge -> dlbridge round trip
    assert d.T.readonly is True and d[1:].readonly is True
    assert dlbridge.from_dlpack(d).readonly is True
    assert dlbridge.asarray(d).readonly is True
    assert dlbridge.asarray(mv).readonly is True
    assert dlbridge.asarray(InterfaceOnly(d)).readonly is True


def test_readonly_capsule_flags():
    """What the capsule says: versioned, DLPack 1.3, READ_ONLY set exactly
    when read-only, byte_offset 0, strides always filled."""
    ro = dlbridge.from_dlpack(_readonly_numpy())
    rw = dlb_base("float64", (2, 3))
    for arr, flag in ((ro, FLAG_READ_ONLY), (rw, 0)):
        name, m = capsule_struct(arr.__dlpack__(max_version=(1, 3)))
        assert name == b"dltensor_versioned"
        assert (m.version.major, m.version.minor) == (1, 3)
        assert m.flags == flag
        t = m.dl_tensor
        assert t.data == arr.data_ptr
        assert t.byte_offset == 0
        assert (t.device.device_type, t.device.device_id) == (1, 0)
        assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 64, 1)
        assert t.ndim == 2
        assert [t.shape[i] for i in range(2)] == [2, 3]
        assert bool(t.strides) and [t.strides[i] for i in range(2)] == list(arr.strides)
    # NumPy's own consumer request (max_version=(1, 0)) still gets a versioned capsule
    name, m = capsule_struct(ro.__dlpack__(max_version=(1, 0)))
    assert name == b"dltensor_versioned" and m.version.major == 1 and m.flags == FLAG_READ_ONLY
    with pytest.raises(BufferError, match="read-only"):
        ro.__dlpack__()
    name, m = capsule_struct(rw.__dlpack__())
    assert name == b"dltensor"


@pytest.mark.parametrize("name,expect", [("bool", (6, 8)), ("bfloat16", (4, 16)), ("complex64", (5, 64)),
                                         ("float8_e4m3fn", (10, 8)), ("float8_e8m0fnu", (14, 8)),
                                         ("uint16", (1, 16)), ("int32", (0, 32))])
def test_exported_dtype_codes(name, expect):
    """Pitfall 7: bool is (6, 8, 1), never uint8."""
    _, m = capsule_struct(dlb_base(name, (2,)).__dlpack__(max_version=(1, 3)))
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes) == expect + (1,)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_exported_zero_size(shape):
    """Section 1 / design takeaway: zero-size tensors export data = NULL, with
    shape and strides still filled; every consumer accepts that."""
    d = dlbridge.zeros(shape, dtype="float32")
    _, m = capsule_struct(d.__dlpack__(max_version=(1, 3)))
    assert m.dl_tensor.data is None
    assert bool(m.dl_tensor.strides)
    assert [m.dl_tensor.shape[i] for i in range(len(shape))] == list(shape)
    assert np.from_dlpack(d).shape == shape
    assert tuple(torch.from_dlpack(d).shape) == shape
    assert jax.dlpack.from_dlpack(d).shape == shape


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 4)])
def test_empty_array_without_data_goes_through_the_array_interface(shape):
    # PyTorch's empty tensors have data pointer 0; NumPy before 2.4 refuses an
    # interface at address 0, so dlbridge gives an empty array another address.
    d = dlbridge.from_dlpack(torch.empty(shape))
    assert d.data_ptr == 0
    address, readonly = d.__array_interface__["data"]
    assert address != 0 and readonly is False
    n = np.asarray(InterfaceOnly(d))
    assert n.shape == shape and n.dtype == np.float32 and n.size == 0


def test_writable_export_is_writable():
    d = dlb_base("int16", (4,))
    assert d.readonly is False
    n = np.from_dlpack(d)
    assert n.flags.writeable is numpy_from_dlpack_writable(True, d.size)
    writer = n if n.flags.writeable else np.asarray(d)  # NumPy < 2.2: every from_dlpack is read-only
    writer[0] = 123
    assert d.tolist()[0] == 123
    assert memoryview(d).readonly is False
    assert d.__array_interface__["data"][1] is False
    assert np.asarray(d).flags.writeable is True


def test_readonly_to_torch_is_ignored():
    """PyTorch cannot represent read-only tensors; per section 3 a consumer
    ignores READ_ONLY rather than raising, and shares the memory."""
    a = _readonly_numpy()
    d = dlbridge.from_dlpack(a)
    t = torch.from_dlpack(d)
    assert t.data_ptr() == a.ctypes.data
    assert t.tolist() == a.tolist()


def test_readonly_buffers():
    d = dlbridge.asarray(memoryview(b"\x01\x02\x03"))
    assert d.readonly is True
    assert str(d.dtype) == "uint8" and d.tolist() == [1, 2, 3]
    assert np.from_dlpack(d).flags.writeable is False
    ba = bytearray(b"\x01\x02\x03")
    e = dlbridge.asarray(ba)
    assert e.readonly is False
    assert np.from_dlpack(e).flags.writeable is numpy_from_dlpack_writable(True, e.size)
    np.asarray(e)[0] = 9
    assert ba[0] == 9
    assert memoryview(d).readonly is True
    with pytest.raises(TypeError, match="read-only"):
        memoryview(d)[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        np.frombuffer(d, dtype=np.uint8)[0] = 1


def test_readonly_copy_is_writable():
    a = _readonly_numpy()
    d = dlbridge.from_dlpack(a, copy=True)
    assert d.readonly is False
    assert d.data_ptr != a.ctypes.data
    assert d.tolist() == a.tolist()
    _, m = capsule_struct(dlbridge.from_dlpack(a).__dlpack__(max_version=(1, 3), copy=True))
    assert m.flags & FLAG_IS_COPIED and not m.flags & FLAG_READ_ONLY
    n = np.from_dlpack(dlbridge.from_dlpack(a), copy=True)
    assert n.flags.writeable is numpy_from_dlpack_writable(True, n.size)  # a fresh copy
    assert n.ctypes.data != a.ctypes.data


# ===========================================================================
# round trips dlbridge -> X -> dlbridge keep the pointer

ROUND_TRIPS = {
    "numpy": np.from_dlpack,
    "torch": torch.from_dlpack,
    "jax": jax.dlpack.from_dlpack,
    "jnp": jnp.from_dlpack,
    "array_api_strict": xp.from_dlpack,
    "memoryview": memoryview,
    "np.asarray": np.asarray,
    "array_interface": InterfaceOnly,
}


_RT_LAYOUTS = ["contig3d", "transpose", "ones32", "0d", "step2d", "neg2d"]
# torch aborts on negative strides (test_torch_negative_strides_same_as_numpy_producer)
_RT_CASES = [(via, layout) for via in ROUND_TRIPS for layout in _RT_LAYOUTS
             if not (via == "torch" and layout == "neg2d")]


@pytest.mark.parametrize("via,layout", _RT_CASES)
@pytest.mark.parametrize("name", ["float32", "int64", "complex128", "bool", "uint16"])
def test_round_trip_keeps_pointer(name, via, layout):
    d = dlb_view(name, layout)
    if via in ("jax", "jnp") and layout in ("step2d", "neg2d"):
        # XLA takes only compact layouts (any axis order); it refuses cleanly
        with pytest.raises(jax.errors.JaxRuntimeError, match="compact"):
            ROUND_TRIPS[via](d)
        return
    x = ROUND_TRIPS[via](d)
    for entry in (dlbridge.from_dlpack, dlbridge.asarray):
        if via in ("memoryview", "array_interface") and entry is dlbridge.from_dlpack:
            continue  # no __dlpack__ there
        e = entry(x)
        assert e.data_ptr == d.data_ptr
        assert e.shape == d.shape
        assert e.strides == d.strides
        assert e.dtype == d.dtype
        assert e.tolist() == d.tolist()
        # JAX re-exports through a legacy capsule: dlbridge reads it read-only;
        # so are NumPy's imports before 2.2, array_api_strict's included
        numpy_made = via in ("numpy", "array_api_strict")
        assert e.readonly is (via in ("jax", "jnp") or (numpy_made and not NUMPY_FROM_DLPACK_KEEPS_WRITABLE))


@pytest.mark.parametrize("name", ["bfloat16"] + TORCH_FLOAT8)
def test_round_trip_exotic_torch_and_jax(name):
    d = dlb_base(name, (3, 5))
    for via in (torch.from_dlpack, jax.dlpack.from_dlpack):
        e = dlbridge.from_dlpack(via(d))
        assert e.data_ptr == d.data_ptr
        assert e.dtype == d.dtype
        assert e.tolist() == d.tolist()


def test_round_trip_x_to_dlbridge_to_x():
    a = np.arange(12.0).reshape(3, 4)[:, 1:]
    assert np.from_dlpack(dlbridge.from_dlpack(a)).ctypes.data == a.ctypes.data
    t = torch.arange(12.0).reshape(3, 4).T
    t2 = torch.from_dlpack(dlbridge.from_dlpack(t))
    assert t2.data_ptr() == t.data_ptr() and t2.stride() == t.stride()
    x = jnp.arange(6.0)
    # JAX -> dlbridge is read-only, so the way back is through NumPy/torch:
    assert np.from_dlpack(dlbridge.from_dlpack(x)).ctypes.data == x.unsafe_buffer_pointer()
    assert torch.from_dlpack(dlbridge.from_dlpack(x)).data_ptr() == x.unsafe_buffer_pointer()
    y = xp.asarray(np.arange(4, dtype=np.int32))
    y2 = xp.from_dlpack(dlbridge.from_dlpack(y))
    assert np.from_dlpack(y2).ctypes.data == np.from_dlpack(y).ctypes.data


# ===========================================================================
# element codecs agree with the libraries, over every bit pattern

def _assert_same_floats(got, want):
    """Equal as float64 arrays, NaN == NaN, and zeros keep their sign."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


def _all_patterns(name):
    bits = {"bfloat16": 16, "float4_e2m1fn": 4}.get(name, 6 if name.startswith("float6") else 8)
    u = np.arange(2 ** bits, dtype=np.uint16 if bits == 16 else np.uint8)
    return u, u.view(np_dtype(name))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["bfloat16"] + FLOAT8 + ["float4_e2m1fn"])
def test_decode_every_pattern_from_jax(name):
    _, ml = _all_patterns(name)
    x = jnp.asarray(ml)
    d = dlbridge.from_dlpack(x)
    assert d.data_ptr == x.unsafe_buffer_pointer()
    want = ml.astype(np.float64)
    _assert_same_floats(d.tolist(), want)
    _assert_same_floats(dlbridge.asarray(x, dtype="float64").tolist(), want)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["bfloat16"] + TORCH_FLOAT8)
def test_decode_every_pattern_from_torch(name):
    u, ml = _all_patterns(name)
    raw = torch.from_numpy(u.astype(np.int16) if u.dtype == np.uint16 else u.copy())
    t = raw.view(getattr(torch, name))
    d = dlbridge.from_dlpack(t)
    assert d.data_ptr == t.data_ptr()
    _assert_same_floats(d.tolist(), t.to(torch.float64).numpy())
    _assert_same_floats(d.tolist(), ml.astype(np.float64))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["bfloat16"] + FLOAT8)
def test_encode_every_value_bits_seen_by_consumers(name):
    """Every non-NaN value, written by dlbridge, has the bit pattern the
    library (PyTorch where it has the type, else JAX) reads it back as."""
    u, ml = _all_patterns(name)
    want = ml.astype(np.float64)
    keep = ~np.isnan(want)
    d = dlbridge.asarray(want[keep].tolist(), dtype=name)
    if hasattr(torch, name):
        raw = torch.from_dlpack(d).view(torch.int16 if u.dtype == np.uint16 else torch.uint8)
        bits = raw.numpy().astype(np.int64) & (2 ** (8 * u.itemsize) - 1)
    else:
        bits = np.asarray(jax.dlpack.from_dlpack(d)).view(u.dtype).astype(np.int64)
    np.testing.assert_array_equal(bits, u[keep].astype(np.int64))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"])
def test_subbyte_values_match_ml_dtypes(name):
    _, ml = _all_patterns(name)
    want = ml.astype(np.float64)
    d = dlbridge.asarray(want.tolist(), dtype=name)
    _assert_same_floats(d.tolist(), want)
    assert d.nbytes == (len(want) * int(name[5]) + 7) // 8  # packed


@pytest.mark.parametrize("shape", [(3,), (5,), (2, 3), (0,), ()])
def test_jax_float4_packed_shapes(shape):
    """JAX stores float4 packed; dlbridge reads odd counts and rows that
    straddle a byte correctly."""
    v = (np.arange(math.prod(shape), dtype=np.float64) % 4).reshape(shape)
    x = jnp.asarray(v.astype(ml_dtypes.float4_e2m1fn))
    d = dlbridge.from_dlpack(x)
    assert d.shape == shape
    assert d.nbytes == (math.prod(shape) + 1) // 2
    assert d.tolist() == v.tolist()


# ===========================================================================
# the buffer protocol's request flags (PEP 3118; a C consumer's view)

def _c_contiguous_bytes(view):
    """What a consumer that asked for a C-contiguous (or ND-only) buffer reads."""
    return ctypes.string_at(view.buf, view.len)


_BUFFER_LAYOUTS = {
    "c": lambda: dlb_base("float64", (2, 3)),
    "f": lambda: dlb_base("float64", (3, 2)).T,
    "strided": lambda: dlb_base("float64", (2, 6))[:, ::2],
}
# (flags, which layouts may satisfy them); numpy's verdicts, for reference
_BUFFER_REQUESTS = {
    "SIMPLE": (PyBUF_SIMPLE, {"c"}),
    "ND": (PyBUF_ND, {"c"}),
    "C_CONTIGUOUS": (PyBUF_C_CONTIGUOUS, {"c"}),
    "F_CONTIGUOUS": (PyBUF_F_CONTIGUOUS, {"f"}),
    "ANY_CONTIGUOUS": (PyBUF_ANY_CONTIGUOUS, {"c", "f"}),
    "STRIDES": (PyBUF_STRIDES, {"c", "f", "strided"}),
    "FULL_RO": (PyBUF_FULL_RO, {"c", "f", "strided"}),
}
# dlbridge's refusal of each request a layout cannot satisfy
_BUFFER_REFUSALS = {
    "SIMPLE": "the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)",
    "ND": "the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)",
    "C_CONTIGUOUS": "a C-contiguous buffer was requested; the array is not C-contiguous",
    "F_CONTIGUOUS": "a Fortran-contiguous buffer was requested; the array is not",
    "ANY_CONTIGUOUS": "a contiguous buffer was requested; the array is not contiguous",
}


@pytest.mark.parametrize("layout", list(_BUFFER_LAYOUTS))
@pytest.mark.parametrize("request_name", list(_BUFFER_REQUESTS))
def test_buffer_request_flags(request_name, layout):
    """An exporter that cannot give the requested kind of buffer MUST raise
    BufferError (CPython buffer protocol): a SIMPLE or ND request (no strides)
    needs C order, C/F/ANY_CONTIGUOUS need that contiguity. NumPy enforces the
    same verdicts (it raises ValueError)."""
    flags, allowed = _BUFFER_REQUESTS[request_name]
    d = _BUFFER_LAYOUTS[layout]()
    reference = np.from_dlpack(d)
    try:
        release_buffer(get_buffer(reference, flags))
    except ValueError:
        numpy_allows = False
    else:
        numpy_allows = True
    assert numpy_allows == (layout in allowed)
    if layout not in allowed:
        with pytest.raises(BufferError, match="^" + re.escape(_BUFFER_REFUSALS[request_name]) + "$"):
            get_buffer(d, flags)
        return
    view = get_buffer(d, flags)
    try:
        assert view.buf == d.data_ptr
        assert view.len == d.size * 8
        assert view.itemsize == 8
        if flags & PyBUF_STRIDES == PyBUF_STRIDES:
            assert [view.strides[i] for i in range(view.ndim)] == [s * 8 for s in d.strides]
        else:
            assert not view.strides
        if flags & PyBUF_ND == PyBUF_ND:
            assert [view.shape[i] for i in range(view.ndim)] == list(d.shape)
        else:  # no shape: one axis of len / itemsize elements, which memoryview reads without one
            assert not view.shape and view.ndim == 1
        if flags in (PyBUF_SIMPLE, PyBUF_ND, PyBUF_C_CONTIGUOUS) or layout == "c":
            assert _c_contiguous_bytes(view) == np.ascontiguousarray(reference).tobytes()
    finally:
        release_buffer(view)


def test_buffer_writable_request_on_readonly():
    d = dlbridge.from_dlpack(_readonly_numpy())
    with pytest.raises(BufferError, match="read-only"):
        get_buffer(d, PyBUF_WRITABLE | PyBUF_STRIDES)
    view = get_buffer(d, PyBUF_STRIDES)
    assert view.readonly == 1
    release_buffer(view)


def test_numpy_frombuffer_and_bytes():
    base = np.arange(6.0).reshape(2, 3)
    d = dlbridge.asarray(base)
    assert np.frombuffer(d, dtype=np.float64).tolist() == base.ravel().tolist()
    # np.frombuffer takes dlbridge's strided buffer through a memoryview and
    # then asks that for a plain one: CPython's memoryview refuses, in its own words.
    with pytest.raises(BufferError, match="underlying buffer is not C-contiguous$"):
        np.frombuffer(d.T, dtype=np.float64)
    assert bytes(d.T) == np.ascontiguousarray(base.T).tobytes()
    assert bytes(d) == base.tobytes()


# ===========================================================================
# lifetimes and ownership across libraries

def _refs(a):
    gc.collect()
    return sys.getrefcount(a)


@pytest.mark.parametrize("path", ["from_dlpack", "asarray", "buffer", "array_interface"])
def test_import_keeps_numpy_owner_alive_and_releases_it(path):
    a = np.arange(6.0)
    before = _refs(a)
    make = {"from_dlpack": dlbridge.from_dlpack, "asarray": dlbridge.asarray,
            "buffer": lambda x: dlbridge.asarray(memoryview(x)),
            "array_interface": lambda x: dlbridge.asarray(InterfaceOnly(x))}[path]
    d = make(a)
    assert _refs(a) > before
    view = d.T[1:]
    del d
    assert view.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert _refs(a) > before
    del view
    assert _refs(a) == before


@pytest.mark.parametrize("consumer", ["numpy", "torch", "jax", "array_api_strict", "capsule_unconsumed"])
def test_export_keeps_memory_alive_and_releases_it(consumer):
    """The consumer's array keeps the memory alive after the Array is gone,
    and the deleter runs (once) when the consumer lets go."""
    raw = np.empty(8 * 8 + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64  # 64-byte aligned, so that XLA need not copy
    a = raw[start:start + 64].view(np.float64)
    a[:] = np.arange(8.0)
    before = _refs(a)
    d = dlbridge.from_dlpack(a)
    if consumer == "numpy":
        x = np.from_dlpack(d)
    elif consumer == "torch":
        x = torch.from_dlpack(d)
    elif consumer == "jax":
        x = jax.dlpack.from_dlpack(d)
        assert x.unsafe_buffer_pointer() == a.ctypes.data
    elif consumer == "array_api_strict":
        x = xp.from_dlpack(d)
    else:
        x = d.__dlpack__(max_version=(1, 3))
    del d
    assert _refs(a) > before
    if consumer != "capsule_unconsumed":
        assert as_py(np.asarray(x) if consumer == "array_api_strict" else x) == a.tolist()
    del x
    assert _refs(a) == before


def test_producers_may_go_away():
    t = torch.arange(5, dtype=torch.int32)
    x = jnp.arange(5, dtype=jnp.int32)
    dt, dx = dlbridge.from_dlpack(t), dlbridge.from_dlpack(x)
    del t, x
    gc.collect()
    assert dt.tolist() == dx.tolist() == [0, 1, 2, 3, 4]
    n = np.from_dlpack(dt)
    del dt
    gc.collect()
    assert n.tolist() == [0, 1, 2, 3, 4]


class _TamperingProducer:
    """Hands out a NumPy capsule with one field changed, and keeps the capsule
    so the test can see what the consumer did with it."""

    def __init__(self, base, **changes):
        self.base = base
        self.changes = changes
        self.capsule = None

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        capsule = self.base.__dlpack__(max_version=(1, 0))
        _, m = capsule_struct(capsule)
        for key, value in self.changes.items():
            if key == "major":
                m.version.major = value
            elif key in ("code", "bits", "lanes"):
                setattr(m.dl_tensor.dtype, key, value)
            else:
                setattr(m.dl_tensor, key, value)
        del m
        self.capsule = capsule
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("changes,match", [
    ({}, None),
    ({"major": 2}, "major"),
    ({"lanes": 2}, "lanes"),
    ({"code": 3}, "code 3"),
    ({"code": 17, "bits": 8}, "code 17"),
    ({"bits": 7}, "bits 7"),
    ({"ndim": 65}, "ndim"),
])
def test_refused_capsule_deleter_runs_once(changes, match):
    """The consumer renames the capsule used_... as it takes ownership, and
    on refusal calls the deleter before raising (sections 3, 6 #12)."""
    a = np.arange(4.0)
    producer = _TamperingProducer(a, **changes)
    before = _refs(a)
    if match is None:
        d = dlbridge.from_dlpack(producer)
        assert d.tolist() == a.tolist()
        del d
    else:
        with pytest.raises(BufferError, match=match):
            dlbridge.from_dlpack(producer)
    assert capsule_name(producer.capsule) == b"used_dltensor_versioned"
    assert _refs(a) == before  # the deleter ran: NumPy's tensor released the array
    producer.capsule = None
    assert _refs(a) == before  # and the capsule destructor did not run it again


class _OldProducer:
    """A pre-DLPack-1.0 producer: no max_version/dl_device/copy keywords."""

    def __init__(self, base):
        self.base = base

    def __dlpack__(self, stream=None):
        return self.base.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_old_producer_legacy_capsule():
    a = np.arange(6, dtype=np.int16).reshape(2, 3).T
    d = dlbridge.from_dlpack(_OldProducer(a))
    check_dlb_matches_numpy(d, a, "int16")
    assert d.readonly is True  # legacy capsules cannot say they are writable
    e = dlbridge.asarray(_OldProducer(a))
    assert e.data_ptr == a.ctypes.data and e.readonly is True
    t = torch.from_dlpack(d)
    assert t.data_ptr() == a.ctypes.data


def test_raw_capsules_from_torch():
    """torch.utils.dlpack.to_dlpack hands out a legacy capsule; dlbridge takes
    it (deprecated), read-only, and refuses the consumed capsule again."""
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    capsule = torch.utils.dlpack.to_dlpack(t)
    with pytest.warns(DeprecationWarning, match="raw DLPack capsule"):
        d = dlbridge.from_dlpack(capsule)
    assert d.data_ptr == t.data_ptr() and d.readonly is True
    assert d.tolist() == t.tolist()
    with pytest.warns(DeprecationWarning), pytest.raises(BufferError, match="already consumed"):
        dlbridge.from_dlpack(capsule)
    # and a dlbridge capsule consumed by torch cannot be consumed again
    e = dlb_base("float32", (3,))
    cap = e.__dlpack__(max_version=(1, 3))
    assert torch.from_dlpack(cap).data_ptr() == e.data_ptr
    with pytest.warns(DeprecationWarning), pytest.raises(BufferError, match="already consumed"):
        dlbridge.from_dlpack(cap)


# ===========================================================================
# data that cannot be described, through every entry point

@pytest.mark.parametrize("path", ["from_dlpack", "asarray", "buffer", "array_interface"])
@pytest.mark.parametrize("case", ["big_endian", "stride_not_multiple"])
def test_undescribable_numpy_arrays_refused(case, path):
    if case == "big_endian":
        a = np.arange(3, dtype=">i4")
    else:
        a = np.zeros(4, dtype="i4,i1")["f0"]  # byte stride 5, itemsize 4
    make = {"from_dlpack": dlbridge.from_dlpack, "asarray": dlbridge.asarray,
            "buffer": lambda x: dlbridge.asarray(memoryview(x)),
            "array_interface": lambda x: dlbridge.asarray(InterfaceOnly(x))}[path]
    with pytest.raises(BufferError, match="byte order|native|multiple"):
        make(a)


@pytest.mark.parametrize("source", ["numpy", "torch"])
def test_from_dlpack_device_and_copy(source):
    a = np.arange(6.0)
    x = a if source == "numpy" else torch.from_numpy(a)
    for device in ("cpu", (1, 0), dlbridge.Device("cpu")):
        assert dlbridge.from_dlpack(x, device=device).data_ptr == a.ctypes.data
        assert dlbridge.from_dlpack(x, device=device, copy=False).data_ptr == a.ctypes.data
        c = dlbridge.from_dlpack(x, device=device, copy=True)
        assert c.data_ptr != a.ctypes.data and c.tolist() == a.tolist() and not c.readonly
    with pytest.raises(ValueError, match="copy=False"):
        dlbridge.from_dlpack(x, device="cuda", copy=False)
    # dlbridge imports on the CPU and copies to the GPU itself; with no usable
    # GPU (or no CUDA backend) that copy is refused.
    if NO_GPU:
        with pytest.raises(RuntimeError, match=r"^no CUDA device is available \("):
            dlbridge.from_dlpack(x, device="cuda")
    else:
        g = dlbridge.from_dlpack(x, device="cuda")
        assert g.device == dlbridge.Device("cuda:0") and g.to_device("cpu").tolist() == a.tolist()


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", ["float32", "complex128", "int8"])
def test_copy_true_every_layout(name, layout):
    """copy=True on export (NumPy consumer) and on import gives the same values
    in fresh, writable memory, whatever the source layout."""
    d = dlb_view(name, layout)
    n = np.from_dlpack(d, copy=True)
    assert n.tolist() == expected(name, layout)
    assert n.flags.writeable is numpy_from_dlpack_writable(True, d.size)
    a = np_view(name, layout)
    e = dlbridge.from_dlpack(a, copy=True)
    assert e.tolist() == expected(name, layout)
    assert e.readonly is False
    if a.size:
        assert n.ctypes.data != d.data_ptr
        assert e.data_ptr != a.ctypes.data
