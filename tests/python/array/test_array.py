"""The Array type: properties, basic indexing (views), transpose, copy, tolist,
repr, the Python scalar protocols, the buffer protocol, __array_interface__,
and the creation functions empty, zeros and full."""
import ctypes
import gc
import itertools
import math
import operator
import sys
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlbridge
from dlbridge import Array, Device
from dlbridge.testing._abi import (PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_F_CONTIGUOUS, PyBUF_FULL_RO,
                                   PyBUF_ND, PyBUF_SIMPLE, PyBUF_STRIDES, PyBUF_WRITABLE, get_buffer, release_buffer)
from peers import NUMPY_REPR_SCIENTIFIC_BY_PRECISION, SCIENTIFIC_FROM, numpy_scalar_refusal
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

NUMPY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128"]


def numpy_view(n, key):
    """NumPy's basic indexing result as an array view, 0-d results included."""
    key = key if isinstance(key, tuple) else (key,)
    out = n[key]
    if not isinstance(out, np.ndarray):
        out = n[key + (None,)][..., 0]
    return out


def index_error(shape, key):
    """The IndexError message dlbridge gives for a basic key (ints, slices,
    Ellipsis, None) that does not fit `shape`, worked out from the key alone;
    None when the key fits."""
    key = key if isinstance(key, tuple) else (key,)
    indexed = [k for k in key if k is not None and k is not Ellipsis]
    ints = sum(not isinstance(k, slice) for k in indexed)
    added = sum(k is None for k in key)
    if sum(k is Ellipsis for k in key) > 1:
        return "an index can only have a single Ellipsis"
    if len(indexed) > len(shape):
        return f"too many indices: the array is {len(shape)}-dimensional, but {len(indexed)} were indexed"
    if len(shape) - ints + added > 64:
        return f"the result would have {len(shape) - ints + added} axes; at most 64 are allowed"
    axis = 0
    for k in key:
        if k is Ellipsis:
            axis += len(shape) - len(indexed)
        elif k is not None:
            if not isinstance(k, slice) and not -shape[axis] <= k < shape[axis]:
                return f"index {int(k)} is out of bounds for axis {axis} with size {shape[axis]}"
            axis += 1
    return None


def assert_indexes_like_numpy(a, n, key):
    """a[key] is the view NumPy's n[key] is, or both refuse the key with IndexError."""
    try:
        want = numpy_view(n, key)
    except IndexError:
        message = index_error(a.shape, key)
        assert message is not None, f"NumPy refuses {key!r} for shape {a.shape}, but it fits"
        with pytest.raises(IndexError, match=exactly(message)):
            a[key]
        return
    assert_view_of(a[key], want)


def assert_view_of(v, n):
    """`v` (dlbridge) has the shape, element strides, address and values of NumPy's `n`."""
    assert isinstance(v, Array)
    assert v.shape == n.shape
    assert v.ndim == n.ndim
    assert v.size == n.size
    assert v.dtype == n.dtype
    assert v.tolist() == n.tolist()
    assert len(v.strides) == n.ndim
    if n.size > 1:  # strides of axes of length 0 or 1 are arbitrary
        for axis, extent in enumerate(n.shape):
            if extent > 1:
                assert v.strides[axis] == n.strides[axis] // n.itemsize, (axis, v.strides, n.strides)
    if n.size > 0:
        assert v.data_ptr == n.ctypes.data


@pytest.fixture
def base():
    n = np.arange(4 * 5 * 6, dtype=np.int32).reshape(4, 5, 6)
    return n, dlbridge.asarray(n)


# ---------------------------------------------------------------------------
# Properties


def test_properties_of_an_imported_array(base):
    n, a = base
    assert a.shape == (4, 5, 6)
    assert a.strides == (30, 6, 1)  # elements, not bytes
    assert a.dtype == "int32"
    assert a.device == Device("cpu")
    assert a.ndim == 3
    assert a.size == 120
    assert a.itemsize == 4
    assert a.nbytes == 480
    assert a.readonly is False
    assert a.data_ptr == n.ctypes.data
    assert isinstance(a.data_ptr, int)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_itemsize_and_nbytes_match_numpy(dtype):
    n = np.zeros((3, 7), dtype=dtype)
    a = dlbridge.asarray(n)
    assert a.itemsize == n.itemsize
    assert a.nbytes == n.nbytes
    assert a.dtype.itemsize == n.itemsize


def test_properties_of_a_0d_array():
    a = dlbridge.asarray(2.5)
    assert a.shape == ()
    assert a.strides == ()
    assert a.ndim == 0
    assert a.size == 1
    assert a.nbytes == 8


def test_properties_of_an_empty_array():
    a = dlbridge.zeros((0, 3), dtype="int16")
    assert a.shape == (0, 3)
    assert a.size == 0
    assert a.nbytes == 0
    assert a.itemsize == 2


@pytest.mark.parametrize("name, bits", [("float4_e2m1fn", 4), ("float6_e2m3fn", 6), ("float6_e3m2fn", 6)])
@pytest.mark.parametrize("shape", [(0,), (1,), (2,), (3,), (5,), (8,), (7, 3), (2, 2, 2)])
def test_nbytes_of_packed_arrays(name, bits, shape):
    a = dlbridge.zeros(shape, dtype=name)
    size = math.prod(shape)
    assert a.size == size
    assert a.itemsize == 1
    assert a.nbytes == (size * bits + 7) // 8


def test_nbytes_of_a_packed_prefix():
    a = dlbridge.zeros(7, dtype="float4_e2m1fn")
    assert a[:3].nbytes == 2
    assert a[:3].size == 3


def test_readonly_comes_from_the_source_and_spreads_to_views():
    n = np.arange(6.0)
    n.flags.writeable = False
    a = dlbridge.asarray(n)
    assert a.readonly is True
    assert a[::2].readonly is True
    assert a.T.readonly is True
    assert a.copy().readonly is False
    assert dlbridge.asarray(np.arange(3)).readonly is False


def test_strides_of_non_contiguous_imports():
    n = np.arange(24.0).reshape(4, 6)[::2, ::-3]
    a = dlbridge.asarray(n)
    assert a.strides == (12, -3)
    assert a.data_ptr == n.ctypes.data


def test_array_constructor_is_asarray():
    a = Array([[1, 2], [3, 4]])
    assert a.dtype == "int64"
    assert a.tolist() == [[1, 2], [3, 4]]
    b = Array([1, 2], dtype="float32")
    assert b.dtype == "float32"
    n = np.arange(3.0)
    assert Array(n).data_ptr == n.ctypes.data


# ---------------------------------------------------------------------------
# Basic indexing: views, compared with NumPy

