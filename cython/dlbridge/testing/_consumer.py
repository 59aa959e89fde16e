"""The consumer clauses: what a library's from_dlpack must do with what
producers hand it. Each clause offers the library's FUNCTION a producer of
the kit's hostile zoo, built by hand with the kit's ctypes reading of the ABI
(dlbridge.testing._abi), and reads the FUNCTION's result back through the
result's own ``__dlpack__``, or else its buffer (``read_back``).

A tensor's deleter is counted once the result and the producer are gone:
``consumer.deleter.released`` and ``consumer.deleter.once`` check those
counts, on tensors the consumer imports and on tensors it refuses, so that
a consumer that leaks (or frees twice) fails those two clauses and not
every clause of the zoo.
"""
from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, PYFUNCTYPE, c_float, c_int, c_uint8, c_void_p, py_object
import gc
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from dlbridge.testing._abi import (ALLOCATOR_ARGS, DELETER, FLAG_IS_COPIED, FLAG_READ_ONLY, MAX_ELEMENTS_READ,
                                   STREAM_ARGS, Consumed, DLPackExchangeAPI, DLPackVersion, ManagedTensor,
                                   buffer_address, capsule_has_destructor, capsule_name, dtype_name, exchange_capsule)
from dlbridge.testing._model import Consumer, Failed, NotApplicable, Warned, clause, describe, is_deprecation

PYTHON_SPEC = "DLPack Python specification"
ARRAY_API = "array API standard"
HEADER = "dlpack.h"

# Device types whose memory the host can read: CPU, CUDA host (pinned), CUDA managed.
HOST_DEVICES = (1, 3, 11, 13, 20)  # memory the host reads (as _producer.HOST_MEMORY)


# -- reading a consumer's result back --------------------------------------------------


@dataclass(frozen=True)
class ReadBack:
    """A consumer's result as the kit reads it: through its own __dlpack__
    (DLPack 1.3 asked for, the protocol without keywords where it refuses
    them) or else its buffer."""
    via: str                                 # "__dlpack__" or "its buffer"
    shape: tuple[int, ...]
    dtype: str | tuple[int, int, int]        # a name of _abi.DTYPES, else (code, bits, lanes) or a buffer format
    values: list | None                      # flattened in C order; None where the kit cannot read the dtype
    address: int | None                      # of the first element; None for an empty result
    writable: bool | None                    # None where the result cannot say
    writable_from: str                       # what said so: "its buffer" or "its DLPack flags"

    def describe(self) -> str:
        dtype = self.dtype if isinstance(self.dtype, str) else f"dtype {self.dtype}"
        return f"{dtype}{list(self.shape)}"


def read_back(result: Any) -> ReadBack:
    """What `result` holds, read through its ``__dlpack__`` or else the buffer
    protocol; whether it is writable is taken from its buffer where it has
    one (a buffer always says), else from its DLPack flags. Raises Failed
    where neither way reads it."""
    errors = []
    read = None
    if callable(getattr(result, "__dlpack__", None)):
        try:
            read = _through_dlpack(result)
        except Failed:
            raise
        except Exception as error:
            errors.append(f"its __dlpack__ raised {describe(error)}")
    try:
        view = memoryview(result)
    except Exception as error:
        if read is None:
            errors.append(f"memoryview() raised {describe(error)}")
            raise Failed(f"the result, a {type(result).__qualname__}, cannot be read back: "
                         + "; ".join(errors)) from None
        return read
    with view:
        other = _through_buffer(result, view)
        if read is None:
            return other
        # Two routes to the same array: a result whose export describes
        # memory its own buffer does not (strides it stores but cannot use)
        # is caught here.
        if None not in (read.values, other.values) and (read.shape, read.values) != (other.shape, other.values):
            raise Failed(f"the result's __dlpack__ reads {read.describe()} holding {read.values}, its buffer "
                         f"{other.describe()} holding {other.values}: they disagree")
        return ReadBack(read.via, read.shape, read.dtype, read.values, read.address, other.writable, "its buffer")


def _through_dlpack(result: Any) -> ReadBack:
    try:
        capsule = result.__dlpack__(max_version=(1, 3))
    except TypeError:
        capsule = result.__dlpack__()
    try:
        tensor = Consumed(capsule)
    except AssertionError as error:
        raise Failed(f"the result's __dlpack__ returned {error}") from None
    try:
        t = tensor.tensor
        if tensor.versioned and tensor.version[0] != 1:
            raise Failed(f"the result's __dlpack__ gave a tensor of DLPack version {tensor.version}")
        if not 0 <= t.ndim <= 64 or (t.ndim and not t.shape):
            raise Failed(f"the result's __dlpack__ gave ndim {t.ndim}" + (" and NULL shape" if t.ndim > 0 else ""))
        if tensor.device[0] not in HOST_DEVICES:
            raise Failed(f"the result's __dlpack__ gave a tensor on device {tensor.device}, not host memory")
        shape, name = tensor.shape, dtype_name(tensor.dtype)
        empty = math.prod(shape) == 0
        if not empty and not t.data:
            raise Failed(f"the result's __dlpack__ gave NULL data for shape {list(shape)}")
        readable = name is not None and math.prod(shape) <= MAX_ELEMENTS_READ  # else the shape tells
        return ReadBack("__dlpack__", shape, name or tensor.dtype, tensor.read(name) if readable else None,
                        None if empty else t.data + t.byte_offset,
                        None if not tensor.versioned else not tensor.flags & FLAG_READ_ONLY, "its DLPack flags")
    finally:
        tensor.release()


def _through_buffer(result: Any, view: memoryview) -> ReadBack:
    name = _buffer_dtype(view.format, view.itemsize)
    try:
        values = _flat(view.tolist(), view.ndim)
    except NotImplementedError:  # formats memoryview cannot unpack (complex numbers)
        values = None
    return ReadBack("its buffer", tuple(view.shape or ()), name or view.format, values,
                    buffer_address(result)[0] if view.nbytes else None, not view.readonly, "its buffer")


def _flat(nested: Any, ndim: int) -> list:
    if ndim == 0:
        return [nested]
    if ndim == 1:
        return list(nested)
    return [v for item in nested for v in _flat(item, ndim - 1)]


