"""The producer clauses: what a library's ``__dlpack__`` and
``__dlpack_device__`` must do, read back field by field through the kit's
own ctypes reading of the ABI (dlbridge.testing._abi).

The kit reads as a DLPack 1.3 consumer does: it asks for
``max_version=(1, 3)`` and, where a producer refuses that keyword with
TypeError (one written before the array API's 2023.12 revision), calls
``__dlpack__()`` again without it, as the array API tells consumers to. It
releases what it consumes holding the GIL, as consumers mostly do; one
clause (producer.deleter.no-gil) calls a deleter without it.
"""
from __future__ import annotations

import ctypes
import gc
import sys
import threading
import warnings
from ctypes import POINTER, PYFUNCTYPE, byref, c_int, c_ulong, c_void_p
from typing import Any, Callable

from dlbridge.testing import _gpu
from dlbridge.testing._abi import (DELETER, DTYPES, FLAG_IS_COPIED, FLAG_IS_SUBBYTE_TYPE_PADDED, FLAG_READ_ONLY,
                                   Consumed, DLManagedTensor, DLManagedTensorVersioned, _api, capsule_has_destructor,
                                   capsule_name, dtype_name)
from dlbridge.testing._model import (VIEWS, Failed, NotApplicable, Producer, Warned, clause, describe,
                                     expected_values, is_deprecation, view_values)

PYTHON_SPEC = "DLPack Python specification"
ARRAY_API = "array API standard"
HEADER = "dlpack.h"

WANTED = (1, 3)  # the DLPack version the kit reads, passed as max_version

# dlpack.h 1.3's DLDeviceType values and those its main branch added since
# (dmlc/dlpack #188, #189: no producer fails for using them), and those whose
# memory the host reads.
DEVICE_TYPES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal",
                9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev", 13: "kDLCUDAManaged",
                14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA", 18: "kDLTrn", 19: "kDLTPU",
                20: "kDLTPUHost", 21: "kDLAscend"}
HOST_MEMORY = (1, 3, 11, 13, 20)
CPU = (1, 0)
VPI = (9, 0)  # the Verilog simulator's buffers: a device no array library exports to
CUDA = (2, 0)

# Arrays the struct clauses ask factories for: several dtypes and ranks, a 0-d
# one among them, and 1-D floats and bools for libraries of 1-D arrays.
CASES = (((2, 3), "float32"), ((), "float64"), ((6,), "int32"), ((2, 1, 3), "int64"), ((4,), "uint8"),
         ((2, 2), "bool"), ((3,), "complex64"), ((5,), "int8"), ((3,), "float16"), ((2,), "uint64"),
         ((4,), "float32"), ((3,), "float64"), ((3,), "bool"))
EMPTY_CASES = (((0,), "float32"), ((2, 0), "int32"))

SIGNATURE = ("__dlpack__(self: array, /, *, stream: Optional[Union[int, Any]] = None, max_version: "
             "Optional[tuple[int, int]] = None, dl_device: Optional[tuple[Enum, int]] = None, copy: Optional[bool] "
             "= None) -> PyCapsule")

_WITH_GIL = PYFUNCTYPE(None, c_void_p)  # a deleter called through it runs holding the GIL


class Tensor(Consumed):
    """A capsule consumed by the kit (renamed used_...), `call` saying how
    it was asked for; `release()` calls the deleter holding the GIL."""

    call = "__dlpack__()"

    def release(self) -> None:
        assert not self.released, "released twice"
        self.released = True
        if self.managed.deleter:
            _WITH_GIL(self.managed.deleter)(self.address)

    @property
    def first(self) -> int:
        """The address of the first element: data + byte_offset."""
        return (self.tensor.data or 0) + self.tensor.byte_offset


def _call(**keywords) -> str:
    return "__dlpack__(" + ", ".join(f"{k}={v!r}" for k, v in keywords.items()) + ")"


def _consume(capsule, call: str) -> Tensor:
    if type(capsule).__name__ != "PyCapsule":
        raise Failed(f"{call} returned {type(capsule).__qualname__}, not a PyCapsule")
    try:
        tensor = Tensor(capsule)
    except AssertionError as error:
        raise Failed(f"{call} returned {error}") from None
    tensor.call = call
    return tensor


def exported(x, **keywords) -> Tensor:
    """x.__dlpack__(**keywords), consumed by the kit; the caller releases it."""
    return _consume(x.__dlpack__(**keywords), _call(**keywords))


def _outcome(x, *, raw: bool = False, **keywords) -> tuple[Any, Exception | None, str]:
    """(tensor, None, call) of x.__dlpack__(max_version=(1, 3), **keywords),
    consumed by the kit, or, where the producer refuses max_version with
    TypeError, of the same call without it; (None, the exception, call)
    when the call raises. `raw`: the capsule, not consumed."""
    call = _call(max_version=WANTED, **keywords)
    try:
        try:
            capsule = x.__dlpack__(max_version=WANTED, **keywords)
        except TypeError:
            call = _call(**keywords)
            capsule = x.__dlpack__(**keywords)
    except Exception as error:
        return None, error, call
    return capsule if raw else _consume(capsule, call), None, call


def _refuses(x, **keywords) -> bool:
    """Whether __dlpack__ refuses the keywords with TypeError."""
    tensor, error, _ = _outcome(x, **keywords)
    _released(tensor)
    return isinstance(error, TypeError)


# The clause that checks each keyword is accepted.
_KEYWORD_CLAUSES = {"stream": "producer.keywords.stream-none", "dl_device": "producer.keywords.dl-device-none",
                    "copy": "producer.keywords.copy"}


def export(x, **keywords) -> Tensor:
    """The export a DLPack 1.3 consumer gets (see _outcome); the caller
    releases it. Failed when the call raises; where it raises TypeError with
    `keywords` given, the producer refuses one of them: NotApplicable."""
    tensor, error, call = _outcome(x, **keywords)
    if isinstance(error, TypeError) and keywords:
        raise NotApplicable(f"{call} raised {describe(error)} (see {_KEYWORD_CLAUSES[next(iter(keywords))]})")
    if error is not None:
        raise Failed(f"{call} raised {describe(error)}")
    return tensor


def _released(*tensors: Tensor | None) -> None:
    for tensor in tensors:
        if tensor is not None and not tensor.released:
            tensor.release()


