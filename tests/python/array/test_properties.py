"""Property tests: random layouts round-tripped between dlbridge, NumPy and PyTorch.

Hypothesis draws a dtype, a shape (0 to 4 axes, extents 0 to 4), element
strides (negative, zero, and anything at all on size-1 axes), an offset of the
first element into its buffer, and whether the data is read-only. Each
property checks values, that the exchange shares memory wherever it promises
to (same address, same strides), and that read-only data stays read-only.

The runs are derandomized, so CI sees the same examples every time.
"""
import ctypes
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlbridge
from dlbridge.testing._abi import ManagedTensor, Producer
from peers import numpy_from_dlpack_writable
from exporters import HostInterface

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

EXAMPLES = settings(max_examples=300, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
DLPACK_CODES = {"bool": 6, "int": 0, "uint": 1, "float": 2, "complex": 5}


@dataclass
class Layout:
    dtype: str
    shape: tuple
    strides: tuple      # in elements
    first: int          # index of the first element in the buffer
    length: int         # buffer length in elements
    readonly: bool

@st.composite
def layouts(draw, readonly=st.booleans(), min_extent=0, min_stride=-6):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(min_extent, 4), min_size=ndim, max_size=ndim)))
    # Size-1 axes may carry any stride at all: nothing is ever stepped over.
    strides = tuple(draw(st.integers(min(min_stride, 0) * 10**6, 10**6) if e == 1 else st.integers(min_stride, 6))
                    for e in shape)
    reach = [(e - 1) * s for e, s in zip(shape, strides) if e > 1]
    low = -sum(r for r in reach if r < 0)       # elements below the first one
    high = sum(r for r in reach if r > 0)       # and above it
    first = low + draw(st.integers(0, 3))       # some slack before, so the offset varies
    length = first + high + 1 + draw(st.integers(0, 3))
    return Layout(dtype, shape, strides, first, length, draw(readonly))


def buffer(layout):
    """A buffer of distinct, exactly representable values."""
    n = np.arange(layout.length)
    if layout.dtype == "bool":
        return (n % 3 == 1)
    values = ((n * 7 + 3) % 101).astype(layout.dtype)
    if layout.dtype.startswith("complex"):
        values = values + 1j * n.astype(layout.dtype)
    return values


def numpy_view(layout, base=None):
    base = buffer(layout) if base is None else base
    itemsize = base.itemsize
    view = np.lib.stride_tricks.as_strided(base[layout.first:], layout.shape,
                                           tuple(s * itemsize for s in layout.strides))
    if layout.readonly:
        view.flags.writeable = False
    return view


def element_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def moving_strides(shape, strides):
    """The strides of axes that are stepped over (extent > 1): the ones that
    say where the elements are."""
    return tuple(s for e, s in zip(shape, strides) if e > 1)


def assert_same_memory(x, shape, strides, address, size):
    """dlbridge array `x` describes the elements at `address` with this layout."""
    assert x.shape == shape
    if size:
        assert x.data_ptr == address
        assert moving_strides(x.shape, x.strides) == moving_strides(shape, strides)


def as_python(a):
    return a.tolist() if isinstance(a, (np.ndarray, torch.Tensor, dlbridge.Array)) else a


# -- NumPy <-> dlbridge --------------------------------------------------------------


@EXAMPLES
@given(layouts())
def test_numpy_round_trip_shares_memory_and_keeps_read_only(layout):
    view = numpy_view(layout)
    x = dlbridge.from_dlpack(view)
    assert x.dtype == layout.dtype and x.readonly is layout.readonly
    assert_same_memory(x, view.shape, element_strides(view), view.ctypes.data, view.size)
    assert x.tolist() == view.tolist()

    back = np.from_dlpack(x)
    assert back.dtype == view.dtype and back.shape == view.shape
    if view.size:  # (NumPy makes empty arrays of its own for a NULL data pointer)
        assert back.flags.writeable is numpy_from_dlpack_writable(not layout.readonly, view.size)
        assert back.ctypes.data == view.ctypes.data
        assert moving_strides(back.shape, element_strides(back)) == moving_strides(view.shape, layout.strides)
    assert back.tolist() == view.tolist()

    again = dlbridge.from_dlpack(back)
    assert again.readonly is not back.flags.writeable
    assert_same_memory(again, x.shape, x.strides, x.data_ptr, x.size)

    # The array interface shares too, both ways, and says read-only alike.
    assert np.asarray(x).flags.writeable is not layout.readonly or not view.size
    via_interface = dlbridge.asarray(HostInterface(view, **view.__array_interface__))
    assert via_interface.readonly is layout.readonly
    assert_same_memory(via_interface, x.shape, x.strides, x.data_ptr, x.size)