_BUFFER_KINDS = {**dict.fromkeys("bhilq", "int"), **dict.fromkeys("BHILQ", "uint"), **dict.fromkeys("efd", "float"),
                 "Zf": "complex", "Zd": "complex"}


def _buffer_dtype(fmt: str, itemsize: int) -> str | None:
    """The DTYPES name of a buffer format (native or little-endian), or None."""
    code = fmt.lstrip("@=<")
    if code == "?":
        return "bool"
    kind = _BUFFER_KINDS.get(code)
    return f"{kind}{itemsize * 8}" if kind else None


# -- the zoo ---------------------------------------------------------------------------------

# dlpack.h: data "is always aligned to 256 bytes as in CUDA"; consumers that
# need alignment (XLA) would otherwise copy.
_ALIGN = 256
# The memory each zoo tensor points into, by the tensor's address: kept as
# long as the tensors are (forever: see ManagedTensor).
_memory: dict[int, ctypes.Array] = {}


@dataclass(frozen=True)
class Case:
    """One hand-built tensor of the zoo: `memory` (float32 numbers) as laid
    out from an aligned address, data pointing to element `first` of it
    (byte_offset added), and `expected` what a consumer's array of it holds
    in C order (None for a tensor that must not be imported).
    A versioned case is lent as the legacy struct to a consumer that asks
    for no versioned tensor; a legacy case is lent as the legacy struct to
    every consumer."""
    name: str
    memory: tuple = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)
    expected: tuple | None = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)
    shape: tuple[int, ...] = (6,)
    strides: tuple[int, ...] | None = (1,)
    first: int = 0
    byte_offset: int = 0
    dtype: tuple[int, int, int] = (2, 32, 1)  # float32: the float every library holds (JAX's float64 is opt-in)
    flags: int = 0
    version: tuple[int, int] = (1, 3)
    versioned: bool = True
    null_data: bool = False
    smaller: Case | None = None  # the same finding in fewer dimensions, for a consumer that declines these

    def managed(self, versioned: bool, *, copied: bool = False) -> ManagedTensor:
        size = ctypes.sizeof(c_float)
        # zeros after the memory: a consumer that walks past it reads zeros, not another object
        block = (c_uint8 * (len(self.memory) * size + 2 * _ALIGN))()
        base = ctypes.addressof(block) + (-ctypes.addressof(block) % _ALIGN)
        (c_float * len(self.memory)).from_address(base)[:] = list(self.memory)
        made = ManagedTensor((), shape=self.shape, strides=self.strides, dtype=self.dtype,
                             data=None if self.null_data else base + self.first * size, byte_offset=self.byte_offset,
                             flags=self.flags | (FLAG_IS_COPIED if copied else 0), version=self.version,
                             versioned=versioned)
        _memory[made.address] = block
        return made


# Each case in the fewest dimensions that show what it checks (a consumer
# of 1-D arrays takes them), with its 1-D form where it needs two.
BASELINE = Case("float32[6]")
MATRIX = Case("float32[2, 3]", shape=(2, 3), strides=(3, 1))
SCALAR = Case("0-d float32", memory=(7.0,), expected=(7.0,), shape=(), strides=())
# memory 0..5 laid out as a (3, 2) C-order array, read as its transpose
TRANSPOSED = Case("transposed strides (1, 2)", expected=(0.0, 2.0, 4.0, 1.0, 3.0, 5.0), shape=(2, 3), strides=(1, 2))
ZERO = Case("zero strides (0,)", memory=(5.0,), expected=(5.0, 5.0, 5.0), shape=(3,), strides=(0,))
NEGATIVE = Case("negative strides (-1,)", expected=(5.0, 4.0, 3.0, 2.0, 1.0, 0.0), strides=(-1,), first=5)
OFFSET = Case("byte_offset 16", memory=(-1.0, -2.0, -3.0, -4.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0), byte_offset=16)
NULL_STRIDES = Case("NULL strides in a DLPack 1.0 float32[2, 3]", shape=(2, 3), strides=None, version=(1, 0),
                    smaller=Case("NULL strides in a DLPack 1.0 float32[6]", strides=None, version=(1, 0)))
NULL_STRIDES_LEGACY = Case("NULL strides in a legacy float32[2, 3]", shape=(2, 3), strides=None, versioned=False,
                           smaller=Case("NULL strides in a legacy float32[6]", strides=None, versioned=False))
LEGACY = Case("legacy float32[6]", versioned=False)
MAJOR_2 = Case("DLPack 2.0 float32[6]", version=(2, 0))
UNKNOWN_CODE = Case("dtype code 200", dtype=(200, 32, 1), expected=None)
LANES = Case("float32 x4 (code 2, bits 32, lanes 4)", memory=tuple(float(i) for i in range(12)), expected=None,
             shape=(3,), dtype=(2, 32, 4))
EMPTY = Case("float32[0, 3] with NULL data", memory=(), expected=(), shape=(0, 3), strides=(3, 1), null_data=True,
             smaller=Case("float32[0] with NULL data", memory=(), expected=(), shape=(0,), null_data=True))
READ_ONLY = Case("READ_ONLY float32[6]", flags=FLAG_READ_ONLY)

ALL_KEYWORDS = ("stream", "max_version", "dl_device", "copy")


