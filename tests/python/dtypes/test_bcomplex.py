"""bcomplex32: the complex number of two bfloat16 (DLPack's kDLBcomplex, code
18, on DLPack's main branch after 1.3; ml_dtypes' bcomplex32), the real part
first.

Its values against ml_dtypes 0.6, bit for bit: every bfloat16 code as either
part, to complex64 and complex128 and to Python complex; complex64,
complex128 and every real dtype to it. Raw bits go into a dlbridge array at
``data_ptr`` (NumPy cannot export ml_dtypes arrays through DLPack) and come
out with ``ctypes.string_at``. Then the exchanges: dlbridge's own export and
import, a producer built by hand with ctypes, and the peers that have no such
dtype (NumPy, PyTorch, JAX), which refuse it.
"""
import ctypes
import pickle
import struct

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import Consumed, ManagedTensor, Producer
from dtype_codes import array_from_codes as small_array_from_codes
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

BCOMPLEX32 = np.dtype(ml_dtypes.bcomplex32)
REALS = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
         "float64", "bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
         "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
         "float4_e2m1fn"]
NUMPY_REALS = REALS[:12]


def from_parts(parts, shape=None):
    """A dlbridge bcomplex32 array of the given (real, imaginary) bfloat16 codes."""
    parts = np.ascontiguousarray(parts, dtype=np.uint16).reshape(-1, 2)
    a = dlbridge.empty(len(parts) if shape is None else shape, dtype="bcomplex32")
    assert a.nbytes == parts.nbytes
    ctypes.memmove(a.data_ptr, parts.ctypes.data, parts.nbytes)
    return a


def parts_of(a):
    """The (real, imaginary) bfloat16 codes of a C-contiguous bcomplex32 array."""
    assert a.dtype == "bcomplex32"
    return np.frombuffer(ctypes.string_at(a.data_ptr, a.nbytes), dtype=np.uint16).reshape(-1, 2)


def bits_of(a):
    """The bits of each part of a C-contiguous dlbridge array, real then imaginary."""
    if a.dtype == "bcomplex32":
        return parts_of(a).ravel()
    return np.from_dlpack(a).view({"complex64": np.uint32, "complex128": np.uint64}[a.dtype.name]).ravel()


def assert_same_bits(got, want, context):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, context
    bad = np.flatnonzero(got != want)
    detail = [(int(i), hex(int(want[i])), hex(int(got[i]))) for i in bad[:8]]
    assert bad.size == 0, f"{context}: {bad.size} of {want.size} differ (index, ml_dtypes, dlbridge): {detail}"


def every_code_as_each_part():
    """Every bfloat16 code as the real part and as the imaginary part, the
    other part 1.0, a signalling NaN or -0.0 in turn."""
    codes = np.arange(1 << 16, dtype=np.uint16)
    other = np.resize(np.array([0x3F80, 0x7F81, 0x8000], dtype=np.uint16), codes.size)
    return np.concatenate([np.stack([codes, other], axis=1), np.stack([other, codes], axis=1)])


def float32_bits(count=200_000, seed=0):
    """float32 bit patterns: a random sample, every NaN class (signalling or
    quiet, each sign, payloads high and low), infinities, zeros and the
    rounding midpoints of bfloat16."""
    rng = np.random.default_rng(seed)
    sample = rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32)
    special = [0x7F800001, 0x7F800100, 0x7FBFFFFF, 0x7FC00000, 0x7FC00001, 0xFF800001, 0xFFC12345, 0x7F800000,
               0xFF800000, 0x00000000, 0x80000000, 0x3F808000, 0x3F818000, 0x3F808001, 0x7F7F8000, 0x00008000]
    return np.concatenate([sample, np.array(special, dtype=np.uint32)])


# ---------------------------------------------------------------------------
# The dtype


def test_the_dtype():
    t = dlbridge.DType("bcomplex32")
    assert (t.code, t.bits, t.lanes, t.itemsize) == (18, 32, 1, 4)
    assert t.typestr is None  # NumPy has no such type: ml_dtypes' "<W4" is no array-interface typestr
    assert t == dlbridge.DType((18, 32)) == dlbridge.DType(ml_dtypes.bcomplex32) == dlbridge.DType(BCOMPLEX32)
    assert t == BCOMPLEX32 and t == "bcomplex32"
    assert pickle.loads(pickle.dumps(t)) == t
    with pytest.raises(TypeError, match=exactly("dtype (18, 64) is not a supported DLPack (code, bits, lanes) "
                                                "triple")):
        dlbridge.DType((18, 64))


