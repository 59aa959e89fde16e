"""The producer clauses of the DLPack C exchange table (dlpack.h 1.3): the
table published on the array's type as ``__dlpack_c_exchange_api__`` (a
capsule) or, in DLPack 1.2's form, ``__c_dlpack_exchange_api__`` (an int),
read and called through the kit's ctypes reading (dlbridge.testing._abi):
its header, its ``prev_api`` chain, its slots, and what each slot does with
the library's own arrays, checked against their ``__dlpack__`` export.

A table that cannot be read (wrong capsule, a header no consumer can trust)
fails the clause about that, and makes the clauses that would call it not
applicable; so does a NULL slot for the clauses that call that slot.
"""
from __future__ import annotations

import ctypes
import gc
import sys
from ctypes import POINTER, byref, c_int64, c_void_p
from dataclasses import dataclass
from typing import Any

from dlbridge.testing._abi import (DTYPES, EXCHANGE_CAPSULE_NAME, FLAG_READ_ONLY, SET_ERROR, SLOTS,
                                   DLDataType, DLDevice, DLManagedTensorVersioned, DLPackExchangeAPI,
                                   DLPackExchangeAPIHeader, DLTensor, ManagedTensor, Table, _api, c_order_strides,
                                   capsule_name, delete, exchange_capsule, steal)
from dlbridge.testing._model import Failed, NotApplicable, Producer, clause, describe, expected_values
from dlbridge.testing._producer import exported

DLPACK_H = "dlpack.h"
CAPSULE_ATTRIBUTE = "__dlpack_c_exchange_api__"  # DLPack 1.3: a capsule
INT_ATTRIBUTE = "__c_dlpack_exchange_api__"      # DLPack 1.2: an int
OPTIONAL_SLOT = "dltensor_from_py_object_no_sync"
# No mapped table lies below this address (the first page is never mapped);
# a table is pointer-aligned; a longer prev_api chain is taken to loop.
LOWEST_ADDRESS = 4096
MAX_CHAIN = 16
# A well-formed prototype no allocator can serve: 2**62 x 4 float32
# elements, 2**66 bytes. (A negative ndim is no DLTensor at all: PyTorch's
# allocator reads its shape as a huge array and crashes.)
IMPOSSIBLE_SHAPE = (2 ** 62, 4)


@dataclass(frozen=True)
class _Published:
    form: str           # how it was found: "Tensor.__dlpack_c_exchange_api__"
    address: int        # of its header


def _readable(producer: Producer) -> list[_Published]:
    """The tables the producer's array publishes that can be read; not
    applicable where there are none."""
    _, _, x = producer.make_any()
    found, _ = _published(x)
    if not found:
        raise NotApplicable("no exchange table can be read (see producer.exchange.capsule)")
    return found


def _published(x) -> tuple[list[_Published], list[str]]:
    """The tables type(x) publishes that can be read, and the problems of
    those that cannot; NotApplicable where it publishes none (None counts
    as none, as for DLPack consumers)."""
    kind = type(x)
    found, problems = [], []
    for attribute in (CAPSULE_ATTRIBUTE, INT_ATTRIBUTE):
        form = f"{kind.__qualname__}.{attribute}"
        value = getattr(kind, attribute, None)
        if value is None:
            if getattr(x, attribute, None) is not None:
                problems.append(f"{attribute} is set on the array, not on its type")
            continue
        if attribute == CAPSULE_ATTRIBUTE:
            if type(value).__name__ != "PyCapsule":
                problems.append(f"{form} is a {type(value).__name__}, not a capsule")
                continue
            name = capsule_name(value)
            if name != EXCHANGE_CAPSULE_NAME:
                problems.append(f"{form} is a capsule named {name!r}, not {EXCHANGE_CAPSULE_NAME!r}")
                continue
            address = _api.PyCapsule_GetPointer(value, EXCHANGE_CAPSULE_NAME) or 0
        elif type(value) is not int or not 0 <= value < 2 ** 64:
            problems.append(f"{form} is {value!r}, not an address")
            continue
        else:
            address = value
        if address < LOWEST_ADDRESS or address % ctypes.alignment(c_void_p):
            problems.append(f"{form} points at {address:#x}, which cannot hold a table")
            continue
        found.append(_Published(form, address))
    if not found and not problems:
        raise NotApplicable(f"{kind.__qualname__} publishes no exchange table ({CAPSULE_ATTRIBUTE} or "
                            f"{INT_ATTRIBUTE})")
    return found, problems


