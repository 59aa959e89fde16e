"""Sizes at and past dlbridge's limits, on every route a foreign array comes in by.

Each limit (ndim above 64, negative extents, element counts and byte sizes
past int64, byte offsets past int64, strided spans and byte offsets past the
address space) is a clear exception naming what was received, whether the
array arrives as a versioned or legacy DLPack capsule, an
`__array_interface__`, a `__cuda_array_interface__` or a buffer; the value just
inside each limit is accepted. Arrays that pass point at memory nobody may
read (addresses near 2**64, extents near 2**63 with zero strides), so these
tests only look at their shapes and never at their elements.
"""
import ctypes
import gc
import re

import numpy as np
import pytest

import dlbridge
from dlbridge.testing._abi import ManagedTensor, Producer, capsule_name
from exporters import CudaInterface, HostInterface, RawBuffer
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again

INT64_MAX = 2**63 - 1
INT8 = (0, 8, 1)
FLOAT64 = (2, 64, 1)
TOP = 2**64  # one past the last address


class Route:
    """One way into dlbridge. `make` builds the incoming object from a DLPack
    description (element strides, or None for C order); `importer` brings it in."""

    def __init__(self, name, make, importer):
        self.name, self.make, self.importer = name, make, importer

    def __repr__(self):
        return self.name


def _capsule(versioned):
    def make(shape, strides=None, dtype=FLOAT64, data=None, byte_offset=0):
        ctype = ctypes.c_int8 if dtype == INT8 else ctypes.c_double
        kwargs = {} if data is None else {"data": data}
        return Producer(ManagedTensor([0] * 8, shape=shape, strides=strides, dtype=dtype, ctype=ctype,
                                      byte_offset=byte_offset, versioned=versioned, **kwargs))
    return make


_owner = np.zeros(8)  # memory every interface points at unless told otherwise


def _interface(kind):
    def make(shape, strides=None, dtype=FLOAT64, data=None, byte_offset=0):
        itemsize, typestr = (1, "|i1") if dtype == INT8 else (8, "<f8")
        pointer = (_owner.ctypes.data if data is None else data) + byte_offset
        byte_strides = None if strides is None else tuple(s * itemsize for s in strides)
        if kind == "cuda":
            return CudaInterface(_owner, shape=shape, typestr=typestr, strides=byte_strides, data=(pointer, False))
        return HostInterface(_owner, shape=shape, typestr=typestr, strides=byte_strides, data=(pointer, False))
    return make


def _buffer(shape, strides=None, dtype=FLOAT64, data=None, byte_offset=0):
    # RawBuffer exports float64 over its own memory, with byte strides.
    assert dtype == FLOAT64 and data is None and byte_offset == 0
    if strides is None:
        strides, step = [], 8
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= max(extent, 1)
        return RawBuffer(shape, tuple(strides))
    return RawBuffer(shape, tuple(8 * s for s in strides))


CAPSULES = [Route("versioned capsule", _capsule(True), dlbridge.from_dlpack),
            Route("legacy capsule", _capsule(False), dlbridge.from_dlpack)]
INTERFACES = [Route("__array_interface__", _interface("host"), dlbridge.asarray),
              Route("__cuda_array_interface__", _interface("cuda"), dlbridge.asarray)]
BUFFER = [Route("buffer", _buffer, dlbridge.asarray)]
POINTER_ROUTES = CAPSULES + INTERFACES  # where the test chooses the data address
ALL_ROUTES = POINTER_ROUTES + BUFFER


def refused(route, message, **description):
    """Imports the description and expects BufferError with exactly `message`;
    a refused capsule has had its deleter called exactly once."""
    incoming = route.make(**description)
    with pytest.raises(BufferError, match=exactly(message)) as info:
        route.importer(incoming)
    assert str(info.value) == message
    if isinstance(incoming, Producer):
        assert capsule_name(incoming.capsule).startswith(b"used_")
        managed = incoming.managed
        del incoming, info
        gc.collect()
        assert managed.deleter_calls == 1


def accepted(route, **description):
    """Imports the description and returns (shape, strides, size, nbytes); the
    array is dropped at once and, for a capsule, released exactly once."""
    incoming = route.make(**description)
    a = route.importer(incoming)
    result = (a.shape, a.strides, a.size, a.nbytes)
    if isinstance(incoming, Producer):
        managed = incoming.managed
        del a, incoming
        gc.collect()
        assert managed.deleter_calls == 1
    return result