KEYS = [
    0, 1, -1, -4, 3,
    (0, 0), (1, -1), (-1, -1, -1), (3, 4, 5), (-4, -5, -6),
    slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(3, 0, -1),
    slice(-1, None, -2), slice(10, None, -3), slice(-100, 100), slice(None, -1),
    (slice(None), slice(None, None, -2)),
    (slice(1, 3), slice(None), slice(None, None, -1)),
    (slice(None, None, -1), slice(None, None, -1), slice(None, None, -1)),
    Ellipsis, (Ellipsis,), (Ellipsis, 0), (0, Ellipsis), (0, Ellipsis, 0), (Ellipsis, slice(None, None, -2)),
    (1, Ellipsis, slice(2, 5)), (Ellipsis, 1, 2, 3),
    None, (None,), (None, 0), (0, None), (None, None, Ellipsis), (Ellipsis, None),
    (slice(None), None, 1, None, slice(None, None, 3)), (None, Ellipsis, None),
    (0, 1, 2, None),
    (), (slice(0, 0),), (slice(3, 3), 0), (slice(2, 1),), (slice(1, 2, -1),),
    (slice(None), slice(5, None)), (Ellipsis, slice(0, 0, -1)),
    (np.int64(1), np.int8(-1)), (np.intp(2),),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing_matches_numpy(base, key):
    n, a = base
    assert_view_of(a[key], numpy_view(n, key))


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_indexing_a_non_contiguous_view_matches_numpy(base, key):
    n, a = base
    n2 = n[::-1, 1:, ::2]
    assert_indexes_like_numpy(a[::-1, 1:, ::2], n2, key)


def test_indexing_0d():
    n = np.array(5.0)
    a = dlbridge.asarray(n)
    for key in [(), Ellipsis, None, (None, None), (Ellipsis, None)]:
        assert_view_of(a[key], numpy_view(n, key))
    with pytest.raises(IndexError, match=exactly("too many indices: the array is 0-dimensional, but 1 were indexed")):
        a[0]


def test_chained_indexing(base):
    n, a = base
    assert_view_of(a[1][::-1][2, 1:4], n[1][::-1][2, 1:4])
    assert_view_of(a[..., ::2][::-1, None][:, :, 3], n[..., ::2][::-1, None][:, :, 3])


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(st.data())
def test_random_basic_keys_match_numpy(data):
    shape = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=4), label="shape")
    n = np.arange(math.prod(shape), dtype=np.int16).reshape(shape)
    a = dlbridge.asarray(n)
    key = []
    for extent in shape[: data.draw(st.integers(0, len(shape)), label="indexed")]:
        kind = data.draw(st.sampled_from(["int", "slice", "none"]) if extent else
                         st.sampled_from(["slice", "none"]))
        if kind == "int":
            key.append(data.draw(st.integers(-extent, extent - 1)))
        elif kind == "none":
            key.append(None)
            key.append(slice(None))
        else:
            bound = st.one_of(st.none(), st.integers(-8, 8))
            step = data.draw(st.one_of(st.none(), st.integers(-4, 4).filter(bool)))
            key.append(slice(data.draw(bound), data.draw(bound), step))
    if data.draw(st.booleans(), label="ellipsis"):
        key.insert(data.draw(st.integers(0, len(key))), Ellipsis)
    key = tuple(key)
    assert_indexes_like_numpy(a, n, key)


@pytest.mark.parametrize("key", [4, -5, 100, (0, 5), (0, -6), (0, 0, 6), (0, 0, -7), (slice(None), 5)],
                         ids=repr)
def test_out_of_bounds_index_raises_index_error(base, key):
    _, a = base
    with pytest.raises(IndexError, match="out of bounds"):
        a[key]


def test_out_of_bounds_message_names_axis_and_size(base):
    _, a = base
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 5"):
        a[0, 5]


@pytest.mark.parametrize("index", [2**63, -2**63 - 1, 10**30])
def test_an_index_past_int64_is_an_index_error(base, index):
    # NumPy 2.4 raises IndexError too, but OverflowError for 2**63 to 2**64 - 1.
    _, a = base
    with pytest.raises(IndexError, match=exactly(f"index {index} is out of bounds for axis 1 with size 5")):
        a[0, index]


@pytest.mark.parametrize("key", [(0, 0, 0, 0), (0, 0, 0, None, 0), (Ellipsis, 0, 0, 0, 0),
                                 (slice(None),) * 4], ids=repr)
def test_too_many_indices(base, key):
    _, a = base
    with pytest.raises(IndexError, match="too many indices"):
        a[key]


def test_two_ellipses(base):
    _, a = base
    with pytest.raises(IndexError, match="Ellipsis"):
        a[..., 0, ...]


@pytest.mark.parametrize("key", [True, False, 1.0, 0.0, "a", b"x", [0], [0, 1], (0, [1]),
                                 np.True_, np.float64(1.0), np.float32(0.0)], ids=repr)
def test_invalid_index_types_raise_index_error(base, key):
    _, a = base
    bad = key[-1] if isinstance(key, tuple) else key
    with pytest.raises(IndexError, match=exactly("only integers, slices, Ellipsis and None are valid indices, "
                                                 f"got {type(bad).__name__}")):
        a[key]


@pytest.mark.parametrize("key", [np.array([0]), np.array([0, 1]), np.array([True, False, True, False]),
                                 np.array(1.0), (0, np.array([1]))], ids=repr)
def test_numpy_array_keys_raise_index_error(base, key):
    _, a = base
    with pytest.raises(IndexError, match=exactly("only integers, slices, Ellipsis and None are valid indices, "
                                                 "got ndarray")):
        a[key]


@pytest.mark.parametrize("key", [dlbridge.asarray([0]), dlbridge.asarray(1),
                                 dlbridge.asarray([True, False])], ids=repr)
def test_dlbridge_array_keys_raise_index_error(base, key):
    _, a = base
    with pytest.raises(IndexError, match=exactly("only integers, slices, Ellipsis and None are valid indices, "
                                                 "got Array")):
        a[key]


def test_views_share_memory_with_the_base():
    n = np.zeros((4, 6))
    a = dlbridge.asarray(n)
    v = a[1:, ::-2]
    n[...] = np.arange(24.0).reshape(4, 6)
    assert v.tolist() == n[1:, ::-2].tolist()
    # and writes through a NumPy view of the dlbridge view land in the base
    w = np.asarray(v)
    w[0, 0] = -1.0
    assert n[1, 5] == -1.0
    assert a[1, 5].tolist() == -1.0


def test_views_keep_the_base_alive():
    n = np.arange(10.0)
    a = dlbridge.asarray(n)
    v = a[2:5]
    del a, n
    gc.collect()
    assert v.tolist() == [2.0, 3.0, 4.0]


def test_indexing_packed_arrays():
    a = dlbridge.full(7, 1.5, dtype="float4_e2m1fn")
    assert a[0].tolist() == 1.5
    assert a[:3].tolist() == [1.5] * 3
    assert a[None].shape == (1, 7)
    assert a[..., None].shape == (7, 1)
    with pytest.raises(TypeError, match="packed"):
        a[1]
    with pytest.raises(TypeError, match="packed"):
        a[::-1]