def _version(address: int) -> tuple[int, int]:
    header = DLPackExchangeAPIHeader.from_address(address)
    return header.version.major, header.version.minor


def _chain(address: int) -> tuple[list[tuple[int, tuple[int, int]]], str | None]:
    """The headers from `address` down its prev_api chain, as (address,
    version), and what ends the chain other than NULL, or None."""
    chain: list[tuple[int, tuple[int, int]]] = []
    while address:
        if address < LOWEST_ADDRESS or address % ctypes.alignment(c_void_p):
            return chain, f"points at {address:#x}, which cannot hold a table"
        if any(address == seen for seen, _ in chain):
            return chain, f"loops back to the {'.'.join(map(str, _version(address)))} table at {address:#x}"
        if len(chain) == MAX_CHAIN:
            return chain, f"is longer than {MAX_CHAIN} tables"
        chain.append((address, _version(address)))
        address = ctypes.cast(DLPackExchangeAPIHeader.from_address(address).prev_api, c_void_p).value or 0
    return chain, None


def _show(chain) -> str:
    return " -> ".join(f"{major}.{minor}" for _, (major, minor) in chain)


def _version_1(table: _Published) -> int | None:
    """The address of the DLPack 1.x table of `table` (itself, or one down
    its prev_api chain from a newer major version), or None."""
    chain, _ = _chain(table.address)
    return next((address for address, (major, _) in chain if major == 1), None)


def _table(producer: Producer, *slots: str) -> tuple[tuple[int, ...], str, Any, Table]:
    """(shape, dtype, an array of the factory, the 1.x table of its type):
    the first table published, with `slots` non-NULL; NotApplicable
    otherwise."""
    shape, dtype, x = producer.make_any()
    found, _ = _published(x)
    for table in found:
        address = _version_1(table)
        if address is None:
            continue
        api = DLPackExchangeAPI.from_address(address)
        missing = [slot for slot in slots if not getattr(api, slot)]
        if missing:
            raise NotApplicable(f"{table.form}: {' and '.join(missing)} NULL (see producer.exchange.slots)")
        return shape, dtype, x, Table(exchange_capsule(address))
    raise NotApplicable("no DLPack 1.x exchange table can be read (see producer.exchange.capsule and "
                        "producer.exchange.version)")


@clause("producer.exchange.capsule", title="the exchange table is published on the type: a capsule named "
        "\"dlpack_exchange_api\" (or DLPack 1.2's int)", source=DLPACK_H,
        cites="This attribute must be set on the type as a Python PyCapsule with name \"dlpack_exchange_api\".")
def capsule(producer: Producer) -> str:
    _, _, x = producer.make_any()
    found, problems = _published(x)
    if problems:
        raise Failed("; ".join(problems))
    return "; ".join(f"{table.form} -> table at {table.address:#x}" for table in found)


@clause("producer.exchange.version", title="the exchange table is DLPack 1.x (or chains to a 1.x table)",
        source=DLPACK_H,
        cites="The provided DLPack version the consumer must check major version compatibility before using "
              "this struct.")
def version(producer: Producer) -> str:
    found = _readable(producer)
    seen = []
    for table in found:
        (major, minor) = _version(table.address)
        if major != 1 and _version_1(table) is None:
            raise Failed(f"{table.form}: version {major}.{minor}, and no 1.x table down its prev_api chain")
        seen.append(f"{table.form}: version {major}.{minor}" + ("" if major == 1 else ", chaining to a 1.x table"))
    return "; ".join(seen)


@clause("producer.exchange.prev-api", title="the prev_api chain is finite and goes to older versions",
        source=DLPACK_H, cites="Optional pointer to an older DLPackExchangeAPI in the chain.")
def prev_api(producer: Producer) -> str:
    found = _readable(producer)
    seen = []
    for table in found:
        chain, ending = _chain(table.address)
        if ending:
            raise Failed(f"{table.form}: the chain {_show(chain)} {ending}")
        for (_, newer), (_, older) in zip(chain, chain[1:]):
            if older >= newer:
                raise Failed(f"{table.form}: the chain {_show(chain)}: a {older[0]}.{older[1]} table after "
                             f"{newer[0]}.{newer[1]}, not an older one")
        seen.append(f"{table.form}: {_show(chain)} -> NULL")
    return "; ".join(seen)