# -- ndim ----------------------------------------------------------------------------


@pytest.mark.parametrize("route", ALL_ROUTES, ids=repr)
def test_64_axes_are_accepted(route):
    shape, strides, size, nbytes = accepted(route, shape=(1,) * 64)
    assert shape == (1,) * 64 and size == 1 and nbytes == 8


@pytest.mark.parametrize("route", ALL_ROUTES, ids=repr)
def test_65_axes_are_refused(route):
    refused(route, "invalid tensor: ndim: expected ndim <= 64, got 65", shape=(1,) * 65)


@pytest.mark.parametrize("ndim", [-1, -2**31])
def test_a_buffer_with_a_negative_ndim_is_refused_naming_it(ndim):
    message = f"invalid tensor: ndim: expected ndim <= 64, got {ndim}"
    with pytest.raises(BufferError, match=exactly(message)) as info:
        dlbridge.asarray(RawBuffer((1,), (8,), ndim=ndim))
    assert str(info.value) == message


def test_64_axes_round_trip_through_numpy_and_back():
    a = dlbridge.zeros((1,) * 63 + (3,))
    n = np.from_dlpack(a)
    assert n.ndim == 64 and n.ctypes.data == a.data_ptr
    assert dlbridge.from_dlpack(n).shape == a.shape


@pytest.mark.parametrize("which", ["cuda", "host"])
def test_array_interface_with_more_than_64_axes(which):
    owner = np.zeros(1)
    if which == "cuda":
        obj = CudaInterface(owner, shape=(1,) * 70)
    else:
        obj = HostInterface(owner, shape=(1,) * 70)
    with pytest.raises(BufferError, match=exactly("invalid tensor: ndim: expected ndim <= 64, got 70")):
        dlbridge.asarray(obj)


def test_buffer_with_more_than_64_axes():
    with pytest.raises(BufferError, match=exactly("invalid tensor: ndim: expected ndim <= 64, got 70")):
        dlbridge.asarray(RawBuffer((1,) * 70, (8,) * 70))


@pytest.mark.parametrize("shape, key, ndim", [((1,) * 64, None, 65), ((1,) * 63, (None, None, None), 66),
                                              ((1,) * 64, (Ellipsis, None), 65)], ids=["64+1", "63+3", "ellipsis"])
def test_index_result_with_more_than_64_axes(shape, key, ndim):
    with pytest.raises(IndexError, match=exactly(f"the result would have {ndim} axes; at most 64 are allowed")):
        dlbridge.zeros(shape)[key]


# -- negative extents -----------------------------------------------------------------


@pytest.mark.parametrize("route", ALL_ROUTES, ids=repr)
def test_a_negative_extent_is_refused_naming_the_axis(route):
    refused(route, "invalid tensor: shape: axis 2: expected extent >= 0, got extent -1", shape=(2, 2, -1))


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_a_negative_extent_is_refused_even_beside_an_empty_axis(route):
    # An empty axis skips the data and strides checks, never the shape check.
    refused(route, f"invalid tensor: shape: axis 1: expected extent >= 0, got extent {-2**63}",
            shape=(0, -2**63), data=0)


# -- element counts and byte sizes ------------------------------------------------------

OVERFLOWING_SIZE = "invalid tensor: shape: expected a byte size that fits in int64, got an overflowing element count"


@pytest.mark.parametrize("shape", [(2**32, 2**31), (2**62, 2), (INT64_MAX, INT64_MAX), (3, 5, 7, 2**60)],
                         ids=["2**63", "2**63 again", "(2**63-1)**2", "105 * 2**60"])
@pytest.mark.parametrize("route", ALL_ROUTES, ids=repr)
def test_an_element_count_past_int64_is_refused(route, shape):
    # Zero strides keep the span to one element: only the count overflows.
    refused(route, OVERFLOWING_SIZE, shape=shape, strides=(0,) * len(shape))