class DevicelessZooProducer:
    """A hand-built producer of a Case, with ``__dlpack__`` alone. It answers
    max_version as the array API recommends: a versioned tensor for a major
    >= 1, the legacy struct otherwise. It takes the keywords in `accepts`
    and raises TypeError for the others, as a Python method without them
    would. Each call lends a new tensor; when the producer goes, it plays
    each capsule's destructor as the specification has it: it calls the
    deleter of each tensor whose capsule a consumer neither renamed nor
    stripped of its destructor. `calls` records every call."""

    def __init__(self, case: Case, accepts: tuple[str, ...] = ALL_KEYWORDS):
        self.case, self.accepts = case, accepts
        self.calls: list[dict] = []
        self.lent: list[tuple[ManagedTensor, Any]] = []

    def __dlpack__(self, **keywords):
        self.calls.append(keywords)
        unknown = [k for k in keywords if k not in self.accepts]
        if unknown:
            raise TypeError(f"__dlpack__() got an unexpected keyword argument {unknown[0]!r}")
        asked = keywords.get("max_version")
        # Every tensor lent is new memory; copy=True makes it a copy by name (IS_COPIED), as a producer's is.
        managed = self.case.managed(self.case.versioned and isinstance(asked, tuple) and asked[0] >= 1,
                                    copied=keywords.get("copy") is True)
        capsule = managed.capsule(destructor=True)
        self.lent.append((managed, capsule))
        return capsule

    def __del__(self):
        for managed, capsule in self.lent:
            if capsule is None:  # lent through an exchange table: the consumer owns it
                continue
            if not (capsule_name(capsule) or b"").startswith(b"used_") and capsule_has_destructor(capsule):
                DELETER(managed.struct.deleter)(managed.address)


class ZooProducer(DevicelessZooProducer):
    """A DevicelessZooProducer with ``__dlpack_device__``: on the CPU."""

    def __dlpack_device__(self):
        return (1, 0)


# -- a zoo producer with a DLPack C exchange table -----------------------------------------------

_FROM_OBJECT = PYFUNCTYPE(c_int, py_object, POINTER(c_void_p))
_TO_OBJECT = PYFUNCTYPE(c_int, c_void_p, POINTER(c_void_p))
_ALLOCATOR = CFUNCTYPE(c_int, *ALLOCATOR_ARGS)  # may be called without the GIL: reports through SetError


def _from_object(obj: Any, out: Any) -> int:
    """managed_tensor_from_py_object_no_sync: a versioned tensor of the case."""
    try:
        managed = obj.case.managed(True)
        obj.lent.append((managed, None))
        obj.table_calls += 1
        out[0] = managed.address
        return 0
    except Exception:  # not the kit's to expect; nothing raised in a ctypes callback reaches its caller
        return -1


_NOT_SERVED = b"the kit's zoo table serves imports only"


def _allocate(prototype: Any, out: Any, error_context: Any, set_error: Any) -> int:
    set_error(error_context, b"BufferError", _NOT_SERVED)
    return -1


def _to_object(managed: Any, out: Any) -> int:
    # A ctypes callback cannot leave the Python exception the slot's contract
    # asks for: a consumer of the zoo never calls this slot.
    return -1


def _work_stream(device_type: int, device_id: int, out: Any) -> int:
    out[0] = None  # host memory: no stream
    return 0


_TABLE_FUNCTIONS = {"managed_tensor_from_py_object_no_sync": _FROM_OBJECT(_from_object),
                    "managed_tensor_allocator": _ALLOCATOR(_allocate),
                    "managed_tensor_to_py_object_no_sync": _TO_OBJECT(_to_object),
                    "current_work_stream": CFUNCTYPE(c_int, *STREAM_ARGS)(_work_stream)}
_TABLE = DLPackExchangeAPI()
_TABLE.header.version = DLPackVersion(1, 3)
for _slot, _function in _TABLE_FUNCTIONS.items():
    setattr(_TABLE, _slot, ctypes.cast(_function, c_void_p).value)


class ExchangeZooProducer(ZooProducer):
    """A ZooProducer whose type publishes a DLPack 1.3 C exchange table
    (``__dlpack_c_exchange_api__``, and the int of DLPack 1.2's
    ``__c_dlpack_exchange_api__``): its managed_tensor_from_py_object_no_sync
    lends a versioned tensor of the case, as __dlpack__ does; the slots that
    make tensors or objects for others refuse (the allocator through
    SetError, managed_tensor_to_py_object_no_sync with -1 alone). `table_calls`
    counts the tensors lent through the table."""

    __dlpack_c_exchange_api__ = exchange_capsule(ctypes.addressof(_TABLE))
    __c_dlpack_exchange_api__ = ctypes.addressof(_TABLE)  # DLPack 1.2's spelling, which some consumers read

    def __init__(self, case: Case, accepts: tuple[str, ...] = ALL_KEYWORDS):
        super().__init__(case, accepts)
        self.table_calls = 0


def _legacy_producer(case: Case) -> ZooProducer:
    # Every __dlpack__ of the array API has taken stream, since its first version.
    return ZooProducer(case, accepts=("stream",))


def _old_keywords_producer(case: Case) -> ZooProducer:
    return ZooProducer(case, accepts=("stream", "max_version"))


# What a consumer raises out of a fault in its own code rather than to refuse.
_FAULTS = (LookupError, AttributeError, AssertionError, NameError, ZeroDivisionError, RecursionError)


@dataclass
class Outcome:
    """What a consumer made of a producer: its result read back, or what it
    raised; the producer's __dlpack__ calls and the tensors they lent; the
    warnings raised. Read once the result and the producer are gone, so the
    lent tensors' deleter counts are final."""
    case: Case
    result: ReadBack | None = None
    raised: type | None = None
    error: str = ""
    calls: list = field(default_factory=list)
    table_calls: int = 0  # tensors taken through the producer's exchange table
    lent: list = field(default_factory=list)  # the ManagedTensors lent
    unrenamed: int = 0  # capsules of an imported result still named as unconsumed
    cleared: int = 0    # of those, the capsules whose destructor the consumer cleared instead
    warned: list = field(default_factory=list)  # (category, "Category: message")

    def refused_with(self, *kinds: type) -> bool:
        return self.raised is not None and issubclass(self.raised, kinds)

    @property
    def declined(self) -> bool:
        """Whether the consumer declined the case (NotImplementedError): it
        does not take such arrays by design."""
        return self.refused_with(NotImplementedError)

    @property
    def faulted(self) -> bool:
        """Whether what the consumer raised is a fault of its own code (an
        IndexError reading a shape, an AttributeError), not a refusal."""
        return self.refused_with(*_FAULTS)

    def fault(self) -> None:
        """Failed where the consumer raised a fault of its own, not a refusal."""
        if self.faulted:
            raise Failed(f"{self.case.name}: raised {self.error}: a fault of the consumer's own, not a refusal")

    def imported(self, *, refusable: bool = False) -> ReadBack:
        """The result; NotApplicable where the consumer declined the case;
        where it refused it, Failed, or Warned when the case is `refusable`
        (a tensor a consumer may lack the means to hold: no requirement
        breaks, no data is lost)."""
        if self.declined:
            raise NotApplicable(f"{self.case.name}: the consumer declines it ({self.error})")
        if self.result is None:
            self.fault()
            if refusable:
                raise Warned(f"{self.case.name}: refused ({self.error}): the consumer imports no such tensor")
            raise Failed(f"{self.case.name}: refused ({self.error})")
        return self.result

    def versioned(self) -> Outcome:
        """Itself; not applicable where the consumer took no versioned tensor."""
        if not any(m.versioned for m in self.lent):
            raise NotApplicable(f"the consumer asks for no versioned tensor ({_calls(self.calls)}), and "
                                f"{self.case.name} is one")
        return self

    def data(self) -> int | None:
        """Where the first element of the last tensor lent is."""
        data = self.lent[-1].struct.dl_tensor.data if self.lent else None
        return None if data is None else data + self.case.byte_offset

    def zero_copy(self) -> bool:
        return self.result is not None and self.data() is not None and self.result.address == self.data()


