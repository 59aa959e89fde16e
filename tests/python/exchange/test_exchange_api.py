"""The DLPack 1.3 C exchange API.

dlbridge's table (type(Array).__dlpack_c_exchange_api__) is driven slot by
slot from C through ctypes: the table struct is read from the capsule, each
slot is called through a C function pointer, and what comes back is read
field by field with the independent ABI reading of dlbridge.testing._abi. Then
from_dlpack: it imports through a producer type's table when it has one (the
capsule, or the DLPack 1.2 int), falls back to __dlpack__ otherwise, and
takes real PyTorch tensors through PyTorch's own table.
"""
from __future__ import annotations

import ctypes
import gc
import re
import sys
import weakref
from ctypes import POINTER, PYFUNCTYPE, byref, c_int, c_int64, c_void_p

import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import (FLAG_READ_ONLY, INT32, SET_ERROR, SLOTS, DLDataType, DLDevice,
                                   DLManagedTensorVersioned, DLPackExchangeAPI, DLTensor, ManagedTensor, Table, _api,
                                   delete, exchange_capsule, shape_of, strides_of)
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again

NO_GPU = dlbridge.build_info()["gpu_count"] == 0

OURS = Table(dlbridge.Array.__dlpack_c_exchange_api__)


class Errors:
    """A SetError callback that records (kind, message)."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []
        self.callback = SET_ERROR(lambda ctx, kind, message: self.calls.append((kind.decode(), message.decode())))


def prototype(shape, dtype=(2, 32, 1), device=(1, 0), ndim=None):
    extents = (c_int64 * max(len(shape), 1))(*shape)
    t = DLTensor()
    t.device = DLDevice(*device)
    t.ndim = len(shape) if ndim is None else ndim
    t.dtype = DLDataType(*dtype)
    t.shape = ctypes.cast(extents, POINTER(c_int64)) if shape else None
    t._keep = extents  # the shape array lives as long as the prototype
    return t


def allocate(proto, errors: Errors | None = None, nogil=False):
    """(status, managed struct or None, errors) of one allocator call."""
    errors = errors or Errors()
    out = c_void_p(1)  # not NULL: the allocator must write NULL on failure
    call = OURS.allocate_nogil if nogil else OURS.allocate
    status = call(None if proto is None else byref(proto), byref(out), None, errors.callback)
    return status, (DLManagedTensorVersioned.from_address(out.value) if out.value else None), errors


# -- the published table --------------------------------------------------------


def test_the_table_is_a_dlpack_1_3_capsule_on_the_type_with_all_five_slots():
    capsule = dlbridge.Array.__dlpack_c_exchange_api__
    assert type(capsule).__name__ == "PyCapsule" and '"dlpack_exchange_api"' in repr(capsule)
    header = OURS.struct.header
    assert (header.version.major, header.version.minor) == (1, 3)
    assert not header.prev_api  # no older major version is offered
    for name in SLOTS:
        assert getattr(OURS.struct, name), name
    # Read on the type, the same table for every array; the DLPack 1.2 int
    # form is the same address.
    assert dlbridge.asarray([1.0]).__dlpack_c_exchange_api__ is capsule
    assert dlbridge.Array.__c_dlpack_exchange_api__ == OURS.address


# -- managed_tensor_allocator ------------------------------------------------------


@pytest.mark.parametrize("nogil", [False, True], ids=["with-gil", "without-gil"])
def test_allocator_makes_a_writable_c_contiguous_cpu_tensor(nogil):
    status, m, errors = allocate(prototype((2, 3), dtype=(2, 32, 1)), nogil=nogil)
    assert status == 0 and errors.calls == []
    assert (m.version.major, m.version.minor) == (1, 3)
    assert m.flags == 0
    t = m.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert shape_of(t) == (2, 3) and strides_of(t) == (3, 1) and t.byte_offset == 0
    assert t.data and t.data % 64 == 0
    # The memory is usable: write it from C, read it through an Array that
    # takes the tensor over (to-object).
    ctypes.memmove(t.data, (ctypes.c_float * 6)(*range(6)), 24)
    a = OURS.wrap(ctypes.addressof(m))
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and not a.readonly


def test_allocator_reads_only_dtype_ndim_shape_and_device():
    proto = prototype((4,), dtype=(0, 64, 1))
    proto.data = 12345  # not a pointer; ignored
    strides = (c_int64 * 1)(7)
    proto.strides = ctypes.cast(strides, POINTER(c_int64))  # ignored: C order
    proto.byte_offset = 3
    status, m, _ = allocate(proto)
    assert status == 0
    assert m.dl_tensor.data != 12345 and strides_of(m.dl_tensor) == (1,) and m.dl_tensor.byte_offset == 0
    delete(m)


def test_allocator_empty_and_zero_dimensional_tensors():
    status, m, _ = allocate(prototype((0, 5)))
    assert status == 0 and m.dl_tensor.data is None and shape_of(m.dl_tensor) == (0, 5)
    delete(m)
    status, m, _ = allocate(prototype(()))
    assert status == 0 and m.dl_tensor.ndim == 0 and not m.dl_tensor.shape and not m.dl_tensor.strides
    assert m.dl_tensor.data
    delete(m)


@pytest.mark.parametrize("proto, kind, message", [
    (None, "ValueError", "managed_tensor_allocator: expected a prototype DLTensor, got NULL"),
    (prototype((2, -3)), "ValueError",
     "managed_tensor_allocator: prototype: shape: axis 1: expected extent >= 0, got extent -3"),
    (prototype((1,) * 3, ndim=70), "ValueError",
     "managed_tensor_allocator: prototype: ndim: expected ndim <= 64, got 70"),
    (prototype((2,), dtype=(2, 7, 1)), "ValueError",
     "managed_tensor_allocator: prototype: dtype: expected a supported (code, bits) pair, "
     "got (code 2, bits 7, lanes 1)"),
    (prototype((2,), device=(5, 0)), "ValueError",
     "managed_tensor_allocator: prototype: device: expected a DLPack device type, got device type 5"),
    (prototype((2,), device=(7, 0)), "ValueError", "dlbridge cannot allocate memory on vulkan"),
    (prototype((2**62, 4)), "ValueError", "managed_tensor_allocator: prototype: shape: expected a byte size that fits "
                                          "in int64, got an overflowing element count"),
    # Float4 pairs (PyTorch's float4_e2m1fn_x2): dlbridge imports them, but allocates DLPack's float4 only.
    (prototype((2, 3), dtype=(17, 4, 2)), "ValueError",
     "managed_tensor_allocator: prototype: float4_e2m1fn_x2 (code 17, bits 4, lanes 2) is not allocated; ask for "
     "float4_e2m1fn (lanes 1) with the last extent doubled"),
], ids=["null", "negative-extent", "ndim", "dtype", "device-type", "vulkan", "overflow", "float4-pairs"])
@pytest.mark.parametrize("nogil", [False, True], ids=["with-gil", "without-gil"])
def test_allocator_reports_failures_through_set_error_only(proto, kind, message, nogil):
    # Called holding the GIL (PYFUNCTYPE), a Python exception left set would
    # be raised here: the allocator reports through SetError alone.
    status, m, errors = allocate(proto, nogil=nogil)
    assert status == -1 and m is None
    assert errors.calls == [(kind, message)]


def test_allocator_without_out():
    errors = Errors()
    assert OURS.allocate(byref(prototype((1,))), None, None, errors.callback) == -1
    assert errors.calls == [("ValueError",
                             "managed_tensor_allocator: expected somewhere to put the tensor, got out=NULL")]


def test_allocator_without_set_error_leaves_a_python_exception():
    out = c_void_p()
    no_callback = ctypes.cast(None, SET_ERROR)
    with pytest.raises(ValueError, match="^managed_tensor_allocator: prototype: ndim: expected ndim <= 64, got 99$"):
        OURS.allocate(byref(prototype((1,), ndim=99)), byref(out), None, no_callback)
    assert out.value is None


def test_allocator_on_cuda():
    status, m, errors = allocate(prototype((2, 3), device=(2, 0)))
    if NO_GPU:
        assert status == -1 and m is None
        assert len(errors.calls) == 1
        kind, message = errors.calls[0]
        assert kind == "RuntimeError" and message.startswith("no CUDA device is available (")
    else:
        assert status == 0 and errors.calls == []
        t = m.dl_tensor
        assert (t.device.device_type, t.device.device_id) == (2, 0)
        assert shape_of(t) == (2, 3) and strides_of(t) == (3, 1) and t.data
        delete(m)


# -- managed_tensor_from_py_object_no_sync -------------------------------------------


def test_from_object_describes_the_array_and_shares_its_memory():
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    a = dlbridge.from_dlpack(base)[::-1, 1::2].T  # shape (2, 3), strides (2, -4)
    m = OURS.managed(a)
    assert (m.version.major, m.version.minor) == (1, 3)
    assert m.flags == 0
    t = m.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == INT32
    assert shape_of(t) == a.shape == (2, 3)
    assert strides_of(t) == a.strides == (2, -4)
    assert t.data == a.data_ptr and t.byte_offset == 0
    assert ctypes.c_int32.from_address(t.data + 4 * t.strides[1]).value == a.tolist()[0][1]
    delete(m)


def test_from_object_of_a_read_only_array_sets_read_only():
    base = np.arange(3.0)
    base.flags.writeable = False
    a = dlbridge.from_dlpack(base)
    assert a.readonly
    m = OURS.managed(a)
    assert m.flags == FLAG_READ_ONLY
    delete(m)


def test_from_object_tensor_keeps_the_memory_alive_until_its_deleter_runs():
    base = np.arange(4.0)
    alive = weakref.ref(base)
    m = OURS.managed(dlbridge.from_dlpack(base))  # the Array itself is dropped at once
    del base
    gc.collect()
    assert alive() is not None
    assert ctypes.c_double.from_address(m.dl_tensor.data + 16).value == 2.0
    delete(m)
    gc.collect()
    assert alive() is None


def test_from_object_rejects_other_objects():
    out = c_void_p()
    with pytest.raises(TypeError, match="^managed_tensor_from_py_object_no_sync: expected a dlbridge.Array, got list$"):
        OURS.from_object([1.0], byref(out))
    assert out.value is None
    with pytest.raises(ValueError,
                       match="^managed_tensor_from_py_object_no_sync: expected somewhere to put the tensor"):
        OURS.from_object(dlbridge.asarray([1.0]), None)


# -- managed_tensor_to_py_object_no_sync ---------------------------------------------


def test_to_object_takes_ownership_and_the_deleter_runs_once_when_the_array_dies():
    m = ManagedTensor([1.0, 2.0, 3.0, 4.0], shape=(2, 2), strides=(1, 2), flags=FLAG_READ_ONLY)
    a = OURS.wrap(m.address)
    assert type(a) is dlbridge.Array
    assert a.shape == (2, 2) and a.strides == (1, 2) and a.readonly
    assert a.data_ptr == m.data_address
    assert a.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    view = a.T
    dead = weakref.ref(a)
    assert sys.getrefcount(a) == 2  # `a` and getrefcount's argument: no reference was leaked
    del a
    assert dead() is None and m.deleter_calls == 0  # the view still holds the memory
    del view
    assert m.deleter_calls == 1


def test_to_object_of_a_writable_tensor_is_writable():
    m = ManagedTensor([1.0, 2.0])
    a = OURS.wrap(m.address)
    assert not a.readonly
    memoryview(a)[0] = 7.0
    assert m.buffer[0] == 7.0
    del a
    assert m.deleter_calls == 1


@pytest.mark.parametrize("tensor, message", [
    (dict(shape=(1,) * 3, ndim=70), "invalid tensor: ndim: expected ndim <= 64, got 70"),
    (dict(version=(2, 0)), "invalid tensor: version: expected DLPack major version 1, got 2.0"),
    (dict(data=None), "invalid tensor: data: expected a pointer for a non-empty tensor, got NULL"),
], ids=["ndim", "major-version", "null-data"])
def test_to_object_of_an_invalid_tensor_raises_after_running_its_deleter_once(tensor, message):
    m = ManagedTensor([1.0, 2.0, 3.0], **tensor)
    out = c_void_p()
    with pytest.raises(BufferError, match=f"^{message.replace('(', '.').replace(')', '.')}$"):
        OURS.to_object(m.address, byref(out))
    assert out.value is None
    assert m.deleter_calls == 1


def test_to_object_null_arguments():
    out = c_void_p()
    with pytest.raises(ValueError, match="^managed_tensor_to_py_object_no_sync: expected a DLManagedTensorVersioned, "
                                         "got NULL$"):
        OURS.to_object(None, byref(out))
    m = ManagedTensor([1.0])
    with pytest.raises(ValueError, match=r"got out_py_object=NULL \(the tensor was released\)$"):
        OURS.to_object(m.address, None)
    assert m.deleter_calls == 1  # ownership was handed over even so


# -- dltensor_from_py_object_no_sync --------------------------------------------------


def test_dltensor_points_into_the_array_and_allocates_nothing():
    a = dlbridge.from_dlpack(np.arange(24.0).reshape(2, 3, 4)).transpose(2, 0, 1)
    first, second = DLTensor(), DLTensor()
    assert OURS.dltensor(a, byref(first)) == 0
    assert OURS.dltensor(a, byref(second)) == 0
    assert first.data == a.data_ptr and first.byte_offset == 0
    assert shape_of(first) == a.shape and strides_of(first) == a.strides
    assert (first.dtype.code, first.dtype.bits, first.dtype.lanes) == (2, 64, 1)
    assert (first.device.device_type, first.device.device_id) == (1, 0)
    # Nothing was made for the caller: both calls point at the same shape
    # and strides, the array's own.
    assert ctypes.addressof(first.shape.contents) == ctypes.addressof(second.shape.contents)
    assert ctypes.addressof(first.strides.contents) == ctypes.addressof(second.strides.contents)


def test_dltensor_of_empty_and_zero_dimensional_arrays():
    t = DLTensor()
    empty = dlbridge.zeros((0, 3))  # alive while t points into it
    assert OURS.dltensor(empty, byref(t)) == 0
    assert t.data is None and shape_of(t) == (0, 3)
    scalar = dlbridge.full((), 2.5)
    assert OURS.dltensor(scalar, byref(t)) == 0
    assert t.ndim == 0 and not t.shape and not t.strides and t.data == scalar.data_ptr


def test_dltensor_refuses_read_only_arrays_and_other_objects():
    base = np.arange(3.0)
    base.flags.writeable = False
    t = DLTensor()
    with pytest.raises(BufferError, match="^dltensor_from_py_object_no_sync: a read-only array cannot be described "
                                          "by a bare DLTensor"):
        OURS.dltensor(dlbridge.from_dlpack(base), byref(t))
    with pytest.raises(TypeError, match="^dltensor_from_py_object_no_sync: expected a dlbridge.Array, got tuple$"):
        OURS.dltensor((1, 2), byref(t))
    with pytest.raises(ValueError,
                       match="^dltensor_from_py_object_no_sync: expected a DLTensor to fill, got out=NULL$"):
        OURS.dltensor(dlbridge.asarray([1.0]), None)


def test_null_objects_are_value_errors():
    # The slots as C sees them: PyObject* may be NULL.
    from_object = PYFUNCTYPE(c_int, c_void_p, POINTER(c_void_p))(OURS.struct.managed_tensor_from_py_object_no_sync)
    dltensor = PYFUNCTYPE(c_int, c_void_p, POINTER(DLTensor))(OURS.struct.dltensor_from_py_object_no_sync)
    with pytest.raises(ValueError,
                       match="^managed_tensor_from_py_object_no_sync: expected a dlbridge.Array, got NULL$"):
        from_object(None, byref(c_void_p()))
    with pytest.raises(ValueError, match="^dltensor_from_py_object_no_sync: expected a dlbridge.Array, got NULL$"):
        dltensor(None, byref(DLTensor()))


# -- current_work_stream ---------------------------------------------------------


@pytest.mark.parametrize("device, expected", [
    ((1, 0), None),  # kDLCPU: no stream
    ((3, 0), None),  # kDLCUDAHost: pinned host memory, no stream
    ((10, 0), None),  # kDLROCM: dlbridge queues no work there
    ((2, 0), 1),  # kDLCUDA: the legacy default stream, as cudaStreamLegacy
    ((2, 3), 1),
    ((13, 0), 1),  # kDLCUDAManaged
])
@pytest.mark.parametrize("nogil", [False, True], ids=["with-gil", "without-gil"])
def test_current_work_stream(device, expected, nogil):
    out = c_void_p(12345)
    call = OURS.stream_nogil if nogil else OURS.stream
    assert call(*device, byref(out)) == 0
    assert out.value == expected


@pytest.mark.parametrize("args, message", [
    ((5, 0), "^current_work_stream: expected a DLPack device type, got 5$"),
    ((2, -1), "^current_work_stream: expected device_id >= 0, got -1$"),
])
def test_current_work_stream_rejects_bad_devices(args, message):
    with pytest.raises(ValueError, match=message):
        OURS.stream(*args, byref(c_void_p()))
    with pytest.raises(ValueError, match="^current_work_stream: expected somewhere to put the stream"):
        OURS.stream(1, 0, None)


# -- from_dlpack through a producer's table ----------------------------------------


class Counting(dlbridge.Array):
    """An Array type that publishes dlbridge's table beside its own
    __dlpack__ (so the table belongs to it), which records its calls in the
    class's `calls` list (which subclasses share)."""
    __dlpack_c_exchange_api__ = dlbridge.Array.__dlpack_c_exchange_api__
    calls: list = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return super().__dlpack__(**kwargs)