@pytest.mark.parametrize("key, name", [(1.0, "float"), (True, "bool"), ([0], "list"), ("a", "str")])
def test_invalid_index_type_message(key, name):
    with pytest.raises(IndexError, match=exactly(
            f"only integers, slices, Ellipsis and None are valid indices, got {name}")):
        dlbridge.zeros((2, 3))[key]


def test_slice_step_beyond_int64_on_one_element():
    # NumPy gives a one-element view; so does dlbridge.
    assert dlbridge.zeros(5)[::2**64].shape == (1,)
    assert np.zeros(5)[::2**64].shape == (1,)


# ---------------------------------------------------------------------------
# Transpose


def test_T_matches_numpy(base):
    n, a = base
    assert_view_of(a.T, n.T)
    assert_view_of(a[::2, 1].T, n[::2, 1].T)
    assert a.T.T.tolist() == n.tolist()


@pytest.mark.parametrize("axes", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (2, 0, 1), (-1, 0, 1), (-3, -1, -2),
                                  (0, -1, 1)])
def test_transpose_matches_numpy(base, axes):
    n, a = base
    assert_view_of(a.transpose(axes), n.transpose(axes))
    assert_view_of(a.transpose(*axes), n.transpose(*axes))
    assert_view_of(a.transpose(list(axes)), n.transpose(list(axes)))


def test_transpose_without_axes_reverses(base):
    n, a = base
    assert_view_of(a.transpose(), n.transpose())


def test_transpose_0d_and_1d():
    z = dlbridge.asarray(3)
    assert z.T.shape == () and z.transpose().shape == () and z.transpose(()).shape == ()
    v = dlbridge.asarray([1, 2, 3])
    assert v.T.tolist() == [1, 2, 3]
    assert v.transpose(-1).tolist() == [1, 2, 3]


@pytest.mark.parametrize("axes", [(0, 1), (0, 0, 1), (0, 1, 3), (0, 1, -4), (0, 1, 2, 3), (1, 1, 1),
                                  (0, 2, -1)])
def test_invalid_permutations_raise_value_error(base, axes):
    _, a = base
    with pytest.raises(ValueError, match="permutation"):
        a.transpose(axes)
    with pytest.raises(ValueError, match="permutation"):
        a.transpose(*axes)


def test_transpose_non_integer_axes(base):
    _, a = base
    with pytest.raises(TypeError, match=exactly("transpose axes must be integers, got (0.0, 1, 2)")):
        a.transpose(0.0, 1, 2)
    with pytest.raises(TypeError, match=exactly("transpose axes must be integers, got ('a',)")):
        a.transpose("a")


def test_transpose_is_a_view():
    n = np.zeros((2, 3))
    t = dlbridge.asarray(n).T
    n[1, 2] = 7.0
    assert t[2, 1].tolist() == 7.0


def test_transpose_packed():
    a = dlbridge.full((3, 2), 2.0, dtype="float6_e3m2fn")
    with pytest.raises(TypeError, match="packed"):
        a.T
    assert a.transpose(0, 1).tolist() == [[2.0, 2.0]] * 3


def test_transpose_non_integer_axes_message():
    with pytest.raises(TypeError, match=exactly("transpose axes must be integers, got (0.0, 1)")):
        dlbridge.zeros((2, 3)).transpose(0.0, 1)


# ---------------------------------------------------------------------------
# copy()


def _sources():
    n = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    b = np.broadcast_to(np.arange(5.0), (4, 5))
    return {
        "contiguous": n,
        "non-contiguous": n[:, ::2, 1:4],
        "negative strides": n[::-1, :, ::-2],
        "transposed": n.T,
        "broadcast": b,
        "broadcast, negative": b[::-1, ::-1],
        "0-d": np.array(1.5),
        "empty": n[:, :0],
    }


@pytest.mark.parametrize("label", list(_sources()))
def test_copy_is_c_contiguous_writable_and_independent(label):
    n = _sources()[label]
    src = dlbridge.asarray(n)
    c = src.copy()
    assert c.shape == n.shape
    assert c.dtype == src.dtype
    assert c.tolist() == n.tolist()
    assert c.readonly is False
    if n.size:
        expected_strides = tuple(math.prod(n.shape[i + 1:]) for i in range(n.ndim))
        assert c.strides == expected_strides
    assert c.__array_interface__["strides"] is None
    if n.size:
        assert c.data_ptr != src.data_ptr
        before = n.copy()
        out = np.asarray(c)
        assert out.flags.writeable
        out.flat[0] = -99
        assert np.array_equal(n, before)  # the source did not change
        assert c.tolist() != n.tolist()


def test_copy_of_a_read_only_source_is_writable():
    n = np.arange(4)
    n.flags.writeable = False
    c = dlbridge.asarray(n).copy()
    assert c.readonly is False
    np.asarray(c)[0] = 10
    assert n[0] == 0


def test_copy_of_packed_arrays():
    a = dlbridge.full(7, -3.0, dtype="float6_e2m3fn")
    c = a.copy()
    assert c.tolist() == [-3.0] * 7
    assert c.nbytes == a.nbytes
    assert c.data_ptr != a.data_ptr
    assert a[:3].copy().tolist() == [-3.0] * 3


# ---------------------------------------------------------------------------
# tolist()