class Declined(NotApplicable):
    """The consumer takes no array of the case's number of dimensions
    (its FUNCTION's ``dlpack_ndims``), in any form of the case."""


def taken(consumer: Consumer, case: Case) -> Case:
    """`case`, or its smaller form where the consumer takes no array of its
    number of dimensions; Declined where it takes neither."""
    offered = case
    while not consumer.takes(len(offered.shape)):
        if offered.smaller is None:
            raise Declined(f"{case.name}: the consumer takes no {len(case.shape)}-d array (dlpack_ndims "
                           f"{sorted(consumer.ndims or ())})")
        offered = offered.smaller
    return offered


def offer(consumer: Consumer, case: Case, make: Callable[[Case], DevicelessZooProducer] = ZooProducer,
          *, raw: bool = False, **keywords: Any) -> Outcome:
    """The consumer's FUNCTION called on a producer of `case` (in the form
    the consumer takes: `taken`) made by `make` (or on a DLPack 1.3 capsule
    of it, `raw`), with `keywords`; its result read back, then dropped with
    the producer. Failed where the result reads through the producer: the
    consumer imported nothing."""
    case = taken(consumer, case)
    producer = make(case)
    outcome = Outcome(case)
    offered = producer.__dlpack__(max_version=(1, 3)) if raw else producer
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            result = consumer.consume(offered, **keywords)
        except Exception as error:  # kept as words: its traceback would keep the producer alive
            outcome.raised, outcome.error = type(error), describe(error)
            outcome.calls = list(producer.calls)
        else:
            outcome.calls = list(producer.calls)  # the consumer's calls, not the kit's reading back
            try:
                if result is producer or result is offered:
                    raise Failed(f"{case.name}: the consumer returned the {'capsule' if raw else 'producer'} it "
                                 f"was given, not an array of its own")
                try:
                    outcome.result = read_back(result)
                except Failed as error:
                    unread: Failed | None = Failed(f"{case.name}: {error}")
                else:
                    unread = None
                if len(producer.calls) > len(outcome.calls):
                    raise Failed(f"{case.name}: reading the result back called the producer's __dlpack__ again: "
                                 f"the result holds the producer, not an array of its own")
                if unread is not None:
                    raise unread
                unrenamed = [capsule for _, capsule in producer.lent
                             if capsule is not None and not (capsule_name(capsule) or b"").startswith(b"used_")]
                outcome.unrenamed = len(unrenamed)
                outcome.cleared = sum(not capsule_has_destructor(capsule) for capsule in unrenamed)
            finally:
                del result
    outcome.warned = [(w.category, f"{w.category.__name__}: {w.message}") for w in warned]
    if outcome.declined and case.smaller is not None:
        return offer(consumer, case.smaller, make, raw=raw, **keywords)
    outcome.lent = [managed for managed, _ in producer.lent]
    outcome.table_calls = getattr(producer, "table_calls", 0)
    del producer, offered
    # Only where a deleter has not run yet: a reference cycle may still hold
    # the result (a full collection takes seconds in a library with a large heap).
    if any(managed.deleter_calls == 0 for managed in outcome.lent):
        gc.collect()
    return outcome


def _calls(calls: list[dict]) -> str:
    if not calls:
        return "__dlpack__ was not called"
    return ", then ".join("__dlpack__(" + ", ".join(f"{k}={v!r}" for k, v in c.items()) + ")" for c in calls)


def _lent(outcome: Outcome) -> str:
    """The case, and the struct it was lent as where that differs."""
    kinds = {f"version {m.struct.version.major}.{m.struct.version.minor}" if m.versioned else "legacy"
             for m in outcome.lent}
    return f"{outcome.case.name} (lent as {' and '.join(sorted(kinds)) or 'nothing'})"


def _values(outcome: Outcome, *, refusable: bool = False) -> ReadBack:
    """The imported result, checked against the case's expected values,
    shape and dtype (a refusal as Outcome.imported has it)."""
    got, case = outcome.imported(refusable=refusable), outcome.case
    want_dtype = dtype_name(case.dtype)
    if got.shape != case.shape or got.dtype != want_dtype:
        raise Failed(f"{case.name}: imported as {got.describe()}, expected {want_dtype}{list(case.shape)}")
    if got.values is None:
        raise Failed(f"{case.name}: the kit cannot read back the result's {got.dtype}")
    if tuple(got.values) != case.expected:
        raise Failed(f"{case.name}: imported holding {got.values}, expected {list(case.expected or ())}")
    return got


# -- the clauses -----------------------------------------------------------------------------


def _each(cases: tuple[Case, ...], check: Callable[[Case], str]) -> str:
    """What `check` saw of each case; a case it finds not applicable (the
    consumer declines it) is noted, and the clause is not applicable only
    where every case is."""
    seen, applied = [], False
    for case in cases:
        try:
            seen.append(check(case))
            applied = True
        except NotApplicable as reason:
            seen.append(str(reason))
    if not applied:
        raise NotApplicable("; ".join(seen))
    return "; ".join(seen)


