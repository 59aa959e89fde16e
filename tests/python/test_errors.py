"""Error cases of docs/errors.md that no other test file pins: each test checks
the exception type and the message text the catalogue quotes."""
import ctypes
import gc
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dlbridge
from dlbridge import Device
from dlbridge.testing._abi import ManagedTensor, Producer, capsule_name

HERE = os.path.dirname(os.path.abspath(__file__))


def exactly(message):
    """A pattern matching the whole message."""
    return "^" + re.escape(message) + "$"


# ---------------------------------------------------------------------------
# Objects that hand dlbridge hand-built memory descriptions


class CudaInterface:
    """A __cuda_array_interface__ over host memory: dlbridge labels it cuda:0
    and never reads it, so it stands in for device memory."""

    def __init__(self, owner, **fields):
        self.owner = owner
        interface = {"shape": owner.shape, "typestr": owner.dtype.str,
                     "data": (owner.ctypes.data, False), "version": 3}
        interface.update(fields)
        self.interface = interface

    @property
    def __cuda_array_interface__(self):
        return self.interface


class HostInterface:
    """An object with only a hand-built __array_interface__."""

    def __init__(self, interface, owner=None):
        self.owner = owner
        self.interface = interface

    @property
    def __array_interface__(self):
        return self.interface


def on_cuda():
    """A dlbridge Array whose device is cuda:0 (over host memory it never reads)."""
    return dlbridge.asarray(CudaInterface(np.arange(6, dtype=np.float32).reshape(2, 3)))


# A buffer exporter written against the C API with ctypes (Python 3.11 classes
# cannot export buffers themselves), so a test can hand dlbridge any Py_buffer,
# including ones no standard type produces: suboffsets, more than 64 axes.

class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


class _PyTypeSlot(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("pfunc", ctypes.c_void_p)]


class _PyTypeSpec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("basicsize", ctypes.c_int), ("itemsize", ctypes.c_int),
                ("flags", ctypes.c_uint), ("slots", ctypes.POINTER(_PyTypeSlot))]


_api = ctypes.PyDLL(None)  # own handle: argtypes set here stay ours
_api.PyType_FromSpec.restype = ctypes.py_object
_api.PyType_FromSpec.argtypes = [ctypes.POINTER(_PyTypeSpec)]
_api.Py_IncRef.argtypes = [ctypes.py_object]
_api.Py_IncRef.restype = None
_api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_api.PyObject_GetBuffer.restype = ctypes.c_int

_GETBUFFER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int)
_buffer_memory = []  # shape/strides/data arrays handed out; kept for the whole run


def _getbuffer(exporter, view, flags):
    layout = exporter.layout
    ndim = len(layout["shape"])
    shape = (ctypes.c_ssize_t * max(ndim, 1))(*layout["shape"])
    strides = (ctypes.c_ssize_t * max(ndim, 1))(*layout["strides"])
    suboffsets = (ctypes.c_ssize_t * max(ndim, 1))(*([-1] * ndim))
    data = (ctypes.c_char * 64)()
    _buffer_memory.extend([shape, strides, suboffsets, data])
    _api.Py_IncRef(exporter)  # view->obj owns a reference; PyBuffer_Release drops it
    v = view.contents
    v.buf = ctypes.addressof(data)
    v.obj = id(exporter)
    v.len = 8
    v.itemsize = layout.get("itemsize", 8)
    v.readonly = 1
    v.ndim = ndim
    v.format = layout.get("format", b"d")
    v.shape = None if layout.get("null_shape") else ctypes.addressof(shape)
    v.strides = ctypes.addressof(strides)
    v.suboffsets = ctypes.addressof(suboffsets) if layout.get("suboffsets") else None
    v.internal = None
    return 0


_getbuffer_callback = _GETBUFFER(_getbuffer)
_slots = (_PyTypeSlot * 2)(_PyTypeSlot(1, ctypes.cast(_getbuffer_callback, ctypes.c_void_p)),  # Py_bf_getbuffer
                           _PyTypeSlot(0, None))
_spec = _PyTypeSpec(b"test_errors.RawBufferBase", 2 * ctypes.sizeof(ctypes.c_void_p), 0,
                    (1 << 10) | (1 << 18), _slots)  # Py_TPFLAGS_BASETYPE | Py_TPFLAGS_DEFAULT