def _numpy_sample(dtype, shape=(3, 4)):
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.standard_normal(shape) > 0
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        values = [info.min, info.max, 0, 1, info.max // 3, info.min // 3]
        return np.array(values, dtype=dtype)[rng.integers(0, len(values), size=shape)]
    if dtype.startswith("complex"):
        part = "float32" if dtype == "complex64" else "float64"
        return (rng.standard_normal(shape).astype(part) * 100 + 1j * rng.standard_normal(shape)).astype(dtype)
    values = rng.standard_normal(shape) * 1000
    if values.size > 2:
        values.flat[0] = -0.0
        values.flat[1] = np.inf
    return values.astype(dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_tolist_matches_numpy(dtype):
    n = _numpy_sample(dtype)
    a = dlbridge.asarray(n)
    got, want = a.tolist(), n.tolist()
    assert got == want
    assert [type(x) for row in got for x in row] == [type(x) for row in want for x in row]
    assert a.T.tolist() == n.T.tolist()
    assert a[::-1, ::2].tolist() == n[::-1, ::2].tolist()


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_tolist_0d_matches_numpy(dtype):
    n = _numpy_sample(dtype, shape=())
    a = dlbridge.asarray(n)
    assert a.tolist() == n.tolist()
    assert type(a.tolist()) is type(n.tolist())
    assert dlbridge.asarray(_numpy_sample(dtype))[1, 2].tolist() == _numpy_sample(dtype)[1, 2].tolist()


def test_tolist_nan_and_signed_zero():
    a = dlbridge.asarray(np.array([np.nan, -0.0, 0.0], dtype=np.float32))
    x, negative_zero, zero = a.tolist()
    assert math.isnan(x)
    assert math.copysign(1, negative_zero) == -1
    assert math.copysign(1, zero) == 1


def test_tolist_empty_shapes():
    assert dlbridge.zeros((0,)).tolist() == []
    assert dlbridge.zeros((2, 0)).tolist() == [[], []]
    assert dlbridge.zeros((0, 3)).tolist() == []
    assert dlbridge.zeros((2, 0, 3)).tolist() == np.zeros((2, 0, 3)).tolist()


def test_tolist_broadcast():
    n = np.broadcast_to(np.arange(3), (2, 3))
    assert dlbridge.asarray(n).tolist() == n.tolist()


# ---------------------------------------------------------------------------
# repr


def numpy_repr_as_dlbridge(n):
    """NumPy's repr spelled as dlbridge spells it (always with the dtype)."""
    text = repr(n)
    if "dtype=" not in text:
        text = text[:-1] + f", dtype={n.dtype.name})"
    return "Array(" + text[len("array("):]


@pytest.mark.parametrize("n", [
    np.arange(4.0, dtype=np.float32).reshape(2, 2),
    np.arange(8).reshape(2, 2, 2),
    np.arange(6, dtype=np.uint16).reshape(3, 2),
    np.array([1 + 2j, 3 - 4j]),
    np.array([0.1, 0.2], dtype=np.float16),
    np.array([0.1, 0.2, 0.3]),
    np.array([np.nan, np.inf]),
    np.array([-0.0]),
    np.array([[1.5]]),
    np.array(0.1, dtype=np.float32),
    np.array(3.5),
    np.array(7, dtype=np.uint8),
    np.array(-3, dtype=np.int8),
    np.array(True),
    np.array(2 - 1j, dtype=np.complex64),
], ids=lambda n: f"{n.dtype}{n.shape}")
def test_repr_matches_numpy(n):
    assert repr(dlbridge.asarray(n)) == numpy_repr_as_dlbridge(n)


def test_repr_example():
    a = dlbridge.asarray([[0.0, 1.0], [2.0, 3.0]], dtype="float32")
    assert repr(a) == "Array([[0., 1.],\n       [2., 3.]], dtype=float32)"


def test_repr_values_like_numpy_elementwise():
    rng = np.random.default_rng(3)
    for dtype in ["float16", "float32", "float64"]:
        n = rng.standard_normal(20).astype(dtype)
        text = repr(dlbridge.asarray(n))
        body = text[len("Array(["): text.index("]")]
        tokens = [t.strip() for t in body.split(",")]
        # each element is written with the fewest digits that read back as it
        assert np.array([float(t) for t in tokens], dtype=dtype).tolist() == n.tolist()
        assert tokens == [np.format_float_positional(x, unique=True, trim=".") if abs(x) >= 1e-4
                          else tokens[i] for i, x in enumerate(n)]
        assert text.endswith(f", dtype={dtype})")


def test_repr_summarises_large_arrays():
    text = repr(dlbridge.asarray(np.arange(2000.0)))
    assert text == "Array([0., 1., 2., ..., 1997., 1998., 1999.], shape=(2000,), dtype=float64)"
    rows = repr(dlbridge.asarray(np.arange(2000).reshape(2, 1000)))
    assert rows == ("Array([[0, 1, 2, ..., 997, 998, 999],\n"
                    "       [1000, 1001, 1002, ..., 1997, 1998, 1999]], shape=(2, 1000), dtype=int64)")
    tall = repr(dlbridge.asarray(np.arange(3000).reshape(1000, 3)))
    assert "...," in tall
    assert tall.count("\n") == 6
    assert tall.startswith("Array([[0, 1, 2],") and "[2997, 2998, 2999]]" in tall


def test_repr_at_the_threshold_is_not_summarised():
    assert "..." not in repr(dlbridge.zeros(1000))
    assert "..." in repr(dlbridge.zeros(1001))


def test_repr_non_contiguous():
    n = np.arange(3000.0)[::-1][::2]
    assert repr(dlbridge.asarray(n)) == "Array([2999., 2997., 2995., ..., 5., 3., 1.], shape=(1500,), dtype=float64)"


def test_repr_small_float_dtypes():
    assert repr(dlbridge.asarray([1.5, 2.0], dtype="bfloat16")) == "Array([1.5, 2.], dtype=bfloat16)"
    assert repr(dlbridge.asarray([448.0, -0.5], dtype="float8_e4m3fn")) == \
        "Array([448., -0.5], dtype=float8_e4m3fn)"
    assert "dtype=float4_e2m1fn" in repr(dlbridge.zeros(3, dtype="float4_e2m1fn"))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("value", [0.0, 10.0, 11.0, 100.0, 999.0, 1000.0, -2048.0, 1e4, 1e5, 1e6, 123456789.0, 1e8,
                                   1e16, 1e20, 0.1, 1.5e-4, 9e-5, 1e-30, 65504.0])
def test_repr_writes_each_value_as_numpy_writes_it_alone(dtype, value):
    # Positional from 1e-4 up to NumPy's limit for the type (1e3 for float16,
    # 1e6 for float32, 1e8 for float64), else 1.e+08-style: never 1e+01.
    with np.errstate(over="ignore"):
        n = np.array([value], dtype=dtype)
    if not np.isfinite(n).all():
        return
    expected = numpy_repr_as_dlbridge(n)
    if not NUMPY_REPR_SCIENTIFIC_BY_PRECISION and SCIENTIFIC_FROM[n.dtype.name] <= abs(value) < 1e8:
        # NumPy before 2.3 writes these positionally: 2.3's form, spelled out.
        imaginary = "+0.j" if n.dtype.kind == "c" else ""
        expected = f"Array([{np.format_float_scientific(n.real[0], unique=True, trim='.')}{imaginary}], " \
                   f"dtype={n.dtype.name})"
    assert repr(dlbridge.asarray(n)) == expected


def _repr_peak_bytes(a):
    tracemalloc.start()
    try:
        text = repr(a)
        return text, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shape", [(1 << 26,), (1 << 40,), (1 << 20, 1 << 20), (2, 3, 1 << 30)],
                         ids=["2**26", "2**40", "2**20 x 2**20", "2 x 3 x 2**30"])
def test_repr_reads_only_what_it_prints(shape):
    # Broadcast arrays (zero strides) of up to 2**40 elements: repr's time and
    # memory follow the elements printed, not the array's size.
    text, peak = _repr_peak_bytes(dlbridge.asarray(np.broadcast_to(np.float32(1.5), shape)))
    assert peak < 1 << 20
    row = "[1.5, 1.5, 1.5, ..., 1.5, 1.5, 1.5]"
    block = "[" + ",\n        ".join([row] * 3) + "]"
    rows = {1: row, 2: "[" + ",\n       ".join([row] * 3 + ["..."] + [row] * 3) + "]",
            3: "[" + block + ",\n\n       " + block + "]"}
    assert text == f"Array({rows[len(shape)]}, shape={shape}, dtype=float32)"


def test_repr_of_a_large_packed_array_reads_only_what_it_prints():
    a = dlbridge.full(1 << 22, 1.0, dtype="float4_e2m1fn")
    text, peak = _repr_peak_bytes(a)
    assert text == "Array([1., 1., 1., ..., 1., 1., 1.], shape=(4194304,), dtype=float4_e2m1fn)" and peak < 1 << 20


def test_repr_empty():
    assert repr(dlbridge.zeros(0)) == "Array([], dtype=float64)"
    assert repr(dlbridge.zeros((2, 0), dtype="int8")) == "Array([], shape=(2, 0), dtype=int8)"


# ---------------------------------------------------------------------------
# len, iter, bool, int, float, complex, index


def test_len_and_iter():
    a = dlbridge.asarray([[1, 2], [3, 4], [5, 6]])
    assert len(a) == 3
    rows = list(a)
    assert len(rows) == 3
    assert all(isinstance(r, Array) for r in rows)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert [x.tolist() for x in a[0]] == [1, 2]
    assert len(dlbridge.zeros((0, 4))) == 0
    assert list(dlbridge.zeros((0, 4))) == []


def test_len_of_0d_raises_type_error():
    with pytest.raises(TypeError, match="0-d"):
        len(dlbridge.asarray(1.0))


def test_iterating_0d_raises_type_error():
    a = dlbridge.asarray(1.0)
    with pytest.raises(TypeError, match=exactly("iteration over a 0-d array")):
        for _ in a:
            pass
    with pytest.raises(TypeError, match=exactly("iteration over a 0-d array")):
        list(a)


def test_iter_of_0d_raises_at_once():
    """As with NumPy (and any non-iterable), iter() itself refuses a 0-d array."""
    with pytest.raises(TypeError, match="0-d"):
        iter(dlbridge.asarray(1.0))


@pytest.mark.parametrize("value", [3.5, 2, 1 + 2j, True, 0, -0.0])
def test_scalar_conversions_of_a_0d_array(value):
    n = np.array(value)
    a = dlbridge.asarray(n)
    item = n.item()
    assert bool(a) == bool(item)
    if not isinstance(value, complex):
        assert int(a) == int(item)
        assert float(a) == float(item)
        assert type(int(a)) is int and type(float(a)) is float
    assert complex(a) == complex(item)
    assert type(complex(a)) is complex


# As NumPy 2.4: bool() and item() take any array of one element; int(),
# float() and complex() only a 0-d one, operator.index() only a 0-d integer
# one. dlbridge raises the exception type NumPy raises, or returns its value.
SCALAR_CONVERSIONS = {"bool": bool, "int": int, "float": float, "complex": complex, "index": operator.index,
                      "item": lambda x: x.item()}
SCALAR_VALUES = {"bool": True, "int8": -3, "uint64": 2**64 - 1, "float16": 2.5, "float64": -2.5, "complex128": 1.5 + 2j}


@pytest.mark.parametrize("dtype", list(SCALAR_VALUES))
@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (1, 1, 1), (0,), (2,), (0, 2), (2, 1)])
@pytest.mark.parametrize("convert", list(SCALAR_CONVERSIONS.values()), ids=list(SCALAR_CONVERSIONS))
def test_scalar_conversions_accept_and_refuse_what_numpy_does(convert, shape, dtype):
    n = np.full(shape, SCALAR_VALUES[dtype], dtype=dtype)
    a = dlbridge.asarray(n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before 2.4 NumPy deprecates what 2.4 refuses (peers.py)
        try:
            want = convert(n)
        except Exception as e:  # noqa: BLE001 (the type is what is compared)
            with pytest.raises(numpy_scalar_refusal(e, convert)):
                convert(a)
            return
    got = convert(a)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("convert", [int, float, complex])
def test_int_float_complex_need_a_0d_array(convert):
    message = f"only 0-dimensional arrays convert to {convert.__name__}, got shape (1, 1)"
    with pytest.raises(TypeError, match=exactly(message)):
        convert(dlbridge.zeros((1, 1)))


@pytest.mark.parametrize("shape", [(0,), (2,), (2, 2)])
def test_bool_needs_one_element(shape):
    message = f"the truth value of an array of shape {shape} is ambiguous: only an array with one element has one"
    with pytest.raises(ValueError, match=exactly(message)):
        bool(dlbridge.zeros(shape))


def test_a_size_1_array_of_several_axes_does_not_index_a_list():
    a = dlbridge.asarray([1])
    assert bool(a) is True and a.item() == 1
    with pytest.raises(TypeError, match=exactly("only 0-dimensional integer arrays can be used as an index, "
                                                "got int64 of shape (1,)")):
        [10, 20][a]


def test_int_and_float_of_complex_raise_type_error():
    a = dlbridge.asarray(1 + 2j)
    # Python's own int() and float() of the complex value refuse it; their
    # wording varies by version, but since 3.10 it ends naming the type.
    with pytest.raises(TypeError, match=r"\bint\(\) argument .* not 'complex'$"):
        int(a)
    with pytest.raises(TypeError, match=r"\bfloat\(\) argument .* not 'complex'$"):
        float(a)


def test_int_of_nan_and_large_values():
    with pytest.raises(ValueError, match=exactly("cannot convert float NaN to integer")):  # Python's int(nan)
        int(dlbridge.asarray(math.nan))
    assert int(dlbridge.asarray(np.uint64(2**64 - 1))) == 2**64 - 1
    assert int(dlbridge.asarray(-2.7)) == -2


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8", "uint64"])
def test_index_of_integer_arrays(dtype):
    a = dlbridge.asarray(np.array(3, dtype=dtype))
    assert operator.index(a) == 3
    assert [10, 11, 12, 13][a] == 13


@pytest.mark.parametrize("value", [1.0, True, 1j])
def test_index_of_non_integer_arrays_raises_type_error(value):
    name = dlbridge.asarray(value).dtype.name
    with pytest.raises(TypeError, match=exactly(f"only 0-dimensional integer arrays can be used as an index, "
                                                f"got {name} of shape ()")):
        operator.index(dlbridge.asarray(value))


@pytest.mark.parametrize("shape", [(1,), (2,), (1, 1)])
def test_index_of_arrays_with_axes_raises_type_error(shape):
    with pytest.raises(TypeError, match=exactly(f"only 0-dimensional integer arrays can be used as an index, "
                                                f"got int64 of shape {shape}")):
        operator.index(dlbridge.zeros(shape, dtype="int64"))


def test_bool_of_small_float():
    assert bool(dlbridge.asarray([0.5], dtype="bfloat16")) is True
    assert bool(dlbridge.asarray([0.0], dtype="float8_e5m2")) is False


def test_int_of_infinity_is_overflow_error():
    with pytest.raises(OverflowError, match=exactly("cannot convert float infinity to integer")):
        int(dlbridge.asarray(float("inf")))


# ---------------------------------------------------------------------------
# The buffer protocol


@pytest.mark.parametrize("dtype, fmt", [("bool", "?"), ("int8", "b"), ("uint8", "B"), ("int16", "h"),
                                        ("uint16", "H"), ("int32", "i"), ("uint32", "I"),
                                        ("int64", "q"), ("uint64", "Q"), ("float16", "e"),
                                        ("float32", "f"), ("float64", "d"), ("complex64", "Zf"),
                                        ("complex128", "Zd")])
def test_memoryview_format(dtype, fmt):
    a = dlbridge.zeros((2, 3), dtype=dtype)
    m = memoryview(a)
    assert m.format == fmt
    assert m.itemsize == a.itemsize
    assert m.shape == (2, 3)
    assert m.strides == (3 * a.itemsize, a.itemsize)
    assert m.nbytes == a.nbytes
    assert m.readonly is False
    assert m.c_contiguous


def test_memoryview_values_and_strides_of_a_view():
    n = np.arange(12, dtype=np.int32).reshape(3, 4)
    a = dlbridge.asarray(n)
    m = memoryview(a[:, ::-2])
    assert m.shape == (3, 2)
    assert m.strides == (16, -8)
    assert m.tolist() == n[:, ::-2].tolist()
    assert not m.c_contiguous


def test_memoryview_0d_and_empty():
    m = memoryview(dlbridge.asarray(2.5))
    assert m.shape == () and m.ndim == 0 and m.tolist() == 2.5
    e = memoryview(dlbridge.zeros((0, 3)))
    assert e.shape == (0, 3) and e.nbytes == 0


def test_memoryview_writes_reach_the_array():
    a = dlbridge.zeros(4, dtype="int16")
    m = memoryview(a)
    m[2] = 7
    assert a.tolist() == [0, 0, 7, 0]


def test_memoryview_of_read_only_array_is_read_only():
    n = np.arange(6.0)
    n.flags.writeable = False
    m = memoryview(dlbridge.asarray(n))
    assert m.readonly is True
    with pytest.raises(TypeError, match=exactly("cannot modify read-only memory")):  # memoryview's own
        m[0] = 1.0


def test_dunder_buffer_gives_a_memoryview_of_every_request():
    """Python 3.12's __buffer__(flags) (PEP 688) makes a memoryview of any
    request, shape or none: of a 2-d array without PyBUF_ND, one axis of
    bytes, as CPython's own exporters give."""
    if sys.version_info < (3, 12):
        pytest.skip(f"__buffer__ is Python 3.12's (PEP 688); this is {sys.version.split()[0]}")
    for flags, shape in itertools.product([PyBUF_SIMPLE, PyBUF_WRITABLE, PyBUF_ND, PyBUF_STRIDES, PyBUF_FULL_RO],
                                          [(), (5,), (2, 3), (2, 1, 3)]):
        d = dlbridge.asarray(np.arange(math.prod(shape), dtype=np.float64).reshape(shape))
        with d.__buffer__(flags) as view:
            assert view.nbytes == d.nbytes
            assert view.tobytes() == np.from_dlpack(d).tobytes()
            shaped = flags & PyBUF_ND == PyBUF_ND or not shape
            assert view.shape == (shape if shaped else (view.nbytes // view.itemsize,)), (flags, shape)


def test_writable_buffer_of_read_only_array_raises_buffer_error():
    n = np.arange(6.0)
    n.flags.writeable = False
    a = dlbridge.asarray(n)
    with pytest.raises(BufferError, match="read-only"):
        get_buffer(a, PyBUF_WRITABLE)


def test_writable_buffer_of_writable_array():
    a = dlbridge.zeros(3)
    view = get_buffer(a, PyBUF_WRITABLE)
    try:
        assert view.readonly == 0
        assert view.buf == a.data_ptr
        assert view.len == 24
    finally:
        release_buffer(view)


def test_simple_buffer_of_non_contiguous_array_raises_buffer_error():
    a = dlbridge.zeros((3, 4))[:, ::2]
    with pytest.raises(BufferError, match="contiguous"):
        get_buffer(a, PyBUF_SIMPLE)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn",
                                  "float6_e3m2fn"])
def test_no_buffer_format_raises_buffer_error(name):
    with pytest.raises(BufferError, match=name):
        memoryview(dlbridge.zeros(3, dtype=name))


def test_numpy_frombuffer_and_bytes():
    a = dlbridge.asarray(np.arange(4, dtype=np.uint16))
    assert bytes(a) == np.arange(4, dtype=np.uint16).tobytes()
    assert np.frombuffer(a, dtype=np.uint16).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("flags, message", [
    (PyBUF_C_CONTIGUOUS, "a C-contiguous buffer was requested; the array is not C-contiguous"),
    (PyBUF_F_CONTIGUOUS, "a Fortran-contiguous buffer was requested; the array is not"),
    (PyBUF_ANY_CONTIGUOUS, "a contiguous buffer was requested; the array is not contiguous"),
    (PyBUF_SIMPLE, "the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)"),
    (PyBUF_ND, "the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)"),
], ids=["C_CONTIGUOUS", "F_CONTIGUOUS", "ANY_CONTIGUOUS", "SIMPLE", "ND"])
def test_buffer_contiguity_request_messages(flags, message):
    strided = dlbridge.zeros((3, 4))[:, ::2]  # neither C- nor F-contiguous
    with pytest.raises(BufferError, match=exactly(message)):
        get_buffer(strided, flags)


# ---------------------------------------------------------------------------
# __array_interface__


def test_array_interface_contiguous():
    n = np.arange(12, dtype=np.int32).reshape(3, 4)
    a = dlbridge.asarray(n)
    assert a.__array_interface__ == {"version": 3, "shape": (3, 4), "typestr": "<i4",
                                     "data": (n.ctypes.data, False), "strides": None}


@pytest.mark.parametrize("key", [(slice(None), slice(None, None, 2)), (slice(None, None, -1),),
                                 (slice(None), slice(None, None, -1)), (slice(None, None, 2), 1)],
                         ids=repr)
def test_array_interface_strided_in_bytes(key):
    n = np.arange(24, dtype=np.float64).reshape(4, 6)
    v = dlbridge.asarray(n)[key]
    interface = v.__array_interface__
    assert interface["strides"] == n[key].strides
    assert interface["shape"] == n[key].shape
    assert interface["data"] == (n[key].ctypes.data, False)
    assert interface["typestr"] == "<f8"


def test_array_interface_transposed_and_broadcast():
    n = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert dlbridge.asarray(n).T.__array_interface__["strides"] == (2, 6)
    b = np.broadcast_to(np.arange(3.0), (4, 3))
    assert dlbridge.asarray(b).__array_interface__["strides"] == (0, 8)


def test_array_interface_c_contiguous_ignores_unit_axes():
    assert dlbridge.zeros((3, 1)).T.__array_interface__["strides"] is None
    assert dlbridge.zeros((4, 5))[1:2].__array_interface__["strides"] is None
    assert dlbridge.zeros(()).__array_interface__["strides"] is None


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_array_interface_typestr(dtype):
    a = dlbridge.zeros(2, dtype=dtype)
    assert a.__array_interface__["typestr"] == np.dtype(dtype).str


def test_array_interface_read_only_flag():
    n = np.arange(3.0)
    n.flags.writeable = False
    assert dlbridge.asarray(n).__array_interface__["data"][1] is True


@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float4_e2m1fn"])
def test_array_interface_without_typestr_raises_buffer_error(name):
    with pytest.raises(BufferError, match=name):
        dlbridge.zeros(2, dtype=name).__array_interface__


@pytest.mark.parametrize("key", [(), (slice(None, None, -1),), (slice(None), slice(1, None, 2)),
                                 (Ellipsis, None)], ids=repr)
def test_numpy_asarray_is_zero_copy(key):
    n = np.arange(12.0).reshape(3, 4)
    v = dlbridge.asarray(n)[key]
    out = np.asarray(v)
    assert out.tolist() == n[key].tolist()
    assert out.ctypes.data == v.data_ptr
    assert np.shares_memory(out, n)
    out[...] = -1.0
    assert n[key].tolist() == out.tolist()


def test_numpy_asarray_of_read_only_array_is_read_only():
    n = np.arange(3.0)
    n.flags.writeable = False
    assert not np.asarray(dlbridge.asarray(n)).flags.writeable


def test_numpy_array_from_interface_object():
    """NumPy reading __array_interface__ alone (not the buffer protocol)."""
    a = dlbridge.asarray(np.arange(6, dtype=np.int64).reshape(2, 3))[:, ::-1]

    class Holder:
        __array_interface__ = a.__array_interface__

    out = np.asarray(Holder())
    assert out.tolist() == [[2, 1, 0], [5, 4, 3]]
    assert out.ctypes.data == a.data_ptr


# ---------------------------------------------------------------------------
# empty, zeros, full


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros])
@pytest.mark.parametrize("shape, want", [(3, (3,)), ((2, 3), (2, 3)), ((), ()), ([], ()), ([4], (4,)),
                                         (0, (0,)), ((2, 0, 5), (2, 0, 5)), (np.int64(3), (3,)),
                                         ((np.int32(2), 2), (2, 2))])
