"""Producers with one bug each, for test_kit_producer.py: the kit's producer
clauses must catch each with exactly the clause meant for it.

Every factory here follows the kit's protocol, FACTORY(shape, dtype, *,
read_only=False). `correct` makes SeededArray, a DLPack 1.3 producer on the
CPU built by hand with dlbridge.testing._abi; each other factory makes a
subclass that changes one thing. A module of its own (not the test file) so
the kit's child processes can import these by name:
check("producer", "kit_seeded_producers:deleter_needs_gil").
"""
from __future__ import annotations

import ctypes
import math
import warnings
from ctypes import CFUNCTYPE, PYFUNCTYPE, c_char_p, c_void_p, py_object

from dlbridge.testing._abi import (DELETER, DTYPES, FLAG_IS_COPIED, FLAG_IS_SUBBYTE_TYPE_PADDED, FLAG_READ_ONLY,
                                   DLManagedTensor, DLManagedTensorVersioned, ManagedTensor, _static_name,
                                   c_order_strides)
from dlbridge.testing._model import VIEWS, expected_values

_CTYPES = {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
           "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double}

# The capsule API with the capsule as a bare address: a destructor runs on a
# capsule whose reference count is already 0, which a py_object would revive.
_capi = ctypes.PyDLL(None)
_capi.PyCapsule_GetName.restype = c_char_p
_capi.PyCapsule_GetName.argtypes = [c_void_p]
_capi.PyCapsule_GetPointer.restype = c_void_p
_capi.PyCapsule_GetPointer.argtypes = [c_void_p, c_char_p]
_capi.PyCapsule_New.restype = py_object
_capi.PyCapsule_New.argtypes = [c_void_p, c_void_p, c_void_p]

_WITH_GIL = PYFUNCTYPE(None, c_void_p)
_DESTRUCTOR = CFUNCTYPE(None, c_void_p)  # PyCapsule_Destructor


def _destroy(capsule: int, *, checks_name: bool) -> None:
    """The producer's capsule destructor, as DLPack's Python specification
    writes it: nothing for a consumed (used_...) capsule, else the deleter."""
    name = _capi.PyCapsule_GetName(capsule)
    if checks_name and name.startswith(b"used_"):
        return
    address = _capi.PyCapsule_GetPointer(capsule, name)
    struct = (DLManagedTensorVersioned if name.endswith(b"_versioned") else DLManagedTensor).from_address(address)
    if struct.deleter:
        _WITH_GIL(struct.deleter)(address)


_checking_destructor = _DESTRUCTOR(lambda capsule: _destroy(capsule, checks_name=True))
_careless_destructor = _DESTRUCTOR(lambda capsule: _destroy(capsule, checks_name=False))
_forgetful_destructor = _DESTRUCTOR(lambda capsule: None)


_made: dict[int, ManagedTensor] = {}  # struct address -> the tensor (kept for good: its memory must not move)


def _delete(address: int) -> None:
    """The deleter: lets go of the array, as NumPy's Py_DECREFs its owner."""
    _made[address].owner = None


_deleter = DELETER(_delete)
_leaky_deleter = DELETER(lambda address: None)  # keeps the array


# The kit's views (dlbridge.testing._model.VIEWS) of a C-order base: (element
# strides, first element) of each.
_VIEW_LAYOUTS = {"transposed": ((1, 2), 0), "strided": ((2,), 0), "offset": ((1,), 2), "reversed": ((-1,), 5)}


class SeededArray:
    """A correct producer: versioned 1.3 capsules with READ_ONLY and
    IS_COPIED truthful, strides always, NULL data when empty, byte_offset 0;
    legacy capsules for max_version None or (0, x), refused (BufferError)
    for read-only data; BufferError for a stream or another device. Each
    tensor holds the array until its deleter runs. A view (`view`) lies in
    the memory of its base, with the view's strides and first element."""

    destructor = _checking_destructor
    deleter = _deleter
    holds_the_array = True

    def __init__(self, shape: tuple[int, ...], dtype: str, *, read_only: bool = False, view: str | None = None):
        if dtype not in _CTYPES:
            raise NotImplementedError(f"no ctypes type for {dtype}")
        self.shape, self.dtype, self.read_only, self.view = tuple(shape), dtype, read_only, view
        self.storage = self._storage()

    def _storage(self):
        """The elements (of the view's base), in a ctypes array of their type."""
        values = expected_values(self.shape if self.view is None else VIEWS[self.view][0], self.dtype)
        return (_CTYPES[self.dtype] * max(len(values), 1))(*values)

    def _layout(self) -> tuple[tuple[int, ...] | None, int]:
        """(element strides, first element) of the array in its storage."""
        if self.view is not None:
            return _VIEW_LAYOUTS[self.view]
        return (c_order_strides(self.shape) if self.shape else None), 0

    def _data(self, storage) -> int | None:
        first = self._layout()[1] * ctypes.sizeof(_CTYPES[self.dtype])
        return ctypes.addressof(storage) + first if math.prod(self.shape) else None

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if stream is not None:
            raise BufferError(f"stream must be None on the CPU, not {stream!r}")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"cannot export to {tuple(dl_device)}")
        versioned = max_version is not None and max_version[0] >= 1
        if self.read_only and not versioned:
            raise BufferError("read-only data has no legacy export")
        return self._capsule(versioned, copied=bool(copy))

    def _capsule(self, versioned: bool, *, copied: bool):
        storage = self._storage() if copied else self.storage
        managed = self._managed(storage, versioned, copied=copied)
        managed.storage, managed.owner = storage, self if self.holds_the_array else None
        _made[managed.address] = managed
        return _capi.PyCapsule_New(managed.address, _static_name(b"dltensor_versioned" if versioned else b"dltensor"),
                                   ctypes.cast(self.destructor, c_void_p).value)

    def _managed(self, storage, versioned: bool, *, copied: bool) -> ManagedTensor:
        flags = (FLAG_READ_ONLY if self.read_only and not copied else 0) | (FLAG_IS_COPIED if copied else 0)
        managed = ManagedTensor((), shape=self.shape, strides=self._layout()[0],
                                dtype=DTYPES[self.dtype][0], ctype=_CTYPES[self.dtype], data=self._data(storage),
                                flags=flags, version=(1, 3), versioned=versioned)
        managed.struct.deleter = ctypes.cast(self.deleter, c_void_p).value
        return managed


