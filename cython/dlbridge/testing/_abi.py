"""DLPack structs, capsules and exchange tables read and built by hand with ctypes.

This module does not use dlbridge: it is an independent reading of the DLPack
1.3 ABI (dlpack.h), the DLPack Python capsule rules and the C exchange API,
so the conformance kit (and dlbridge's own tests) can build arbitrary (also
invalid) tensors, count deleter calls, and read what any producer exports
field by field.
"""
from __future__ import annotations

import ctypes
import math
import struct
import threading
from typing import Any
from ctypes import (CFUNCTYPE, POINTER, PYFUNCTYPE, Structure, byref, c_char_p, c_int, c_int32, c_int64, c_uint8,
                    c_uint16, c_uint32, c_uint64, c_void_p, py_object)

# -- the ABI ------------------------------------------------------------------


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", c_void_p),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert ctypes.sizeof(DLTensor) == 48
assert ctypes.sizeof(DLManagedTensor) == 64
assert ctypes.sizeof(DLManagedTensorVersioned) == 80

# Both deleters take a pointer to their own struct; void* is enough to call them.
DELETER = CFUNCTYPE(None, c_void_p)

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_IS_SUBBYTE_TYPE_PADDED = 1 << 2

FLOAT64 = (2, 64, 1)
INT32 = (0, 32, 1)

# -- the CPython capsule API --------------------------------------------------

_api = ctypes.PyDLL(None)  # our own handle: argtypes set here stay ours
_api.PyCapsule_New.restype = py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_void_p, c_void_p]
_api.PyCapsule_GetName.restype = c_char_p
_api.PyCapsule_GetName.argtypes = [py_object]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [py_object, c_char_p]
_api.PyCapsule_SetName.restype = c_int
_api.PyCapsule_SetName.argtypes = [py_object, c_void_p]
_api.PyCapsule_IsValid.restype = c_int
_api.PyCapsule_IsValid.argtypes = [py_object, c_char_p]
_api.PyCapsule_GetDestructor.restype = c_void_p
_api.PyCapsule_GetDestructor.argtypes = [py_object]
_api.Py_DecRef.argtypes = [py_object]
_api.Py_DecRef.restype = None

# Capsule names need static storage: these buffers live as long as the module.
_names: dict[bytes, ctypes.Array] = {}


def _static_name(name: bytes | None):
    if name is None:
        return None
    if name not in _names:
        _names[name] = ctypes.create_string_buffer(name)
    return ctypes.addressof(_names[name])


def capsule_name(capsule) -> bytes | None:
    """The capsule's current name (None for a NULL name)."""
    return _api.PyCapsule_GetName(capsule)


def capsule_has_destructor(capsule) -> bool:
    """Whether the capsule still has a destructor (a consumer may clear it
    rather than rename the capsule)."""
    return bool(_api.PyCapsule_GetDestructor(capsule))


_MANAGED_STRUCTS: dict[bytes, type[Structure]] = {b"dltensor_versioned": DLManagedTensorVersioned,
                                                  b"dltensor": DLManagedTensor}


def capsule_struct(capsule) -> tuple[bytes, Structure]:
    """(name, DLManagedTensorVersioned or DLManagedTensor) of an unconsumed
    capsule, read in place: the capsule keeps ownership (it is not renamed),
    and the struct keeps the capsule alive."""
    name = capsule_name(capsule)
    struct_type = _MANAGED_STRUCTS.get(name or b"")
    if name is None or struct_type is None:
        raise AssertionError(f"not an unconsumed DLPack capsule: {name!r}")
    managed = struct_type.from_address(_api.PyCapsule_GetPointer(capsule, name))
    managed.capsule = capsule  # the struct lives in the capsule's memory
    return name, managed


# -- hand-built managed tensors -----------------------------------------------

