"""The producer clauses of the other ways an array describes its memory:
NumPy's ``__array_interface__``, the ``__cuda_array_interface__`` (its
metadata: reading CUDA memory is the GPU tier's part) and the Python buffer
protocol (what makes memoryview, array.array and bytes checkable); and the
consumer clauses of ``__array_interface__``, which any machine can check
(the GPU tier has those of the CUDA array interface).

Each clause applies where the library's arrays have the interface. Where an
array also has ``__dlpack__``, the interface must describe the memory its
DLPack export describes: that is how an interface whose strides say C order
for data in another order is caught without reading the data.
"""
from __future__ import annotations

import ctypes
import itertools
import math
import struct
import sys
from dataclasses import dataclass
from typing import Any, Callable

from dlbridge.testing._abi import DTYPES, FLAG_READ_ONLY, buffer_address, c_order_strides, dtype_name
from dlbridge.testing._gpu import unavailable as gpu_unavailable
from dlbridge.testing._model import (Consumer, Failed, NotApplicable, Producer, Warned, clause, describe,
                                     expected_values)
from dlbridge.testing._producer import exported

ARRAY_INTERFACE = "NumPy array interface (v3)"
CUDA_ARRAY_INTERFACE = "CUDA Array Interface (v3)"
BUFFER = "Python buffer protocol (PEP 3118)"

# -- element types -------------------------------------------------------------