# ---------------------------------------------------------------------------
# Making arrays and reading their elements


def test_creation_and_element_access():
    values = [1 + 2j, -0.5j, 3.25, complex("nan+1j"), complex(-np.inf, 0.0)]
    a = dlbridge.asarray(values, dtype="bcomplex32")
    assert a.dtype == "bcomplex32" and a.shape == (5,) and a.nbytes == 20
    got = a.tolist()
    assert all(type(v) is complex for v in got)
    assert got[:3] == values[:3] and got[4] == values[4]
    assert np.isnan(got[3].real) and got[3].imag == 1.0
    assert parts_of(a).tolist() == [[0x3F80, 0x4000], [0x8000, 0xBF00], [0x4050, 0x0000], [0x7FC0, 0x3F80],
                                    [0xFF80, 0x0000]]
    # Indexing gives 0-d arrays, whose complex() and item() are the element.
    assert a[1].shape == () and a[1].dtype == "bcomplex32"
    assert complex(a[0]) == a.item(0) == a[0].item() == 1 + 2j
    with pytest.raises(TypeError):
        float(a[0])
    # Rounded to bfloat16 part by part, to nearest even.
    assert dlbridge.asarray([1 / 3 + 1e10j], dtype="bcomplex32").tolist() == [
        complex(float(ml_dtypes.bfloat16(1 / 3)), float(ml_dtypes.bfloat16(1e10)))]
    assert dlbridge.zeros((2, 3), dtype="bcomplex32").tolist() == [[0j] * 3] * 2
    assert dlbridge.full(3, 1.5 - 1j, dtype="bcomplex32").tolist() == [1.5 - 1j] * 3
    assert dlbridge.full(2, 7, dtype="bcomplex32").tolist() == [7 + 0j] * 2
    assert dlbridge.full(2, ml_dtypes.bcomplex32(2 - 1j)).dtype == "bcomplex32"  # its own dtype
    assert dlbridge.asarray([ml_dtypes.bcomplex32(1), ml_dtypes.bcomplex32(1j)]).dtype == "bcomplex32"
    assert dlbridge.asarray(1 + 2j, dtype="bcomplex32").shape == ()
    empty = dlbridge.empty((0, 3), dtype="bcomplex32")
    assert empty.tolist() == [] and empty.nbytes == 0
    assert repr(a[:3]) == "Array([1.+2.j, -0.-0.5j, 3.25+0.j], dtype=bcomplex32)"
    assert repr(empty) == "Array([], shape=(0, 3), dtype=bcomplex32)"


def test_views_copies_and_pickles():
    a = dlbridge.asarray([[1 + 2j, -0.5j, 4], [3.25, 7 - 1j, 1j]], dtype="bcomplex32")
    assert a.T.tolist() == [[1 + 2j, 3.25], [-0.5j, 7 - 1j], [4, 1j]]
    assert a[::-1, ::2].tolist() == [[3.25, 1j], [1 + 2j, 4]]
    assert a.T.copy().tolist() == a.T.tolist()
    back = pickle.loads(pickle.dumps(a.T))
    assert back.dtype == "bcomplex32" and back.tolist() == a.T.tolist()


def test_a_copy_keeps_every_bit():
    """A copy to its own dtype converts nothing: NaN payloads and signalling NaNs stay."""
    parts = every_code_as_each_part()[::97]
    a = from_parts(parts)
    assert_same_bits(parts_of(a[::-1].copy())[::-1].ravel(), parts.ravel(), "bcomplex32[::-1].copy()")
    assert_same_bits(parts_of(dlbridge.asarray(a, dtype="bcomplex32", copy=True)).ravel(), parts.ravel(), "copy")


# ---------------------------------------------------------------------------
# Conversions, against ml_dtypes


@pytest.mark.parametrize("target", ["complex64", "complex128"])
def test_every_code_as_either_part_to_complex(target):
    """bfloat16 to float32 moves the bits (signalling NaNs too); to float64
    goes through float32 and the CPU, so NaNs come out quiet, as ml_dtypes."""
    parts = every_code_as_each_part()
    width = np.uint32 if target == "complex64" else np.uint64
    with np.errstate(invalid="ignore"):
        want = parts.view(BCOMPLEX32).astype(target).view(width).ravel()
    assert_same_bits(bits_of(dlbridge.asarray(from_parts(parts), dtype=target)), want, f"bcomplex32 -> {target}")