_registry: dict[int, "ManagedTensor"] = {}  # struct address -> its ManagedTensor (kept forever)
stray_deleter_calls: list[int] = []  # deleter calls with an address we never handed out


def _count_deleter_call(address):
    # No lock here: a deleter called while a Python exception is in flight
    # fails at its first C-level call, and must not leave a lock held. The
    # GIL makes the dict lookup and the count safe.
    owner = _registry.get(address)
    if owner is None:
        stray_deleter_calls.append(address)
        return
    owner.deleter_calls += 1
    owner.deleter_threads.append(threading.get_ident())


_counting_deleter = DELETER(_count_deleter_call)


class ManagedTensor:
    """A DLManagedTensorVersioned (or legacy DLManagedTensor) made by hand.

    Owns every buffer it points into (data, shape, strides) for its whole life;
    instances are kept in a registry, so pointers handed to a consumer never
    dangle even if a test drops its reference. `deleter_calls` counts calls of
    the struct's deleter.
    """

    def __init__(self, values=(), *, shape=None, strides=None, dtype=FLOAT64, ctype=ctypes.c_double,
                 device=(1, 0), byte_offset=0, flags=0, version=(1, 3), versioned=True,
                 data="buffer", ndim=None, deleter=True):
        values = list(values)
        self.buffer = (ctype * max(len(values), 1))(*values)
        if shape is None:
            shape = (len(values),)
        self.shape_array = (c_int64 * max(len(shape), 1))(*shape)
        self.strides_array = None if strides is None else (c_int64 * max(len(strides), 1))(*strides)
        self.versioned = versioned
        self.struct = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        t = self.struct.dl_tensor
        if data == "buffer":
            t.data = ctypes.addressof(self.buffer)
        else:
            t.data = data  # None (NULL) or an explicit address
        t.device = DLDevice(*device)
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype = DLDataType(*dtype)
        t.shape = ctypes.cast(self.shape_array, POINTER(c_int64)) if shape else None
        t.strides = None if self.strides_array is None else ctypes.cast(self.strides_array, POINTER(c_int64))
        t.byte_offset = byte_offset
        self.struct.manager_ctx = None
        self.struct.deleter = ctypes.cast(_counting_deleter, c_void_p).value if deleter else None
        if versioned:
            self.struct.version = DLPackVersion(*version)
            self.struct.flags = flags
        self.deleter_calls = 0
        self.deleter_threads = []  # the idents of the threads that called the deleter
        _registry[self.address] = self

    @property
    def address(self) -> int:
        return ctypes.addressof(self.struct)

    @property
    def data_address(self) -> int:
        return ctypes.addressof(self.buffer)

    def capsule(self, name: Any = ..., *, destructor: bool = False):
        """A new capsule holding this struct; the name defaults to the right
        one for the struct. Its destructor does nothing: the producer plays
        it (see Producer). Without `destructor` it has none; with it, an
        inert one (dlbridge._dlpack.INERT_DESTRUCTOR), so that whether a
        consumer cleared it shows (capsule_has_destructor)."""
        if name is ...:
            name = b"dltensor_versioned" if self.versioned else b"dltensor"
        inert = None
        if destructor:
            from dlbridge._dlpack import INERT_DESTRUCTOR  # type: ignore[import-not-found]  # compiled, no stub
            inert = INERT_DESTRUCTOR
        return _api.PyCapsule_New(self.address, _static_name(name), inert)


class DevicelessProducer:
    """A minimal DLPack producer with `__dlpack__` alone, which hands out one
    prepared capsule (no `__dlpack_device__`: the tensor says where it is).

    It plays the producer's capsule destructor too: when the producer goes,
    a capsule that was not consumed (its name does not start with "used_")
    has the deleter called, as DLPack's python_spec asks. (A real destructor
    written as a ctypes callback cannot run safely while an exception is in
    flight, which is exactly when failed imports drop capsules; Python's
    __del__ saves and restores the pending exception.)
    """

    def __init__(self, managed: ManagedTensor, name: Any = ...):
        self.managed = managed
        self.capsule = managed.capsule(name)
        self.calls: list[dict] = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.capsule

    def __del__(self):
        name = capsule_name(self.capsule)
        if name is None or not name.startswith(b"used_"):
            _count_deleter_call(self.managed.address)