def _array(producer: Producer, shape=None, dtype="float32", *, read_only=False, view=None):
    """An array of the factory (of `shape` and `dtype`, or any small one)
    that has a __dlpack__ to call."""
    x = producer.make_any(read_only=read_only)[2] if shape is None else producer.make(shape, dtype,
                                                                                     read_only=read_only, view=view)
    if not callable(getattr(x, "__dlpack__", None)):
        raise NotApplicable(f"{type(x).__qualname__} has no __dlpack__ (see producer.methods)")
    return x


def _said_device(x) -> tuple[int, int]:
    """__dlpack_device__() as two ints."""
    if not callable(getattr(x, "__dlpack_device__", None)):
        raise NotApplicable(f"{type(x).__qualname__} has no __dlpack_device__ (see producer.methods)")
    said = x.__dlpack_device__()
    try:
        device_type, device_id = said
        return int(device_type), int(device_id)
    except (TypeError, ValueError):
        raise NotApplicable(f"__dlpack_device__() returned {said!r} (see producer.device.valid)") from None


def _cpu_array(producer: Producer, **make):
    """An array of the factory that says it is on (1, 0)."""
    x = _array(producer, **make)
    device = _said_device(x)
    if device != CPU:
        raise NotApplicable(f"the array is on {device}, not on the CPU (the GPU tier checks other devices)")
    return x


def _device_name(device: tuple[int, int]) -> str:
    return f"{device} ({DEVICE_TYPES.get(device[0], 'unknown type')})"


def _layout_problem(t: Tensor) -> str | None:
    """Why the tensor's ndim, shape and strides cannot be read safely, or None."""
    ndim = t.tensor.ndim
    if not 0 <= ndim <= 64:
        return f"ndim {ndim}"
    if ndim and not t.tensor.shape:
        return f"NULL shape with ndim {ndim}"
    if any(extent < 0 for extent in t.shape):
        return f"negative extents in shape {t.shape}"
    return None


def _versioned(t: Tensor) -> Tensor:
    """`t` when it is a versioned capsule; the clause does not apply to a legacy one."""
    if not t.versioned:
        _released(t)
        raise NotApplicable(f"{t.call} returned a legacy \"dltensor\" capsule, which has no version and no flags")
    return t


# -- the methods and the device ------------------------------------------------------------------


@clause("producer.methods", title="the array has __dlpack__ and __dlpack_device__ of its own",
        source=PYTHON_SPEC,
        cites="__dlpack__ and __dlpack_device__ methods on the array object, which will be called from within "
              "from_dlpack, to query what device the array is on ... and to access the data.")
def methods(producer: Producer) -> str:
    _, _, x = producer.make_any()
    name = type(x).__qualname__
    missing = [method for method in ("__dlpack__", "__dlpack_device__") if not callable(getattr(type(x), method, None))]
    if len(missing) == 2:
        other = _other_protocol(x)
        if other:  # not a DLPack producer at all: the interface clauses check what it has
            raise NotApplicable(f"{name} has no __dlpack__ and no __dlpack_device__: it exports through {other} only")
        raise Failed(f"{name} has no __dlpack__ and no __dlpack_device__, and no other way to export its data")
    if missing:
        raise Failed(f"{name} has no {missing[0]}")
    return f"{name} has both"


def _other_protocol(x) -> str | None:
    """The exchange protocol other than DLPack that `x` speaks, if any."""
    try:
        memoryview(x).release()
        return "the buffer protocol"
    except TypeError:
        pass
    for interface in ("__array_interface__", "__cuda_array_interface__"):
        if hasattr(x, interface):
            return interface
    return None


@clause("producer.device.valid", title="__dlpack_device__ returns (device_type, device_id): a DLPack device type, "
                                       "and device_id 0 for host memory",
        source=HEADER,
        cites="The device index. For vanilla CPU memory, pinned memory, or managed memory, this is set to 0.")
def device_valid(producer: Producer) -> str:
    _, _, x = producer.make_any()
    if not callable(getattr(x, "__dlpack_device__", None)):
        raise NotApplicable(f"{type(x).__qualname__} has no __dlpack_device__ (see producer.methods)")
    said = x.__dlpack_device__()
    if not isinstance(said, tuple) or len(said) != 2:
        raise Failed(f"__dlpack_device__() returned {said!r}, not a tuple (device_type, device_id)")
    try:
        device = (int(said[0]), int(said[1]))  # an IntEnum member is an int too
    except (TypeError, ValueError):
        raise Failed(f"__dlpack_device__() returned {said!r}: not two integers") from None
    if device[0] not in DEVICE_TYPES:
        raise Failed(f"__dlpack_device__() returned {said!r}: {device[0]} is not a device type of DLPack 1.3")
    if device[1] < 0 or (device[0] in HOST_MEMORY and device[1] != 0):
        raise Failed(f"__dlpack_device__() returned {said!r}: device_id {device[1]} on {DEVICE_TYPES[device[0]]}")
    return f"__dlpack_device__() returned {_device_name(device)}"


@clause("producer.device.consistent", title="__dlpack_device__ names the device the capsule's tensor is on",
        source=ARRAY_API,
        cites="Returns device type and device ID in DLPack format.")
def device_consistent(producer: Producer) -> str:
    x = _array(producer)
    said = _said_device(x)
    tensor = export(x)
    device = tensor.device
    _released(tensor)
    if said != device:
        raise Failed(f"__dlpack_device__() returned {said}, the tensor of {tensor.call} is on {device}")
    return f"both say {_device_name(said)}"


def _memory_kind(address: int) -> tuple[str, int] | str:
    """(kind, ordinal) of the memory at `address` as the CUDA driver says
    (_gpu.Cuda.memory), or why the driver cannot be asked here."""
    return _gpu.unavailable() or _gpu.driver().memory(address)


@clause("producer.device.memory", title="the tensor's device is the memory its data is in: kDLCUDA is not host "
                                        "memory, a host label is not device memory",
        source=HEADER,
        cites="CPU device ... CUDA GPU device ... Pinned CUDA CPU memory by cudaMallocHost")