@pytest.mark.parametrize("route", ALL_ROUTES, ids=repr)
def test_a_byte_size_past_int64_is_refused_though_the_count_fits(route):
    # 2**60 float64 elements are 2**63 bytes.
    refused(route, OVERFLOWING_SIZE, shape=(2**60,), strides=(0,))


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_a_byte_size_of_exactly_int64_max_is_accepted(route):
    shape, strides, size, nbytes = accepted(route, shape=(INT64_MAX,), strides=(0,), dtype=INT8)
    assert (shape, strides, size, nbytes) == ((INT64_MAX,), (0,), INT64_MAX, INT64_MAX)


# 7 * 1317624576693539401 is 2**63 - 1: the widest C-order stride there is.
WIDEST = (0, 7, 1317624576693539401)


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_an_empty_array_whose_c_order_strides_just_fit_is_accepted(route):
    # No element, so no data pointer is needed; but empty arrays still get
    # C-order strides (NULL strides, exports), so those must fit in int64.
    shape, strides, size, nbytes = accepted(route, shape=WIDEST, dtype=INT8, data=0)
    assert (shape, strides, size, nbytes) == (WIDEST, (INT64_MAX, WIDEST[2], 1), 0, 0)
    assert dlbridge.empty(WIDEST, dtype="int8").strides == (INT64_MAX, WIDEST[2], 1)


@pytest.mark.parametrize("shape, dtype", [((0, 3, 2**62 + 1), INT8), (WIDEST, FLOAT64), ((INT64_MAX, 0, 2), INT8)],
                         ids=["elements", "bytes", "empty axis first"])
@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_an_empty_array_whose_c_order_strides_overflow_is_refused(route, shape, dtype):
    # The shape alone decides, whatever strides come with it (np.empty and
    # torch.empty refuse such shapes too).
    for strides in (None, (1,) * len(shape)):
        refused(route, f"invalid tensor: shape: expected C-order strides that fit in int64 (empty axes counted "
                       f"as extent 1), got extents ({', '.join(map(str, shape))})",
                shape=shape, strides=strides, dtype=dtype, data=0)


@pytest.mark.parametrize("make", [dlbridge.empty, dlbridge.zeros, lambda shape, dtype: dlbridge.full(shape, 1,
                                                                                                     dtype=dtype)],
                         ids=["empty", "zeros", "full"])
@pytest.mark.parametrize("shape, dtype", [((0, 3, 2**62 + 1), "int8"), (WIDEST, "float64")], ids=["elements", "bytes"])
def test_creating_an_empty_array_whose_c_order_strides_overflow_is_refused(make, shape, dtype):
    # tensor::empty used to wrap them: (0, 3, 2**62 + 1) had strides
    # (-4611686018427387901, 4611686018427387905, 1).
    name = {dlbridge.empty: "empty", dlbridge.zeros: "zeros"}.get(make, "full")
    message = (f"{name}: shape {shape} of {dtype} is too big: its C-order strides do not fit in int64 "
               f"(empty axes counted as extent 1)")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        make(shape, dtype=dtype)


@pytest.mark.parametrize("shape", [(0, 2**64), (2**63, 0), (0, 2**63)])
def test_an_empty_shape_with_an_extent_past_int64_is_refused_not_clamped(shape):
    # Such extents used to be clamped to 2**63 - 1: zeros((0, 2**64), dtype=bool)
    # gave an array of shape (0, 9223372036854775807).
    message = (f"zeros: shape {shape} of bool is too big: its C-order strides do not fit in int64 "
               f"(empty axes counted as extent 1)")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        dlbridge.zeros(shape, dtype="bool")


def test_operations_on_a_huge_zero_strided_array_do_not_read_past_its_element():
    # 2**62 elements over one byte: views, exports and refusals, never a crash.
    values = np.array([7], dtype=np.int8)
    big = np.lib.stride_tricks.as_strided(values, shape=(2**31, 2**31), strides=(0, 0))
    a = dlbridge.from_dlpack(big)
    assert (a.size, a.nbytes, a.strides) == (2**62, 2**62, (0, 0))
    assert a[2**31 - 1, ::-1].shape == (2**31,) and int(a[5, 9]) == 7
    assert a.T[::3, None].shape == (715827883, 1, 2**31)
    n = np.from_dlpack(a)
    assert n.ctypes.data == values.ctypes.data and n.strides == (0, 0)
    # Copies need 2**62 bytes: that fits in int64, but not in memory.
    for copy in (a.copy, lambda: dlbridge.from_dlpack(a, copy=True),
                 lambda: a.__dlpack__(max_version=(1, 3), copy=True)):
        # std::bad_alloc from the copy becomes a bare MemoryError (PyErr_NoMemory): no message.
        with pytest.raises(MemoryError, match="^$"):
            copy()
    # As int16 they would need 2**63 bytes, past int64.
    with pytest.raises(ValueError, match="^array size overflows int64$"):
        dlbridge.asarray(a, dtype="int16")