class _Unexportable:
    """What a library has that DLPack cannot carry (strings): refused, with BufferError."""

    error = BufferError

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **keywords):
        raise self.error("DLPack has no strings")


def correct(shape, dtype, *, read_only=False, view=None):
    if dtype == "unexportable":
        return _Unexportable()
    return SeededArray(shape, dtype, read_only=read_only, view=view)


# -- one bug each ------------------------------------------------------------------------------------


class _BufferOnly:
    """nanobind's old ndarray: a function that returns a capsule, but no
    __dlpack__ of its own (nor any other protocol)."""

    def __init__(self, array: SeededArray) -> None:
        self.array = array

    def to_dlpack(self):
        return self.array.__dlpack__()


def buffer_only(shape, dtype, *, read_only=False):
    return _BufferOnly(SeededArray(shape, dtype, read_only=read_only))


class _SaysCuda(SeededArray):
    def __dlpack_device__(self):
        return (2, 0)  # the data is host memory, and the capsule says (1, 0)


def gpu_label_on_host_memory(shape, dtype, *, read_only=False, view=None):
    return _SaysCuda(shape, dtype, read_only=read_only, view=view)


class _Deprecated(SeededArray):
    def __dlpack__(self, **keywords):
        warnings.warn("__dlpack__ is deprecated, call to_dlpack()", DeprecationWarning, stacklevel=2)
        return super().__dlpack__(**keywords)


def deprecated_dlpack(shape, dtype, *, read_only=False, view=None):
    return _Deprecated(shape, dtype, read_only=read_only, view=view)


class _OffsetTwice(SeededArray):
    """data points at the first element, and byte_offset says how far it is
    from the start of the storage as well."""

    PAD = 16  # bytes before the elements, and after them, so a reader going too far stays in the storage

    def _storage(self):
        elements = super()._storage()
        storage = (ctypes.c_uint8 * (ctypes.sizeof(elements) + 2 * self.PAD))()
        ctypes.memmove(ctypes.addressof(storage) + self.PAD, elements, ctypes.sizeof(elements))
        return storage

    def _data(self, storage):
        return ctypes.addressof(storage) + self.PAD if math.prod(self.shape) else None

    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        managed.struct.dl_tensor.byte_offset = self.PAD if managed.struct.dl_tensor.data else 0
        return managed