def device_memory(producer: Producer) -> str:
    shape, dtype, x = producer.make_any()
    if not callable(getattr(x, "__dlpack__", None)):
        raise NotApplicable(f"{type(x).__qualname__} has no __dlpack__ (see producer.methods)")
    tensor = export(x)
    try:
        label, address, name = tensor.device, tensor.first, dtype_name(tensor.dtype)
        if label[0] not in (1, 2) or not tensor.tensor.data:
            raise NotApplicable(f"{dtype}{list(shape)}: {tensor.call} is on {_device_name(label)}"
                                + (", NULL data" if not tensor.tensor.data else ", a memory the kit cannot ask about"))
        kind = _memory_kind(address)
        labelled = f"{dtype}{list(shape)}: {tensor.call} is on {_device_name(label)}"
        if isinstance(kind, tuple):
            memory = f"the CUDA driver says its data is {kind[0]} memory"
            if label[0] == 2 and kind[0] in ("pageable", "host"):
                raise Failed(f"{labelled}; {memory}: not device memory")
            if label[0] == 1 and kind[0] == "device":
                raise Failed(f"{labelled}; {memory} (of device {kind[1]}): not host memory")
            return f"{labelled}; {memory}"
        if label[0] == 1:
            raise NotApplicable(f"{labelled}; the kit cannot ask what memory it is: {kind}")
        # kDLCUDA where no CUDA device is: the label is false whatever the
        # data is; reading it on the host shows where it is.
        values = tensor.read(name) if name and tensor.shape == tuple(shape) else None
        held = ("and the host reads the array's values at its data pointer: host memory"
                if values == expected_values(shape, dtype) else "so no memory here is CUDA device memory")
        raise Failed(f"{labelled}; {kind}, {held}")
    finally:
        _released(tensor)


# -- the keywords ----------------------------------------------------------------------------------


def _accepted(x, **keywords) -> Tensor:
    """The export with `keywords`; Failed when the producer raises."""
    tensor, error, call = _outcome(x, **keywords)
    if error is not None:
        raise Failed(f"{call} raised {describe(error)}")
    return tensor


def _accepts(producer: Producer, **keywords) -> str:
    tensor = _accepted(_array(producer), **keywords)
    _released(tensor)
    return f"{tensor.call} returned a {tensor.name.decode()!r} capsule"


@clause("producer.keywords.stream-none", title="__dlpack__ accepts stream=None", source=ARRAY_API, cites=SIGNATURE)
def stream_none(producer: Producer) -> str:
    return _accepts(producer, stream=None)


@clause("producer.keywords.max-version", title="__dlpack__ accepts max_version", source=ARRAY_API, cites=SIGNATURE)
def max_version(producer: Producer) -> str:
    x = _array(producer)
    try:
        tensor = exported(x, max_version=WANTED)
    except Exception as error:
        raise Failed(f"{_call(max_version=WANTED)} raised {describe(error)}") from None
    _released(tensor)
    return f"{tensor.call} returned a {tensor.name.decode()!r} capsule"


@clause("producer.keywords.dl-device-none", title="__dlpack__ accepts dl_device=None", source=ARRAY_API,
        cites=SIGNATURE)
def dl_device_none(producer: Producer) -> str:
    return _accepts(producer, dl_device=None)


@clause("producer.keywords.dl-device-cpu", title="a CPU array exports with dl_device=(1, 0), on (1, 0)",
        source=ARRAY_API,
        cites="The v2023.12 standard only mandates that a compliant library should offer a way for __dlpack__ to "
              "return a capsule referencing an array whose underlying memory is accessible to the Python "
              "interpreter (represented by the kDLCPU enumerator in DLPack).")
def dl_device_cpu(producer: Producer) -> str:
    tensor = _accepted(_cpu_array(producer), dl_device=CPU)
    device = tensor.device
    _released(tensor)
    if device != CPU:
        raise Failed(f"{tensor.call} returned a tensor on {_device_name(device)}")
    return f"{tensor.call} returned a tensor on (1, 0)"


@clause("producer.keywords.copy", title="__dlpack__ accepts copy=None, copy=True and copy=False", source=ARRAY_API,
        cites=SIGNATURE)
def copy_keyword(producer: Producer) -> str:
    return "; ".join(_accepts(producer, copy=value) for value in (None, True, False))


@clause("producer.keywords.unknown", title="__dlpack__ raises TypeError for a keyword it does not know",
        source=ARRAY_API,
        cites="try: x.__dlpack__(max_version=(1, 0), ...) ... except TypeError: x.__dlpack__(...) ... This logic "
              "is also applicable to handling of the new dl_device and copy keywords.")
def unknown_keyword(producer: Producer) -> str:
    x = _array(producer)
    call = _call(dlpack_kit_unknown_keyword=True)
    try:
        capsule = x.__dlpack__(dlpack_kit_unknown_keyword=True)
    except TypeError as error:
        return f"{call} raised {describe(error)}"
    except Exception as error:
        raise Failed(f"{call} raised {describe(error)}, not TypeError: a consumer cannot tell a keyword this "
                     "producer does not know") from None
    _released(_consume(capsule, call))
    raise Failed(f"{call} returned a capsule: the keyword was ignored")


@clause("producer.keywords.stream-cpu", title="a stream on a CPU array is refused or ignored (the spec assigns no "
                                              "exception type), never a crash",
        source=ARRAY_API,
        cites="On CPU and other device types without streams, only None is accepted. ... Support for a stream "
              "value other than None is optional and implementation-dependent.")
def stream_cpu(producer: Producer) -> str:
    x = _cpu_array(producer)
    seen = []
    for stream in (1, -1):
        tensor, error, call = _outcome(x, stream=stream)
        if error is not None:
            seen.append(f"{call} raised {describe(error)}")
            continue
        device = tensor.device
        _released(tensor)
        if device != CPU:
            raise Failed(f"{call} returned a tensor on {_device_name(device)}")
        seen.append(f"{call} returned a capsule (the stream ignored)")
    return "; ".join(seen)


# -- refusals --------------------------------------------------------------------------------------


@clause("producer.dl-device.unsupported", title="a dl_device the producer cannot handle raises BufferError",
        source=ARRAY_API,
        cites="If the device type cannot be handled by the producer, this function must raise BufferError.")
def dl_device_unsupported(producer: Producer) -> str:
    x = _array(producer)
    own = _said_device(x)
    seen = []
    for target in (VPI, CUDA):
        if own[0] == target[0]:
            continue
        tensor, error, call = _outcome(x, dl_device=target)
        if error is None:
            device = tensor.device
            _released(tensor)
            if device != target:
                raise Failed(f"{call} returned a tensor on {_device_name(device)}")
            seen.append(f"{call} exported to {_device_name(target)}")
        elif isinstance(error, BufferError):
            seen.append(f"{call} raised {describe(error)}")
        elif isinstance(error, TypeError) and _refuses(x, dl_device=None):
            raise NotApplicable(f"{call} raised {describe(error)} (see producer.keywords.dl-device-none)")
        else:
            raise Failed(f"{call} raised {describe(error)}, not BufferError")
    return "; ".join(seen)