def test_interface_extent_beyond_int64_names_the_axis():
    owner = np.zeros(3, dtype=np.float32)
    with pytest.raises(BufferError, match=exactly(
            "__cuda_array_interface__: axis 0: expected an extent that fits in int64, got 9223372036854775808")):
        dlbridge.asarray(CudaInterface(owner, shape=(2**63, 1)))


# -- strides whose byte offsets overflow int64 -----------------------------------------------

OVERFLOWING_STRIDE = "invalid tensor: strides: expected byte offsets that fit in int64, got an overflowing stride"


@pytest.mark.parametrize("route", CAPSULES, ids=repr)
def test_a_stride_past_int64_in_bytes_is_refused(route):
    # 2**60 float64 elements are 2**63 bytes. (The interfaces give byte
    # strides, and refuse one past int64 before this: entries 43b and 52a.)
    refused(route, OVERFLOWING_STRIDE, shape=(2,), strides=(2**60,))


@pytest.mark.parametrize("shape, strides", [
    ((3,), (2**59,)),                 # one step is 2**62 bytes, two are 2**63
    ((2, 2), (2**59, 2**59)),         # each axis reaches 2**62 bytes, both 2**63 + 8
    ((2, 2), (-2**59, -2**59 - 1)),   # down by 2**63 + 8 bytes
], ids=["reach", "sum", "negative sum"])
@pytest.mark.parametrize("route", ALL_ROUTES, ids=repr)
def test_strides_whose_byte_offsets_overflow_int64_are_refused(route, shape, strides):
    refused(route, OVERFLOWING_STRIDE, shape=shape, strides=strides)


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_a_span_of_exactly_int64_max_bytes_is_accepted(route):
    # The last element is 2**63 - 2 bytes above the first, so the span is
    # [0, 2**63 - 1). (The address is made up and never read.)
    shape, strides, _, _ = accepted(route, shape=(2, 2), strides=(2**62, 2**62 - 2), dtype=INT8, data=4096)
    assert (shape, strides) == ((2, 2), (2**62, 2**62 - 2))


def test_interface_stride_beyond_int64_names_the_axis():
    owner = np.zeros(3, dtype=np.float32)
    obj = HostInterface(owner, strides=(2**64,))
    with pytest.raises(BufferError, match=exactly(
            "__array_interface__: axis 0: expected a byte stride that fits in int64, got 18446744073709551616")):
        dlbridge.asarray(obj)


# -- the address space ------------------------------------------------------------------------


def _span_message(lo, hi, address):
    return (f"invalid tensor: strides: expected a strided span inside the address space, "
            f"got a span of [{lo}, {hi}) bytes around address {address}")


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_a_span_past_the_top_of_the_address_space_is_refused(route):
    # Three float64 at 2**64 - 16: the last one would lie past the top.
    refused(route, _span_message(0, 24, TOP - 16), shape=(3,), data=TOP - 16)


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_a_span_ending_below_the_top_of_the_address_space_is_accepted(route):
    shape, strides, _, _ = accepted(route, shape=(3,), data=TOP - 32)
    assert (shape, strides) == ((3,), (1,))


@pytest.mark.parametrize("route", POINTER_ROUTES, ids=repr)
def test_a_span_reaching_below_address_zero_is_refused(route):
    refused(route, _span_message(-24, 8, 16), shape=(4,), strides=(-1,), data=16)


@pytest.mark.parametrize("route", CAPSULES, ids=repr)
def test_a_byte_offset_whose_elements_run_past_the_address_space_is_refused(route):
    # data + byte_offset fits, but the elements after it do not.
    refused(route, _span_message(0, 16, TOP - 8), shape=(2,), data=8, byte_offset=TOP - 16)


@pytest.mark.parametrize("route", CAPSULES, ids=repr)
def test_a_byte_offset_that_wraps_the_address_space_is_refused(route):
    refused(route, f"invalid tensor: byte_offset: expected an address inside the address space, "
                   f"got byte_offset {TOP - 8}", shape=(2,), data=16, byte_offset=TOP - 8)