def test_every_code_as_either_part_to_python_complex():
    parts = every_code_as_each_part()[::3]
    with np.errstate(invalid="ignore"):
        want = parts.view(BCOMPLEX32).astype(np.complex128).view(np.uint64).ravel()
    got = [struct.unpack("<Q", struct.pack("<d", x))[0] for v in from_parts(parts).tolist() for x in (v.real, v.imag)]
    assert_same_bits(np.array(got, dtype=np.uint64), want, "bcomplex32.tolist()")


def test_complex64_to_bcomplex32():
    """Each part rounds to nearest even; a NaN becomes bfloat16's quiet NaN of its sign."""
    bits = float32_bits()
    source = np.stack([bits, np.roll(bits, 1)], axis=1).ravel().view(np.complex64)
    with np.errstate(invalid="ignore", over="ignore"):
        want = source.astype(BCOMPLEX32).view(np.uint16)
    assert_same_bits(parts_of(dlbridge.asarray(dlbridge.asarray(source), dtype="bcomplex32")).ravel(), want,
                     "complex64 -> bcomplex32")


def test_complex128_to_bcomplex32():
    """float32 values (ml_dtypes narrows float64 to float32 first, rounding
    twice elsewhere) and float64 NaNs of every payload length."""
    with np.errstate(invalid="ignore"):
        wide = float32_bits().view(np.float32).astype(np.float64).view(np.uint64)
    nans = np.uint64(0x7FF0000000000000) | (np.uint64(1) << np.arange(52, dtype=np.uint64))
    bits = np.concatenate([wide, nans, nans | np.uint64(1 << 63)])
    source = np.stack([bits, bits[::-1]], axis=1).ravel().view(np.complex128)
    with np.errstate(invalid="ignore", over="ignore"):
        want = source.astype(BCOMPLEX32).view(np.uint16)
    assert_same_bits(parts_of(dlbridge.asarray(dlbridge.asarray(source), dtype="bcomplex32")).ravel(), want,
                     "complex128 -> bcomplex32")