def producer(attributes: dict):
    """A new Counting subclass with `attributes`, and an instance of it."""
    kind = type("Producer", (Counting,), dict(attributes, calls=[]))
    return kind, kind(np.arange(6.0).reshape(2, 3))


def test_from_dlpack_prefers_the_table_over_dunder_dlpack():
    class Refusing(dlbridge.Array):
        __dlpack_c_exchange_api__ = dlbridge.Array.__dlpack_c_exchange_api__

        def __dlpack__(self, **kwargs):
            raise AssertionError("__dlpack__ was called; the exchange table should have been used")

    x = Refusing(np.arange(6.0).reshape(2, 3))
    a = dlbridge.from_dlpack(x)
    assert type(a) is dlbridge.Array
    assert a.data_ptr == x.data_ptr and a.shape == (2, 3) and a.strides == (3, 1)
    assert dlbridge.asarray(x).data_ptr == x.data_ptr  # asarray goes the same way


class Overriding(dlbridge.Array):
    """Overrides __dlpack__ but not the table it inherits, which belongs to Array.__dlpack__."""

    def __dlpack__(self, **kwargs):
        raise BufferError("Overriding.__dlpack__ refuses")


class NotOverriding(dlbridge.Array):
    pass


def test_a_subclass_that_overrides_dunder_dlpack_is_asked_through_it():
    x = Overriding(np.arange(3.0))
    for convert in (dlbridge.from_dlpack, dlbridge.asarray):
        with pytest.raises(BufferError, match=exactly("Overriding.__dlpack__ refuses "
                                                      "(from Overriding.__dlpack__(); got dtype float64)")):
            convert(x)
    # A subclass of the overrider inherits the override.
    below = type("Below", (Overriding,), {})(np.arange(3.0))
    with pytest.raises(BufferError, match=exactly("Overriding.__dlpack__ refuses "
                                                  "(from Below.__dlpack__(); got dtype float64)")):
        dlbridge.from_dlpack(below)