def _control(consumer: Consumer, case: Case) -> None:
    """NotApplicable unless the consumer imports a plain float32[6]: a
    refusal of `case` by a consumer that imports nothing says nothing of
    what `case` checks."""
    outcome = offer(consumer, BASELINE)
    if outcome.result is None:
        raise NotApplicable(f"{case.name} refused, but so is a plain {BASELINE.name} ({outcome.error}; see "
                            "consumer.import.values): the refusal says nothing of the case")


_IMPORT_VALUES = ("A from_dlpack(x, ...) function, which accepts any (array) object with the two DLPack methods "
                  "implemented (see below) and uses them to construct a new array containing the data from x.")


@clause("consumer.import.values", title="a tensor is imported with its values, shape and dtype (1-d and 2-d)",
        source=PYTHON_SPEC, cites=_IMPORT_VALUES)
def import_values(consumer: Consumer) -> str:
    def check(case: Case) -> str:
        got = _values(offer(consumer, case))
        return f"{case.name}: read back through {got.via} as {got.describe()}, values right"
    return _each((BASELINE, MATRIX), check)


@clause("consumer.import.0-d", title="a 0-d tensor is imported as a 0-d array holding its value",
        source=PYTHON_SPEC, cites=_IMPORT_VALUES)
def import_0d(consumer: Consumer) -> str:
    got = _values(offer(consumer, SCALAR), refusable=True)
    return f"{SCALAR.name}: read back through {got.via} as {got.describe()}, values right"


@clause("consumer.import.zero-copy", title="the imported array shares the producer's memory",
        source=PYTHON_SPEC, cites="If possible, this must be zero-copy (i.e. y will be a view on x).")
def import_zero_copy(consumer: Consumer) -> str:
    outcome = offer(consumer, BASELINE)
    got = outcome.imported()
    if not outcome.zero_copy():  # allowed where sharing is not possible, which the kit cannot tell
        where = "nowhere" if got.address is None else f"at 0x{got.address:x}"
        raise Warned(f"{BASELINE.name}, data at 0x{outcome.data():x}: the result's first element is {where} "
                     f"(read through {got.via}): a copy")
    return f"the result's data (read through {got.via}) is the producer's"


@clause("consumer.request.max-version",
        title="from_dlpack asks for a versioned tensor (max_version, major >= 1: recommended)",
        source=PYTHON_SPEC,
        cites="Starting Python array API standard v2023, a new max_version argument is added to __dlpack__ for "
              "the consumer to signal the producer the maximal supported DLPack version.")
def request_max_version(consumer: Consumer) -> str:
    # No specification obliges a consumer to ask (the array API recommends
    # it): not asking is a WARN; asking with what is no version is a FAIL.
    calls = _asked(consumer)
    first = calls[0].get("max_version")
    if first is None:
        raise Warned(f"{_calls(calls)}: no max_version, so no versioned tensor (no READ_ONLY, no IS_COPIED), and "
                     f"no import from a producer that refuses the legacy call (consumer.legacy-refused)")
    if not (isinstance(first, tuple) and len(first) == 2 and all(type(v) is int for v in first)):
        raise Failed(f"{_calls(calls)}: max_version is no (major, minor) tuple of ints")
    if first[0] < 1:
        raise Warned(f"{_calls(calls)}: a max_version before DLPack 1.0, so no versioned tensor")
    return _calls(calls)


@clause("consumer.request.stream", title="from_dlpack passes no stream (or None) for a CPU tensor",
        source=ARRAY_API, cites="On CPU and other device types without streams, only None is accepted.")
def request_stream(consumer: Consumer) -> str:
    calls = _asked(consumer)
    if any(c.get("stream") is not None for c in calls):
        raise Failed(f"for a producer on (1, 0): {_calls(calls)}")
    return _calls(calls)


def _asked(consumer: Consumer) -> list[dict]:
    """How the consumer called the __dlpack__ of a plain CPU producer."""
    outcome = offer(consumer, BASELINE)
    if not outcome.calls:
        raise Failed(f"__dlpack__ was not called ({outcome.error or 'and a result was returned'})")
    return outcome.calls


@clause("consumer.retry.legacy-producer",
        title="a producer from before DLPack 1.0 (TypeError on max_version) is asked again without it, and imported "
              "(recommended)",
        source=ARRAY_API, cites="try: x.__dlpack__(max_version=(1, 0), ...) ... except TypeError: x.__dlpack__(...)")
def retry_legacy(consumer: Consumer) -> str:
    return _retried(offer(consumer, LEGACY, _legacy_producer))


@clause("consumer.retry.device-copy",
        title="a producer that takes max_version but not dl_device and copy (TypeError) is imported (recommended)",
        source=ARRAY_API, cites="This logic is also applicable to handling of the new dl_device and copy keywords.")
def retry_device_copy(consumer: Consumer) -> str:
    return _retried(offer(consumer, BASELINE, _old_keywords_producer))


def _retried(outcome: Outcome) -> str:
    """What a consumer that had to ask again made of an old producer: asking
    again is the array API's recommended logic, not a requirement."""
    if outcome.result is None and not outcome.declined:
        raise Warned(f"{_calls(outcome.calls)}; from_dlpack raised {outcome.error}: no import from a producer "
                     "written before these keywords")
    _values(outcome)
    return f"{_calls(outcome.calls)}: imported, values right"


@clause("consumer.strides.null", title="NULL strides (in a DLPack 1.0 and in a legacy tensor) are read as C order",
        source=PYTHON_SPEC,
        cites="When the strides field in the DLTensor struct is NULL, it indicates a row-major compact array.")