@clause("producer.exchange.slots", title="every slot but dltensor_from_py_object_no_sync is set",
        source=DLPACK_H, cites="This function must not be NULL.")
def slots(producer: Producer) -> str:
    _, _, x = producer.make_any()
    found, _ = _published(x)
    tables = [(table, address) for table in found if (address := _version_1(table)) is not None]
    if not tables:
        raise NotApplicable("no DLPack 1.x exchange table can be read (see producer.exchange.version)")
    seen = []
    for table, address in tables:
        api = DLPackExchangeAPI.from_address(address)
        missing = [slot for slot in SLOTS if slot != OPTIONAL_SLOT and not getattr(api, slot)]
        if missing:
            raise Failed(f"{table.form}: {', '.join(missing)} NULL")
        seen.append(f"{table.form}: " + ("all five slots set" if getattr(api, OPTIONAL_SLOT) else
                                         f"the four required slots set, {OPTIONAL_SLOT} NULL (optional)"))
    return "; ".join(seen)


# -- the slots at work --------------------------------------------------------------


def _flat_tensor(t: DLTensor) -> tuple:
    """(shape, strides of the axes that count, dtype, device, address of the
    first element) of a DLTensor, for comparing two descriptions."""
    shape = tuple(t.shape[i] for i in range(t.ndim)) if t.ndim and t.shape else ()
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.ndim and t.strides else c_order_strides(shape)
    empty = 0 in shape
    return (shape, None if empty else tuple(s for n, s in zip(shape, strides) if n > 1),
            (t.dtype.code, t.dtype.bits, t.dtype.lanes), (t.device.device_type, t.device.device_id),
            None if empty else (t.data or 0) + t.byte_offset)


_FIELDS = ("shape", "strides of the axes of extent > 1", "dtype", "device", "data + byte_offset")


def _disagreement(t: DLTensor, x) -> str | None:
    """Where the DLTensor `t` describes x otherwise than x.__dlpack__()'s
    export does, or None (also where x's __dlpack__ does not export)."""
    try:
        reference = exported(x, max_version=(1, 3))
    except Exception:
        return None
    try:
        mine, theirs = _flat_tensor(t), _flat_tensor(reference.tensor)
    finally:
        reference.release()
    for name, a, b in zip(_FIELDS, mine, theirs):
        if a != b:
            return f"{name} {a}, __dlpack__ exports {b}"
    return None


def _from_object(table: Table, x) -> DLManagedTensorVersioned:
    out = c_void_p()
    status = table.from_object(x, byref(out))  # a Python exception it sets is raised here
    if status != 0:
        raise Failed(f"managed_tensor_from_py_object_no_sync returned {status} without setting an exception")
    if not out.value:
        raise Failed("managed_tensor_from_py_object_no_sync returned 0 and no tensor (NULL)")
    return DLManagedTensorVersioned.from_address(out.value)


def _release(managed: DLManagedTensorVersioned) -> None:
    if managed.deleter:
        delete(managed)


@clause("producer.exchange.from-py-object", title="managed_tensor_from_py_object_no_sync describes the array as "
        "__dlpack__ does, READ_ONLY included", source=DLPACK_H,
        cites="The owning DLManagedTensorVersioned* or NULL on failure with a Python exception set.")
def from_py_object(producer: Producer) -> str:
    shape, dtype, x, table = _table(producer, "managed_tensor_from_py_object_no_sync")
    cases = [("", x)]
    try:
        cases.append(("read-only ", producer.make(shape, dtype, read_only=True)))
    except NotApplicable:
        pass  # the factory makes no read-only arrays
    seen = []
    for read_only, x in cases:
        case = f"{read_only}{list(shape)} {dtype} array"
        managed = _from_object(table, x)
        try:
            version, flags, t = (managed.version.major, managed.version.minor), managed.flags, managed.dl_tensor
            made = _flat_tensor(t)
            if version[0] != 1 or made[0] != shape or made[2] != DTYPES[dtype][0]:
                raise Failed(f"a version {version[0]}.{version[1]} tensor of shape {made[0]}, dtype {made[2]} for a "
                             f"{case}")
            problem = _disagreement(t, x)
            if problem:
                raise Failed(f"for a {case}: {problem}")
            if read_only and not flags & FLAG_READ_ONLY:
                raise Failed(f"flags {flags:#x} for a {case}: no READ_ONLY")
        finally:
            _release(managed)
        seen.append(f"a {version[0]}.{version[1]} tensor, flags {flags:#x}, as __dlpack__ exports the {case}")
    return "; ".join(seen)