def test_a_subclass_that_keeps_dunder_dlpack_keeps_the_table():
    x = NotOverriding(np.arange(3.0))
    assert dlbridge.from_dlpack(x).data_ptr == x.data_ptr
    # Counting defines both: below it, neither is overridden, so the table serves.
    leaf = type("Leaf", (Counting,), {"calls": []})
    y = leaf(np.arange(3.0))
    assert dlbridge.from_dlpack(y).data_ptr == y.data_ptr and leaf.calls == []


def test_an_override_added_later_is_seen():
    kind = type("Later", (dlbridge.Array,), {})
    x = kind(np.arange(3.0))
    assert dlbridge.from_dlpack(x).data_ptr == x.data_ptr  # through the table; now cached

    def refuse(self, **kwargs):
        raise BufferError("refused later")

    kind.__dlpack__ = refuse
    with pytest.raises(BufferError, match=exactly("refused later (from Later.__dlpack__(); got dtype float64)")):
        dlbridge.from_dlpack(x)
    del kind.__dlpack__
    assert dlbridge.from_dlpack(x).data_ptr == x.data_ptr


def test_device_and_copy_take_the_table_and_copy_what_it_shares():
    # The routes do not depend on the request: the one finish moves and
    # copies what the table shares.
    kind, x = producer({})
    dlbridge.from_dlpack(x)
    assert len(kind.calls) == 0
    copied = dlbridge.from_dlpack(x, copy=True)  # never asked of the producer (guide.md)
    assert len(kind.calls) == 0 and copied.data_ptr != x.data_ptr and not copied.readonly
    assert copied.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert dlbridge.from_dlpack(x, device="cpu").data_ptr == x.data_ptr
    assert dlbridge.from_dlpack(x, device="cpu", copy=True).data_ptr != x.data_ptr
    with pytest.raises(ValueError, match=exactly("from_dlpack: copy=False, but moving data from cpu to cuda:0 "
                                                 "needs a copy")):
        dlbridge.from_dlpack(x, device="cuda", copy=False)
    assert len(kind.calls) == 0