_RawBufferBase = _api.PyType_FromSpec(ctypes.byref(_spec))


class RawBuffer(_RawBufferBase):
    """Exports a read-only float64 buffer with the given shape and byte strides;
    `layout` may set what a broken exporter gets wrong: suboffsets, a NULL
    shape (null_shape=True), another format or itemsize."""

    def __init__(self, shape, strides, **layout):
        self.layout = dict(layout, shape=shape, strides=strides)


def test_raw_buffer_exporter_works():
    a = dlbridge.asarray(RawBuffer((1,), (8,)))
    assert a.shape == (1,) and a.dtype == "float64" and a.readonly


# ---------------------------------------------------------------------------
# Importing foreign tensors: validate() branches with no Python test elsewhere


def _refused(managed, match):
    producer = Producer(managed)
    with pytest.raises(BufferError, match=match):
        dlbridge.from_dlpack(producer)
    assert capsule_name(producer.capsule).startswith(b"used_")
    assert managed.deleter_calls == 1
    del producer
    gc.collect()
    assert managed.deleter_calls == 1


def test_subbyte_padded_flag_is_refused():
    mt = ManagedTensor(range(4), flags=1 << 2)
    _refused(mt, exactly("invalid tensor: flags: expected packed sub-byte data, got IS_SUBBYTE_TYPE_PADDED"))


def test_non_contiguous_packed_subbyte_tensor_is_refused():
    mt = ManagedTensor(range(4), dtype=(17, 4, 1), ctype=ctypes.c_uint8, shape=(2, 2), strides=(1, 2))
    _refused(mt, exactly("invalid tensor: strides: expected C-contiguous strides for a packed sub-byte "
                         "dtype, got non-contiguous strides"))


def test_strided_span_below_address_zero_is_refused():
    # float64 elements at 16, 16 - 64 and 16 - 128: below address 0.
    mt = ManagedTensor(range(3), shape=(3,), strides=(-8,), data=16)
    _refused(mt, exactly("invalid tensor: strides: expected a strided span inside the address space, "
                         "got a span of [-128, 8) bytes around address 16"))


# ---------------------------------------------------------------------------
# The capsule protocol