@clause("producer.exchange.deleter", title="the deleter of a tensor from managed_tensor_from_py_object_no_sync "
        "lets go of the array", source=DLPACK_H,
        cites="This should be called to destruct manager_ctx which holds the DLManagedTensorVersioned.")
def deleter(producer: Producer) -> str:
    _, _, x, table = _table(producer, "managed_tensor_from_py_object_no_sync")
    before = sys.getrefcount(x)
    deleters = set()
    for _ in range(3):
        managed = _from_object(table, x)
        deleters.add(managed.deleter or 0)
        _release(managed)
    after = sys.getrefcount(x)
    if after != before:
        raise Failed(f"three tensors made and deleted: the array's reference count went from {before} to {after}")
    if deleters == {0}:
        return "no deleter (NULL); the array's reference count unchanged"
    return "three tensors made and deleted, each deleter called once: the array's reference count unchanged"


@clause("producer.exchange.dltensor", title="dltensor_from_py_object_no_sync (where set) describes the array as "
        "__dlpack__ does", source=DLPACK_H,
        cites="Exports a PyObject* Tensor/NDArray to a provided DLTensor.")
def dltensor(producer: Producer) -> str:
    _, _, x, table = _table(producer)
    if not table.dltensor:
        raise NotApplicable(f"{OPTIONAL_SLOT} is NULL (it is optional)")
    out = DLTensor()
    try:
        status = table.dltensor(x, byref(out))
    except BufferError as error:
        # a bare DLTensor has no READ_ONLY flag: refusing read-only data is right
        layout = exported(x, max_version=(1, 3))
        read_only = bool(layout.flags & FLAG_READ_ONLY)
        layout.release()
        if not read_only:
            raise
        return f"refused read-only data ({describe(error)})"
    if status != 0:
        raise Failed(f"returned {status} without setting an exception")
    problem = _disagreement(out, x)
    if problem:
        raise Failed(problem)
    return f"shape {_flat_tensor(out)[0]}, dtype {_flat_tensor(out)[2]}, as __dlpack__ exports it"