def test_from_dlpack_through_the_table_keeps_read_only():
    base = np.arange(3.0)
    base.flags.writeable = False
    kind, _ = producer({})
    x = kind(base)
    assert x.readonly
    a = dlbridge.from_dlpack(x)
    assert a.readonly and len(kind.calls) == 0


def test_from_dlpack_accepts_the_dlpack_1_2_int_form():
    kind, x = producer({"__dlpack_c_exchange_api__": None,
                        "__c_dlpack_exchange_api__": dlbridge.Array.__c_dlpack_exchange_api__})
    a = dlbridge.from_dlpack(x)
    assert len(kind.calls) == 0 and a.data_ptr == x.data_ptr


def table_copy(major: int, prev_api=None):
    """A copy of dlbridge's table claiming another major version, as a capsule
    (the copy is kept alive by the returned tuple)."""
    copy = DLPackExchangeAPI.from_buffer_copy(OURS.struct)
    copy.header.version.major = major
    copy.header.prev_api = prev_api
    return exchange_capsule(ctypes.addressof(copy)), copy


def test_from_dlpack_falls_back_to_dunder_dlpack_for_another_major_version():
    capsule, keep = table_copy(2)
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    a = dlbridge.from_dlpack(x)
    assert len(kind.calls) == 1 and a.data_ptr == x.data_ptr and a.tolist() == x.tolist()