def strides_null(consumer: Consumer) -> str:
    # The legacy tensor comes from a producer that takes max_version: a
    # producer may answer with another version than the one asked for. A
    # consumer that refuses such an answer whatever its strides is judged by
    # consumer.legacy-answer, not here.
    refused = []

    def check(case: Case) -> str:
        outcome = offer(consumer, case)
        if case is NULL_STRIDES_LEGACY and outcome.result is None and not outcome.declined \
                and not outcome.faulted and _refuses_legacy_answers(consumer):
            return f"{_lent(outcome)}: refused, as every legacy answer (consumer.legacy-answer)"
        try:
            _values(outcome, refusable=True)
        except Warned as refusal:  # a producer before DLPack 1.2 may send NULL strides
            refused.append(case)
            return str(refusal)
        return f"{_lent(outcome)}: values right"
    seen = _each((NULL_STRIDES, NULL_STRIDES_LEGACY), check)
    if refused:
        raise Warned(seen)
    return seen


def _refuses_legacy_answers(consumer: Consumer) -> bool:
    """Whether the consumer refuses a plain legacy tensor answered to its max_version."""
    outcome = offer(consumer, LEGACY)
    return outcome.result is None and _asked_max_version(outcome)


def _asked_max_version(outcome: Outcome) -> bool:
    return any(isinstance(c.get("max_version"), tuple) for c in outcome.calls)


class _VersionedOnlyProducer(ZooProducer):
    """A producer of the transition the array API announces: BufferError for
    a __dlpack__ call without max_version (or with a major below 1)."""

    def __dlpack__(self, **keywords):
        asked = keywords.get("max_version")
        if not (isinstance(asked, tuple) and asked and asked[0] >= 1):
            self.calls.append(keywords)
            raise BufferError("this producer exports versioned tensors only: pass max_version=(1, 0) or newer")
        return super().__dlpack__(**keywords)


@clause("consumer.legacy-refused",
        title="a producer that refuses the legacy call (BufferError without max_version) is imported",
        source=ARRAY_API,
        cites="if max_version is None: # Keep and use the DLPack 0.X implementation # Note: from March 2025 "
              "onwards (but ideally as late as possible), it's okay to raise BufferError here")
def legacy_refused(consumer: Consumer) -> str:
    outcome = offer(consumer, BASELINE, _VersionedOnlyProducer)
    if outcome.result is None and not outcome.declined:
        outcome.fault()
        raise Warned(f"{_calls(outcome.calls)}: refused ({outcome.error}); the consumer cannot import from a "
                     "producer that refuses the legacy call, as the array API allows since March 2025")
    _values(outcome)
    return f"{_calls(outcome.calls)}: imported, values right"


@clause("consumer.legacy-answer",
        title="a legacy capsule answered to max_version is imported (or refused, BufferError preferred)",
        source=ARRAY_API,
        cites="This method may return a capsule of version max_version (recommended if it does support that), "
              "or of a different version. This means the consumer must verify the version even when max_version "
              "is passed.")
def legacy_answer(consumer: Consumer) -> str:
    outcome = offer(consumer, LEGACY)
    if not _asked_max_version(outcome):
        raise NotApplicable(f"the consumer asks for no versioned tensor ({_calls(outcome.calls)})")
    if outcome.declined:
        outcome.imported()
    if outcome.result is None:
        outcome.fault()
        words = (f"{LEGACY.name}, answered to {_calls(outcome.calls)}: refused ({outcome.error}); the consumer "
                 f"cannot import from a producer that answers a max_version request with a legacy capsule")
        if outcome.refused_with(BufferError):
            return words
        raise Warned(words + " (BufferError is recommended)")
    _values(outcome)
    return f"{LEGACY.name}, answered to {_calls(outcome.calls)}: imported, values right"


@clause("consumer.strides.honoured",
        title="transposed, negative and zero strides are imported with the right values, or refused (BufferError "
              "preferred)", source=HEADER, cites="strides of the tensor (in number of elements, not bytes)")
def strides_honoured(consumer: Consumer) -> str:
    # No specification names the exception for a layout a consumer cannot
    # hold: any safe refusal holds; BufferError, DLPack's, is recommended.
    wrong, refused = [], []

    def check(case: Case) -> str:
        try:
            outcome = offer(consumer, case)
            if outcome.result is None and not outcome.declined:
                outcome.fault()
                if not outcome.refused_with(BufferError):
                    refused.append(case)
                return f"{case.name}: refused ({outcome.error})"
            _values(outcome)
            return f"{case.name}: values right"
        except Failed as error:
            wrong.append(case)
            return str(error)
    seen = _each((TRANSPOSED, ZERO, NEGATIVE), check)
    if wrong:
        raise Failed(seen)
    if "values right" not in seen:
        _control(consumer, TRANSPOSED)
    if refused:
        raise Warned(seen + " (a refusal with BufferError, DLPack's exception, is recommended)")
    return seen


@clause("consumer.byte-offset", title="byte_offset is added to data: the values start where it points",
        source=HEADER, cites="The `byte_offset` field should be used to point to the beginning of the data.")
def byte_offset(consumer: Consumer) -> str:
    _values(offer(consumer, OFFSET), refusable=True)
    return f"{OFFSET.name} (data 256-byte aligned, four elements before the first): values right"


@clause("consumer.version.major-2", title="a tensor of DLPack major version 2 is refused (BufferError preferred)",
        source=ARRAY_API,
        cites="This means the consumer must verify the version even when max_version is passed. ... the "
              "producer should raise a BufferError here to tell users that the consumer's max_version is too "
              "old to allow the data exchange to happen.")
def version_major_2(consumer: Consumer) -> str:
    outcome = offer(consumer, MAJOR_2).versioned()
    if outcome.result is not None:
        raise Failed(f"{MAJOR_2.name}: imported as {outcome.result.describe()}")
    outcome.fault()
    _control(consumer, MAJOR_2)
    if not outcome.refused_with(BufferError):  # the sentence's BufferError is a producer's "should"
        raise Warned(f"{MAJOR_2.name}: refused with {outcome.error} (BufferError is recommended)")
    return f"refused: {outcome.error}"


@clause("consumer.dtype.unknown-code", title="a dtype code DLPack does not define is refused",
        source=HEADER,
        cites="In the case of a minor version mismatch, the tensor can be safely used as long as the consumer "
              "knows how to interpret all fields.")