@clause("producer.dl-device.copy-false", title="copy=False where a copy is needed (another device) raises "
                                               "BufferError",
        source=ARRAY_API,
        cites="If a copy must be made to enable this support but copy is set to False, the function must raise "
              "BufferError.")
def dl_device_copy_false(producer: Producer) -> str:
    x = _array(producer)
    own = _said_device(x)
    reasons = []
    for target in (CPU, CUDA):
        if own[0] == target[0]:
            continue
        tensor, error, call = _outcome(x, dl_device=target, copy=False)
        if isinstance(error, BufferError):
            return f"{call} raised {describe(error)}"
        if error is None:  # memory both devices reach: no copy needed, none allowed
            own_export = export(x)
            copied = tensor.flags & FLAG_IS_COPIED or tensor.first != own_export.first
            _released(tensor, own_export)
            if copied:
                raise Failed(f"{call} returned a copy")
            return f"{call} returned the array's own data"
        possible, _, _ = _outcome(x, dl_device=target)
        if possible is None:  # no copy to that device at all: producer.dl-device.unsupported's case
            reasons.append(f"{call} raised {describe(error)}, and so does copy=None")
            continue
        _released(possible)
        raise Failed(f"{call} raised {describe(error)}, not BufferError (copy=None exports a copy there)")
    raise NotApplicable("no other device the producer copies to: " + "; ".join(reasons))


# -- capsule names by max_version ------------------------------------------------------------------


def _named(producer: Producer, version: tuple[int, int] | None, allowed: tuple[bytes, ...], *,
           refusable: bool) -> str:
    """__dlpack__(max_version=version) gives a capsule named one of `allowed`,
    or, where `refusable`, raises BufferError."""
    x = _array(producer)
    call = _call(max_version=version)
    try:
        try:
            capsule = x.__dlpack__(max_version=version)
        except TypeError as error:
            if version is not None:
                raise NotApplicable(f"{call} raised {describe(error)} (see producer.keywords.max-version)") from None
            call = _call()  # a producer without max_version: __dlpack__() is the call it answers
            capsule = x.__dlpack__()
    except BufferError as error:
        if refusable:
            return f"{call} raised {describe(error)}"
        # The array API recommends an answer (its producer logic), and
        # requires none: a refusal loses no data, and no consumer of that
        # version can import.
        raise Warned(f"{call} raised {describe(error)}: a consumer that asks so cannot import (a capsule of the "
                      f"producer's own version is recommended)") from None
    tensor = _consume(capsule, call)
    found = f"{call} returned a {tensor.name.decode()!r} capsule" + (
        f" of version {tensor.version}" if tensor.versioned else "")
    _released(tensor)
    if tensor.name not in allowed:
        raise Failed(found)
    if version is not None and version >= (1, 0) and not tensor.versioned:
        found += " (another version, as the spec allows; a versioned one is recommended)"
    return found


# The capsule each max_version gets: one rule, a clause per row.
_LEGACY_ONLY, _ANY_CAPSULE = (b"dltensor",), (b"dltensor_versioned", b"dltensor")
_MAX_VERSIONS = (
    # (id suffix, max_version, the capsules allowed, whether BufferError is allowed, title, cites)
    ("none", None, _LEGACY_ONLY, True, "max_version=None gives a \"dltensor\" capsule, or BufferError",
     "if max_version is None: # Keep and use the DLPack 0.X implementation # Note: from March 2025 onwards (but "
     "ideally as late as possible), it's okay to raise BufferError here"),
    ("0", (0, 8), _LEGACY_ONLY, True, "max_version=(0, 8) gives a \"dltensor\" capsule, or BufferError",
     "can the producer still export a capsule containing DLManagedTensor and not DLManagedTensorVersioned? If so, "
     "use that. Else, the producer should raise a BufferError here to tell users that the consumer's max_version "
     "is too old to allow the data exchange to happen."),
    ("1-0", (1, 0), _ANY_CAPSULE, False, "max_version=(1, 0) gives a DLPack capsule (versioned recommended)",
     "This method may return a capsule of version max_version (recommended if it does support that), or of a "
     "different version."),
    ("1-99", (1, 99), _ANY_CAPSULE, False, "max_version=(1, 99) gives a DLPack capsule (the producer's own version)",
     "elif max_version[0] == our_own_dlpack_version[0]: # major versions match, we should still be fine here - "
     "return our own max version"),
    ("2-0", (2, 0), _ANY_CAPSULE, False,
     "max_version=(2, 0) gives a DLPack capsule (the producer's own version; recommended)",
     "if max_version >= our_own_dlpack_version: # Consumer understands us, just return a Capsule with our max "
     "version"),
)


def _max_version_check(version: tuple[int, int] | None, allowed: tuple[bytes, ...],
                       refusable: bool) -> Callable[[Producer], str]:
    def check(producer: Producer) -> str:
        return _named(producer, version, allowed, refusable=refusable)
    return check


for _suffix, _version, _allowed, _refusable, _title, _cites in _MAX_VERSIONS:
    clause(f"producer.capsule.max-version-{_suffix}", title=_title, source=ARRAY_API, cites=_cites)(
        _max_version_check(_version, _allowed, _refusable))


# -- the struct, field by field --------------------------------------------------------------------


@clause("producer.struct.version", title="asked for max_version=(1, 3), a versioned capsule is of major version 1",
        source=HEADER,
        cites="A change in major version indicates that we have changed the data layout of the ABI - "
              "DLManagedTensorVersioned.")
def struct_version(producer: Producer) -> str:
    tensor = _versioned(export(_array(producer)))
    version = tensor.version
    _released(tensor)
    if version[0] != 1:
        raise Failed(f"{tensor.call} returned a tensor of version {version}")
    return f"{tensor.call} returned a tensor of version {version}"


@clause("producer.flags.read-only", title="read-only data is flagged READ_ONLY (or its versioned export refused "
                                          "with BufferError)",
        source=HEADER, cites="bit mask to indicate that the tensor is read only.")