class Producer(DevicelessProducer):
    """A DevicelessProducer whose `__dlpack_device__` returns `device`."""

    def __init__(self, managed: ManagedTensor, name: Any = ..., device=(1, 0)):
        super().__init__(managed, name)
        self._device = device

    def __dlpack_device__(self):
        return self._device


# -- reading what a producer exports --------------------------------------------


# The kit's arrays hold a few elements; a tensor that claims more than this
# is read no further than its struct (a list of 2**40 values would take the
# clause's whole time and then blame the wrong thing).
MAX_ELEMENTS_READ = 1 << 20


class Consumed:
    """A capsule consumed the way a DLPack consumer does it: renamed to used_...,
    its struct readable through `managed`/`tensor`, and the deleter called once
    by `release()`."""

    def __init__(self, capsule):
        name = capsule_name(capsule)
        struct_type = _MANAGED_STRUCTS.get(name or b"")
        if name is None or struct_type is None:
            raise AssertionError(f"not an unconsumed DLPack capsule: {name!r}")
        self.versioned = struct_type is DLManagedTensorVersioned
        self.name = name
        self.address = _api.PyCapsule_GetPointer(capsule, name)
        assert _api.PyCapsule_SetName(capsule, _static_name(b"used_" + name)) == 0
        self.managed = struct_type.from_address(self.address)
        self.tensor = self.managed.dl_tensor
        self.released = False

    @property
    def version(self):
        return (self.managed.version.major, self.managed.version.minor)

    @property
    def flags(self):
        return self.managed.flags if self.versioned else 0

    @property
    def shape(self):
        t = self.tensor
        return tuple(t.shape[i] for i in range(t.ndim))

    @property
    def strides(self):
        t = self.tensor
        return None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))

    @property
    def dtype(self):
        d = self.tensor.dtype
        return (d.code, d.bits, d.lanes)

    @property
    def device(self):
        d = self.tensor.device
        return (d.device_type, d.device_id)

    def read(self, element=ctypes.c_double):
        """The elements in C order, following shape, strides and byte_offset;
        `element` is a ctypes type or the name of a dtype of DTYPES."""
        if isinstance(element, str):
            size, unpack = DTYPES[element][0][1] // 8, _unpackers[element]
        else:
            size, unpack = ctypes.sizeof(element), lambda address: element.from_address(address).value
        t = self.tensor
        base = (t.data or 0) + t.byte_offset
        shape, strides = self.shape, self.strides
        count = math.prod(shape)
        if count > MAX_ELEMENTS_READ:
            raise ValueError(f"the tensor claims {count} elements (shape {list(shape)}); the kit reads at most "
                             f"{MAX_ELEMENTS_READ}")
        if strides is None:
            strides = c_order_strides(shape)
        out = []

        def walk(axis, offset):
            if axis == len(shape):
                out.append(unpack(base + offset * size))
                return
            for i in range(shape[axis]):
                walk(axis + 1, offset + i * strides[axis])

        walk(0, 0)
        return out

    def release(self):
        assert not self.released, "released twice"
        self.released = True
        if self.managed.deleter:
            DELETER(self.managed.deleter)(self.address)


def c_order_strides(shape) -> tuple[int, ...]:
    """The element strides of a C-contiguous array of `shape`."""
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= max(extent, 1)
    return tuple(strides)


# -- dtypes ---------------------------------------------------------------------