def dtype_unknown(consumer: Consumer) -> str:
    outcome = offer(consumer, UNKNOWN_CODE)
    if outcome.result is not None:
        raise Failed(f"{UNKNOWN_CODE.name}: imported as {outcome.result.describe()}")
    outcome.fault()
    _control(consumer, UNKNOWN_CODE)
    if outcome.refused_with(BufferError):
        return f"refused: {outcome.error}"
    return f"refused: {outcome.error} (DLPack's exception for a dtype that cannot be exchanged is BufferError)"


@clause("consumer.dtype.lanes", title="a vector dtype (lanes 4) is refused, or imported as what it is",
        source=HEADER, cites="float4(vectorized 4 float): type_code = 2, bits = 32, lanes = 4")
def dtype_lanes(consumer: Consumer) -> str:
    outcome = offer(consumer, LANES)
    got = outcome.result
    if got is None:
        outcome.fault()
        _control(consumer, LANES)
        return f"refused: {outcome.error}"
    if got.dtype == LANES.dtype and got.shape == LANES.shape and outcome.zero_copy():
        return "imported as float32 x4 on the producer's memory"
    if got.dtype == "float32" and got.shape == LANES.shape + (4,) and got.values == list(LANES.memory):
        return "imported as float32[3, 4], values right"
    raise Failed(f"{LANES.name}[3]: imported as {got.describe()}"
                 + (f" holding {got.values}" if got.values is not None else ""))


@clause("consumer.empty.null-data", title="a tensor of size 0 with NULL data is imported, empty, of its shape",
        source=PYTHON_SPEC,
        cites="If the array is of size zero, the data pointer in DLTensor should be set to either NULL or 0.")
def empty_null_data(consumer: Consumer) -> str:
    outcome = offer(consumer, EMPTY)
    return f"{outcome.case.name}: imported as {_values(outcome, refusable=True).describe()}"


@clause("consumer.read-only", title="READ_ONLY data becomes a read-only array, or a copy, or the flag is ignored "
        "by a consumer whose arrays cannot be read-only", source=ARRAY_API,
        cites="A consumer that does not support read-only arrays should ignore this flag (this is preferred over "
              "raising an exception; the user is then responsible for ensuring the memory isn't modified).")
def read_only(consumer: Consumer) -> str:
    # Offered twice: by a plain producer, and by one whose exchange table a
    # consumer may take the tensor through instead (TVM FFI does).
    seen, warned, applied = [], False, False
    for make in (ZooProducer, ExchangeZooProducer):
        outcome = offer(consumer, READ_ONLY, make)
        route = "through the exchange table" if outcome.table_calls else f"through {_calls(outcome.calls)}"
        try:
            seen.append(f"{route}: {_read_only_result(outcome.versioned())}")
            applied = True
        except NotApplicable as reason:
            seen.append(str(reason))
        except Warned as warning:
            applied = True
            warned = True
            seen.append(f"{route}: {warning}")
        except Failed as failure:
            raise Failed("; ".join(seen + [f"{route}: {failure}"])) from None
    if not applied:
        raise NotApplicable("; ".join(seen))
    if warned:
        raise Warned("; ".join(seen))
    return "; ".join(seen)


def _read_only_result(outcome: Outcome) -> str:
    return read_only_verdict(outcome.imported(), outcome.zero_copy(), READ_ONLY.name, "the producer's")


def read_only_verdict(got: ReadBack, shared: bool, flag: str, owner: str) -> str:
    """What a consumer made of memory `flag` says is read-only (its owner's:
    "the producer's"), whatever protocol said so: a copy, or read-only
    memory, pass; Failed where the result shares the memory and its buffer is
    writable, Warned where it ignored the flag and hands the memory on as
    writable."""
    if not shared:
        return f"a copy (read through {got.via}), writable: {got.writable}"
    if got.writable is False:
        return f"read-only on {owner} memory (said by {got.writable_from})"
    if got.writable_from == "its buffer":
        # Every buffer says whether it is read-only: a consumer whose arrays
        # export buffers supports read-only arrays.
        raise Failed(f"{flag}: the result shares {owner} read-only memory and its buffer is writable")
    # The array API lets a consumer that cannot hold read-only arrays ignore
    # the flag; but the result's own export now hands the memory on as
    # writable, and the next library writes into it.
    said = "its own export is a legacy capsule, which cannot say read-only" if got.writable is None else \
        "its own versioned export says writable"
    raise Warned(f"flag ignored: the result shares {owner} read-only memory and {said}, so a library that imports "
                 f"it from this one may write into it (the result has no buffer, so nothing shows it can be "
                 f"read-only)")


@clause("consumer.device.absent", title="an object with __dlpack__ but no __dlpack_device__ is imported, or "
        "refused with AttributeError or TypeError", source=ARRAY_API,
        cites="AttributeError If the __dlpack__ and __dlpack_device__ methods are not present on the input array.")
def device_absent(consumer: Consumer) -> str:
    outcome = offer(consumer, BASELINE, DevicelessZooProducer)
    if outcome.declined:
        outcome.imported()
    if outcome.result is None:
        if not outcome.refused_with(AttributeError, TypeError):
            raise Failed(f"refused with {outcome.error}, not AttributeError or TypeError")
        return f"refused: {outcome.error}"
    _values(outcome)
    return "imported, values right (the tensor says where it is)"


class _CopyNeededProducer(ZooProducer):
    """A producer whose data cannot be shared: copy=False is refused with
    BufferError, as the array API has it; otherwise it lends its tensor."""

    def __dlpack__(self, **keywords):
        if keywords.get("copy") is False:
            self.calls.append(keywords)
            raise BufferError("copy=False: this producer's data must be copied to be exchanged")
        return super().__dlpack__(**keywords)


_COPY = ("copy (Optional[bool]) - boolean indicating whether or not to copy the input. If True, the function must "
         "always copy. If False, the function must never copy, and raise BufferError in case a copy is deemed "
         "necessary")


@clause("consumer.copy.true", title="from_dlpack(x, copy=True) copies: other memory, the same values",
        source=ARRAY_API, cites=_COPY)