@EXAMPLES
@given(layouts(readonly=st.just(False), min_extent=1))
def test_writes_through_any_route_are_seen_by_all(layout):
    base = buffer(layout)
    view = numpy_view(layout, base)
    x = dlbridge.from_dlpack(view)
    n = np.from_dlpack(x)
    assert n.flags.writeable is numpy_from_dlpack_writable(True, n.size)
    if not n.flags.writeable:  # NumPy < 2.2: write through dlbridge's array interface instead
        n = np.asarray(x)
    last = (-1,) * len(layout.shape)
    new = (not n[last]) if layout.dtype == "bool" else n[last] + 1
    n[last] = new
    assert n[last] == new and view[last] == new
    assert x[last].tolist() == n[last].item()


# -- PyTorch <-> dlbridge -------------------------------------------------------------


@EXAMPLES
@given(layouts(min_stride=0))
def test_torch_round_trip_shares_memory(layout):
    # PyTorch has no negative strides (and aborts on them): those layouts
    # cannot be made in PyTorch and are never handed to it.
    base = torch.from_dlpack(buffer(layout))
    t = torch.as_strided(base, layout.shape, layout.strides, layout.first)
    x = dlbridge.from_dlpack(t)
    assert x.readonly is False  # PyTorch tensors are writable
    assert_same_memory(x, tuple(t.shape), tuple(t.stride()), t.data_ptr(), t.numel())
    assert x.tolist() == t.tolist()

    back = torch.from_dlpack(x)
    assert back.dtype == t.dtype and back.shape == t.shape
    if t.numel():
        assert back.data_ptr() == t.data_ptr()
        assert moving_strides(tuple(back.shape), back.stride()) == moving_strides(tuple(t.shape), t.stride())
    assert back.tolist() == t.tolist()

    # On through NumPy and back into dlbridge: still the same memory.
    n = np.from_dlpack(x)
    assert_same_memory(dlbridge.from_dlpack(n), x.shape, x.strides, x.data_ptr, x.size)
    assert n.tolist() == t.tolist()


@EXAMPLES
@given(layouts(min_stride=0))
def test_numpy_to_dlbridge_to_torch_shares_memory(layout):
    view = numpy_view(layout)
    x = dlbridge.from_dlpack(view)
    t = torch.from_dlpack(x)
    if view.size:
        assert t.data_ptr() == view.ctypes.data
        assert moving_strides(tuple(t.shape), t.stride()) == moving_strides(view.shape, layout.strides)
    assert t.tolist() == view.tolist()


# -- hand-built capsules: byte_offset, NULL strides, legacy, READ_ONLY --------------------


def hand_built(layout, base, byte_offset_elements, versioned, c_order):
    """A DLPack tensor over a copy of `base`'s bytes, whose data pointer sits
    `byte_offset_elements` before the first element and whose byte_offset
    makes up the difference."""
    itemsize = base.itemsize
    raw = base.view(np.uint8)
    kind = layout.dtype.rstrip("0123456789")
    code = DLPACK_CODES[kind]
    bits = 8 if layout.dtype == "bool" else itemsize * 8
    start = layout.first - byte_offset_elements
    managed = ManagedTensor(raw.tolist(), ctype=ctypes.c_uint8, dtype=(code, bits, 1), shape=layout.shape,
                            strides=None if c_order else layout.strides,
                            byte_offset=byte_offset_elements * itemsize, versioned=versioned,
                            flags=1 if (versioned and layout.readonly) else 0)
    managed.struct.dl_tensor.data = managed.data_address + start * itemsize
    return managed


@st.composite
def hand_built_cases(draw):
    layout = draw(layouts())
    c_order = draw(st.booleans())
    if c_order:  # NULL strides: the elements are the first size ones, in C order
        size = int(np.prod(layout.shape))
        layout.strides = tuple(int(s) for s in np.cumprod((1,) + layout.shape[:0:-1])[::-1]) if layout.shape else ()
        layout.length = layout.first + max(size, 1) + draw(st.integers(0, 3))
    return layout, draw(st.integers(0, layout.first)), draw(st.booleans()), c_order