def test_from_dlpack_walks_prev_api_to_a_1_x_table():
    capsule, keep = table_copy(2, prev_api=ctypes.pointer(OURS.struct.header))
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    a = dlbridge.from_dlpack(x)
    assert len(kind.calls) == 0 and a.data_ptr == x.data_ptr


def test_from_dlpack_takes_none_for_no_table():
    kind, x = producer({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": None})
    a = dlbridge.from_dlpack(x)
    assert len(kind.calls) == 1 and a.data_ptr == x.data_ptr


_CAPSULE = "__dlpack_c_exchange_api__ must be a PyCapsule named 'dlpack_exchange_api' or None, got "
_INT = "__c_dlpack_exchange_api__ must be an int holding its address or None, got "
_ADDRESS = "__c_dlpack_exchange_api__ points at {:#x}, which cannot hold a DLPack exchange table"


@pytest.mark.parametrize("attributes, message", [
    ({"__dlpack_c_exchange_api__": _api.PyCapsule_New(OURS.address, None, None)}, _CAPSULE + "<capsule"),
    ({"__dlpack_c_exchange_api__": exchange_capsule(1)},
     "__dlpack_c_exchange_api__ points at 0x1, which cannot hold a DLPack exchange table"),
    ({"__dlpack_c_exchange_api__": "not a capsule"}, _CAPSULE + "'not a capsule'"),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": "1"}, _INT + "'1'"),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": 0}, _ADDRESS.format(0)),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": 1}, _ADDRESS.format(1)),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": 4095}, _ADDRESS.format(4095)),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": OURS.address + 1},
     _ADDRESS.format(OURS.address + 1)),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": -OURS.address}, _INT + str(-OURS.address)),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": 2**64}, _INT + str(2**64)),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": True}, _INT + "True"),
    ({"__dlpack_c_exchange_api__": None, "__c_dlpack_exchange_api__": float(OURS.address)},
     _INT + repr(float(OURS.address))),
], ids=["unnamed-capsule", "capsule-at-1", "str", "int-as-str", "int-zero", "int-one", "int-4095", "misaligned",
        "int-negative", "int-2**64", "bool", "float"])