def flags_read_only(producer: Producer) -> str:
    x = _array(producer, read_only=True)
    tensor, error, call = _outcome(x)
    if isinstance(error, BufferError):
        return f"read-only data: {call} raised {describe(error)}"
    if error is not None:
        raise Failed(f"read-only data: {call} raised {describe(error)}")
    if not tensor.versioned:
        _released(tensor)
        if "max_version" in call:  # asked for a struct that can say read-only, given one that cannot
            raise Failed(f"read-only data: {call} returned a legacy \"dltensor\" capsule, which cannot say "
                         "READ_ONLY: its consumer takes the data as writable")
        raise NotApplicable(f"read-only data: {call} returned a legacy \"dltensor\" capsule (the producer takes "
                            "no max_version), which has no flags")
    flags = tensor.flags
    _released(tensor)
    if not flags & FLAG_READ_ONLY:
        raise Failed(f"read-only data: {call} returned flags {flags:#x}, without READ_ONLY")
    seen = [f"read-only data: {call} returned flags {flags:#x}"]
    try:
        legacy = exported(x)
    except Exception as refusal:
        seen.append(f"__dlpack__() raised {describe(refusal)}")
    else:
        _released(legacy)
        seen.append(f"__dlpack__() returned a {legacy.name.decode()!r} capsule (the legacy struct cannot say "
                    "read-only)")
    usual = export(_array(producer))
    seen.append(f"the usual array: READ_ONLY {'set' if usual.flags & FLAG_READ_ONLY else 'unset'}")
    _released(usual)
    return "; ".join(seen)


@clause("producer.flags.is-copied", title="IS_COPIED is set exactly when the producer copied the data",
        source=PYTHON_SPEC, cites="When a copy is made, the producer must set the DLPACK_FLAG_BITMASK_IS_COPIED bit "
                                  "flag.")
def flags_is_copied(producer: Producer) -> str:
    x = _array(producer)
    own = export(x)
    held = [own]  # every tensor stays alive until the end, so no copy can land where another was
    seen = []
    try:
        for copy in (None, False, True):
            tensor, error, call = _outcome(x, copy=copy)
            if error is not None:
                if isinstance(error, TypeError):
                    raise NotApplicable(f"{call} raised {describe(error)} (see producer.keywords.copy)")
                seen.append(f"{call} raised {describe(error)}")
                continue
            held.append(tensor)
            copied = tensor.first != own.first
            if not tensor.versioned:
                if copied and "max_version" in call:
                    raise Failed(f"{call}: a copy, as a legacy \"dltensor\" capsule, which cannot set IS_COPIED")
                seen.append(f"{call}: {'a copy' if copied else 'the same data'}, as a legacy capsule (no flags)")
                continue
            flagged = bool(tensor.flags & FLAG_IS_COPIED)
            what = f"{call}: {'a copy' if copied else 'the same data'}, IS_COPIED {'set' if flagged else 'unset'}"
            if copied != flagged:
                raise Failed(what)
            seen.append(what)
    finally:
        _released(*held)
    if not any(tensor.versioned for tensor in held[1:]):
        raise NotApplicable("; ".join(seen) + ": no versioned tensor, so no flags to check")
    return "; ".join(seen)


@clause("producer.flags.subbyte-padded", title="IS_SUBBYTE_TYPE_PADDED is set only for a dtype of fewer than 8 bits",
        source=HEADER,
        cites="The default for sub-byte types (ex: fp4/fp6) is assumed packed. This flag can be set by the producer "
              "to signal that a tensor of sub-byte type is padded.")
def flags_subbyte(producer: Producer) -> str:
    exports = _exports(producer, CASES)
    try:
        for shape, dtype, tensor in exports:
            _versioned(tensor)
            flags, bits = tensor.flags, tensor.dtype[1]
            if flags & FLAG_IS_SUBBYTE_TYPE_PADDED and bits >= 8:
                raise Failed(f"{dtype}: {tensor.call} returned flags {flags:#x}: IS_SUBBYTE_TYPE_PADDED with "
                             f"bits {bits}")
    finally:
        _released(*(tensor for _, _, tensor in exports))
    return "unset for " + ", ".join(dtype for _, dtype, _ in exports)


@clause("producer.copy.true", title="copy=True gives a copy: other memory, holding what the array's own export "
                                      "holds",
        source=ARRAY_API,
        cites="If True, the function must always copy (performed by the producer; see also copy-keyword-argument).")
def copy_true(producer: Producer) -> str:
    x = _array(producer)
    own, tensor = export(x), None
    try:
        tensor = export(x, copy=True)
        if tensor.first == own.first:
            raise Failed(f"{tensor.call} returned the array's own data ({own.call} has it at the same address)")
        if {tensor.device[0], own.device[0]} - set(HOST_MEMORY) or _layout_problem(tensor) or _layout_problem(own):
            return f"{tensor.call} returned other memory, on {_device_name(tensor.device)}"
        # Read both the same way: whether that way is right is producer.struct.values' business.
        copied, shared = (t.read(dtype_name(t.dtype) or "uint8") for t in (tensor, own))
        if copied != shared:
            raise Failed(f"{tensor.call} returned other memory holding {copied}; {own.call} holds {shared}")
        return f"{tensor.call} returned other memory, holding the same values"
    finally:
        _released(own, tensor)


@clause("producer.copy.false", title="copy=False on the array's own device shares its data", source=ARRAY_API,
        cites="If False, the function must never copy, and raise a BufferError in case a copy is deemed necessary")
def copy_false(producer: Producer) -> str:
    x = _array(producer)
    own = export(x)
    try:
        tensor, error, call = _outcome(x, copy=False)
        if isinstance(error, TypeError):
            raise NotApplicable(f"{call} raised {describe(error)} (see producer.keywords.copy)")
        if isinstance(error, BufferError):
            return f"{call} raised {describe(error)} (the producer deems a copy necessary)"
        if error is not None:
            raise Failed(f"{call} raised {describe(error)}")
        shared = tensor.first == own.first
        _released(tensor)
        if not shared:
            raise Failed(f"{call} returned other memory than {own.call}: a copy")
        return f"{call} returned the array's own data"
    finally:
        _released(own)