def real_source(name):
    """(a dlbridge array of dtype `name`, the same values as a NumPy array of
    ml_dtypes' or NumPy's dtype)."""
    if name in NUMPY_REALS:
        rng = np.random.default_rng(1)
        if name == "bool":
            values = rng.integers(0, 2, 1000).astype(bool)
        elif name.startswith(("int", "uint")):
            # Exact in float32, where ml_dtypes converts them (so it rounds once, as dlbridge does).
            info = np.iinfo(name)
            low, high = max(info.min, -(2**24)), min(info.max, 2**24)
            values = np.concatenate([np.arange(low, high + 1, max(1, (high - low) // 5000), dtype=name),
                                     np.array([info.min, 0, 1, high], dtype=name)])
        else:
            bits = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}[name]
            values = rng.integers(0, np.iinfo(bits).max, 20000, dtype=bits, endpoint=True).view(name)
            if name == "float64":  # float32 values: ml_dtypes narrows to float32 before rounding
                with np.errstate(invalid="ignore", over="ignore"):
                    values = values.astype(np.float32).astype(np.float64)
        return dlbridge.asarray(values), values
    width = 16 if name == "bfloat16" else 6 if name.startswith("float6") else 4 if name.startswith("float4") else 8
    codes = np.arange(1 << width, dtype=np.uint16 if width == 16 else np.uint8)
    return small_array_from_codes(name, codes), codes.view(getattr(ml_dtypes, name))


@pytest.mark.parametrize("name", REALS)
def test_reals_to_bcomplex32(name):
    """The real part as the real converts to bfloat16, the imaginary part +0;
    through float32 where ml_dtypes has no direct cast (float8_e8m0fnu)."""
    a, values = real_source(name)
    with np.errstate(invalid="ignore", over="ignore"):
        try:
            want = values.astype(BCOMPLEX32)
        except TypeError:
            want = values.astype(np.float32).astype(BCOMPLEX32)
    assert_same_bits(parts_of(dlbridge.asarray(a, dtype="bcomplex32")).ravel(), want.view(np.uint16),
                     f"{name} -> bcomplex32")


@pytest.mark.parametrize("name", REALS)
def test_bcomplex32_to_a_real_is_refused(name):
    a = dlbridge.asarray([1 + 1j], dtype="bcomplex32")
    with pytest.raises(TypeError, match=exactly(f"asarray: cannot convert complex bcomplex32 to {name}")):
        dlbridge.asarray(a, dtype=name)
    with pytest.raises(TypeError, match=exactly(f"cannot store complex value (1+1j) in a {name} array")):
        dlbridge.full(2, 1 + 1j, dtype=name)


def test_strided_and_transposed_sources_convert_alike():
    """The element-by-element cast of any layout gives the contiguous cast's bits."""
    a = from_parts(every_code_as_each_part()[: 64 * 512], shape=(64, 512))
    whole = bits_of(dlbridge.asarray(a, dtype="complex64")).reshape(64, 512, 2)
    for view, want in ((a.T, whole.transpose(1, 0, 2)), (a[::-3, 1::2], whole[::-3, 1::2])):
        assert_same_bits(bits_of(dlbridge.asarray(view, dtype="complex64")), want.ravel(), f"strided {view.shape}")
        back = dlbridge.asarray(dlbridge.asarray(view, dtype="complex128"), dtype="bcomplex32")
        assert np.array_equal(np.array(back.tolist()), np.array(view.tolist()), equal_nan=True)


# ---------------------------------------------------------------------------
# Exchanges


# (real, imaginary) bfloat16 codes: 1+2j, -3, nan+1j, -0-1j, 10+11j, tiny-tiny*j.
PAIRS = [(0x3F80, 0x4000), (0xC040, 0x0000), (0x7FC0, 0x3F80), (0x8000, 0xBF80), (0x4120, 0x4130), (0x0001, 0x8001)]


def packed(pairs):
    """Each element as one 32-bit word, as it lies in little-endian memory."""
    return [re | im << 16 for re, im in pairs]


@pytest.mark.parametrize("max_version", [None, (1, 3)])
def test_export_through_capsules(max_version):
    a = from_parts(PAIRS, shape=(2, 3))
    consumed = Consumed(a.__dlpack__(max_version=max_version))
    assert consumed.versioned == (max_version is not None)
    assert consumed.dtype == (18, 32, 1)
    assert consumed.shape == (2, 3) and consumed.strides == (3, 1)
    assert consumed.tensor.data == a.data_ptr
    assert consumed.read(ctypes.c_uint32) == packed(PAIRS)
    consumed.release()
    assert dlbridge.from_dlpack(a).data_ptr == a.data_ptr  # dlbridge's own table: a view


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize("strides", [None, (1, 2)])
def test_a_producer_built_by_hand(versioned, strides):
    """code 18 from a producer that is not dlbridge: shared, element (i, j) at i * strides[0] + j * strides[1]."""
    mt = ManagedTensor(packed(PAIRS), shape=(2, 3), strides=strides, dtype=(18, 32, 1), ctype=ctypes.c_uint32,
                       versioned=versioned)
    a = dlbridge.from_dlpack(Producer(mt))
    assert a.dtype == "bcomplex32" and a.data_ptr == mt.data_address and a.readonly == (not versioned)
    with np.errstate(invalid="ignore"):
        values = np.array(PAIRS, dtype=np.uint16).view(BCOMPLEX32).astype(np.complex128).ravel()
    step = strides or (3, 1)
    want = [[values[i * step[0] + j * step[1]] for j in range(3)] for i in range(2)]
    assert np.array_equal(np.array(a.tolist()), np.array(want), equal_nan=True)
    assert np.array_equal(np.array(dlbridge.asarray(a, dtype="complex64").tolist()), np.array(want), equal_nan=True)
    del a
    assert mt.deleter_calls == 1


def test_numpy_pytorch_and_jax_have_no_bcomplex32():
    """NumPy (even with ml_dtypes), PyTorch 2.13 and JAX have no such DLPack
    dtype: each refuses it, and the array stays usable."""
    a = dlbridge.asarray([1 + 2j, 3j], dtype="bcomplex32")
    with pytest.raises(BufferError, match=exactly("bcomplex32 has no NumPy array-interface typestr; "
                                                  "use numpy.from_dlpack")):
        a.__array_interface__
    with pytest.raises(BufferError, match=exactly("bcomplex32 has no buffer-protocol format; use DLPack")):
        memoryview(a)
    with pytest.raises(BufferError, match="typestr"):
        np.asarray(a)
    with pytest.raises(RuntimeError, match=exactly("Unsupported dtype in DLTensor.")):
        np.from_dlpack(a)
    with pytest.raises(BufferError, match=exactly("Unsupported code 18")):
        torch.from_dlpack(a)
    jax = pytest.importorskip("jax")
    with pytest.raises(Exception, match="Unknown or invalid DLPack type code 18"):
        jax.dlpack.from_dlpack(a)
    # An ml_dtypes array: NumPy's __dlpack__ refuses it, and its BufferError stands.
    with pytest.raises(BufferError, match="DLPack only supports"):
        dlbridge.asarray(np.zeros(2, BCOMPLEX32))
    assert a.tolist() == [1 + 2j, 3j]