def test_creation_shapes(make, shape, want):
    a = make(shape)
    assert a.shape == want
    assert a.dtype == "float64"
    assert a.device == "cpu"
    assert a.readonly is False
    assert a.__array_interface__["strides"] is None


@pytest.mark.parametrize("dtype", NUMPY_DTYPES + ["bfloat16", "float8_e4m3fn", "float8_e8m0fnu"])
def test_zeros_are_zero(dtype):
    a = dlbridge.zeros((3, 4), dtype=dtype)
    assert a.dtype == dtype
    assert ctypes.string_at(a.data_ptr, a.nbytes) == bytes(a.nbytes)
    if dtype != "float8_e8m0fnu":  # e8m0 has no zero: all-zero bits are 2**-127
        assert a.tolist() == np.zeros((3, 4), dtype=bool if dtype == "bool" else "float64").tolist()


def test_zeros_e8m0_bits_are_smallest_value():
    assert dlbridge.zeros(2, dtype="float8_e8m0fnu").tolist() == [2.0**-127] * 2


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros])
def test_creation_dtype_and_device_arguments(make):
    assert make(2, dtype="int8").dtype == "int8"
    assert make(2, dtype=np.float32).dtype == "float32"
    assert make(2, device="cpu").device == "cpu"
    assert make(2, device=Device("cpu")).device == "cpu"
    assert make(2, device=(1, 0)).device == "cpu"


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros,
                                  lambda shape, **kw: dlbridge.full(shape, 1.0, **kw)])