# A dtype of DTYPES as (kind, bytes), kind being the array interface's type
# code: b(oolean), i(nteger), u(nsigned), f(loat), c(omplex).
_KIND_OF_CODE = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_DTYPE_OF_ELEMENT = {(_KIND_OF_CODE[code], bits // 8): name for name, ((code, bits, _), _) in DTYPES.items()}
_NATIVE_ORDER = "<" if sys.byteorder == "little" else ">"
_LOWEST_ADDRESS = 4096  # the first page is never mapped


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _typestr_dtype(typestr) -> str:
    """The dtype of DTYPES a typestr describes; ValueError saying why none."""
    if not isinstance(typestr, str) or len(typestr) < 3 or typestr[0] not in "<>|" or not typestr[2:].isdigit():
        raise ValueError(f"{typestr!r} is not <byte order: <, > or |><type code><bytes>")
    order, kind, size = typestr[0], typestr[1], int(typestr[2:])
    if (kind, size) not in _DTYPE_OF_ELEMENT:
        raise ValueError(f"{typestr!r} describes no type the kit knows")
    if size > 1 and order != _NATIVE_ORDER:
        said = "byte order not relevant" if order == "|" else "the other byte order"
        raise ValueError(f"{typestr!r} says {said} for {size}-byte elements in {sys.byteorder}-endian memory")
    return _DTYPE_OF_ELEMENT[kind, size]


# PEP 3118 struct letters by kind; their sizes come from the struct module
_STRUCT_KINDS = {"?": "b", **dict.fromkeys("bhilqn", "i"), **dict.fromkeys("BHILQN", "u"), **dict.fromkeys("efd", "f")}


def _buffer_dtype(view: memoryview) -> str:
    """The dtype of DTYPES a buffer's struct format and itemsize describe;
    ValueError saying why none."""
    fmt = view.format
    prefix = fmt[:1] if fmt[:1] in ("@", "=", "<", ">", "!") else ""
    letter = fmt[len(prefix):]
    complex_ = letter[:1] == "Z"  # PEP 3118: Zf, Zd
    letter = letter[1:] if complex_ else letter
    kind = _STRUCT_KINDS.get(letter) if len(letter) == 1 else None
    if kind is None or (complex_ and kind != "f"):
        raise ValueError(f"format {fmt!r} describes no type the kit knows")
    try:
        size = struct.calcsize((prefix or "@") + letter) * (2 if complex_ else 1)
    except struct.error:  # n and N have native sizes only
        raise ValueError(f"format {fmt!r} is not struct syntax") from None
    if size > 1 and prefix in (("!", ">") if _NATIVE_ORDER == "<" else ("<",)):
        raise ValueError(f"format {fmt!r} says the other byte order for {size}-byte elements in "
                         f"{sys.byteorder}-endian memory")
    if view.itemsize != size:
        raise ValueError(f"format {fmt!r} has {size}-byte elements, itemsize says {view.itemsize}")
    dtype = _DTYPE_OF_ELEMENT.get(("c" if complex_ else kind, size))
    if dtype is None:
        raise ValueError(f"format {fmt!r} describes no type the kit knows")
    return dtype


def _problem(read: Callable[[Any], str], described, dtype: str) -> str | None:
    """What is wrong with `described` (a typestr, or a memoryview's format
    and itemsize, read by `read`) for data of `dtype`, or None."""
    try:
        said = read(described)
    except ValueError as error:
        return str(error)
    return None if said == dtype else f"{_show(described)} describes {said}"


def _show(described) -> str:
    return f"format {described.format!r}" if isinstance(described, memoryview) else repr(described)


def _over_dtypes(make: Callable[[str], tuple[Any, Any]], read: Callable[[Any], str], what: str) -> str:
    """Checks that the typestr or memoryview `make(dtype)` returns (with the
    array) describes `dtype`, for each dtype of DTYPES the factory makes. A
    factory that makes another dtype than the one asked for (JAX without its
    64-bit types makes float32 for float64) is taken at its word where its
    DLPack export says that dtype too."""
    seen, other, reasons = [], [], []
    for dtype in DTYPES:
        try:
            x, described = make(dtype)
        except NotApplicable as reason:
            reasons.append(str(reason))
            continue
        problem = _problem(read, described, dtype)
        if problem is None:
            seen.append(f"{dtype} {_show(described)}")
            continue
        made = _dlpack_layout(x)
        if made is not None and made.dtype not in (None, dtype) and _problem(read, described, made.dtype) is None:
            other.append(f"asked for {dtype}, the factory made {made.dtype}")
            continue
        raise Failed(f"{what} of the {dtype} array: {problem}")
    if not seen:
        raise NotApplicable("; ".join(dict.fromkeys(reasons + other)))
    return ", ".join(seen) + (f" (not checked: {'; '.join(other)})" if other else "")


# -- the DLPack export, to compare with ---------------------------------------------


@dataclass(frozen=True)
class _Layout:
    address: int                # data + byte_offset
    shape: tuple[int, ...]
    strides: tuple[int, ...]    # in bytes; C order where the export has none
    dtype: str | None
    read_only: bool


def _dlpack_layout(x) -> _Layout | None:
    """What x's DLPack export describes, or None where x has no __dlpack__
    that exports (the producer clauses judge that)."""
    if not callable(getattr(x, "__dlpack__", None)):
        return None
    for keywords in ({"max_version": (1, 3)}, {}):
        try:
            tensor = exported(x, **keywords)
        except Exception:
            continue
        try:
            t, (_, bits, lanes) = tensor.tensor, tensor.dtype
            itemsize = bits * lanes // 8
            strides = tensor.strides if tensor.strides is not None else c_order_strides(tensor.shape)
            return _Layout((t.data or 0) + t.byte_offset, tensor.shape, tuple(s * itemsize for s in strides),
                           dtype_name(tensor.dtype), bool(tensor.flags & FLAG_READ_ONLY))
        finally:
            tensor.release()
    return None


def _same_strides(shape, strides, others) -> bool:
    """Whether two byte strides lay out `shape` alike (the stride of an axis
    of extent 1 is never used; an empty array has no layout)."""
    return math.prod(shape) == 0 or all(a == b for n, a, b in zip(shape, strides, others) if n > 1)


def _c_strides(shape, itemsize: int) -> tuple[int, ...]:
    return tuple(s * itemsize for s in c_order_strides(shape))


def _read(address: int, shape, strides, dtype: str) -> list:
    """The `dtype` elements at `address` laid out by `shape` and byte
    `strides`, in C order."""
    layout = struct.Struct("<" + DTYPES[dtype][1])
    values = []
    for index in itertools.product(*(range(n) for n in shape)):
        raw = layout.unpack(ctypes.string_at(address + sum(i * s for i, s in zip(index, strides)), layout.size))
        values.append(complex(*raw) if len(raw) == 2 else raw[0])
    return values


def _flat(nested) -> list:
    return [v for item in nested for v in _flat(item)] if isinstance(nested, list) else [nested]


# -- __array_interface__ and __cuda_array_interface__ ------------------------------


class _Interface:
    """One of the two dictionaries, as the clauses ask for it."""

    def __init__(self, attribute: str, cuda: bool):
        self.attribute, self.cuda = attribute, cuda

    def of(self, producer: Producer, shape, dtype: str, read_only: bool = False) -> tuple[Any, dict]:
        """(the factory's array, its dictionary): for the CUDA array interface,
        a CUDA array where the usual one has none and a GPU is usable.
        NotApplicable where the array has no such interface."""
        x = producer.make(shape, dtype, read_only=read_only)
        no_gpu = gpu_unavailable() if self.cuda else None
        if self.cuda and not hasattr(x, self.attribute) and no_gpu is None:
            x = producer.make(shape, dtype, read_only=read_only, device="cuda")
        if not hasattr(x, self.attribute):
            raise NotApplicable(f"{type(x).__qualname__} has no {self.attribute}"
                                + (f" (CUDA arrays are not checked: {no_gpu})" if no_gpu else ""))
        found = getattr(x, self.attribute)
        if not isinstance(found, dict):
            raise Failed(f"{self.attribute} is a {type(found).__name__}, not a dict")
        return x, found

    def any(self, producer: Producer, read_only: bool = False) -> tuple[tuple[int, ...], str, Any, dict]:
        """(shape, dtype, array, dictionary) of the first small case the
        factory makes."""
        shape, dtype, _ = producer.make_any(read_only=read_only)
        return (shape, dtype, *self.of(producer, shape, dtype, read_only))


AI = _Interface("__array_interface__", cuda=False)
CAI = _Interface("__cuda_array_interface__", cuda=True)


def _version(interface: _Interface) -> Callable[[Producer], str]:
    def check(producer: Producer) -> str:
        *_, found = interface.any(producer)
        if "version" not in found:
            raise Failed("no version key")
        if found["version"] != 3 or not _is_int(found["version"]):
            raise Failed(f"version {found['version']!r}")
        return "version 3"
    return check


def _typestr(interface: _Interface) -> Callable[[Producer], str]:
    def check(producer: Producer) -> str:
        def make(dtype):
            x, found = interface.of(producer, (3,), dtype)
            return x, found.get("typestr")
        return "typestr of " + _over_dtypes(make, _typestr_dtype, "typestr")
    return check


def _shape(interface: _Interface) -> Callable[[Producer], str]:
    def check(producer: Producer) -> str:
        shape, dtype, _, found = interface.any(producer)
        cases = [(shape, found)]
        try:
            cases.append(((), interface.of(producer, (), dtype)[1]))
        except NotApplicable:
            pass  # no 0-d arrays
        for shape, found in cases:
            said = found.get("shape")
            if not isinstance(said, tuple) or not all(_is_int(n) for n in said):
                raise Failed(f"shape {said!r} of a {list(shape)} array: not a tuple of ints")
            if said != shape:
                raise Failed(f"shape {said!r} of a {list(shape)} array")
        return ", ".join(f"shape {found['shape']!r}" for _, found in cases)
    return check


def _stated_strides(found: dict, shape, dtype: str) -> tuple[int, ...]:
    """The byte strides the dictionary states (C order for None or absent);
    Failed where they are neither."""
    strides = found.get("strides")
    if strides is None:
        return _c_strides(shape, DTYPES[dtype][0][1] // 8)
    if not isinstance(strides, tuple) or len(strides) != len(shape) or not all(_is_int(s) for s in strides):
        raise Failed(f"strides {strides!r} of a {list(shape)} array: neither None nor a tuple of {len(shape)} ints")
    return strides


def _strides(interface: _Interface) -> Callable[[Producer], str]:
    def check(producer: Producer) -> str:
        shape, dtype, x, found = interface.any(producer)
        strides = _stated_strides(found, shape, dtype)
        said = "strides absent" if "strides" not in found else f"strides {found['strides']!r}"
        said += " (C order)" if found.get("strides") is None else ""
        exported = _dlpack_layout(x)
        if exported is None:
            return f"{said} (no DLPack export to compare the layout with)"
        if not _same_strides(shape, strides, exported.strides):
            raise Failed(f"{said} of a {list(shape)} {dtype} array, whose DLPack export has byte strides "
                         f"{exported.strides}")
        return f"{said}, as the DLPack export lays out the {list(shape)} {dtype} array"
    return check


def _data_tuple(data, size: int, cuda: bool) -> tuple[int, bool]:
    """(address, read-only) of an (address, read-only) data tuple, checked:
    the CUDA array interface asks for a bool and for 0 as the address of an
    empty array."""
    flag = data[1] if isinstance(data, tuple) and len(data) == 2 else None
    if not (isinstance(data, tuple) and len(data) == 2 and _is_int(data[0]) and 0 <= data[0] < 2 ** 64
            and (isinstance(flag, bool) or (not cuda and flag in (0, 1)))):
        raise Failed(f"data {data!r}: not an (address, read-only {'bool' if cuda else 'flag'}) pair")
    if size and data[0] < _LOWEST_ADDRESS:
        raise Failed(f"data {data!r} of an array of {size} elements: "
                     + ("a NULL pointer" if not data[0] else "an address no memory lies at"))
    if cuda and not size and data[0]:
        raise Failed(f"data {data!r} of an empty array: not 0")
    return data[0], bool(flag)


def _interface_data(x, found: dict, shape) -> tuple[int, bool, str]:
    """(address, read-only, description) of an __array_interface__'s data,
    in each of its forms."""
    data = found.get("data")
    if isinstance(data, tuple):
        address, read_only = _data_tuple(data, math.prod(shape), cuda=False)
        return address, read_only, f"data ({address:#x}, {read_only})"
    owner, said = (x, "data absent: x's own buffer") if data is None else (data, f"data {type(data).__name__}")
    try:
        address, read_only = buffer_address(owner)
    except (TypeError, BufferError) as error:
        raise Failed(f"{said}, which exports no buffer ({error})") from None
    offset = found.get("offset", 0)
    if not _is_int(offset):
        raise Failed(f"offset {offset!r}: not an int")
    return address + offset, read_only, f"{said} (read-only {read_only}) at offset {offset}"


def _data(interface: _Interface) -> Callable[[Producer], str]:
    def check(producer: Producer) -> str:
        shape, dtype, _ = producer.make_any()
        seen = []
        for case, shape, read_only in (("usual", shape, False), ("read-only", shape, True), ("empty", (0,), False)):
            try:
                x, found = interface.of(producer, shape, dtype, read_only)
            except NotApplicable:
                if case == "usual":
                    raise
                continue  # the factory makes no such array
            if interface.cuda:
                address, flag = _data_tuple(found.get("data"), math.prod(shape), cuda=True)
                said = f"data ({address:#x}, {flag})"
            else:
                address, flag, said = _interface_data(x, found, shape)
            if read_only and not flag:
                raise Failed(f"{said} of read-only data: says writable")
            seen.append(f"{said} of the {case} array")
        return "; ".join(seen)
    return check


def _values(producer: Producer) -> str:
    shape, dtype, x, found = AI.any(producer)
    if _problem(_typestr_dtype, found.get("typestr"), dtype):
        raise NotApplicable(f"typestr {found.get('typestr')!r} (see producer.array-interface.typestr)")
    try:
        address, _, said = _interface_data(x, found, shape)
    except Failed as error:
        raise NotApplicable(f"{error} (see producer.array-interface.data)") from None
    try:
        strides = _stated_strides(found, shape, dtype)
        exported = _dlpack_layout(x)
        if exported is not None and not _same_strides(shape, strides, exported.strides):
            raise Failed(f"strides {found.get('strides')!r}, not the DLPack export's")
    except Failed as error:  # reading would go astray
        raise NotApplicable(f"{error} (see producer.array-interface.strides)") from None
    values = _read(address, shape, strides, dtype)
    if values != expected_values(shape, dtype):
        raise Failed(f"{said}, strides {found.get('strides')!r}: read {values} from a {list(shape)} {dtype} array")
    return f"{values} read from a {list(shape)} {dtype} array"


AI_SENTENCES = {
    "version": "An integer showing the version of the interface (i.e. 3 for this version).",
    "typestr": "The basic string format consists of 3 parts: a character describing the byteorder of the data "
               "(<: little-endian, >: big-endian, |: not-relevant), a character code giving the basic type of the "
               "array, and an integer providing the number of bytes the type uses.",
    "shape": "Tuple whose elements are the array size in each dimension.",
    "strides": "Either None to indicate a C-style contiguous array or a tuple of strides which provides the number "
               "of bytes needed to jump to the next array element in the corresponding dimension.",
    "data": "A 2-tuple whose first argument is a Python integer that points to the data-area storing the array "
            "contents. ... The second entry in the tuple is a read-only flag (true means the data area is "
            "read-only).",
}
CAI_SENTENCES = {
    "version": "An integer for the version of the interface being exported. The current version is 3.",
    "typestr": "The type string. This has the same definition as typestr in the numpy array interface.",
    "shape": "A tuple of int (or long) representing the size of each dimension.",
    "strides": "If strides is not given, or it is None, the array is in C-contiguous layout. Otherwise, a tuple of "
               "int (or long) is explicitly given for representing the number of bytes to skip to access the next "
               "element at each dimension.",
    "data": "The first element is the data pointer as a Python int (or long). The data must be device-accessible. "
            "For zero-size arrays, use 0 here. The second element is the read-only flag as a Python bool.",
}
TITLES = {
    "version": "its version is 3",
    "typestr": "its typestr names each dtype, in the machine's byte order",
    "shape": "its shape is the array's, a tuple of ints",
    "strides": "its strides are None for C order or byte strides, and lay the data out as the DLPack export does",
    "data": "its data is an (address, read-only) pair, read-only for read-only data",
}
_CHECKS = {"version": _version, "typestr": _typestr, "shape": _shape, "strides": _strides, "data": _data}
for _name, _make in _CHECKS.items():
    clause(f"producer.array-interface.{_name}", title=f"__array_interface__: {TITLES[_name]}",
           source=ARRAY_INTERFACE, cites=AI_SENTENCES[_name])(_make(AI))
clause("producer.array-interface.values", title="__array_interface__: the data it points at holds the array's values",
       source=ARRAY_INTERFACE,
       cites="This pointer must point to the first element of data (in other words any offset is always ignored "
             "in this case).")(_values)
for _name, _make in _CHECKS.items():
    clause(f"producer.cuda-array-interface.{_name}", title=f"__cuda_array_interface__: {TITLES[_name]}",
           source=CUDA_ARRAY_INTERFACE, cites=CAI_SENTENCES[_name])(_make(CAI))


@clause("producer.cuda-array-interface.stream", title="__cuda_array_interface__: its stream is absent, None or a "
        "stream other than 0", source=CUDA_ARRAY_INTERFACE,
        cites="0: This is disallowed as it would be ambiguous between None and the default stream, and also between "
              "the legacy and per-thread default streams.")
def cai_stream(producer: Producer) -> str:
    *_, found = CAI.any(producer)
    if "stream" not in found:
        return "stream absent"
    stream = found["stream"]
    if stream is not None and (not _is_int(stream) or stream == 0):
        raise Failed(f"stream {stream!r}" + (": 0 is disallowed" if stream == 0 else ": neither None nor an int"))
    return f"stream {stream!r}"


@clause("producer.cuda-array-interface.mask", title="__cuda_array_interface__: its mask is absent, None or a CUDA "
        "array", source=CUDA_ARRAY_INTERFACE,
        cites="mask: None or object exposing the __cuda_array_interface__")
def cai_mask(producer: Producer) -> str:
    *_, found = CAI.any(producer)
    mask = found.get("mask")
    if mask is not None and not hasattr(mask, "__cuda_array_interface__"):
        raise Failed(f"mask {type(mask).__name__}: neither None nor an object with __cuda_array_interface__")
    return "mask absent" if "mask" not in found else f"mask {'None' if mask is None else type(mask).__name__}"


# -- the buffer protocol --------------------------------------------------------


def _view(producer: Producer, shape=None, dtype=None, read_only: bool = False):
    """(shape, dtype, the factory's array, a memoryview of it); without
    `shape`, of the first small case the factory makes. NotApplicable where
    the array exports no buffer."""
    if shape is None:
        shape, dtype, x = producer.make_any(read_only=read_only)
    else:
        x = producer.make(shape, dtype, read_only=read_only)
    try:
        return shape, dtype, x, memoryview(x)
    except TypeError as error:
        raise NotApplicable(f"{type(x).__qualname__} exports no buffer ({error})") from None


@clause("producer.buffer.format", title="the buffer's format and itemsize name each dtype", source=BUFFER,
        cites="The returned buffer must have true format information if this flag is provided.")
def buffer_format(producer: Producer) -> str:
    return "buffer of " + _over_dtypes(lambda dtype: _view(producer, (3,), dtype)[2:], _buffer_dtype, "buffer")


@clause("producer.buffer.shape", title="the buffer's ndim, shape, strides and length are the array's", source=BUFFER,
        cites="an array of Py_ssize_t of length ndims indicating the shape of the memory as an N-D array.")
def buffer_shape(producer: Producer) -> str:
    shape, _, _, view = _view(producer)
    said = f"ndim {view.ndim}, shape {view.shape}, strides {view.strides}, {view.nbytes} bytes"
    if view.ndim != len(shape) or view.shape != shape or len(view.strides) != len(shape):
        raise Failed(f"{said} of a {list(shape)} array")
    if view.nbytes != math.prod(shape) * view.itemsize:
        raise Failed(f"{said} of a {list(shape)} array of {view.itemsize}-byte items")
    return said


@clause("producer.buffer.readonly", title="the buffer is read-only where the data is", source=BUFFER,
        cites="1 means the memory is readonly, zero means the memory is writable.")
def buffer_readonly(producer: Producer) -> str:
    seen = []
    for read_only in (False, True):
        try:
            _, _, x, view = _view(producer, read_only=read_only)
        except NotApplicable:
            if read_only:
                continue
            raise
        exported = _dlpack_layout(x)
        if read_only and not view.readonly:
            raise Failed("a writable buffer of read-only data")
        if exported is not None and exported.read_only and not view.readonly:
            raise Failed("a writable buffer of data the DLPack export flags READ_ONLY")
        seen.append(f"readonly {view.readonly} for {'read-only' if read_only else 'the usual'} data")
    return "; ".join(seen)


@clause("producer.buffer.values", title="the buffer holds the array's values", source=BUFFER,
        cites="indicating the number of bytes to skip to get to the next element in each dimension.")
def buffer_values(producer: Producer) -> str:
    shape, dtype, _, view = _view(producer)
    if _problem(_buffer_dtype, view, dtype):
        raise NotApplicable(f"format {view.format!r} (see producer.buffer.format)")
    try:
        values, how = _flat(view.tolist()), "tolist()"
    except NotImplementedError:  # a format memoryview cannot convert: the bytes in C order, unpacked
        layout = struct.Struct("<" + DTYPES[dtype][1])
        values, how = [complex(*v) if len(v) == 2 else v[0] for v in layout.iter_unpack(view.tobytes())], "tobytes()"
    if values != expected_values(shape, dtype):
        raise Failed(f"memoryview(x).{how} of a {list(shape)} {dtype} array: {values}")
    return f"memoryview(x).{how} of a {list(shape)} {dtype} array: {values}"


@clause("producer.buffer.dlpack-agrees", title="the buffer and the DLPack export share the same memory, laid out "
        "alike", source=BUFFER, cites="buf: a pointer to the start of the memory for the object")
def buffer_dlpack_agrees(producer: Producer) -> str:
    _, _, x, view = _view(producer)
    exported = _dlpack_layout(x)
    if exported is None:
        raise NotApplicable(f"{type(x).__qualname__} has no DLPack export to compare the buffer with")
    address, _ = buffer_address(x)
    said = f"buffer at {address:#x}, strides {view.strides}; DLPack data at {exported.address:#x}, " \
           f"byte strides {exported.strides}"
    if view.suboffsets:
        raise Failed(f"{said}: the buffer has suboffsets, which DLPack cannot describe")
    if (view.nbytes and address != exported.address) or not _same_strides(view.shape, view.strides, exported.strides):
        raise Failed(said)
    return said


# -- consumers of __array_interface__ -------------------------------------------------------

# What the kit hands consumers: float32 0, 1, ..., 5 as a (2, 3) C-order array.
_SHAPE, _TYPESTR = (2, 3), _NATIVE_ORDER + "f4"


class ArrayInterfaceOnly:
    """An object with an __array_interface__ and nothing else, over float32
    0, 1, ..., 5 it keeps."""

    def __init__(self, *, read_only: bool = False, **entries: Any):
        self.memory = (ctypes.c_float * 6)(*range(6))
        self._interface = {"shape": _SHAPE, "typestr": _TYPESTR, "data": (ctypes.addressof(self.memory), read_only),
                           "version": 3, **entries}

    @property
    def __array_interface__(self) -> dict:
        return dict(self._interface)


def _interface_offer(consumer: Consumer, *, read_only: bool = False,
                     **entries: Any) -> tuple[Any, ArrayInterfaceOnly]:
    """(the read-back of what the consumer made, the object) of an
    __array_interface__ with `entries`; NotApplicable where the consumer
    does not take one with explicit strides either."""
    from dlbridge.testing._consumer import read_back
    control = ArrayInterfaceOnly(strides=(12, 4))
    try:
        read_back(consumer.consume(control))
    except Failed:
        raise
    except Exception as error:
        raise NotApplicable(f"the consumer does not import an __array_interface__ (with strides (12, 4) it raised "
                            f"{describe(error)})") from None
    given = ArrayInterfaceOnly(read_only=read_only, **entries)
    return read_back(consumer.consume(given)), given


def _c_order(consumer: Consumer, said: str, **entries: Any) -> str:
    got, _ = _interface_offer(consumer, **entries)
    if got.shape != _SHAPE or got.values != expected_values(_SHAPE, "float32"):
        raise Failed(f"{said}: the result reads {got.describe()} holding {got.values}, not 0, 1, ..., 5 in shape "
                     f"{_SHAPE} (C order)")
    return f"{said}: the result reads 0, 1, ..., 5 in shape {_SHAPE} (read through {got.via})"


_STRIDES = ("strides (optional) Either None to indicate a C-style contiguous array or a tuple of strides which "
            "provides the number of bytes needed to jump to the next array element in the corresponding dimension.")


@clause("consumer.array-interface.strides-absent",
        title="an __array_interface__ without \"strides\" is imported in C order", source=ARRAY_INTERFACE,
        cites=_STRIDES + " ... Default: None")
def consumer_strides_absent(consumer: Consumer) -> str:
    return _c_order(consumer, "no \"strides\"")


@clause("consumer.array-interface.strides-none",
        title="an __array_interface__ with \"strides\": None is imported in C order", source=ARRAY_INTERFACE,
        cites=_STRIDES)
def consumer_strides_none(consumer: Consumer) -> str:
    return _c_order(consumer, "\"strides\": None", strides=None)


@clause("consumer.array-interface.read-only",
        title="an __array_interface__ whose data is read-only becomes a read-only array, or a copy",
        source=ARRAY_INTERFACE,
        cites="data (optional) A 2-tuple whose first argument is a Python integer that points to the data-area "
              "storing the array contents. ... The second entry in the tuple is a read-only flag (true means the "
              "data area is read-only).")
def consumer_read_only(consumer: Consumer) -> str:
    from dlbridge.testing._consumer import read_only_verdict
    got, given = _interface_offer(consumer, read_only=True, strides=(12, 4))
    return read_only_verdict(got, got.address == ctypes.addressof(given.memory), "data (address, True)",
                             "the object's")