def _exports(producer: Producer, cases) -> list[tuple[tuple[int, ...], str, Tensor]]:
    """(shape, dtype, tensor) of each case the factory makes, exported as a
    DLPack 1.3 consumer asks for it; the caller releases the tensors. A case
    refused with BufferError, DLPack's refusal of what it cannot carry, is
    left out, as a declined one is."""
    _array(producer)  # N/A without __dlpack__
    found: list[tuple[tuple[int, ...], str, Tensor]] = []
    declined: list[str] = []
    for shape, dtype in cases:
        try:
            x = _array(producer, shape, dtype)
        except NotApplicable as reason:
            declined.append(str(reason))
            continue
        tensor, error, call = _outcome(x)
        if isinstance(error, BufferError):
            declined.append(f"{dtype}{list(shape)}: {call} raised {describe(error)}")
            continue
        if error is not None:
            _released(*(t for _, _, t in found))
            raise Failed(f"{dtype}{list(shape)}: {call} raised {describe(error)}")
        found.append((shape, dtype, tensor))
    if not found:
        raise NotApplicable("; ".join(declined))
    return found


@clause("producer.struct.shape-dtype", title="ndim, shape and dtype are the array's (several dtypes and ranks, "
                                             "0-d too)",
        source=HEADER,
        cites="bool: type_code = 6, bits = 8, lanes = 1 (as per common array library convention, the underlying "
              "storage size of bool is 8 bits)")
def struct_shape_dtype(producer: Producer) -> str:
    exports = _exports(producer, CASES)
    try:
        for shape, dtype, tensor in exports:
            problem = _layout_problem(tensor)
            if problem:
                raise Failed(f"{dtype}{list(shape)}: {tensor.call} returned {problem}")
            if tensor.shape != shape or tensor.dtype != DTYPES[dtype][0]:
                raise Failed(f"{dtype}{list(shape)}: {tensor.call} returned shape {tensor.shape}, dtype (code, bits, "
                             f"lanes) {tensor.dtype}, not {shape}, {DTYPES[dtype][0]}")
    finally:
        _released(*(tensor for _, _, tensor in exports))
    return "right for " + ", ".join(f"{dtype}{list(shape)}" for shape, dtype, _ in exports)


@clause("producer.struct.values", title="the elements at data + byte_offset, stepped by the strides, are the "
                                        "array's values",
        source=HEADER, cites="The offset in bytes to the beginning pointer to data")
def struct_values(producer: Producer) -> str:
    exports = _exports(producer, CASES)
    read = []
    try:
        for shape, dtype, tensor in exports:
            name = dtype_name(tensor.dtype)
            if (_layout_problem(tensor) or tensor.shape != shape or name is None
                    or tensor.device[0] not in HOST_MEMORY):
                continue  # producer.struct.shape-dtype's and the GPU tier's business
            expected = expected_values(shape, dtype)
            if not tensor.tensor.data:
                raise Failed(f"{dtype}{list(shape)}: {tensor.call} returned NULL data for {len(expected)} elements")
            values = tensor.read(name)
            if values != expected:
                raise Failed(f"{dtype}{list(shape)}: {tensor.call} (byte_offset {tensor.tensor.byte_offset}, "
                             f"strides {tensor.strides}) reads {values}, not {expected}")
            read.append(f"{dtype}{list(shape)}")
    finally:
        _released(*(tensor for _, _, tensor in exports))
    if not read:
        raise NotApplicable("no export the kit can read on the host")
    return "right for " + ", ".join(read)


@clause("producer.struct.strides", title="a tensor of version 1.2 or later with ndim > 0 has strides (not NULL)",
        source=HEADER,
        cites="strides of the tensor (in number of elements, not bytes), can not be NULL if ndim != 0 ... Before "
              "DLPack v1.2, strides can be NULL to indicate contiguous data. This is not allowed in DLPack v1.2 and "
              "later.")
def struct_strides(producer: Producer) -> str:
    exports = _exports(producer, [case for case in CASES if case[0]])
    seen = set()
    try:
        for shape, dtype, tensor in exports:
            version = tensor.version if tensor.versioned else None
            if tensor.tensor.strides:
                seen.add("strides filled")
            elif version is not None and version >= (1, 2):
                raise Failed(f"{dtype}{list(shape)}: {tensor.call} returned NULL strides in a tensor of version "
                             f"{version}")
            else:
                seen.add(f"NULL strides in a {'legacy tensor' if version is None else f'{version} tensor'} "
                         "(allowed before 1.2)")
    finally:
        _released(*(tensor for _, _, tensor in exports))
    return "; ".join(sorted(seen))


@clause("producer.struct.size-zero", title="a size-0 array exports with its shape; its data pointer, NULL or not, "
                                           "is never read",
        source=PYTHON_SPEC,
        cites="If the array is of size zero, the data pointer in DLTensor should be set to either NULL or 0.")
def struct_size_zero(producer: Producer) -> str:
    _array(producer)  # N/A without __dlpack__
    seen, refused, checked = [], False, False
    for shape, dtype in EMPTY_CASES:
        try:
            x = _array(producer, shape, dtype)
        except NotApplicable as reason:
            seen.append(str(reason))
            continue
        tensor, error, call = _outcome(x)
        if isinstance(error, BufferError):
            refused = True
            seen.append(f"{dtype}{list(shape)}: {call} raised {describe(error)}")
            continue
        if error is not None:
            raise Failed(f"{dtype}{list(shape)}: {call} raised {describe(error)}")
        try:
            problem = _layout_problem(tensor)
            if problem or tensor.shape != shape:
                raise Failed(f"{dtype}{list(shape)}: {call} returned {problem or f'shape {tensor.shape}'}")
            seen.append(f"{dtype}{list(shape)}: {'NULL data' if not tensor.tensor.data else 'non-NULL data'}")
        finally:
            _released(tensor)
        checked = True
    if refused:  # exporting an empty array is what the specification has in mind, not a requirement
        raise Warned("; ".join(seen) + " (an empty array exports with its shape and NULL data: recommended)")
    if not checked:
        raise NotApplicable("; ".join(seen))
    return "; ".join(seen)


@clause("producer.struct.views", title="a view (transposed, strided, offset, reversed) exports its own shape, strides "
                                       "and first element: the values read are the view's",
        source=HEADER,
        cites="strides of the tensor (in number of elements, not bytes) ... The offset in bytes to the beginning "
              "pointer to data")