@pytest.mark.parametrize("shape", [-1, (2, -1), (-3, 0)])
def test_negative_extents_raise_value_error(make, shape):
    with pytest.raises(ValueError, match="negative"):
        make(shape)


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros,
                                  lambda shape, **kw: dlbridge.full(shape, 1.0, **kw)])
def test_too_many_dimensions_raise_value_error(make):
    assert make((1,) * 64).ndim == 64
    with pytest.raises(ValueError, match="64"):
        make((1,) * 65)


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros,
                                  lambda shape, **kw: dlbridge.full(shape, 1.0, **kw)])
@pytest.mark.parametrize("device", [(4, 0), Device("rocm", 0), "vulkan"])
def test_device_dlbridge_cannot_allocate_on_raises_value_error(make, device):
    with pytest.raises(ValueError, match="dlbridge cannot allocate memory on"):
        make(3, device=device)


@pytest.mark.parametrize("shape", [2.0, (2.0,), "ab", (2, None)])
def test_bad_shape_raises_type_error(shape):
    with pytest.raises(TypeError, match="shape"):
        dlbridge.zeros(shape)


def test_huge_shape_raises_value_error():
    with pytest.raises(ValueError, match=exactly("zeros: shape (9223372036854775808,) of float64 is too big: "
                                                 "73786976294838206464 bytes do not fit in int64")):
        dlbridge.zeros(2**63)
    with pytest.raises(ValueError, match=exactly("zeros: shape (4611686018427387904, 4) of float64 is too big: "
                                                 "147573952589676412928 bytes do not fit in int64")):
        dlbridge.zeros((2**62, 4))