# The dtypes the conformance kit asks factories for, by NumPy's name: their
# DLDataType and the struct format of one element (little-endian; a complex
# number is two floats).
DTYPES: dict[str, tuple[tuple[int, int, int], str]] = {
    "bool": ((6, 8, 1), "?"),
    "int8": ((0, 8, 1), "b"), "int16": ((0, 16, 1), "h"), "int32": ((0, 32, 1), "i"), "int64": ((0, 64, 1), "q"),
    "uint8": ((1, 8, 1), "B"), "uint16": ((1, 16, 1), "H"), "uint32": ((1, 32, 1), "I"),
    "uint64": ((1, 64, 1), "Q"),
    "float16": ((2, 16, 1), "e"), "float32": ((2, 32, 1), "f"), "float64": ((2, 64, 1), "d"),
    "complex64": ((5, 64, 1), "2f"), "complex128": ((5, 128, 1), "2d"),
}


def _unpacker(fmt: str):
    layout = struct.Struct("<" + fmt)
    if fmt.startswith("2"):
        return lambda address: complex(*layout.unpack(ctypes.string_at(address, layout.size)))
    return lambda address: layout.unpack(ctypes.string_at(address, layout.size))[0]


_unpackers = {name: _unpacker(fmt) for name, (_, fmt) in DTYPES.items()}


def dtype_name(dtype: tuple[int, int, int]) -> str | None:
    """The name in DTYPES of a (code, bits, lanes), or None."""
    return next((name for name, (known, _) in DTYPES.items() if known == tuple(dtype)), None)


# -- the C exchange API (DLPack 1.3) ----------------------------------------------


class DLPackExchangeAPIHeader(Structure):
    pass


DLPackExchangeAPIHeader._fields_ = [("version", DLPackVersion), ("prev_api", POINTER(DLPackExchangeAPIHeader))]

SLOTS = ("managed_tensor_allocator", "managed_tensor_from_py_object_no_sync",
         "managed_tensor_to_py_object_no_sync", "dltensor_from_py_object_no_sync", "current_work_stream")


class DLPackExchangeAPI(Structure):
    _fields_ = [("header", DLPackExchangeAPIHeader)] + [(name, c_void_p) for name in SLOTS]


assert ctypes.sizeof(DLPackExchangeAPIHeader) == 16
assert ctypes.sizeof(DLPackExchangeAPI) == 56

SET_ERROR = CFUNCTYPE(None, c_void_p, c_char_p, c_char_p)
ALLOCATOR_ARGS = (POINTER(DLTensor), POINTER(c_void_p), c_void_p, SET_ERROR)
STREAM_ARGS = (c_int32, c_int32, POINTER(c_void_p))
EXCHANGE_CAPSULE_NAME = b"dlpack_exchange_api"


class Table:
    """An exchange table and its slots as callables. Slots taking Python
    objects are called holding the GIL (PYFUNCTYPE: a pending exception is
    raised after the call); `nogil` ones release it, as C code may."""

    def __init__(self, capsule):
        self.address = _api.PyCapsule_GetPointer(capsule, EXCHANGE_CAPSULE_NAME)
        self.struct = DLPackExchangeAPI.from_address(self.address)
        s = self.struct
        # A NULL slot becomes a NULL function pointer (false; never called).
        self.allocate = PYFUNCTYPE(c_int, *ALLOCATOR_ARGS)(s.managed_tensor_allocator or 0)
        self.allocate_nogil = CFUNCTYPE(c_int, *ALLOCATOR_ARGS)(s.managed_tensor_allocator or 0)
        self.from_object = PYFUNCTYPE(c_int, py_object, POINTER(c_void_p))(
            s.managed_tensor_from_py_object_no_sync or 0)
        self.to_object = PYFUNCTYPE(c_int, c_void_p, POINTER(c_void_p))(s.managed_tensor_to_py_object_no_sync or 0)
        self.dltensor = PYFUNCTYPE(c_int, py_object, POINTER(DLTensor))(s.dltensor_from_py_object_no_sync or 0)
        self.stream = PYFUNCTYPE(c_int, *STREAM_ARGS)(s.current_work_stream or 0)
        self.stream_nogil = CFUNCTYPE(c_int, *STREAM_ARGS)(s.current_work_stream or 0)

    def managed(self, obj) -> DLManagedTensorVersioned:
        out = c_void_p()
        assert self.from_object(obj, byref(out)) == 0 and out.value
        return DLManagedTensorVersioned.from_address(out.value)

    def wrap(self, address: int):
        """managed_tensor_to_py_object_no_sync: the object, owning `address`."""
        out = c_void_p()
        assert self.to_object(address, byref(out)) == 0 and out.value
        return steal(out.value)