def copy_true(consumer: Consumer) -> str:
    consumer.require("copy")
    outcome = offer(consumer, BASELINE, copy=True)
    got = _values(outcome)
    lent = outcome.lent[-1]
    if lent.versioned and lent.struct.flags & FLAG_IS_COPIED:
        return (f"{BASELINE.name}, copy=True: the producer copied, asked by {_calls(outcome.calls)}; values right "
                f"(read through {got.via})")
    if outcome.zero_copy():
        raise Failed(f"{BASELINE.name}, copy=True: the result shares the producer's memory ({_calls(outcome.calls)})")
    return f"{BASELINE.name}, copy=True: a copy, values right ({_calls(outcome.calls)}; read through {got.via})"


@clause("consumer.copy.false", title="from_dlpack(x, copy=False) never copies: it shares the producer's memory, or "
        "raises BufferError (as where the producer refuses copy=False)", source=ARRAY_API, cites=_COPY)
def copy_false(consumer: Consumer) -> str:
    consumer.require("copy")
    seen = []
    for make in (ZooProducer, _CopyNeededProducer):
        needed = make is _CopyNeededProducer
        what = f"{BASELINE.name}{' from a producer that refuses copy=False' if needed else ''}, copy=False"
        outcome = offer(consumer, BASELINE, make, copy=False)
        if outcome.result is None:
            if outcome.declined:
                outcome.imported()
            if not outcome.refused_with(BufferError):
                raise Failed(f"{what}: refused with {outcome.error}, not BufferError ({_calls(outcome.calls)})")
            seen.append(f"{what}: refused ({outcome.error})")
            continue
        _values(outcome)
        if not outcome.zero_copy():
            raise Failed(f"{what}: the result is a copy ({_calls(outcome.calls)})")
        seen.append(f"{what}: the producer's memory ({_calls(outcome.calls)})")
    return "; ".join(seen)


@clause("consumer.device.cpu", title="from_dlpack(x, device=CPU) of CPU data is imported on its memory, values right",
        source=ARRAY_API,
        cites="device (Optional[device]) - device on which to place the created array. ... If None, the function "
              "must reuse the existing memory buffer if possible and copy otherwise.")
def device_cpu(consumer: Consumer) -> str:
    consumer.require("device")
    outcome = offer(consumer, BASELINE, device="cpu")
    got = _values(outcome)
    if not outcome.zero_copy():  # allowed where sharing is not possible, which the kit cannot tell
        raise Warned(f"{BASELINE.name}, device=\"cpu\": values right, a copy ({_calls(outcome.calls)})")
    return f"{BASELINE.name}, device=\"cpu\": values right, on the producer's memory ({_calls(outcome.calls)}; read " \
           f"through {got.via})"


@clause("consumer.capsule.raw", title="a raw capsule is refused, or taken (a DeprecationWarning recommended)",
        source=PYTHON_SPEC,
        cites="The __dlpack__ method will produce a PyCapsule containing a DLManagedTensor, which will be consumed "
              "immediately within from_dlpack - therefore it is consumed exactly once, and it will not be visible "
              "to users of the Python API.")
def capsule_raw(consumer: Consumer) -> str:
    outcome = offer(consumer, BASELINE, raw=True)
    if outcome.declined:
        outcome.imported()
    deprecations = [said for category, said in outcome.warned if is_deprecation(category)]
    # No specification forbids taking a capsule (MLX and TVM FFI document it):
    # only the values taken are required; the rest is a note.
    if outcome.result is None:
        if not outcome.refused_with(AttributeError, TypeError):
            raise Warned(f"refused with {outcome.error} (AttributeError or TypeError, as for any object without "
                         f"__dlpack__, is recommended)")
        return f"refused: {outcome.error}"
    _values(outcome)
    if not deprecations:
        others = "; ".join(said for _, said in outcome.warned)
        raise Warned("taken, values right, without a DeprecationWarning" + (f" (warned: {others})" if others else ""))
    return f"taken, values right, warning {deprecations[0]}"


# The deleter clauses: tensors the consumer imports, and tensors it must refuse.
_DELETER_CASES = ((BASELINE, ZooProducer), (LEGACY, _legacy_producer), (MAJOR_2, ZooProducer),
                  (UNKNOWN_CODE, ZooProducer))


def _deleter_calls(consumer: Consumer) -> tuple[list[int], str]:
    """The deleter calls of each tensor lent in the deleter cases, once the
    results and producers are gone; and the counts in words."""
    counts, words = [], []
    for case, make in _DELETER_CASES:
        try:
            outcome = offer(consumer, case, make)
        except Declined as reason:
            words.append(str(reason))
            continue
        calls = [managed.deleter_calls for managed in outcome.lent]
        counts += calls
        unrenamed = (" (its capsule not renamed to used_..., its destructor cleared instead: the specification "
                     "asks for the rename, the effect is the same)" if outcome.unrenamed and outcome.cleared
                     else " (its capsule not renamed to used_...)" if outcome.unrenamed else "")
        words.append(f"{case.name} {'imported' if outcome.result else 'refused'}{unrenamed}: "
                     + (", ".join(map(str, calls)) if calls else "none lent"))
    if not counts:
        raise NotApplicable("; ".join(words))
    return counts, "deleter calls once the result was dropped: " + "; ".join(words)


@clause("consumer.deleter.released", title="the deleter runs once the array is gone, or once the tensor is refused",
        source=HEADER,
        cites="When the borrowing framework doesn't need the tensor, it should call the deleter to notify the host "
              "that the resource is no longer needed.")
def deleter_released(consumer: Consumer) -> str:
    counts, words = _deleter_calls(consumer)
    if 0 in counts:
        raise Failed(words)
    return words


@clause("consumer.deleter.once", title="the deleter runs at most once", source=HEADER,
        cites="The destructor deletes the argument self as well.")
def deleter_once(consumer: Consumer) -> str:
    counts, words = _deleter_calls(consumer)
    if any(count > 1 for count in counts):
        if "not renamed to used_...)" in words:  # the zoo's capsule destructors go by the name, as the spec's do
            words += ("; a capsule the consumer took but did not rename is released again by a producer's capsule "
                      "destructor that goes by the name, as the specification's does")
        raise Failed(words)
    return words