@pytest.mark.parametrize("value, dtype", [(True, "bool"), (False, "bool"), (1, "int64"), (-5, "int64"),
                                          (2**63 - 1, "int64"), (2**63, "uint64"), (2**64 - 1, "uint64"),
                                          (1.5, "float64"), (1j, "complex128"), (1 + 0j, "complex128")])
def test_full_infers_dtype(value, dtype):
    a = dlbridge.full((2, 3), value)
    assert a.dtype == dtype
    assert a.tolist() == np.full((2, 3), value, dtype=dtype).tolist()


@pytest.mark.parametrize("value, dtype", [(np.float32(1.5), "float32"), (np.int8(-3), "int8"),
                                          (np.uint16(7), "uint16"), (np.bool_(True), "bool"),
                                          (np.complex64(1 + 2j), "complex64")], ids=repr)
def test_full_with_numpy_scalars(value, dtype):
    a = dlbridge.full(3, value)
    assert a.dtype == dtype
    assert a.tolist() == np.full(3, value).tolist()


@pytest.mark.parametrize("value, dtype", [(1.5, "float32"), (7, "float64"), (-1, "int8"), (255, "uint8"),
                                          (True, "int32"), (3, "complex64"), (2.5 - 1j, "complex64"),
                                          (1e300, "float32"), (0.1, "float16"), (2, "bool"),
                                          (-(2**63), "int64"), (2**64 - 1, "uint64")])
def test_full_with_dtype(value, dtype):
    a = dlbridge.full(4, value, dtype=dtype)
    assert a.dtype == dtype
    with np.errstate(over="ignore"):
        assert a.tolist() == np.full(4, value, dtype=dtype).tolist()