def byte_offset_counted_twice(shape, dtype, *, read_only=False):  # no views: they would show the bug too
    return _OffsetTwice(shape, dtype, read_only=read_only)


class _ValueErrorDevice(SeededArray):
    def __dlpack__(self, *, dl_device=None, **keywords):
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise ValueError(f"unsupported device {tuple(dl_device)}")
        return super().__dlpack__(dl_device=dl_device, **keywords)


def value_error_for_device(shape, dtype, *, read_only=False, view=None):
    return _ValueErrorDevice(shape, dtype, read_only=read_only, view=view)


class _ReadOnlyUnflagged(SeededArray):
    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        if versioned:
            managed.struct.flags &= ~FLAG_READ_ONLY
        return managed


def read_only_unflagged(shape, dtype, *, read_only=False, view=None):
    return _ReadOnlyUnflagged(shape, dtype, read_only=read_only, view=view)


class _AlwaysCopied(SeededArray):
    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        if versioned:
            managed.struct.flags |= FLAG_IS_COPIED
        return managed


def is_copied_without_copy(shape, dtype, *, read_only=False, view=None):
    return _AlwaysCopied(shape, dtype, read_only=read_only, view=view)


class _NullStrides(SeededArray):
    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        managed.struct.dl_tensor.strides = None  # in a 1.3 tensor: C order, as before 1.2
        return managed


def null_strides_in_1_3(shape, dtype, *, read_only=False):  # no views: they would show the bug too
    return _NullStrides(shape, dtype, read_only=read_only)


class _DeleterTwice(SeededArray):
    destructor = _careless_destructor  # calls the deleter of a used_ capsule too


def deleter_twice(shape, dtype, *, read_only=False, view=None):
    return _DeleterTwice(shape, dtype, read_only=read_only, view=view)


# Without the GIL, PyErr_Occurred reads a NULL thread state: a crash.
_TOUCHES_PYTHON = ctypes.cast(ctypes.pythonapi.PyErr_Occurred, c_void_p).value


class _DeleterNeedsGil(SeededArray):
    holds_the_array = False  # PyErr_Occurred would not let go of it

    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        managed.struct.deleter = _TOUCHES_PYTHON
        return managed


def deleter_needs_gil(shape, dtype, *, read_only=False, view=None):
    return _DeleterNeedsGil(shape, dtype, read_only=read_only, view=view)


# -- one bug each, beyond the classes seen in the field: every clause can fail ---------------------------------


class _LegacyOnly(SeededArray):
    """Not a bug: a producer from before the array API's 2023.12 revision,
    whose __dlpack__ knows no keyword but stream."""

    def __dlpack__(self, stream=None):
        return super().__dlpack__(stream=stream)


def legacy_only(shape, dtype, *, read_only=False, view=None):
    return _LegacyOnly(shape, dtype, read_only=read_only, view=view)


class _SwallowsKeywords(SeededArray):
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None, **ignored):
        return super().__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def swallows_unknown_keywords(shape, dtype, *, read_only=False, view=None):
    return _SwallowsKeywords(shape, dtype, read_only=read_only, view=view)


class _VersionedForNone(SeededArray):
    def __dlpack__(self, *, max_version=None, **keywords):
        return super().__dlpack__(max_version=(1, 3) if max_version is None else max_version, **keywords)


def versioned_without_max_version(shape, dtype, *, read_only=False, view=None):
    return _VersionedForNone(shape, dtype, read_only=read_only, view=view)


class _VersionedForOld(SeededArray):
    def __dlpack__(self, *, max_version=None, **keywords):
        old = max_version is not None and max_version[0] < 1
        return super().__dlpack__(max_version=(1, 3) if old else max_version, **keywords)


def versioned_for_0_x(shape, dtype, *, read_only=False, view=None):
    return _VersionedForOld(shape, dtype, read_only=read_only, view=view)


class _RefusesOldMinor(SeededArray):
    def __dlpack__(self, *, max_version=None, **keywords):
        if max_version is not None and max_version[0] == 1 and max_version < (1, 3):
            raise BufferError(f"max_version {max_version} is older than 1.3")
        return super().__dlpack__(max_version=max_version, **keywords)


def refuses_1_0(shape, dtype, *, read_only=False, view=None):
    return _RefusesOldMinor(shape, dtype, read_only=read_only, view=view)