def struct_views(producer: Producer) -> str:
    _array(producer)  # N/A without __dlpack__
    seen, read = [], False
    for view in VIEWS:
        shape, expected = view_values(view, "float32")
        try:
            x = _array(producer, shape, "float32", view=view)
        except NotApplicable as reason:
            seen.append(str(reason))
            continue
        tensor = export(x)
        try:
            problem = _layout_problem(tensor)
            what = f"the {view} view ({VIEWS[view][1]} of float32{list(VIEWS[view][0])}): {tensor.call}"
            if problem or tensor.shape != shape or tensor.dtype != DTYPES["float32"][0]:
                raise Failed(f"{what} returned {problem or f'shape {tensor.shape}, dtype {tensor.dtype}'}, not "
                             f"shape {shape}, float32")
            if tensor.device[0] not in HOST_MEMORY:
                seen.append(f"{what} is on {_device_name(tensor.device)}: the GPU tier's")
                continue
            values = tensor.read("float32")
            if values != expected:
                raise Failed(f"{what} (byte_offset {tensor.tensor.byte_offset}, strides {tensor.strides}) reads "
                             f"{values}, not {expected}")
            seen.append(f"{view}: strides {tensor.strides}, byte_offset {tensor.tensor.byte_offset}, values right")
            read = True
        finally:
            _released(tensor)
    if not read:
        raise NotApplicable("; ".join(seen))
    return "; ".join(seen)


@clause("producer.unexportable", title="an array DLPack cannot carry (FACTORY(shape, \"unexportable\")) is refused "
                                       "with BufferError",
        source=ARRAY_API,
        cites="BufferError - Implementations should raise BufferError when the data cannot be exported as DLPack "
              "(e.g., incompatible dtype, strides, or device).")
def unexportable(producer: Producer) -> str:
    _array(producer)  # N/A without __dlpack__
    try:
        x = _array(producer, (3,), "unexportable")
    except NotApplicable:
        raise
    except Exception as error:  # a factory written before this dtype name: it offers none
        raise NotApplicable(f"the factory offers no unexportable array: FACTORY((3,), 'unexportable') raised "
                            f"{describe(error)}") from None
    seen = []
    for keywords in ({"max_version": WANTED}, {}):
        call = _call(**keywords)
        try:
            capsule = x.__dlpack__(**keywords)
        except BufferError as error:
            seen.append(f"{call} raised {describe(error)}")
            continue
        except Exception as error:  # a TypeError is a consumer's cue to ask again without the keywords
            raise Failed(f"{type(x).__qualname__} the factory made as unexportable: {call} raised {describe(error)}"
                         f", not BufferError") from None
        tensor = _consume(capsule, call)
        found = f"shape {tensor.shape}, dtype (code, bits, lanes) {tensor.dtype}"
        _released(tensor)
        raise Failed(f"{type(x).__qualname__} the factory made as unexportable: {call} returned a tensor, {found}")
    return "; ".join(seen)


# -- the deleter -----------------------------------------------------------------------------------

_counters: list = []  # every stand-in deleter ever made: a late call must still find its code


class _Counter:
    """Stands in for a struct's deleter: counts the calls, and forwards the
    first to the producer's deleter (a second would free twice)."""

    def __init__(self, managed) -> None:
        self.original, self.calls = managed.deleter, 0
        self.callback = DELETER(self._called)
        _counters.append(self.callback)
        managed.deleter = ctypes.cast(self.callback, c_void_p).value

    def _called(self, address: int) -> None:
        self.calls += 1
        if self.calls == 1:
            _WITH_GIL(self.original)(address)


def _struct(capsule):
    """The managed tensor of an unconsumed capsule, read in place."""
    name = capsule_name(capsule)
    struct_type = {b"dltensor_versioned": DLManagedTensorVersioned, b"dltensor": DLManagedTensor}[name]
    return struct_type.from_address(_api.PyCapsule_GetPointer(capsule, name))


def _capsule(x):
    """(capsule, call) of a DLPack 1.3 consumer's __dlpack__ call, checked
    to be an unconsumed DLPack capsule with a deleter."""
    capsule, error, call = _outcome(x, raw=True)
    if error is not None:
        raise Failed(f"{call} raised {describe(error)}")
    if type(capsule).__name__ != "PyCapsule" or capsule_name(capsule) not in (b"dltensor", b"dltensor_versioned"):
        raise NotApplicable(f"{call} returned no DLPack capsule (see producer.capsule)")
    if not _struct(capsule).deleter:
        raise NotApplicable(f"{call} returned a tensor with a NULL deleter (allowed)")
    return capsule, call


@clause("producer.deleter.unconsumed", title="a capsule dropped unconsumed has its deleter called, once",
        source=PYTHON_SPEC,
        cites="The producer must set the PyCapsule name to \"dltensor\" so that it can be inspected by name, and set "
              "PyCapsule_Destructor that calls the deleter of the DLManagedTensor when the \"dltensor\"-named "
              "capsule is no longer needed.")
def deleter_unconsumed(producer: Producer) -> str:
    x = _array(producer)
    before = sys.getrefcount(x)
    capsule, call = _capsule(x)
    if not capsule_has_destructor(capsule):
        consumed = _consume(capsule, call)
        consumed.release()
        raise Failed(f"{call} returned a capsule without a destructor: dropped unconsumed, its tensor's deleter "
                     "never runs (a leak)")
    held = sys.getrefcount(x) - before  # what the tensor holds on the array, if anything
    counter = _Counter(_struct(capsule))
    del capsule
    if not counter.calls:  # a capsule in a reference cycle goes only with a collection
        gc.collect()
    dropped = f"{call}'s capsule dropped unconsumed"
    if counter.calls == 1:
        return f"{dropped}: the deleter was called once"
    if counter.calls:
        raise Failed(f"{dropped}: the deleter was called {counter.calls} times")
    # A destructor may call its own deleter function directly, not through
    # the struct's field the kit counts: the array's references tell.
    if held and sys.getrefcount(x) != before:
        raise Failed(f"{dropped}: the deleter was never called, and the tensor still holds {held} reference(s) to "
                     "the array (a leak)")
    if held:
        return f"{dropped}: the tensor let go of the array (its destructor calls the deleter directly)"
    raise NotApplicable(f"{dropped}: the destructor does not call the struct's deleter field, and the tensor holds "
                        "no reference to the array by which the kit could see it released otherwise")


@clause("producer.deleter.consumed", title="a consumed capsule's deleter runs once, called by the consumer: the "
                                           "capsule's destructor leaves a used_ capsule alone",
        source=PYTHON_SPEC,
        cites="It does so by renaming the capsule to \"used_dltensor\" to ensure that PyCapsule_Destructor will not "
              "get called (ensured if PyCapsule_Destructor calls deleter only for capsules whose name is "
              "\"dltensor\")")