@pytest.mark.parametrize("value, dtype", [(300, "uint8"), (-1, "uint8"), (128, "int8"), (-129, "int8"),
                                          (2**63, "int64"), (-1, "uint64"), (2**32, "uint32"),
                                          (np.int64(-5), "uint8")], ids=repr)
def test_full_int_out_of_range_raises_overflow_error(value, dtype):
    with pytest.raises(OverflowError, match=dtype):
        dlbridge.full(3, value, dtype=dtype)


def test_full_int_beyond_64_bits_raises_overflow_error():
    with pytest.raises(OverflowError, match=exactly("Python int 18446744073709551616 does not fit in 64 bits")):
        dlbridge.full(3, 2**64)
    with pytest.raises(OverflowError, match=exactly("Python int -9223372036854775809 does not fit in 64 bits")):
        dlbridge.full(3, -(2**63) - 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool", "bfloat16", "float4_e2m1fn"])
def test_full_complex_into_real_raises_type_error(dtype):
    with pytest.raises(TypeError, match="complex"):
        dlbridge.full(3, 1 + 2j, dtype=dtype)


@pytest.mark.parametrize("value", ["a", None, [1], b"x"])
def test_full_non_scalar_raises_type_error(value):
    with pytest.raises(TypeError, match=exactly("expected a Python scalar (bool, int, float or complex), "
                                                f"got {type(value).__name__}")):
        dlbridge.full(3, value)


@pytest.mark.parametrize("shape", [0, 1, 2, 3, 7, 8, 9, (3, 5), (2, 2, 3)])
@pytest.mark.parametrize("name, value", [("float4_e2m1fn", 1.5), ("float4_e2m1fn", -6.0),
                                         ("float6_e2m3fn", -3.0), ("float6_e3m2fn", 28.0)])
def test_full_packed(shape, name, value):
    a = dlbridge.full(shape, value, dtype=name)
    assert a.dtype == name
    assert a.tolist() == np.full(shape, value).tolist()
    bits = a.dtype.bits
    assert a.nbytes == (a.size * bits + 7) // 8


def test_full_packed_bit_layout():
    a = dlbridge.full(7, 1.5, dtype="float4_e2m1fn")  # 1.5 is code 0b0011
    assert ctypes.string_at(a.data_ptr, a.nbytes) == bytes([0x33, 0x33, 0x33, 0x03])
    b = dlbridge.full(3, 0.125, dtype="float6_e2m3fn")  # 0.125 is code 1 (smallest subnormal)
    assert ctypes.string_at(b.data_ptr, b.nbytes) == bytes([0b01000001, 0b00010000, 0b00000000])


@pytest.mark.parametrize("shape", [0, 1, 5, (3, 3), (2, 9)])
@pytest.mark.parametrize("name", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"])
def test_zeros_packed(shape, name):
    a = dlbridge.zeros(shape, dtype=name)
    assert a.tolist() == np.zeros(shape).tolist()
    assert ctypes.string_at(a.data_ptr, a.nbytes) == bytes(a.nbytes)


def test_full_0d():
    a = dlbridge.full((), 2.0, dtype="float4_e2m1fn")
    assert a.shape == () and a.tolist() == 2.0
    assert dlbridge.full((), 5).tolist() == 5


def test_empty_is_writable_and_fresh():
    a, b = dlbridge.empty(4), dlbridge.empty(4)
    assert a.data_ptr != b.data_ptr
    np.asarray(a)[:] = 1.0
    assert a.tolist() == [1.0] * 4


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (6,), (2, 3), (3, 1, 2)])
def test_item_reads_what_numpy_item_reads(shape):
    n = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)[..., ::-1] if shape else np.array(7.5)
    a = dlbridge.asarray(n)
    size = n.size
    calls = [()] if size == 1 else []
    calls += [(i,) for i in range(-size, size)]
    calls += [tuple(i) for i in np.ndindex(shape)] + [(tuple(i),) for i in np.ndindex(shape)]
    for args in calls:
        got, want = a.item(*args), n.item(*args)
        assert got == want and type(got) is type(want), (args, got, want)


@pytest.mark.parametrize("dtype, value", [("bool", True), ("int8", -3), ("uint64", 2**64 - 1), ("float32", 0.5),
                                          ("complex128", 1 - 2j)])
def test_item_returns_the_python_scalar_of_the_dtype(dtype, value):
    got = dlbridge.asarray(np.array([value], dtype=dtype)).item()
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("shape, args, error, message", [
    ((2, 3), (), ValueError, "item(): only an array of size 1 has an item without an index, got shape (2, 3)"),
    ((0, 3), (), ValueError, "item(): only an array of size 1 has an item without an index, got shape (0, 3)"),
    ((2, 3), (6,), IndexError, "item(): index 6 is out of bounds for size 6"),
    ((2, 3), (-7,), IndexError, "item(): index -7 is out of bounds for size 6"),
    ((2, 3), (2, 0), IndexError, "index 2 is out of bounds for axis 0 with size 2"),
    ((2, 3), (1, 2, 0), ValueError, "item(): expected no index, one flat index or 2 indices (one per axis), got 3"),
    ((2, 3), (1.0,), TypeError, "'float' object cannot be interpreted as an integer"),
    ((2, 3), (True,), TypeError, "item(): indices must be integers, got True"),
])
def test_item_refuses_what_numpy_item_refuses(shape, args, error, message):
    with pytest.raises(error, match=exactly(message)):
        dlbridge.zeros(shape).item(*args)
    with pytest.raises(error):
        np.zeros(shape).item(*args)


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros, lambda s: dlbridge.full(s, 1.0)],
                         ids=["empty", "zeros", "full"])
def test_extent_beyond_int64_message(make):
    with pytest.raises(ValueError, match=r": shape \(9223372036854775808,\) of float64 is too big: \d+ bytes do not fit in int64$"):
        make(2**63)


@pytest.mark.parametrize("shape, dtype", [((2**62, 4), "float64"), (2**61, "float64"), (2**60, "complex128")])
def test_size_overflow_is_value_error(shape, dtype):
    # Checked before allocating, so the message names the shape and dtype.
    with pytest.raises(ValueError, match=r"zeros: shape .* is too big: \d+ bytes do not fit in int64$"):
        dlbridge.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("make, name", [(dlbridge.empty, "empty"), (dlbridge.zeros, "zeros"),
                                        (lambda s, dtype: dlbridge.full(s, 1, dtype=dtype), "full")],
                         ids=["empty", "zeros", "full"])
def test_allocation_failure_is_memory_error(make, name):
    # 2**62 bytes fit in int64 but not in any address space: std::bad_alloc.
    with pytest.raises(MemoryError, match=exactly(f"{name}: cannot allocate 4611686018427387904 bytes "
                                                  "for shape (4611686018427387904,) of int8")):
        make(2**62, dtype="int8")


def test_allocation_failure_names_the_size():
    with pytest.raises(MemoryError, match=exactly(
            "empty: cannot allocate 4611686018427387904 bytes for shape (4611686018427387904,) of int8")):
        dlbridge.empty(2**62, dtype="int8")