def exchange_capsule(address: int):
    """A capsule named like an exchange table's, holding `address`."""
    return _api.PyCapsule_New(address, _static_name(EXCHANGE_CAPSULE_NAME), None)


def steal(address: int):
    """The object behind a new reference handed out as a PyObject*."""
    obj = ctypes.cast(address, py_object).value
    _api.Py_DecRef(obj)  # ctypes took its own reference
    return obj


def delete(managed: DLManagedTensorVersioned) -> None:
    DELETER(managed.deleter)(ctypes.addressof(managed))


def shape_of(t: DLTensor):
    return tuple(t.shape[i] for i in range(t.ndim))


def strides_of(t: DLTensor):
    return tuple(t.strides[i] for i in range(t.ndim))


# -- the buffer protocol ----------------------------------------------------------------


class Py_buffer(Structure):
    """CPython's Py_buffer (stable since Python 3.3)."""
    _fields_ = [("buf", c_void_p), ("obj", c_void_p), ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", c_int), ("ndim", c_int), ("format", c_char_p), ("shape", POINTER(ctypes.c_ssize_t)),
                ("strides", POINTER(ctypes.c_ssize_t)), ("suboffsets", POINTER(ctypes.c_ssize_t)),
                ("internal", c_void_p)]


_api.PyObject_GetBuffer.argtypes = [py_object, POINTER(Py_buffer), c_int]
_api.PyObject_GetBuffer.restype = c_int
_api.PyBuffer_Release.argtypes = [POINTER(Py_buffer)]
_api.PyBuffer_Release.restype = None

# The request flags of PEP 3118 (Include/pybuffer.h).
PyBUF_SIMPLE, PyBUF_WRITABLE, PyBUF_FORMAT, PyBUF_ND = 0, 0x1, 0x4, 0x8
PyBUF_STRIDES = 0x10 | PyBUF_ND
PyBUF_C_CONTIGUOUS = 0x20 | PyBUF_STRIDES
PyBUF_F_CONTIGUOUS = 0x40 | PyBUF_STRIDES
PyBUF_ANY_CONTIGUOUS = 0x80 | PyBUF_STRIDES
PyBUF_INDIRECT = 0x100 | PyBUF_STRIDES
PyBUF_FULL_RO = PyBUF_INDIRECT | PyBUF_FORMAT  # what memoryview asks


def get_buffer(obj, flags: int) -> Py_buffer:
    """obj's buffer as a C consumer asking with `flags` gets it
    (PyObject_GetBuffer); raises what the exporter raises. Give it back with
    release_buffer."""
    view = Py_buffer()
    _api.PyObject_GetBuffer(obj, ctypes.byref(view), flags)
    return view


def release_buffer(view: Py_buffer) -> None:
    _api.PyBuffer_Release(ctypes.byref(view))


def buffer_address(obj) -> tuple[int, bool]:
    """(address of the first element, readonly) of obj's buffer, asked for as
    memoryview asks (ctypes' from_buffer would need a writable one); raises
    what the exporter raises (TypeError where obj has no buffer)."""
    view = get_buffer(obj, PyBUF_FULL_RO)
    try:
        return view.buf or 0, bool(view.readonly)
    finally:
        release_buffer(view)