class _RefusesUnknownMinor(SeededArray):
    def __dlpack__(self, *, max_version=None, **keywords):
        if max_version is not None and max_version[0] == 1 and max_version[1] > 3:
            raise BufferError(f"max_version {max_version} is newer than 1.3")
        return super().__dlpack__(max_version=max_version, **keywords)


def refuses_1_99(shape, dtype, *, read_only=False, view=None):
    return _RefusesUnknownMinor(shape, dtype, read_only=read_only, view=view)


class _RefusesNewMajor(SeededArray):
    def __dlpack__(self, *, max_version=None, **keywords):
        if max_version is not None and max_version[0] > 1:
            raise BufferError(f"max_version {max_version} is not DLPack 1")
        return super().__dlpack__(max_version=max_version, **keywords)


def refuses_2_0(shape, dtype, *, read_only=False, view=None):
    return _RefusesNewMajor(shape, dtype, read_only=read_only, view=view)


class _Version2(SeededArray):
    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        if versioned:
            managed.struct.version.major = 2  # in 1.x's layout
        return managed


def version_2_for_1_3(shape, dtype, *, read_only=False, view=None):
    return _Version2(shape, dtype, read_only=read_only, view=view)


class _CopyTrueShares(SeededArray):
    def _capsule(self, versioned, *, copied):
        return super()._capsule(versioned, copied=False)


def copy_true_shares(shape, dtype, *, read_only=False, view=None):
    return _CopyTrueShares(shape, dtype, read_only=read_only, view=view)


class _CopyFalseCopies(SeededArray):
    def __dlpack__(self, *, copy=None, **keywords):
        return super().__dlpack__(copy=True if copy is False else copy, **keywords)


def copy_false_copies(shape, dtype, *, read_only=False, view=None):
    return _CopyFalseCopies(shape, dtype, read_only=read_only, view=view)


class _RefusesCpuTarget(SeededArray):
    def __dlpack__(self, *, dl_device=None, **keywords):
        if dl_device is not None:
            raise BufferError(f"dl_device {tuple(dl_device)} is not supported")
        return super().__dlpack__(**keywords)


def refuses_dl_device_cpu(shape, dtype, *, read_only=False, view=None):
    return _RefusesCpuTarget(shape, dtype, read_only=read_only, view=view)


class _DeviceId1(SeededArray):
    def __dlpack_device__(self):
        return (1, 1)

    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        managed.struct.dl_tensor.device.device_id = 1
        return managed


def cpu_device_id_1(shape, dtype, *, read_only=False, view=None):
    return _DeviceId1(shape, dtype, read_only=read_only, view=view)


class _BoolAsUint8(SeededArray):
    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        if self.dtype == "bool":
            managed.struct.dl_tensor.dtype.code = 1  # (1, 8, 1): uint8
        return managed


def bool_as_uint8(shape, dtype, *, read_only=False, view=None):
    return _BoolAsUint8(shape, dtype, read_only=read_only, view=view)


class _PaddedFlag(SeededArray):
    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        if versioned:
            managed.struct.flags |= FLAG_IS_SUBBYTE_TYPE_PADDED
        return managed


def padded_flag_on_whole_bytes(shape, dtype, *, read_only=False, view=None):
    return _PaddedFlag(shape, dtype, read_only=read_only, view=view)


class _RefusesEmpty(SeededArray):
    def __dlpack__(self, **keywords):
        if not math.prod(self.shape):
            raise BufferError("an empty array has no data to export")
        return super().__dlpack__(**keywords)


def refuses_empty(shape, dtype, *, read_only=False, view=None):
    return _RefusesEmpty(shape, dtype, read_only=read_only, view=view)


class _Forgetful(SeededArray):
    destructor = _forgetful_destructor  # never calls the deleter: a capsule dropped unconsumed leaks


def destructor_never_deletes(shape, dtype, *, read_only=False, view=None):
    return _Forgetful(shape, dtype, read_only=read_only, view=view)


class _LeakyDeleter(SeededArray):
    deleter = _leaky_deleter  # keeps its reference to the array


def deleter_keeps_the_array(shape, dtype, *, read_only=False, view=None):
    return _LeakyDeleter(shape, dtype, read_only=read_only, view=view)


# -- no bug: what the specification leaves free ------------------------------------------------------