_CTYPES = {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
           "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double}


def _device(x) -> tuple[int, int]:
    try:
        device = x.__dlpack_device__()
        return int(device[0]), int(device[1])
    except Exception:
        return 1, 0


@clause("producer.exchange.to-py-object", title="managed_tensor_to_py_object_no_sync makes an array of the "
        "library's own type that owns the tensor", source=DLPACK_H,
        cites="Convert an owning DLManagedTensorVersioned* to the Python tensor of the producer (implementer) "
              "library with the correct type.")
def to_py_object(producer: Producer) -> str:
    shape, dtype, x, table = _table(producer, "managed_tensor_to_py_object_no_sync")
    if _device(x) != (1, 0):
        raise NotApplicable(f"the kit hands over host tensors only; the arrays are on device {_device(x)}")
    if dtype not in _CTYPES:
        raise NotApplicable(f"the kit builds no {dtype} tensors")
    values = expected_values(shape, dtype)
    managed = ManagedTensor(values, shape=shape, strides=c_order_strides(shape), dtype=DTYPES[dtype][0],
                            ctype=_CTYPES[dtype])
    out = c_void_p()
    status = table.to_object(managed.address, byref(out))
    if status != 0 or not out.value:
        raise Failed(f"returned {status} " + ("without setting an exception" if status else "and no object (NULL)"))
    made = steal(out.value)
    try:
        said = f"made a {type(made).__qualname__} object"
        if type(made) not in type(x).__mro__[:-1]:
            raise Failed(f"{said}, not a {type(x).__qualname__} (the type the table was found on)")
        tensor = exported(made, max_version=(1, 3))
        try:
            read, shared = tensor.read(dtype), tensor.tensor.data == managed.data_address
        finally:
            tensor.release()
        if read != values:
            raise Failed(f"{said} whose __dlpack__ export holds {read}, handed {values}")
    finally:
        del made
        gc.collect()
    if managed.deleter_calls != 1:
        raise Failed(f"{said}: the tensor's deleter ran {managed.deleter_calls} times once the array was dropped")
    return f"{said}, holding the {list(shape)} {dtype} values ({'shared' if shared else 'a copy'}); the tensor's " \
           f"deleter ran once when it was dropped"


class _Errors:
    """A SetError callback that records (kind, message)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.callback = SET_ERROR(self._record)

    def _record(self, context: int | None, kind: bytes | None, message: bytes | None) -> None:
        self.calls.append(((kind or b"").decode(errors="replace"), (message or b"").decode(errors="replace")))


def _allocate(table: Table, shape, dtype: str, device) -> tuple[int, int, _Errors]:
    """(status, *out, SetError's calls) of the allocator asked for `shape`."""
    extents = (c_int64 * max(len(shape), 1))(*shape)
    prototype = DLTensor()
    prototype.ndim = len(shape)
    prototype.shape = ctypes.cast(extents, POINTER(c_int64))
    prototype.dtype = DLDataType(*DTYPES[dtype][0])
    prototype.device = DLDevice(*device)
    errors, out = _Errors(), c_void_p()
    status = table.allocate(byref(prototype), byref(out), None, errors.callback)
    return status, out.value or 0, errors


@clause("producer.exchange.allocator", title="managed_tensor_allocator makes a tensor of the prototype's shape, "
        "dtype and device", source=DLPACK_H,
        cites="Only the dtype, ndim, shape, and device fields are used.")
def allocator(producer: Producer) -> str:
    shape, dtype, x, table = _table(producer, "managed_tensor_allocator")
    device = _device(x)
    status, address, errors = _allocate(table, shape, dtype, device)
    if status != 0 or not address or errors.calls:
        raise Failed(f"returned {status}, tensor {address:#x}, SetError calls {errors.calls}")
    managed = DLManagedTensorVersioned.from_address(address)
    try:
        version, t = f"{managed.version.major}.{managed.version.minor}", managed.dl_tensor
        made = _flat_tensor(t)
        if managed.version.major != 1 or (made[0], made[2], made[3]) != (shape, DTYPES[dtype][0], device) \
                or not t.data:
            raise Failed(f"version {version}, shape {made[0]}, dtype {made[2]}, device {made[3]}, data "
                         f"{t.data or 0:#x} for a {list(shape)} {dtype} prototype on {device}")
    finally:
        _release(managed)
    return f"a {version} tensor of {list(shape)} {dtype} on {device}"


@clause("producer.exchange.error-return", title="managed_tensor_allocator reports a failure through SetError",
        source=DLPACK_H,
        cites="SetError is called exactly when NULL is returned (the implementer must ensure this).")
def error_return(producer: Producer) -> str:
    _, _, x, table = _table(producer, "managed_tensor_allocator")
    asked = f"a {IMPOSSIBLE_SHAPE[0]:#x} x {IMPOSSIBLE_SHAPE[1]} float32 prototype"
    try:
        status, address, errors = _allocate(table, IMPOSSIBLE_SHAPE, "float32", _device(x))
    except Exception as error:  # it failed and set a Python exception, but did not call SetError
        raise Failed(f"{asked}: raised {describe(error)} without calling SetError") from None
    if status == 0:
        if address:
            _release(DLManagedTensorVersioned.from_address(address))
        raise Failed(f"{asked}: returned 0")
    if not errors.calls:
        raise Failed(f"{asked}: returned {status} without calling SetError")
    kind, message = errors.calls[0]  # an empty or NULL message is allowed: dlpack.h asks for none
    return f"{asked}: returned {status}, SetError({kind!r}, {(message.splitlines() or [''])[0][:120]!r})"


@clause("producer.exchange.current-work-stream", title="current_work_stream answers for the array's device",
        source=DLPACK_H,
        cites="When device_type is kDLCPU, the consumer do not have to query the stream and the producer can "
              "simply return NULL when queried.")
def current_work_stream(producer: Producer) -> str:
    _, _, x, table = _table(producer, "current_work_stream")
    device = _device(x)
    out = c_void_p()
    status = table.stream(device[0], device[1], byref(out))
    if status != 0:
        raise Failed(f"current_work_stream{device} returned {status} without setting an exception")
    return f"current_work_stream{device} returned 0, stream {out.value or 0:#x}"