@EXAMPLES
@given(hand_built_cases())
def test_hand_built_capsules_are_read_where_they_point_and_released_once(case):
    layout, offset_elements, versioned, c_order = case
    base = buffer(layout)
    expected = numpy_view(layout, base)
    managed = hand_built(layout, base, offset_elements, versioned, c_order)
    x = dlbridge.from_dlpack(Producer(managed))
    itemsize = base.itemsize
    address = managed.data_address + layout.first * itemsize
    assert_same_memory(x, layout.shape, layout.strides, address, expected.size)
    assert x.tolist() == expected.tolist()
    # Legacy capsules cannot say whether writes are allowed: read-only.
    assert x.readonly is (layout.readonly or not versioned)
    n = np.from_dlpack(x)
    assert n.flags.writeable is numpy_from_dlpack_writable(not x.readonly, n.size) or not n.size
    assert n.tolist() == expected.tolist()
    assert managed.deleter_calls == 0
    del x, n  # the last references: released at once, no garbage collection needed
    assert managed.deleter_calls == 1


# -- copies and views -----------------------------------------------------------------------


@EXAMPLES
@given(layouts())
def test_copies_are_writable_c_contiguous_and_separate(layout):
    view = numpy_view(layout)
    x = dlbridge.from_dlpack(view)
    copies = [x.copy(), dlbridge.from_dlpack(x, copy=True), dlbridge.asarray(x, copy=True)]
    numpy_copy = dlbridge.from_dlpack(np.from_dlpack(x, copy=True))
    assert numpy_copy.readonly is not numpy_from_dlpack_writable(True, x.size)  # read-only before NumPy 2.2
    for c in copies + [numpy_copy]:
        assert c.shape == x.shape and c.tolist() == view.tolist()
        assert c is numpy_copy or c.readonly is False
        assert np.from_dlpack(c).flags.c_contiguous
        if x.size:
            assert c.data_ptr != x.data_ptr
    shared = dlbridge.from_dlpack(x, copy=False)
    assert shared.readonly is layout.readonly
    assert_same_memory(shared, x.shape, x.strides, x.data_ptr, x.size)


def _index_item(draw, extent):
    if extent and draw(st.booleans()):
        return draw(st.integers(-extent, extent - 1))
    bound = st.none() | st.integers(-extent - 2, extent + 2)
    step = st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])
    return slice(draw(bound), draw(bound), draw(step))


def _index_key(draw, shape):
    """Items for some leading axes, maybe an Ellipsis and items for some
    trailing axes, and up to two new axes (None) anywhere."""
    lead = draw(st.integers(0, len(shape)))
    key = [_index_item(draw, e) for e in shape[:lead]]
    if draw(st.booleans()):
        trail = draw(st.integers(0, len(shape) - lead))
        key += [Ellipsis] + [_index_item(draw, e) for e in shape[len(shape) - trail:]]
    for _ in range(draw(st.integers(0, 2))):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


@st.composite
def indexed_layouts(draw):
    layout = draw(layouts())
    return layout, _index_key(draw, layout.shape), draw(st.permutations(range(len(layout.shape))))


@EXAMPLES
@given(indexed_layouts())
def test_views_match_numpy_views(case):
    layout, key, axes = case
    view = numpy_view(layout)
    x = dlbridge.from_dlpack(view)
    # A trailing Ellipsis makes NumPy return a 0-d array, never a scalar.
    full_key = key if Ellipsis in key else key + (Ellipsis,)
    for got, want in ((x[key], view[full_key]), (x.transpose(axes), view.transpose(axes)),
                      (x[key].T, view[full_key].T)):
        assert got.readonly is layout.readonly
        assert_same_memory(got, want.shape, element_strides(want), want.ctypes.data, want.size)
        assert got.tolist() == want.tolist()
        # and the view exchanges like any array
        assert np.from_dlpack(got).tolist() == want.tolist()


# -- refusals keep their promises -------------------------------------------------------------


@EXAMPLES
@given(layouts(readonly=st.just(True)))
def test_read_only_data_is_never_handed_out_writable(layout):
    x = dlbridge.from_dlpack(numpy_view(layout))
    with pytest.raises(BufferError, match="read-only"):
        x.__dlpack__()  # a legacy capsule cannot say read-only
    assert memoryview(x).readonly
    derived = [x[...], x.T, dlbridge.from_dlpack(x), dlbridge.asarray(x), dlbridge.asarray(memoryview(x))]
    if x.size:  # (NumPy makes empty arrays of its own for a NULL data pointer)
        derived.append(dlbridge.from_dlpack(np.from_dlpack(x)))
    for derived in derived:
        assert derived.readonly is True
    assert x.copy().readonly is False