def test_null_capsule_name_message():
    # In a child: a crash must fail this test, not the whole session.
    code = textwrap.dedent("""
        import dlbridge
        from dlbridge.testing._abi import ManagedTensor, Producer
        mt = ManagedTensor(range(3))
        producer = Producer(mt, name=None)
        try:
            dlbridge.from_dlpack(producer)
        except BaseException as e:
            print(type(e).__name__, e)
        print("deleter", mt.deleter_calls)
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in sys.path if p])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "BufferError expected a capsule named 'dltensor_versioned' or 'dltensor', got one named NULL",
        "deleter 0",
    ]


def test_object_without_dlpack_message():
    with pytest.raises(TypeError, match=exactly(
            "from_dlpack: expected an object with __dlpack__ (a DLPack producer), got list; "
            "use dlbridge.asarray for sequences, scalars and other array-likes")):
        dlbridge.from_dlpack([1, 2, 3])


# ---------------------------------------------------------------------------
# from_dlpack and asarray arguments


def test_from_dlpack_copy_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match=exactly("copy must be True, False or None, got 1")):
        dlbridge.from_dlpack(np.arange(3), copy=1)


def test_asarray_array_interface_without_data_and_without_buffer():
    obj = HostInterface({"shape": (3,), "typestr": "<f8", "version": 3})
    with pytest.raises(BufferError, match=exactly(
            "asarray: __array_interface__ without a (pointer, read_only) data tuple needs the object "
            "to export the buffer protocol, and it does not")):
        dlbridge.asarray(obj)


# ---------------------------------------------------------------------------
# Array interfaces and the buffer protocol


def test_cuda_array_interface_must_be_a_dict():
    class NotADict:
        __cuda_array_interface__ = [1]

    with pytest.raises(TypeError, match=exactly("__cuda_array_interface__ must be a dict, got list")):
        dlbridge.asarray(NotADict())


def test_cuda_array_interface_typestr_needs_a_byte_order_character():
    host = np.zeros(3, dtype=np.float32)
    with pytest.raises(TypeError, match=exactly(
            "__cuda_array_interface__: typestr must be a NumPy typestr such as '<f4', got 'f4'")):
        dlbridge.asarray(CudaInterface(host, typestr="f4"))


@pytest.mark.parametrize("which", ["cuda", "host"])
def test_array_interface_with_more_than_64_axes(which):
    owner = np.zeros(1)
    if which == "cuda":
        obj = CudaInterface(owner, shape=(1,) * 70)
    else:
        obj = HostInterface({"shape": (1,) * 70, "typestr": "<f8", "data": (owner.ctypes.data, False),
                             "version": 3}, owner)
    with pytest.raises(BufferError, match=exactly("invalid tensor: ndim: expected ndim <= 64, got 70")):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("field, value, message", [
    ("shape", (3.0, 4), "__array_interface__: shape must be a tuple of ints, got (3.0, 4)"),
    ("typestr", 4, "__array_interface__: typestr must be a NumPy typestr such as '<f4', got 4"),
    ("data", (1,), "__array_interface__: data must be a (pointer, read_only) tuple, got (1,)"),
    ("data", ("x", False), "__array_interface__: data must be a (pointer, read_only) tuple, got ('x', False)"),
    ("strides", (8,), "__array_interface__: strides must be None or a tuple of 2 ints, got (8,)"),
], ids=["shape", "typestr", "data-length", "data-pointer", "strides"])
def test_array_interface_malformed(field, value, message):
    owner = np.arange(12, dtype=np.int16).reshape(3, 4)
    interface = {"shape": (3, 4), "typestr": "<i2", "data": (owner.ctypes.data, False), "version": 3}
    interface[field] = value
    with pytest.raises(TypeError, match=exactly(message)):
        dlbridge.asarray(HostInterface(interface, owner))


def test_array_interface_negative_extent():
    owner = np.zeros(4)
    obj = HostInterface({"shape": (2, -2), "typestr": "<f8", "data": (owner.ctypes.data, False)}, owner)
    with pytest.raises(BufferError, match=exactly(
            "invalid tensor: shape: axis 1: expected extent >= 0, got extent -2")):
        dlbridge.asarray(obj)


def test_buffer_with_suboffsets():
    with pytest.raises(BufferError, match=exactly("buffers with suboffsets (PIL-style) are not supported")):
        dlbridge.asarray(RawBuffer((1,), (8,), suboffsets=True))


def test_buffer_with_more_than_64_axes():
    with pytest.raises(BufferError, match=exactly("invalid tensor: ndim: expected ndim <= 64, got 70")):
        dlbridge.asarray(RawBuffer((1,) * 70, (8,) * 70))


def test_buffer_stride_not_a_multiple_of_the_itemsize():
    with pytest.raises(BufferError, match=exactly(
            "buffer: axis 0: expected a byte stride that is a multiple of the itemsize 8, got 12")):
        dlbridge.asarray(RawBuffer((2,), (12,)))


@pytest.mark.parametrize("shape", [(1,), (2, 3), (1,) * 64], ids=["1-d", "2-d", "64-d"])
def test_buffer_with_axes_but_no_shape(shape):
    with pytest.raises(BufferError, match=exactly(
            f"buffer: the exporter (RawBuffer) reports {len(shape)} axes but no shape")):
        dlbridge.asarray(RawBuffer(shape, (8,) * len(shape), null_shape=True))


def test_a_0_d_buffer_needs_no_shape():
    assert dlbridge.asarray(RawBuffer((), (), null_shape=True)).shape == ()


@pytest.mark.parametrize("fmt, itemsize, size", [
    (b"d", 4, 8), (b"f", 8, 4), (b"d", 16, 8), (b"i", 8, 4), (b"q", 4, 8), (b"e", 4, 2), (b"?", 8, 1),
    (b"<l", 8, 4), (b"=L", 8, 4), (b"l", 4, 8), (b"Zd", 8, 16), (b"Zf", 16, 8), (b"@B", 2, 1),
])
def test_buffer_format_that_disagrees_with_its_itemsize(fmt, itemsize, size):
    # Format "d" with itemsize 4 was read as float32: the format names the type.
    with pytest.raises(BufferError, match=exactly(
            f"buffer format {fmt.decode()!r} has {size}-byte items, but the exporter reports itemsize {itemsize}")):
        dlbridge.asarray(RawBuffer((1,), (itemsize,), format=fmt, itemsize=itemsize))


@pytest.mark.parametrize("fmt, itemsize, dtype", [
    (b"d", 8, "float64"), (b"<l", 4, "int32"), (b"l", 8, "int64"), (b"=q", 8, "int64"), (b"@N", 8, "uint64"),
    (b"<Zf", 8, "complex64"), (b"?", 1, "bool"), (b"<e", 2, "float16"), (b">b", 1, "int8"),
])
def test_buffer_formats_map_to_the_dtype_of_their_item_size(fmt, itemsize, dtype):
    assert dlbridge.asarray(RawBuffer((1,), (itemsize,), format=fmt, itemsize=itemsize)).dtype == dtype


@pytest.mark.parametrize("fmt", [b"<n", b"=N", b"2d", b"T{d:x:}", b"x", b"P", b"s", b"dd", b"&d"])
def test_buffer_formats_without_a_dtype(fmt):
    with pytest.raises(BufferError, match=exactly(f"buffer format {fmt.decode()!r} has no DLPack dtype")):
        dlbridge.asarray(RawBuffer((1,), (8,), format=fmt))


# ---------------------------------------------------------------------------
# Nested sequences and Python scalars


@pytest.mark.parametrize("obj, value", [([1, 2**64], 2**64), (-(2**63) - 1, -(2**63) - 1)])
def test_int_beyond_64_bits_message(obj, value):
    with pytest.raises(OverflowError, match=exactly(f"Python int {value} does not fit in 64 bits")):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("make, name", [(lambda: dlbridge.asarray([1, None]), "NoneType"),
                                        (lambda: dlbridge.asarray({1: 2}), "dict"),
                                        (lambda: dlbridge.full(3, "a"), "str")])
def test_non_scalar_leaf_message(make, name):
    with pytest.raises(TypeError, match=exactly(
            f"expected a Python scalar (bool, int, float or complex), got {name}")):
        make()


def test_ragged_scalar_before_sequence_message():
    with pytest.raises(ValueError, match=exactly(
            "asarray: ragged nested sequence (a sequence where a scalar was found before)")):
        dlbridge.asarray([1, [2, 3]])


# ---------------------------------------------------------------------------
# Array.__dlpack__


def test_dlpack_stream_on_cpu_message():
    with pytest.raises(ValueError, match=exactly("stream must be None for arrays on cpu, got 1")):
        dlbridge.zeros(2).__dlpack__(stream=1)


@pytest.mark.parametrize("stream, name", [(1.0, "float"), (True, "bool"), ("1", "str"), ((1,), "tuple"),
                                          (object(), "object")])
@pytest.mark.parametrize("where", ["cpu", "cuda", "cuda copy to cpu"])
def test_dlpack_stream_of_a_wrong_type_is_a_type_error_on_every_device(stream, name, where):
    a = dlbridge.zeros(2) if where == "cpu" else on_cuda()
    extra = {"dl_device": (1, 0)} if where == "cuda copy to cpu" else {}
    with pytest.raises(TypeError, match=exactly(f"stream must be an int or None, got {name}")):
        a.__dlpack__(stream=stream, max_version=(1, 3), **extra)


@pytest.mark.parametrize("stream, message", [(0, "stream 0 is ambiguous on CUDA"),
                                             (-2, "stream must be -1, 1, 2 or a stream handle, got -2"),
                                             (1 << 63, f"stream must fit in 64 bits, got {1 << 63}"),
                                             (-(1 << 64), f"stream must fit in 64 bits, got {-(1 << 64)}")])
def test_dlpack_stream_value_on_a_device(stream, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        on_cuda().__dlpack__(stream=stream, max_version=(1, 3))


def test_dlpack_max_version_message():
    with pytest.raises(TypeError, match=exactly("max_version must be a (major, minor) tuple of ints, got [1, 3]")):
        dlbridge.zeros(2).__dlpack__(max_version=[1, 3])


def test_dlpack_dl_device_messages():
    a = dlbridge.zeros(2)
    with pytest.raises(TypeError, match=exactly("dl_device must be a (device_type, device_id) tuple, got [1, 0]")):
        a.__dlpack__(max_version=(1, 3), dl_device=[1, 0])
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (1, 1): the CPU is device 0")):
        a.__dlpack__(max_version=(1, 3), dl_device=(1, 1))
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (99, 0): "
                                                  "device type 99 is not a DLPack device type")):
        a.__dlpack__(max_version=(1, 3), dl_device=(99, 0))
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (10, 0): "
                                                  "dlbridge cannot copy data to or from rocm")):
        a.__dlpack__(max_version=(1, 3), dl_device=(10, 0))
    with pytest.raises(BufferError, match=exactly("copy=False, but exporting an array on cpu to device (2, 0) "
                                                  "needs a copy")):
        a.__dlpack__(max_version=(1, 3), dl_device=(2, 0), copy=False)


def test_dlpack_copy_message():
    with pytest.raises(TypeError, match=exactly("copy must be True, False or None, got 1")):
        dlbridge.zeros(2).__dlpack__(max_version=(1, 3), copy=1)


@pytest.mark.parametrize("max_version", [None, (0, 8)])
def test_dlpack_read_only_legacy_message(max_version):
    n = np.arange(3.0)
    n.flags.writeable = False
    with pytest.raises(BufferError, match=exactly(
            "a read-only array cannot be exported as a legacy DLPack capsule (it has no read-only flag); "
            "pass max_version=(1, 3)")):
        dlbridge.asarray(n).__dlpack__(max_version=max_version)


# ---------------------------------------------------------------------------
# Host access


PyBUF_SIMPLE, PyBUF_ND = 0, 0x8
PyBUF_STRIDES = 0x10 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x20 | PyBUF_STRIDES
PyBUF_F_CONTIGUOUS = 0x40 | PyBUF_STRIDES
PyBUF_ANY_CONTIGUOUS = 0x80 | PyBUF_STRIDES


@pytest.mark.parametrize("flags, message", [
    (PyBUF_C_CONTIGUOUS, "a C-contiguous buffer was requested; the array is not C-contiguous"),
    (PyBUF_F_CONTIGUOUS, "a Fortran-contiguous buffer was requested; the array is not"),
    (PyBUF_ANY_CONTIGUOUS, "a contiguous buffer was requested; the array is not contiguous"),
    (PyBUF_SIMPLE, "the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)"),
    (PyBUF_ND, "the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)"),
], ids=["C_CONTIGUOUS", "F_CONTIGUOUS", "ANY_CONTIGUOUS", "SIMPLE", "ND"])
def test_buffer_contiguity_request_messages(flags, message):
    strided = dlbridge.zeros((3, 4))[:, ::2]  # neither C- nor F-contiguous
    view = _PyBuffer()
    with pytest.raises(BufferError, match=exactly(message)):
        _api.PyObject_GetBuffer(strided, ctypes.byref(view), flags)


@pytest.mark.parametrize("what, action", [
    ("__array_interface__", lambda a: a.__array_interface__),
    ("the buffer protocol", memoryview),
    ("tolist()", lambda a: a.tolist()),
    ("float()", lambda a: float(a[0, 0])),
    ("int()", lambda a: int(a[0, 0])),
])
def test_host_access_to_device_memory_messages(what, action):
    with pytest.raises(BufferError, match=exactly(f"{what} needs host-accessible memory; this array is on cuda:0")):
        action(on_cuda())


def test_int_of_infinity_is_overflow_error():
    with pytest.raises(OverflowError, match=exactly("cannot convert float infinity to integer")):
        int(dlbridge.asarray(float("inf")))


# ---------------------------------------------------------------------------
# Indexing and transpose


@pytest.mark.parametrize("key, name", [(1.0, "float"), (True, "bool"), ([0], "list"), ("a", "str")])
def test_invalid_index_type_message(key, name):
    with pytest.raises(IndexError, match=exactly(
            f"only integers, slices, Ellipsis and None are valid indices, got {name}")):
        dlbridge.zeros((2, 3))[key]


@pytest.mark.parametrize("shape, key, ndim", [((1,) * 64, None, 65), ((1,) * 63, (None, None, None), 66),
                                              ((1,) * 64, (Ellipsis, None), 65)], ids=["64+1", "63+3", "ellipsis"])
def test_index_result_with_more_than_64_axes(shape, key, ndim):
    with pytest.raises(IndexError, match=exactly(f"the result would have {ndim} axes; at most 64 are allowed")):
        dlbridge.zeros(shape)[key]


def test_transpose_non_integer_axes_message():
    with pytest.raises(TypeError, match=exactly("transpose axes must be integers, got (0.0, 1)")):
        dlbridge.zeros((2, 3)).transpose(0.0, 1)


# ---------------------------------------------------------------------------
# Creation functions and the C++ exception mapping


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


# ---------------------------------------------------------------------------
# Device parsing


@pytest.mark.parametrize("spec", [(True, 0), (1, False)])
def test_device_bool_in_tuple(spec):
    with pytest.raises(TypeError, match=exactly(f"a device is (type, id), got {spec!r}")):
        Device(spec)


# ---------------------------------------------------------------------------
# Messages that name what was received, for values past the C types' range


def test_from_dlpack_with_device_of_a_non_producer_names_the_protocol():
    with pytest.raises(TypeError, match=exactly(
            "from_dlpack: expected an object with __dlpack__ (a DLPack producer), got object; "
            "use dlbridge.asarray for sequences, scalars and other array-likes")):
        dlbridge.from_dlpack(object(), device="cpu")


@pytest.mark.parametrize("pointer", [-8, 2**64])
@pytest.mark.parametrize("kind", ["cuda", "host"])
def test_interface_data_pointer_out_of_range(kind, pointer):
    owner = np.zeros(3, dtype=np.float32)
    if kind == "cuda":
        obj, name = CudaInterface(owner, data=(pointer, False)), "__cuda_array_interface__"
    else:
        obj = HostInterface({"shape": (3,), "typestr": "<f4", "data": (pointer, False), "version": 3}, owner)
        name = "__array_interface__"
    with pytest.raises(BufferError, match=exactly(f"{name}: expected a data pointer in [0, 2**64), got {pointer}")):
        dlbridge.asarray(obj)


def test_interface_extent_beyond_int64_names_the_axis():
    owner = np.zeros(3, dtype=np.float32)
    with pytest.raises(BufferError, match=exactly(
            "__cuda_array_interface__: axis 0: expected an extent that fits in int64, got 9223372036854775808")):
        dlbridge.asarray(CudaInterface(owner, shape=(2**63, 1)))


def test_interface_stride_beyond_int64_names_the_axis():
    owner = np.zeros(3, dtype=np.float32)
    obj = HostInterface({"shape": (3,), "typestr": "<f4", "data": (owner.ctypes.data, False),
                         "strides": (2**64,), "version": 3}, owner)
    with pytest.raises(BufferError, match=exactly(
            "__array_interface__: axis 0: expected a byte stride that fits in int64, got 18446744073709551616")):
        dlbridge.asarray(obj)


def test_device_type_beyond_int32_is_value_error():
    with pytest.raises(ValueError, match="device type -1180591620717411303424 is not a DLPack device type"):
        Device((-2**70, 0))


def test_slice_step_beyond_int64_on_one_element():
    # NumPy gives a one-element view; so does dlbridge.
    assert dlbridge.zeros(5)[::2**64].shape == (1,)
    assert np.zeros(5)[::2**64].shape == (1,)


def test_arrays_in_sequences_nest_and_arrays_are_not_scalars():
    assert dlbridge.asarray([np.array([1.0, 2.0])]).tolist() == [[1.0, 2.0]]
    assert dlbridge.asarray([[1], np.array([2])]).tolist() == [[1], [2]]
    with pytest.raises(TypeError, match=exactly("expected a scalar, got an array of shape (1,)")):
        dlbridge.full(2, np.array([3.0]))


def test_allocation_failure_names_the_size():
    with pytest.raises(MemoryError, match=exactly(
            "empty: cannot allocate 4611686018427387904 bytes for shape (4611686018427387904,) of int8")):
        dlbridge.empty(2**62, dtype="int8")