@pytest.mark.parametrize("route", CAPSULES, ids=repr)
def test_a_byte_offset_is_applied_once(route):
    # 16 bytes into the struct's own buffer: the third element.
    producer = route.make(shape=(2,), byte_offset=16)
    for i in range(4):
        ctypes.c_double.from_address(producer.managed.data_address + 8 * i).value = float(i)
    a = dlbridge.from_dlpack(producer)
    assert a.data_ptr == producer.managed.data_address + 16
    assert a.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("pointer", [-8, 2**64])
@pytest.mark.parametrize("kind", ["cuda", "host"])
def test_interface_data_pointer_out_of_range(kind, pointer):
    owner = np.zeros(3, dtype=np.float32)
    if kind == "cuda":
        obj, name = CudaInterface(owner, data=(pointer, False)), "__cuda_array_interface__"
    else:
        obj = HostInterface(owner, data=(pointer, False))
        name = "__array_interface__"
    with pytest.raises(BufferError, match=exactly(f"{name}: expected a data pointer in [0, 2**64), got {pointer}")):
        dlbridge.asarray(obj)


# -- views past the limits -----------------------------------------------------------------------


def test_a_view_that_would_exceed_64_axes_is_refused():
    a = dlbridge.zeros((1,) * 62)
    assert a[None, None].ndim == 64
    with pytest.raises(IndexError, match="65 axes; at most 64 are allowed"):
        a[None, None, None]


_KEY_ITEMS = [None, Ellipsis, slice(None), slice(None, None, -1), slice(1, None), 0, -1]


def _random_keys(rng, count):
    for _ in range(count):
        length = int(rng.choice([0, 1, 2, 3, 30, 62, 63, 64, 65, 66, 70, 130]))
        yield tuple(_KEY_ITEMS[i] for i in rng.integers(0, len(_KEY_ITEMS), length))


def _index_error(ndim, key):
    """dlbridge's IndexError for a key of None, Ellipsis, slices and in-range
    ints that NumPy refuses, worked out from the key alone."""
    key = key if isinstance(key, tuple) else (key,)
    indexed = sum(k is not None and k is not Ellipsis for k in key)
    ints = sum(isinstance(k, int) for k in key)
    if key.count(Ellipsis) > 1:
        return "an index can only have a single Ellipsis"
    if indexed > ndim:
        return f"too many indices: the array is {ndim}-dimensional, but {indexed} were indexed"
    return f"the result would have {ndim - ints + key.count(None)} axes; at most 64 are allowed"


@pytest.mark.parametrize("ndim", [0, 1, 2, 33, 62, 63, 64])
def test_every_key_form_stays_within_64_axes_as_numpy_does(ndim):
    # Every combination of None, Ellipsis, slices and ints, as tuples of any
    # length: the result has at most 64 axes or the key is an IndexError,
    # exactly where NumPy (which also allows 64) says so.
    rng = np.random.default_rng(ndim)
    shape = (2,) * min(ndim, 2) + (1,) * max(ndim - 2, 0)
    a, n = dlbridge.zeros(shape, dtype="int8"), np.zeros(shape, dtype=np.int8)
    keys = list(_random_keys(rng, 300)) + [None, Ellipsis, (None,) * 65, (Ellipsis,) + (None,) * (65 - ndim)]
    for key in keys:
        try:
            expected = n[key].shape
        except IndexError:
            with pytest.raises(IndexError, match=exactly(_index_error(ndim, key))):
                a[key]
            continue
        assert a[key].shape == expected, key


def test_reversing_a_stride_of_minus_2_to_the_63_names_the_stride():
    # int8 elements at 2**63 + 5 and 5 (made up, never read): the stride is
    # -2**63, and reversing the axis would need +2**63, which int64 cannot hold.
    producer = _capsule(True)(shape=(2,), strides=(-2**63,), dtype=INT8, data=2**63 + 5)
    a = dlbridge.from_dlpack(producer)
    assert a[1:].data_ptr == 5  # one step down by 2**63 bytes is fine
    with pytest.raises(ValueError, match=r"^slicing axis 0 with step -1 needs a stride of 9223372036854775808 elements, "
                                         r"which does not fit in int64$"):
        a[::-1]