class _EmptyStrides(SeededArray):
    """Strides of 0 for an empty array, as NumPy 2.4 exports them (shape
    (4, 0, 4) had strides (0, 4, 1) before; apache/tvm-ffi#607): an empty
    array has no layout, so any strides are right."""

    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        if math.prod(self.shape) == 0:
            for axis in range(len(self.shape)):
                managed.strides_array[axis] = 0
        return managed


def zero_strides_when_empty(shape, dtype, *, read_only=False, view=None):
    return _EmptyStrides(shape, dtype, read_only=read_only, view=view)


class _ValueErrorOnCopyFalse(SeededArray):
    """Copies to "CUDA" when asked (a tensor labelled (2, 0) over host
    memory: the kit only reads the label here), but raises ValueError, not
    BufferError, when copy=False forbids that copy."""

    def __dlpack__(self, *, dl_device=None, copy=None, **keywords):
        if dl_device is not None and tuple(dl_device) == (2, 0):
            if copy is False:
                raise ValueError("copy=False, but (2, 0) needs a copy")
            capsule = super().__dlpack__(copy=True, **keywords)
            name = _capi.PyCapsule_GetName(id(capsule))
            address = _capi.PyCapsule_GetPointer(id(capsule), name)
            struct = (DLManagedTensorVersioned if name.endswith(b"_versioned") else DLManagedTensor)
            struct.from_address(address).dl_tensor.device.device_type = 2
            return capsule
        return super().__dlpack__(dl_device=dl_device, copy=copy, **keywords)


def value_error_on_copy_false(shape, dtype, *, read_only=False, view=None):
    return _ValueErrorOnCopyFalse(shape, dtype, read_only=read_only, view=view)


# -- one bug each, found by hand on real libraries (issue 35) ------------------------------------------------


class _NoDestructor(SeededArray):
    destructor = None  # a capsule dropped unconsumed never calls the deleter


def capsule_without_destructor(shape, dtype, *, read_only=False, view=None):
    return _NoDestructor(shape, dtype, read_only=read_only, view=view)


class _ReadOnlyAsLegacy(SeededArray):
    """Read-only data exported as the legacy struct, whatever is asked: its
    consumer takes it as writable."""

    def __dlpack__(self, *, max_version=None, copy=None, **keywords):
        if self.read_only:
            return self._capsule(False, copied=bool(copy))
        return super().__dlpack__(max_version=max_version, copy=copy, **keywords)


def read_only_as_legacy(shape, dtype, *, read_only=False, view=None):
    return _ReadOnlyAsLegacy(shape, dtype, read_only=read_only, view=view)


class _CopyAsLegacy(SeededArray):
    """copy=True answered with a legacy capsule, which cannot say IS_COPIED."""

    def __dlpack__(self, *, copy=None, **keywords):
        if copy:
            return self._capsule(False, copied=True)
        return super().__dlpack__(copy=copy, **keywords)


def copy_as_legacy(shape, dtype, *, read_only=False, view=None):
    return _CopyAsLegacy(shape, dtype, read_only=read_only, view=view)


class _CudaOnHostMemory(SeededArray):
    """Host memory labelled kDLCUDA by both __dlpack_device__ and the
    capsule: consistent, and false."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *, dl_device=None, **keywords):
        return super().__dlpack__(dl_device=None if dl_device == (2, 0) else dl_device, **keywords)

    def _managed(self, storage, versioned, *, copied):
        managed = super()._managed(storage, versioned, copied=copied)
        managed.struct.dl_tensor.device.device_type = 2
        return managed


def cuda_label_on_host_memory(shape, dtype, *, read_only=False, view=None):
    return _CudaOnHostMemory(shape, dtype, read_only=read_only, view=view)


class _ViewAsCOrder(SeededArray):
    """The classic export bug: a view exported with C-order strides from its base's start."""

    def _layout(self):
        return (c_order_strides(self.shape) if self.shape else None), 0


def view_as_c_order(shape, dtype, *, read_only=False, view=None):
    return _ViewAsCOrder(shape, dtype, read_only=read_only, view=view)


class _TypeErrorWhenUnexportable(_Unexportable):
    error = TypeError  # a consumer takes it for "keyword not supported", and asks again


def type_error_when_unexportable(shape, dtype, *, read_only=False, view=None):
    if dtype == "unexportable":
        return _TypeErrorWhenUnexportable()
    return SeededArray(shape, dtype, read_only=read_only, view=view)