def test_from_dlpack_refuses_what_cannot_be_an_exchange_table(attributes, message):
    kind, x = producer(attributes)
    with pytest.raises(BufferError, match="^from_dlpack: Producer." + re.escape(message)):
        dlbridge.from_dlpack(x)
    assert len(kind.calls) == 0  # refused before any call


@pytest.mark.parametrize("slot", ["managed_tensor_allocator", "managed_tensor_from_py_object_no_sync",
                                  "managed_tensor_to_py_object_no_sync", "current_work_stream"])
def test_a_table_missing_a_required_slot_is_refused(slot):
    capsule, keep = table_copy(1)
    setattr(keep, slot, None)
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    with pytest.raises(BufferError, match=exactly(
            f"from_dlpack: the DLPack exchange table of Producer has no {slot} (NULL); only "
            f"dltensor_from_py_object_no_sync may be NULL")):
        dlbridge.from_dlpack(x)


def test_a_table_without_the_optional_slot_is_used():
    capsule, keep = table_copy(1)
    keep.dltensor_from_py_object_no_sync = None
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    assert dlbridge.from_dlpack(x).data_ptr == x.data_ptr and len(kind.calls) == 0


def test_a_prev_api_chain_that_loops_is_refused():
    capsule, keep = table_copy(2)
    keep.header.prev_api = ctypes.pointer(keep.header)  # a table of version 2 that chains to itself
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    with pytest.raises(BufferError, match=exactly(
            "from_dlpack: the prev_api chain of Producer's DLPack exchange table reaches no version 1 table "
            "in 16 steps (it loops or is too long)")):
        dlbridge.from_dlpack(x)


@pytest.mark.parametrize("length, usable", [(16, True), (17, False)])
def test_a_prev_api_chain_is_walked_16_steps(length, usable):
    tables = [table_copy(2)[1] for _ in range(length)]
    for table, below in zip(tables, tables[1:]):
        table.header.prev_api = ctypes.pointer(below.header)
    tables[-1].header.prev_api = ctypes.pointer(OURS.struct.header)
    capsule = exchange_capsule(ctypes.addressof(tables[0]))
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    if usable:
        assert dlbridge.from_dlpack(x).data_ptr == x.data_ptr and len(kind.calls) == 0
    else:
        with pytest.raises(BufferError, match="reaches no version 1 table in 16 steps"):
            dlbridge.from_dlpack(x)