def deleter_consumed(producer: Producer) -> str:
    # First the capsule goes before the consumer releases the tensor, so a
    # destructor that calls the deleter anyway finds the struct still alive.
    capsule, call = _capsule(_array(producer))
    tensor = _consume(capsule, call)
    counter = _Counter(tensor.managed)
    del capsule
    if counter.calls:
        tensor.released = True  # the destructor did it
        raise Failed(f"{call}'s capsule, consumed (renamed {tensor.name.decode()!r} to used_...) and dropped: its "
                     "destructor called the deleter, which the consumer calls again when it is done")
    tensor.release()
    if counter.calls != 1:
        raise Failed(f"the consumer released {call}'s tensor: the deleter was called {counter.calls} times")
    # Then the usual order: the consumer releases, the capsule goes.
    capsule, call = _capsule(_array(producer))
    tensor = _consume(capsule, call)
    counter = _Counter(tensor.managed)
    tensor.release()
    del capsule
    if counter.calls != 1:
        raise Failed(f"{call}'s tensor released by the consumer, then the capsule dropped: the deleter was called "
                     f"{counter.calls} times")
    return "the deleter was called once, by the consumer, whether the capsule went before or after"


@clause("producer.deleter.refcount", title="an export consumed and released leaves the array's reference count as "
                                             "it was",
        source=PYTHON_SPEC,
        cites="In Python, the deleter usually needs to Py_DECREF the original owner and free the DLManagedTensor "
              "allocation.")
def deleter_refcount(producer: Producer) -> str:
    # A capsule dropped unconsumed is producer.deleter.unconsumed's business.
    x = _array(producer)
    _released(export(x))  # a first export may cache things on the array

    def counts(collect: bool) -> tuple[int, int]:
        if collect:
            gc.collect()
        before = sys.getrefcount(x)
        for _ in range(3):
            _released(export(x))
        if collect:
            gc.collect()
        return before, sys.getrefcount(x)
    before, after = counts(collect=False)
    if after != before:  # garbage of the library's own, perhaps: count again with collections (slow)
        before, after = counts(collect=True)
    if after != before:
        raise Failed(f"three exports consumed and released: the array's reference count went from {before} to "
                     f"{after}")
    return f"three exports consumed and released: the array's reference count stayed {before}"


@clause("producer.deleter.no-gil", title="the deleter can be called from a thread that does not hold the GIL",
        source=PYTHON_SPEC,
        cites="The DLManagedTensor deleter must ensure that sharing beyond Python boundaries is possible, this "
              "means that the GIL must be acquired explicitly if it uses Python objects or API.")
def deleter_no_gil(producer: Producer) -> str:
    x = _array(producer)
    for _ in range(_NO_GIL_CALLS):
        tensor = export(x)
        if not tensor.managed.deleter:
            raise NotApplicable(f"{tensor.call} returned a tensor with a NULL deleter (allowed)")
        tensor.released = True
        native = _on_a_native_thread(tensor.managed.deleter, tensor.address)
        if not native:
            deleter = DELETER(tensor.managed.deleter)  # ctypes lets go of the GIL for the call
            thread = threading.Thread(target=deleter, args=(tensor.address,), name="dlpack-kit-deleter")
            thread.start()
            thread.join()
    where = "a thread Python never saw" if native else "a thread"
    return f"the deleters of {_NO_GIL_CALLS} of {tensor.call}'s tensors returned on {where}, without the GIL"


# Up to Python 3.11 the thread state of the GIL's holder is one variable for
# the whole process, and between pthread_create's return and pthread_join
# this thread holds the GIL for a few bytecodes: a deleter that starts then
# finds a thread state and escapes. Each call is a fresh chance to show it
# (from 3.12 each thread has its own, and one call always shows it).
_NO_GIL_CALLS = 3


def _on_a_native_thread(function: int, argument: int) -> bool:
    """Whether the C function `function(argument)` ran on a thread of
    pthread_create's, this one waiting in pthread_join without the GIL: as
    a consumer's own thread calls a deleter, and with no Python thread
    holding the GIL meanwhile (a deleter that touches Python without it
    then fails at once, not by a race). False where there are no pthreads."""
    libc = ctypes.CDLL(None)
    try:
        create, join = libc.pthread_create, libc.pthread_join
    except AttributeError:
        return False
    create.argtypes, create.restype = [POINTER(c_ulong), c_void_p, c_void_p, c_void_p], c_int
    join.argtypes, join.restype = [c_ulong, c_void_p], c_int
    thread = c_ulong()
    if create(byref(thread), None, function, argument) != 0:
        return False
    join(thread, None)  # a CDLL call: the GIL is let go while it waits
    return True


# -- the protocol path is not deprecated -----------------------------------------------------------


@clause("producer.protocol.no-deprecation", title="__dlpack__ and __dlpack_device__ warn no DeprecationWarning",
        source=PYTHON_SPEC,
        cites="The __dlpack__ method will produce a PyCapsule containing a DLManagedTensor, which will be consumed "
              "immediately within from_dlpack - therefore it is consumed exactly once, and it will not be visible "
              "to users of the Python API.")
def no_deprecation(producer: Producer) -> str:
    # Judged on the calls of today's protocol; the legacy __dlpack__() without
    # max_version, which the array API lets a producer refuse since 2025, may
    # warn: that is reported, not failed.
    x = _array(producer)

    def deprecations(call: Callable[[], Any]) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        return [f"{w.category.__name__}: {w.message}" for w in caught if is_deprecation(w.category)]

    def legacy_export() -> None:
        try:
            _released(exported(x))
        except Exception:  # a refusal (read-only data, no legacy export) is another clause's business
            pass

    today = []
    if callable(getattr(x, "__dlpack_device__", None)):
        today += deprecations(x.__dlpack_device__)
    today += deprecations(lambda: _released(export(x)))
    if today:
        raise Failed("; ".join(today))
    legacy = deprecations(legacy_export)
    if legacy:
        raise Warned(f"__dlpack_device__() and {_call(max_version=WANTED)} warn nothing; the legacy __dlpack__() "
                     f"warns: " + "; ".join(legacy))
    return "no DeprecationWarning (__dlpack_device__(), " + _call(max_version=WANTED) + ", __dlpack__())"