def test_a_prev_api_pointer_that_cannot_be_a_table_is_refused():
    capsule, keep = table_copy(2)
    keep.header.prev_api = ctypes.cast(ctypes.c_void_p(8), type(keep.header.prev_api))
    kind, x = producer({"__dlpack_c_exchange_api__": capsule})
    with pytest.raises(BufferError, match=exactly(
            "from_dlpack: the prev_api chain of Producer's DLPack exchange table points at 0x8, which cannot "
            "hold a table")):
        dlbridge.from_dlpack(x)


def test_a_type_whose_table_changes_is_looked_up_again():
    kind, x = producer({})
    dlbridge.from_dlpack(x)
    assert len(kind.calls) == 0
    kind.__dlpack_c_exchange_api__ = None  # cached tables must not outlive the attribute
    kind.__c_dlpack_exchange_api__ = None
    dlbridge.from_dlpack(x)
    assert len(kind.calls) == 1
    sub = type("Sub", (kind,), {})
    y = sub(np.arange(2.0))
    dlbridge.from_dlpack(y)
    assert len(kind.calls) == 2
    kind.__dlpack_c_exchange_api__ = dlbridge.Array.__dlpack_c_exchange_api__  # through the base, too
    dlbridge.from_dlpack(y)
    dlbridge.from_dlpack(x)
    assert len(kind.calls) == 2
    # Again and again (in a period of 3, so that no cache indexing can
    # line up with it): the cache must never answer for a type as it was.
    for i in range(64):
        with_table = i % 3 != 0
        kind.__dlpack_c_exchange_api__ = dlbridge.Array.__dlpack_c_exchange_api__ if with_table else None
        before = len(kind.calls)
        dlbridge.from_dlpack(x)
        dlbridge.from_dlpack(x)
        assert len(kind.calls) == before + (0 if with_table else 2), i


def test_where_a_producers_table_fails_dunder_dlpack_answers():
    class Impostor:
        """Claims dlbridge's table, whose slots take Arrays only; its
        __dlpack__ hands out a NumPy array's capsule."""
        __dlpack_c_exchange_api__ = dlbridge.Array.__dlpack_c_exchange_api__

        def __init__(self):
            self.base = np.arange(3.0)

        def __dlpack__(self, **kwargs):
            return self.base.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.base.__dlpack_device__()

    x = Impostor()
    a = dlbridge.from_dlpack(x)
    assert a.data_ptr == x.base.ctypes.data and a.tolist() == [0.0, 1.0, 2.0]


def test_no_reference_is_leaked_through_the_table():
    x = dlbridge.from_dlpack(np.arange(3.0))
    before = sys.getrefcount(x)
    for _ in range(1000):
        dlbridge.from_dlpack(x)
    assert sys.getrefcount(x) == before


# -- PyTorch, through its own table ------------------------------------------------

TORCH = Table(torch.Tensor.__dlpack_c_exchange_api__)


def test_torch_publishes_a_1_x_table():
    assert TORCH.struct.header.version.major == 1


def test_torch_tensors_come_in_through_torchs_table_without_a_copy(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("__dlpack__ was called; PyTorch's exchange table should have been used")

    # torch.Tensor defines both __dlpack__ and the table: the table stays its own.
    monkeypatch.setattr(torch.Tensor, "__dlpack__", refuse)
    t = torch.arange(12.0, dtype=torch.float32).reshape(3, 4)
    a = dlbridge.from_dlpack(t.T[1:])
    assert a.data_ptr == t.data_ptr() + 4
    assert a.shape == (3, 3) and a.strides == (1, 4) and not a.readonly
    assert a.dtype == dlbridge.DType("float32") and a.device == dlbridge.Device("cpu")
    np.asarray(a)[0, 0] = 42.0
    assert t[0, 1] == 42.0


class TorchSubclassRefusing(torch.Tensor):
    def __dlpack__(self, *args, **kwargs):
        raise BufferError("TorchSubclassRefusing.__dlpack__ refuses")


def test_a_torch_subclass_that_overrides_dunder_dlpack_is_asked_through_it():
    t = torch.arange(4.0).as_subclass(TorchSubclassRefusing)
    for convert in (dlbridge.from_dlpack, dlbridge.asarray):
        with pytest.raises(BufferError, match=exactly("TorchSubclassRefusing.__dlpack__ refuses (from "
                                                      "TorchSubclassRefusing.__dlpack__(); got dtype torch.float32)")):
            convert(t)
    plain = torch.arange(4.0).as_subclass(type("Plain", (torch.Tensor,), {}))
    assert dlbridge.from_dlpack(plain).data_ptr == plain.data_ptr()


def test_torch_tensor_memory_outlives_the_tensor():
    t = torch.arange(5.0)
    a = dlbridge.from_dlpack(t)
    del t
    gc.collect()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("make, state, fix", [
    (lambda: torch.ones(3, requires_grad=True), "requires gradient", "detach"),
    (lambda: torch.nn.Parameter(torch.ones(3)), "requires gradient", "detach"),
    (lambda: torch.tensor([1 + 2j, 3 + 4j]).conj(), "has its conjugate bit set", "resolve_conj"),
    (lambda: torch.tensor([1 + 2j, 3 + 4j]).conj().imag, "has its negative bit set", "resolve_neg"),
    (lambda: torch._neg_view(torch.arange(3, dtype=torch.int32)), "has its negative bit set", "resolve_neg"),
], ids=["requires-grad", "parameter", "conj", "neg", "integer-neg"])
def test_torch_state_dlpack_cannot_carry_is_refused(make, state, fix):
    # PyTorch's table would hand these over as plain memory: for the lazy
    # views that is (1+2j) where the tensor holds (1-2j), 2.0 where it holds -2.0.
    x = make()
    with pytest.raises(BufferError, match=f"^from_dlpack: the {type(x).__name__} {state}, which DLPack cannot "
                                          f"express; call .{fix}\\(\\) first$"):
        dlbridge.from_dlpack(x)
    fixed = getattr(x, fix)()
    assert dlbridge.from_dlpack(fixed).tolist() == fixed.tolist()


def test_torchs_state_descriptors_on_another_type_are_asked_as_python_asks():
    # dlbridge calls PyTorch's C getter and methods directly only on PyTorch's
    # tensors: another type that borrows them (and a table) is answered by
    # the descriptors' own type check, never given to PyTorch's C code.
    base = torch._C.TensorBase.__dict__
    borrower = type("Borrower", (), {"__dlpack_c_exchange_api__": dlbridge.Array.__dlpack_c_exchange_api__,
                                     "__dlpack__": lambda self, **kwargs: np.ones(1).__dlpack__(**kwargs),
                                     "__dlpack_device__": lambda self: (1, 0),
                                     "requires_grad": base["requires_grad"], "is_conj": base["is_conj"],
                                     "is_neg": base["is_neg"]})
    with pytest.raises(TypeError, match="descriptor 'requires_grad' for 'torch._C.TensorBase' objects doesn't apply"):
        dlbridge.from_dlpack(borrower())


def test_a_state_check_that_takes_the_next_one_off_the_type_is_safe():
    # PyTorch's requires_grad getter runs a subclass's __torch_function__,
    # which may delete the is_neg dlbridge asks next: dlbridge holds what it
    # looked up (under ASan, a use after free otherwise).
    class Sly(torch.Tensor):
        def is_neg(self):
            return False

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if "is_neg" in cls.__dict__:
                del cls.is_neg
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.arange(3.0).as_subclass(Sly)
    assert dlbridge.from_dlpack(x).tolist() == [0.0, 1.0, 2.0]
    assert "is_neg" not in Sly.__dict__  # the getter ran the deletion


@pytest.mark.parametrize("make, error, message", [
    (lambda: torch.eye(2).to_sparse(), BufferError, "Can't export tensors with layout other than torch.strided"),
    # __dlpack_device__, asked first, refuses it already.
    (lambda: torch.ones(2, device="meta"), ValueError, "Unknown device type meta for Dlpack"),
], ids=["sparse", "meta"])
def test_torch_tensors_its_table_cannot_export_get_the_dunder_dlpack_error(make, error, message):
    # PyTorch's table raises RuntimeError with a C++ backtrace for these;
    # its __dlpack__ raises BufferError, as the array API asks.
    with pytest.raises(error, match=f"^{message}"):
        dlbridge.from_dlpack(make())


def test_torchs_table_and_ours_hand_tensors_to_each_other():
    # dlbridge's from-object tensor becomes a torch.Tensor through torch's
    # to-object slot, sharing memory; and the other way round.
    a = dlbridge.from_dlpack(np.arange(6.0).reshape(2, 3)).T
    t = TORCH.wrap(ctypes.addressof(OURS.managed(a)))
    assert isinstance(t, torch.Tensor)
    assert t.data_ptr() == a.data_ptr and t.shape == (3, 2) and t.stride() == (1, 3)
    assert t.tolist() == a.tolist()

    source = torch.arange(6, dtype=torch.int32).reshape(3, 2)
    b = OURS.wrap(ctypes.addressof(TORCH.managed(source)))
    assert b.data_ptr == source.data_ptr() and b.tolist() == source.tolist()


def test_torch_work_stream_on_cpu_is_null_as_ours():
    out = c_void_p(1)
    assert TORCH.stream(1, 0, byref(out)) == 0 and out.value is None
