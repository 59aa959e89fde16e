"""The GPU tier: clauses about arrays in CUDA memory, on both sides.

Producers are asked for ``FACTORY(shape, dtype, device="cuda")``: the
stream values of ``__dlpack__`` (None, -1, 1, 2 and a stream the kit
creates), the order a consumer's stream gets after the producer's work
(a slow write queued on the producer's stream, the export, then a read on
the kit's stream: the read must see the write), copies to the host through
``dl_device=(kDLCPU, 0)``, the device a GPU array is labelled with (never
kDLCPU), and the ``__cuda_array_interface__`` (version 3, the DLPack data
pointer, strides absent or None = C order, no stream 0). Consumers are
handed device memory the kit allocates: through a CUDA array interface
without strides, and through a CUDA DLPack producer, which must be asked
with the consumer's stream and imported onto the GPU.

The kit drives the GPU through the CUDA driver API (libcuda, with ctypes),
not through any array library: ``Cuda`` allocates, reads and writes device
memory, creates streams, and launches its one kernel, a spin of a given
length written in PTX (which the driver compiles for whatever GPU it
finds). Every clause here is registered with ``tier="gpu"``: without a
usable CUDA device (as the kit's own look through the driver finds,
``unavailable``) each is not applicable, without running. What needs no GPU (stream and interface
verdicts, layouts, labels) is in plain functions, tested with fakes
(tests/python/kit/test_kit_gpu.py).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import struct
import sys
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_ubyte, c_uint, c_uint64, c_void_p
from typing import Any, Iterator, NamedTuple

from dlbridge.testing import _abi
from dlbridge.testing._abi import FLAG_IS_COPIED, Consumed
from dlbridge.testing._model import (UNAVAILABLE, Consumer, Failed, NotApplicable, Producer, clause, describe,
                                     expected_values)

PYTHON_SPEC = "DLPack Python specification"
ARRAY_API = "array API standard"
DLPACK_H = "dlpack.h"
CAI_SPEC = "CUDA Array Interface (v3)"

# DLPack device types.
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
DEVICE_NAMES = {CPU: "kDLCPU", CUDA: "kDLCUDA", CUDA_HOST: "kDLCUDAHost", CUDA_MANAGED: "kDLCUDAManaged"}

# The arrays the GPU tier asks factories for, the first one made being used.
CASES = (((2, 3), "float32"), ((6,), "float32"), ((6,), "int32"), ((6,), "uint8"))

# The ordering clause's slow write: long enough that a read not ordered
# after it runs first by a wide margin, short enough for a fast kit.
SLOW_WRITE_SECONDS = 0.3
WARM_BYTE, WRITTEN_BYTE = 0x5A, 0xA5

# -- the CUDA driver API ------------------------------------------------------------

# From cuda.h (tests/python/kit/test_kit_gpu.py checks them against the toolkit's).
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_IS_MANAGED = 8
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_UNIFIED = 1, 2, 4
CU_STREAM_NON_BLOCKING = 1
CU_STREAM_LEGACY, CU_STREAM_PER_THREAD = 1, 2  # the handles; also the stream integers of both protocols
CUDA_SUCCESS, CUDA_ERROR_NOT_READY = 0, 600

# The functions the kit calls, by their exported names (cuda.h's #defines map
# the plain names to these), with their argument types.
SIGNATURES: dict[str, tuple] = {
    "cuInit": (c_uint,),
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDevicePrimaryCtxRetain": (POINTER(c_void_p), c_int),
    "cuCtxPushCurrent_v2": (c_void_p,),
    "cuCtxPopCurrent_v2": (POINTER(c_void_p),),
    "cuCtxSynchronize": (),
    "cuModuleLoadData": (POINTER(c_void_p), c_char_p),
    "cuModuleGetFunction": (POINTER(c_void_p), c_void_p, c_char_p),
    "cuLaunchKernel": (c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p,
                       POINTER(c_void_p), POINTER(c_void_p)),
    "cuMemAlloc_v2": (POINTER(c_uint64), c_size_t),
    "cuMemFree_v2": (c_uint64,),
    "cuMemcpyHtoD_v2": (c_uint64, c_void_p, c_size_t),
    "cuMemcpyDtoH_v2": (c_void_p, c_uint64, c_size_t),
    "cuMemcpyDtoHAsync_v2": (c_void_p, c_uint64, c_size_t, c_void_p),
    "cuMemsetD8Async": (c_uint64, c_ubyte, c_size_t, c_void_p),
    "cuStreamCreate": (POINTER(c_void_p), c_uint),
    "cuStreamDestroy_v2": (c_void_p,),
    "cuStreamQuery": (c_void_p,),
    "cuStreamSynchronize": (c_void_p,),
    "cuPointerGetAttributes": (c_uint, POINTER(c_int), POINTER(c_void_p), c_uint64),
}

# One thread spins until `nanoseconds` have passed on the GPU's global timer.
# PTX, so that the driver compiles it for the GPU it finds.
SPIN_KERNEL = "dlbridge_kit_spin"
SPIN_PTX = b"""\
.version 7.0
.target sm_75
.address_size 64

.visible .entry dlbridge_kit_spin(.param .u64 nanoseconds)
{
    .reg .pred %p;
    .reg .u64 %limit, %start, %now, %elapsed;
    ld.param.u64 %limit, [nanoseconds];
    mov.u64 %start, %globaltimer;
SPIN:
    mov.u64 %now, %globaltimer;
    sub.u64 %elapsed, %now, %start;
    setp.lt.u64 %p, %elapsed, %limit;
    @%p bra SPIN;
    ret;
}
"""


class CudaError(RuntimeError):
    """A CUDA driver call failed."""


def _load_driver() -> ctypes.CDLL:
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    reasons = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as error:
            reasons.append(str(error))
    raise NotApplicable(f"the CUDA driver library does not load: {'; '.join(reasons)}")


def memory_kind(memory_type: int, is_managed: int) -> str:
    """What cuPointerGetAttributes says a pointer is: "device", "host"
    (pinned or registered), "managed", or "pageable" (memory CUDA does not
    know: plain host memory)."""
    if is_managed or memory_type == CU_MEMORYTYPE_UNIFIED:
        return "managed"
    return {CU_MEMORYTYPE_DEVICE: "device", CU_MEMORYTYPE_HOST: "host"}.get(memory_type, "pageable")


class Cuda:
    """The CUDA driver, on the primary context of one device (the one that
    the CUDA runtime, and so every array library, works in). Pointers and
    streams are plain ints; a stream of None is the legacy default stream
    with the host waiting for it."""

    def __init__(self, ordinal: int = 0):
        self.lib = _load_driver()
        for name, argtypes in SIGNATURES.items():
            function = getattr(self.lib, name)
            function.argtypes, function.restype = argtypes, c_int
        self.call("cuInit", 0)
        device, context = c_int(), c_void_p()
        self.call("cuDeviceGet", byref(device), ordinal)
        # Retained for the life of the process, as the runtime retains it.
        self.call("cuDevicePrimaryCtxRetain", byref(context), device)
        self.context = context
        self._spin: c_void_p | None = None

    def call(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != CUDA_SUCCESS:
            raise CudaError(f"{name}: {self.error_name(status)}")

    def error_name(self, status: int) -> str:
        name = c_char_p()
        if self.lib.cuGetErrorName(status, byref(name)) == CUDA_SUCCESS and name.value:
            return f"{name.value.decode()} ({status})"
        return f"CUresult {status}"

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """The device's context current on this thread, and the thread's own
        afterwards."""
        self.call("cuCtxPushCurrent_v2", self.context)
        try:
            yield
        finally:
            self.lib.cuCtxPopCurrent_v2(byref(c_void_p()))

    def memory(self, address: int) -> tuple[str, int]:
        """(kind, device ordinal) of the memory at `address` (memory_kind)."""
        attributes = (c_int * 3)(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
        # Wider than any of the three, zeroed: each is read from its low bytes.
        values = (c_uint64 * 3)()
        slots = (c_void_p * 3)(*(ctypes.addressof(values) + 8 * i for i in range(3)))
        with self.current():
            # Unlike cuPointerGetAttribute, a pointer CUDA does not know is no error.
            self.call("cuPointerGetAttributes", 3, attributes, slots, address)
        memory_type, managed, ordinal = (v & 0xFFFFFFFF for v in values)
        return memory_kind(memory_type, managed & 0xFF), ctypes.c_int32(ordinal).value

    def read(self, address: int, size: int, stream: int | None = None) -> bytes:
        """`size` bytes at `address`, copied on `stream` (then waited for)."""
        out = ctypes.create_string_buffer(max(size, 1))
        if size:
            with self.current():
                if stream is None:
                    self.call("cuMemcpyDtoH_v2", out, address, size)
                else:
                    self.call("cuMemcpyDtoHAsync_v2", out, address, size, stream)
                    self.call("cuStreamSynchronize", stream)
        return out.raw[:size]

    def slow_write(self, address: int, size: int, byte: int, stream: int, seconds: float) -> None:
        """Queues on `stream` a spin of `seconds`, then `byte` written over
        `size` bytes at `address`; returns at once."""
        with self.current():
            if self._spin is None:
                module, function = c_void_p(), c_void_p()
                self.call("cuModuleLoadData", byref(module), SPIN_PTX)
                self.call("cuModuleGetFunction", byref(function), module, SPIN_KERNEL.encode())
                self._spin = function
            nanoseconds = c_uint64(int(seconds * 1e9))
            arguments = (c_void_p * 1)(ctypes.addressof(nanoseconds))
            self.call("cuLaunchKernel", self._spin, 1, 1, 1, 1, 1, 1, 0, stream, arguments, None)
            self.call("cuMemsetD8Async", address, byte, size, stream)

    def busy(self, stream: int) -> bool:
        """Whether work queued on `stream` is still running or waiting."""
        with self.current():
            status = self.lib.cuStreamQuery(stream)
        if status not in (CUDA_SUCCESS, CUDA_ERROR_NOT_READY):
            raise CudaError(f"cuStreamQuery: {self.error_name(status)}")
        return status == CUDA_ERROR_NOT_READY

    def synchronize(self, stream: int | None = None) -> None:
        """Waits for `stream`, or for all work on the device."""
        with self.current():
            if stream is None:
                self.call("cuCtxSynchronize")
            else:
                self.call("cuStreamSynchronize", stream)

    @contextlib.contextmanager
    def stream(self) -> Iterator[int]:
        """A new stream of the kit's own, which does not wait for the legacy
        default stream; waited for and destroyed at the end."""
        handle = c_void_p()
        with self.current():
            self.call("cuStreamCreate", byref(handle), CU_STREAM_NON_BLOCKING)
        try:
            yield handle.value or 0  # never NULL once made
        finally:
            with self.current():
                self.lib.cuStreamSynchronize(handle)
                self.lib.cuStreamDestroy_v2(handle)

    def alloc(self, data: bytes) -> int:
        """New device memory holding `data`."""
        address = c_uint64()
        with self.current():
            self.call("cuMemAlloc_v2", byref(address), max(len(data), 1))
            self.call("cuMemcpyHtoD_v2", address, data, len(data))
        return address.value

    def free(self, address: int) -> None:
        with self.current():
            self.call("cuCtxSynchronize")  # no work queued on it may still run
            self.call("cuMemFree_v2", address)


@functools.cache
def _driver() -> Cuda:
    return Cuda(0)


def driver() -> Cuda:
    """The process's Cuda (tests put a fake in its place)."""
    return _driver()


def unavailable() -> str | None:
    """Why the GPU tier cannot run here, as the kit's own look through the
    CUDA driver finds (not as dlbridge, built with or without its CUDA
    backend, sees it), or None where a CUDA device is usable."""
    try:
        driver()
    except NotApplicable as reason:
        return str(reason)
    except CudaError as error:
        return f"the CUDA driver finds no usable device ({error})"
    return None


UNAVAILABLE["gpu"] = unavailable

class DeviceMemory:
    """Device memory the kit fills, freed when the last reference goes."""

    def __init__(self, cuda: Cuda, data: bytes):
        self.cuda, self.address = cuda, cuda.alloc(data)

    def __del__(self):
        try:
            self.cuda.free(self.address)
        except Exception:  # a finalizer must not raise; the memory is lost
            pass


# Device memory whose DLPack deleter was never called: a consumer may still use it.
_kept: list[DeviceMemory] = []

# -- layouts and values -------------------------------------------------------------------

def itemsize(dtype: str) -> int:
    return _abi.DTYPES[dtype][0][1] // 8


def typestr_dtype(typestr: Any) -> str:
    """The dtype (a name of _abi.DTYPES) of a little-endian or byte-order-free
    typestr ("<f4", "|u1"); Failed for anything the kit cannot read."""
    if not isinstance(typestr, str) or len(typestr) < 3 or not typestr[2:].isdigit():
        raise Failed(f"typestr is {typestr!r}, not a NumPy typestr such as '<f4'")
    order, kind, bits = typestr[0], typestr[1], 8 * int(typestr[2:])
    name = {"b": "bool" if bits == 8 else "", "i": f"int{bits}", "u": f"uint{bits}", "f": f"float{bits}",
            "c": f"complex{bits}"}.get(kind)
    if name not in _abi.DTYPES or order not in "<|=" or (order == "|" and bits > 8):
        raise Failed(f"typestr {typestr!r} is not a little-endian number the kit reads")
    return name


def byte_offsets(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The byte offset of each element, in C order, for byte `strides`."""
    offsets = [0]
    for extent, stride in zip(shape, strides):
        offsets = [o + i * stride for o in offsets for i in range(extent)]
    return offsets if all(shape) else []


def decode(raw: bytes, offsets: list[int], dtype: str) -> list:
    """The elements of `dtype` at `offsets` of `raw`."""
    fmt = _abi.DTYPES[dtype][1]
    layout = struct.Struct("<" + fmt)
    if fmt.startswith("2"):
        return [complex(*layout.unpack_from(raw, o)) for o in offsets]
    return [layout.unpack_from(raw, o)[0] for o in offsets]


class Interface(NamedTuple):
    """A __cuda_array_interface__, read and checked as far as its layout goes."""
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]  # bytes
    address: int


def interface_layout(interface: Any) -> Interface:
    """The layout a __cuda_array_interface__ dict describes (strides absent
    or None: C order); Failed naming the first entry that does not fit."""
    if not isinstance(interface, dict):
        raise Failed(f"__cuda_array_interface__ is a {type(interface).__name__}, not a dict")
    shape = interface.get("shape")
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise Failed(f"shape is {shape!r}, not a tuple of ints >= 0")
    dtype = typestr_dtype(interface.get("typestr"))
    data = interface.get("data")
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int)
            and isinstance(data[1], bool)):
        raise Failed(f"data is {data!r}, not a tuple (pointer, read-only flag)")
    strides = interface.get("strides")
    if strides is None:
        strides = tuple(s * itemsize(dtype) for s in _abi.c_order_strides(shape))
    elif not (isinstance(strides, tuple) and len(strides) == len(shape)
              and all(isinstance(s, int) for s in strides)):
        raise Failed(f"strides is {strides!r}, not None or a tuple of {len(shape)} ints")
    return Interface(shape, dtype, tuple(strides), data[0])


def span(offsets: list[int], itemsize: int) -> tuple[int, int]:
    """(first byte, size in bytes) that the elements at `offsets` cover."""
    if not offsets:
        return 0, 0
    return min(offsets), max(offsets) + itemsize - min(offsets)


def read_elements(cuda: Cuda, address: int, shape, strides, dtype: str, stream: int | None = None) -> list:
    """The elements in C order of device memory at `address` with byte
    `strides`, read in one copy of the span they cover."""
    offsets = byte_offsets(tuple(shape), tuple(strides))
    first, size = span(offsets, itemsize(dtype))
    raw = cuda.read(address + first, size, stream)
    return decode(raw, [o - first for o in offsets], dtype)


def interface_stream_verdict(interface: dict) -> str:
    """The "stream" entry of a CUDA array interface: absent, None, or an int
    other than 0 (1 and 2 the default streams, larger a cudaStream_t)."""
    if "stream" not in interface:
        return "no \"stream\" entry (nothing to synchronise on)"
    stream = interface["stream"]
    if stream is None:
        return "\"stream\": None (nothing to synchronise on)"
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise Failed(f"\"stream\" is {stream!r}, not None or an int")
    if stream == 0:
        raise Failed("\"stream\" is 0, which the interface disallows as ambiguous (1: the legacy default stream, "
                     "2: the per-thread one)")
    if stream < 0:
        raise Failed(f"\"stream\" is {stream}, not a stream")
    return f"\"stream\": {stream} ({stream_name(stream)})"


def stream_name(stream: int | None) -> str:
    return {None: "None", -1: "-1, no synchronisation", 1: "the legacy default stream",
            2: "the per-thread default stream"}.get(stream, "a stream of its own")


def work_stream_handle(value: int | None) -> int:
    """The driver's handle of a stream a producer names: NULL (what the
    runtime calls the default stream) and 1 are the legacy default stream,
    2 the per-thread one, anything else a CUstream."""
    return CU_STREAM_LEGACY if not value else value


def stream_export_verdict(stream_label: str, error: BaseException | None, *, optional: bool) -> str:
    """The verdict on ``__dlpack__(stream=...)`` of a CUDA array, given the
    exception it raised (None: it returned a capsule). A stream value other
    than None may be refused, with BufferError."""
    call = f"__dlpack__(stream={stream_label})"
    if error is None:
        return f"{call} returned a capsule"
    if optional and isinstance(error, BufferError):
        return f"{call} refused with {describe(error)} (support for a stream other than None is optional)"
    if optional:
        raise Failed(f"{call} raised {describe(error)}; a stream the producer does not support is refused with "
                     f"BufferError")
    raise Failed(f"{call} raised {describe(error)}; stream=None (the legacy default stream) must be accepted")


def consumer_stream_verdict(calls: list[dict]) -> str:
    """The streams a consumer passed to a CUDA producer's __dlpack__ (the
    keywords of each call): None, -1, 1, 2 or a stream handle; never 0 (which
    the specification disallows), nor anything else."""
    if not calls:
        raise Failed("the consumer never called __dlpack__")
    seen = []
    for keywords in calls:
        stream = keywords.get("stream")
        if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
            raise Failed(f"__dlpack__ was called with stream={stream!r}, not an int")
        if stream == 0:
            raise Failed("__dlpack__ was called with stream=0, which is disallowed for CUDA (ambiguous between "
                         "None, 1 and 2)")
        if stream is not None and stream < -1:
            raise Failed(f"__dlpack__ was called with stream={stream}: a stream is an int >= -1")
        seen.append("no stream (None: the producer assumes the legacy default stream)" if stream is None
                    else f"stream={stream} ({stream_name(stream)})")
    return "__dlpack__ was called with " + "; then ".join(seen)


def expected_label(kind: str, ordinal: int) -> tuple[int, int]:
    """The DLPack device of memory of `kind` (Cuda.memory) on device `ordinal`."""
    return {"device": (CUDA, ordinal), "host": (CUDA_HOST, 0), "managed": (CUDA_MANAGED, 0)}.get(kind, (CPU, 0))


def label_name(device: tuple[int, int]) -> str:
    kind, number = device
    return f"({DEVICE_NAMES.get(kind, kind)}, {number})"


# -- exporting and reading back ----------------------------------------------------------


def _make(producer: Producer) -> tuple[tuple[int, ...], str, Any]:
    """(shape, dtype, array) of the first case of CASES the factory makes on the GPU."""
    reasons = []
    for shape, dtype in CASES:
        try:
            return shape, dtype, producer.make(shape, dtype, device="cuda")
        except NotApplicable as reason:
            reasons.append(str(reason))
            if "no device keyword" in str(reason):
                break
    raise NotApplicable("; ".join(reasons))


def _export(x, **keywords) -> Consumed:
    """x.__dlpack__(max_version=(1, 3), **keywords) consumed by the kit (or,
    from a producer that takes no max_version, without it); the caller
    releases it."""
    try:
        capsule = x.__dlpack__(max_version=(1, 3), **keywords)
    except TypeError:
        capsule = x.__dlpack__(**keywords)
    try:
        return Consumed(capsule)
    except AssertionError as error:
        raise Failed(f"__dlpack__ returned {error}") from None


def first_element(tensor: Consumed) -> int:
    return (tensor.tensor.data or 0) + tensor.tensor.byte_offset


def _tensor_layout(tensor: Consumed) -> tuple[str, tuple[int, ...]]:
    """(dtype, byte strides) of a consumed tensor."""
    dtype = _abi.dtype_name(tensor.dtype)
    if dtype is None:
        raise Failed(f"dtype {tensor.dtype} is not one the kit reads")
    strides = tensor.strides or _abi.c_order_strides(tensor.shape)
    return dtype, tuple(s * itemsize(dtype) for s in strides)


def _tensor_bytes(tensor: Consumed) -> tuple[int, int]:
    """(address, size) of the bytes a consumed tensor's elements cover."""
    dtype, strides = _tensor_layout(tensor)
    first, size = span(byte_offsets(tensor.shape, strides), itemsize(dtype))
    return first_element(tensor) + first, size


def read_tensor(cuda: Cuda, tensor: Consumed) -> list:
    """The elements of a consumed tensor in C order: on the host through the
    kit's ctypes reading, in CUDA memory through the driver."""
    dtype, strides = _tensor_layout(tensor)
    if tensor.device[0] == CUDA:
        return read_elements(cuda, first_element(tensor), tensor.shape, strides, dtype)
    kind, _ = cuda.memory(first_element(tensor))
    if kind == "device":  # read on the host, it would crash the process
        raise Failed(f"a tensor labelled {label_name(tensor.device)} has its data in device memory")
    if kind != "pageable":
        cuda.synchronize()  # the host reads pinned and managed memory on no stream
    return tensor.read(dtype)


class Readout(NamedTuple):
    device: tuple[int, int]
    shape: tuple[int, ...]
    address: int
    values: list


def read_back(cuda: Cuda, result: Any) -> Readout:
    """What a consumer made: through its __dlpack__ (asked for the legacy
    default stream, where the kit's reads run, when it is on a GPU), else its
    __cuda_array_interface__, else the buffer protocol."""
    if callable(getattr(result, "__dlpack__", None)):
        try:
            on_gpu = tuple(result.__dlpack_device__())[0] in (CUDA, CUDA_MANAGED)
        except Exception:
            on_gpu = False
        tensor = _export(result, stream=CU_STREAM_LEGACY) if on_gpu else _export(result)
        try:
            return Readout(tensor.device, tensor.shape, first_element(tensor), read_tensor(cuda, tensor))
        finally:
            tensor.release()
    interface = getattr(result, "__cuda_array_interface__", None)
    if interface is not None:
        layout = interface_layout(interface)
        values = read_elements(cuda, layout.address, layout.shape, layout.strides, layout.dtype)
        return Readout((CUDA, cuda.memory(layout.address)[1]), layout.shape, layout.address, values)
    view = memoryview(result)
    return Readout((CPU, 0), tuple(view.shape or ()), 0, _flat(view.tolist()))


def _flat(nested) -> list:
    return [v for item in nested for v in _flat(item)] if isinstance(nested, list) else [nested]


def _same_values(values: list, shape: tuple[int, ...], dtype: str) -> bool:
    return values == expected_values(shape, dtype)


# -- producer clauses: streams ---------------------------------------------------------------

_OPTIONAL = "Support for a stream value other than None is optional and implementation-dependent."


FOREIGN = "a stream the kit makes"


def _stream_clause(value: int | str | None, *, optional: bool):
    """The check of __dlpack__(stream=value) (FOREIGN: a new stream of the
    kit's own, alive until the capsule is released)."""
    def check(producer: Producer) -> str:
        _, _, x = _make(producer)
        with contextlib.ExitStack() as stack:
            stream = stack.enter_context(driver().stream()) if value == FOREIGN else value
            label = f"{stream:#x}, a stream the kit made" if value == FOREIGN else repr(value)
            try:
                tensor = _export(x, stream=stream)
            except Exception as error:
                return stream_export_verdict(label, error, optional=optional)
            tensor.release()
            return stream_export_verdict(label, None, optional=optional)
    return check


clause("producer.gpu-stream.none", title="__dlpack__(stream=None) exports a CUDA array",
       source=ARRAY_API, cites="None: producer must assume the legacy default stream (default).",
       tier="gpu")(_stream_clause(None, optional=False))

clause("producer.gpu-stream.no-sync", title="__dlpack__(stream=-1) exports a CUDA array, or refuses with BufferError",
       source=ARRAY_API,
       cites="If stream is -1, the value may be used by the consumer to signal \"producer must not perform any "
             f"synchronization\". ... {_OPTIONAL}",
       tier="gpu")(_stream_clause(-1, optional=True))

clause("producer.gpu-stream.legacy", title="__dlpack__(stream=1) exports a CUDA array, or refuses with BufferError",
       source=ARRAY_API, cites=f"{_OPTIONAL} ... 1: the legacy default stream.",
       tier="gpu")(_stream_clause(CU_STREAM_LEGACY, optional=True))

clause("producer.gpu-stream.per-thread",
       title="__dlpack__(stream=2) exports a CUDA array, or refuses with BufferError",
       source=ARRAY_API, cites=f"{_OPTIONAL} ... 2: the per-thread default stream.",
       tier="gpu")(_stream_clause(CU_STREAM_PER_THREAD, optional=True))

clause("producer.gpu-stream.foreign",
       title="__dlpack__(stream=<a stream the consumer made>) exports a CUDA array, or refuses with BufferError",
       source=ARRAY_API, cites=f"{_OPTIONAL} ... > 2: stream number represented as a Python integer.",
       tier="gpu")(_stream_clause(FOREIGN, optional=True))


def _exchange_work_stream(x, ordinal: int) -> int | None:
    """The stream the producer's C exchange table names as its current work
    stream on the device, or None where it has no such table or slot."""
    kind = type(x)
    capsule = getattr(kind, "__dlpack_c_exchange_api__", None)
    address = None
    if type(capsule).__name__ == "PyCapsule" and _abi.capsule_name(capsule) == _abi.EXCHANGE_CAPSULE_NAME:
        address = _abi._api.PyCapsule_GetPointer(capsule, _abi.EXCHANGE_CAPSULE_NAME)
    elif isinstance(getattr(kind, "__c_dlpack_exchange_api__", None), int):  # DLPack 1.2's spelling
        address = kind.__c_dlpack_exchange_api__
    if not address:
        return None
    api = _abi.DLPackExchangeAPI.from_address(address)
    if api.header.version.major != 1 or not api.current_work_stream:
        return None
    out = c_void_p()
    try:
        status = ctypes.PYFUNCTYPE(c_int, *_abi.STREAM_ARGS)(api.current_work_stream)(CUDA, ordinal, byref(out))
    except Exception:
        return None
    return out.value or 0 if status == 0 else None


def work_stream(x, ordinal: int) -> tuple[int, str]:
    """(driver handle, how it was found) of the stream the producer's own
    work on `x` is queued on: its exchange table's current work stream, else
    the "stream" of its __cuda_array_interface__. NotApplicable when it
    names none: work the kit queued elsewhere would not be the producer's."""
    named = _exchange_work_stream(x, ordinal)
    if named is not None:
        return work_stream_handle(named), "its C exchange table's current_work_stream"
    try:
        stream = x.__cuda_array_interface__.get("stream")
    except Exception:
        stream = None
    if isinstance(stream, int) and not isinstance(stream, bool) and stream > 0:
        return work_stream_handle(stream), "its __cuda_array_interface__'s \"stream\""
    raise NotApplicable("the producer names no stream its work is queued on (no C exchange table with "
                        "current_work_stream, no \"stream\" in a __cuda_array_interface__): a write the kit "
                        "queued would not be the producer's work")


@clause("producer.gpu-stream.ordered",
        title="after __dlpack__(stream=s), work queued on s sees the producer's earlier writes",
        source=ARRAY_API,
        cites="stream is provided by the consumer to the producer to instruct the producer to ensure that "
              "operations can safely be performed on the array (e.g., by inserting a dependency between streams "
              "via \"wait for event\").",
        tier="gpu")
def stream_ordered(producer: Producer) -> str:
    cuda = driver()
    _, _, x = _make(producer)
    with cuda.stream() as mine:
        # A first round loads the kernel and the producer's export path, so
        # that nothing in the race below waits for the GPU to go idle.
        try:
            tensor = _export(x, stream=mine)
        except Exception as error:
            raise NotApplicable(f"__dlpack__(stream=<the kit's stream>) raised {describe(error)} "
                                f"(see producer.gpu-stream.foreign)") from None
        try:
            address, size = _tensor_bytes(tensor)
            kind, ordinal = cuda.memory(address)
            if kind != "device":
                raise NotApplicable(f"the array is in {kind} memory, not device memory")
            work, named_by = work_stream(x, ordinal)
            cuda.slow_write(address, size, WARM_BYTE, work, 0)
            cuda.read(address, size, mine)
        finally:
            tensor.release()
        cuda.synchronize()
        cuda.slow_write(address, size, WRITTEN_BYTE, work, SLOW_WRITE_SECONDS)
        in_flight = cuda.busy(work)
        tensor = _export(x, stream=mine)
        try:
            seen = cuda.read(*_tensor_bytes(tensor), mine)
        finally:
            tensor.release()
        cuda.synchronize()
    where = f"the producer's stream ({work:#x}, {named_by})"
    if not in_flight:
        raise NotApplicable(f"the write queued on {where} had finished before the export: nothing to order")
    stale = sum(byte != WRITTEN_BYTE for byte in seen)
    if stale:
        raise Failed(f"a read on the kit's stream after __dlpack__(stream=<that stream>) saw {stale} of {size} bytes "
                     f"from before the write queued on {where}: the stream was not ordered after it")
    return f"a read on the kit's stream saw all {size} bytes of the write queued on {where}"


# -- producer clauses: device labels (seed 003) -------------------------------------------------


def _data_memory(x) -> tuple[str, int, tuple[int, int]]:
    """(kind, ordinal, the capsule's device) of the array's data."""
    tensor = _export(x)
    try:
        address, label = first_element(tensor), tensor.device
    finally:
        tensor.release()
    kind, ordinal = driver().memory(address)
    return kind, ordinal, label


@clause("producer.gpu-device.capsule", title="the capsule of a GPU array names the memory its data is in",
        source=DLPACK_H,
        cites="CUDA GPU device ... Pinned CUDA CPU memory by cudaMallocHost ... CUDA managed/unified memory "
              "allocated by cudaMallocManaged",
        tier="gpu")
def device_capsule(producer: Producer) -> str:
    _, _, x = _make(producer)
    kind, ordinal, label = _data_memory(x)
    expected = expected_label(kind, ordinal)
    if label != expected:
        raise Failed(f"the capsule's tensor says {label_name(label)}; its data is {kind} memory"
                     f"{f' of device {ordinal}' if kind == 'device' else ''}: {label_name(expected)}")
    return f"{label_name(label)}, {kind} memory"


@clause("producer.gpu-device.method", title="__dlpack_device__ of a GPU array names the memory its data is in",
        source=ARRAY_API, cites="Returns device type and device ID in DLPack format.", tier="gpu")
def device_method(producer: Producer) -> str:
    _, _, x = _make(producer)
    if not callable(getattr(x, "__dlpack_device__", None)):
        raise NotApplicable("no __dlpack_device__ (see producer.methods)")
    said = x.__dlpack_device__()
    kind, ordinal, _ = _data_memory(x)
    expected = expected_label(kind, ordinal)
    if not isinstance(said, tuple) or len(said) != 2 or tuple(int(v) for v in said) != expected:
        raise Failed(f"__dlpack_device__() returned {said!r}; the data is {kind} memory: {label_name(expected)}")
    return f"{said!r}, {kind} memory"


# -- producer clauses: copies to the host ------------------------------------------------------------

_TO_HOST = "__dlpack__(max_version=(1, 3), dl_device=(1, 0), copy=True)"


def _export_exactly(x, **keywords) -> Consumed:
    """x.__dlpack__(**keywords) consumed by the kit, with no second try."""
    try:
        return Consumed(x.__dlpack__(**keywords))
    except AssertionError as error:
        raise Failed(f"__dlpack__ returned {error}") from None


def _host_copy(x) -> Consumed:
    try:
        return _export_exactly(x, max_version=(1, 3), dl_device=(CPU, 0), copy=True)
    except BufferError as error:
        raise Failed(f"{_TO_HOST} refused: {describe(error)}") from None


@clause("producer.gpu-to-host.copy", title="__dlpack__(dl_device=(kDLCPU, 0), copy=True) of a GPU array gives its "
        "values in host memory", source=ARRAY_API,
        cites="The v2023.12 standard only mandates that a compliant library should offer a way for __dlpack__ to "
              "return a capsule referencing an array whose underlying memory is accessible to the Python "
              "interpreter (represented by the kDLCPU enumerator in DLPack).",
        tier="gpu")
def to_host_copy(producer: Producer) -> str:
    shape, dtype, x = _make(producer)
    tensor = _host_copy(x)
    try:
        if tensor.device != (CPU, 0):
            raise Failed(f"{_TO_HOST} gave a tensor on {label_name(tensor.device)}")
        if tensor.shape != shape or _abi.dtype_name(tensor.dtype) != dtype:
            raise Failed(f"{_TO_HOST} of {dtype}{list(shape)} gave dtype {tensor.dtype}, shape {tensor.shape}")
        kind, _ = driver().memory(first_element(tensor))
        if kind not in ("pageable", "host", "managed"):
            raise Failed(f"{_TO_HOST} gave a tensor labelled kDLCPU whose data is {kind} memory")
        values = tensor.read(dtype)
    finally:
        tensor.release()
    if not _same_values(values, shape, dtype):
        raise Failed(f"{_TO_HOST} of {dtype}{list(shape)} holds {values}")
    return f"{_TO_HOST} gave the values in {kind} host memory"


@clause("producer.gpu-to-host.is-copied", title="the host copy of a GPU array is flagged IS_COPIED",
        source=ARRAY_API, cites="When a copy happens, the DLPACK_FLAG_BITMASK_IS_COPIED flag must be set.",
        tier="gpu")
def to_host_is_copied(producer: Producer) -> str:
    _, _, x = _make(producer)
    try:
        tensor = _host_copy(x)
    except Exception as error:
        raise NotApplicable(f"no copy to look at (see producer.gpu-to-host.copy): {describe(error)}") from None
    try:
        versioned, flags = tensor.versioned, tensor.flags
    finally:
        tensor.release()
    if not versioned:
        raise NotApplicable(f"{_TO_HOST} gave a legacy capsule, which has no flags")
    if not flags & FLAG_IS_COPIED:
        raise Failed(f"{_TO_HOST} copied the data to the host with flags {flags:#x}: IS_COPIED not set")
    return f"flags {flags:#x}: IS_COPIED"


@clause("producer.gpu-to-host.no-copy",
        title="__dlpack__(dl_device=(kDLCPU, 0), copy=False) of device memory is refused (BufferError or ValueError)",
        source=ARRAY_API,
        cites="If a copy must be made to enable this support but copy is set to False, the function must raise "
              "ValueError. ... If False, the function must never copy, and raise a BufferError in case a copy is "
              "deemed necessary (e.g. if a cross-device data movement is requested, and it is not possible "
              "without a copy).",
        tier="gpu")
def to_host_no_copy(producer: Producer) -> str:
    _, _, x = _make(producer)
    kind, _, _ = _data_memory(x)
    if kind != "device":
        raise NotApplicable(f"the data is {kind} memory, which the host reaches without a copy")
    call = "__dlpack__(max_version=(1, 3), dl_device=(1, 0), copy=False)"
    try:
        tensor = _export_exactly(x, max_version=(1, 3), dl_device=(CPU, 0), copy=False)
    except (BufferError, ValueError) as error:
        return f"{call} refused: {describe(error)}"
    except TypeError as error:  # the keywords are unknown to it: the copy's clause fails
        raise NotApplicable(f"{call} raised {describe(error)} (see producer.gpu-to-host.copy)") from None
    try:
        got = f"a tensor on {label_name(tensor.device)} with flags {tensor.flags:#x}"
    finally:
        tensor.release()
    raise Failed(f"{call} of device memory returned {got}: moving it to the host needs the copy copy=False forbids")


# -- producer clauses: the CUDA array interface (seed 004) -----------------------------------------------


def _interface_of(x) -> dict:
    try:
        interface = x.__cuda_array_interface__
    except AttributeError as error:
        raise NotApplicable(f"no __cuda_array_interface__ ({describe(error)})") from None
    if not isinstance(interface, dict):
        raise Failed(f"__cuda_array_interface__ is a {type(interface).__name__}, not a dict")
    return interface


@clause("producer.gpu-interface.version", title="__cuda_array_interface__ says version 3", source=CAI_SPEC,
        cites="An integer for the version of the interface being exported. The current version is 3.", tier="gpu")
def interface_version(producer: Producer) -> str:
    _, _, x = _make(producer)
    version = _interface_of(x).get("version")
    if version != 3 or isinstance(version, bool):
        raise Failed(f"\"version\" is {version!r}")
    return "\"version\": 3"


@clause("producer.gpu-interface.data",
        title="__cuda_array_interface__'s data pointer is the DLPack export's (data + byte_offset)",
        source=CAI_SPEC,
        cites="The first element is the data pointer as a Python int (or long). The data must be device-accessible.",
        tier="gpu")
def interface_data(producer: Producer) -> str:
    _, _, x = _make(producer)
    layout = interface_layout(_interface_of(x))
    tensor = _export(x)
    try:
        address = first_element(tensor)
    finally:
        tensor.release()
    if layout.address != address:
        raise Failed(f"\"data\" points at {layout.address:#x}, the DLPack export's first element at {address:#x}")
    return f"both at {address:#x}"


@clause("producer.gpu-interface.c-order",
        title="the values read through __cuda_array_interface__ (strides absent or None: C order) are the array's",
        source=CAI_SPEC,
        cites="If strides is not given, or it is None, the array is in C-contiguous layout. Otherwise, a tuple of "
              "int (or long) is explicitly given for representing the number of bytes to skip to access the next "
              "element at each dimension.",
        tier="gpu")
def interface_c_order(producer: Producer) -> str:
    shape, dtype, x = _make(producer)
    cuda = driver()
    interface = _interface_of(x)
    layout = interface_layout(interface)
    if layout.shape != shape:
        raise Failed(f"\"shape\" is {layout.shape}, the array's {shape}")
    stream = interface.get("stream")
    if isinstance(stream, int) and not isinstance(stream, bool) and stream > 0:
        cuda.synchronize(work_stream_handle(stream))  # the consumer's part of the interface's contract
    values = read_elements(cuda, layout.address, layout.shape, layout.strides, layout.dtype)
    strides = "absent" if "strides" not in interface else repr(interface["strides"])
    if not _same_values(values, shape, dtype):
        raise Failed(f"read with strides {strides} ({layout.strides} bytes), {dtype}{list(shape)} holds {values}")
    return f"the values, read with strides {strides}"


@clause("producer.gpu-interface.stream", title="__cuda_array_interface__'s \"stream\" is absent, None or a stream, "
        "never 0", source=CAI_SPEC,
        cites="0: This is disallowed as it would be ambiguous between None and the default stream, and also "
              "between the legacy and per-thread default streams.",
        tier="gpu")
def interface_stream(producer: Producer) -> str:
    _, _, x = _make(producer)
    return interface_stream_verdict(_interface_of(x))


# -- consumer clauses ---------------------------------------------------------------------------------------

# What the kit hands consumers: float32 0, 1, ..., 5 as a (2, 3) C-order array in device memory.
SHAPE, DTYPE, TYPESTR = (2, 3), "float32", "<f4"


class CudaInterfaceOnly:
    """An object with a __cuda_array_interface__ and nothing else, over
    memory `owner` keeps alive."""

    def __init__(self, interface: dict, owner: Any):
        self._interface, self.owner = interface, owner

    @property
    def __cuda_array_interface__(self) -> dict:
        return dict(self._interface)


def _device_values(cuda: Cuda) -> DeviceMemory:
    return DeviceMemory(cuda, struct.pack("<6f", *expected_values(SHAPE, DTYPE)))


def _check_readout(readout: Readout, what: str) -> str:
    if readout.shape != SHAPE or readout.values != expected_values(SHAPE, DTYPE):
        raise Failed(f"{what} reads back as shape {readout.shape} holding {readout.values}, not 0, 1, ..., 5 "
                     f"in shape {SHAPE}")
    return f"{what} reads back as 0, 1, ..., 5 in shape {SHAPE}"


def _interface_clause(strides_entry: str):
    def check(consumer: Consumer) -> str:
        cuda = driver()
        memory = _device_values(cuda)
        base = {"shape": SHAPE, "typestr": TYPESTR, "data": (memory.address, False), "version": 3}
        # A control with explicit strides tells a consumer that does not take
        # the CUDA array interface at all from one that fails on the case.
        try:
            control = consumer.consume(CudaInterfaceOnly(dict(base, strides=(12, 4)), memory))
        except Exception as error:
            raise NotApplicable(f"the consumer does not import a __cuda_array_interface__ (with strides (12, 4) "
                                f"it raised {describe(error)})") from None
        _check_readout(read_back(cuda, control), "with strides (12, 4), the result")
        del control
        interface = base if strides_entry == "absent" else dict(base, strides=None)
        result = consumer.consume(CudaInterfaceOnly(interface, memory))
        try:
            return _check_readout(read_back(cuda, result), f"with strides {strides_entry}, the result")
        finally:
            del result
            gc.collect()
    return check


_C_ORDER = "If strides is not given, or it is None, the array is in C-contiguous layout."

clause("consumer.gpu-interface.strides-absent",
       title="a __cuda_array_interface__ without \"strides\" is imported in C order", source=CAI_SPEC,
       cites=_C_ORDER, tier="gpu")(_interface_clause("absent"))

clause("consumer.gpu-interface.strides-none",
       title="a __cuda_array_interface__ with \"strides\": None is imported in C order", source=CAI_SPEC,
       cites=_C_ORDER, tier="gpu")(_interface_clause("None"))


class _CudaProducer(_abi.Producer):
    """The kit's DLPack producer of device memory. Asked for dl_device=(kDLCPU,
    0), it copies to host memory (IS_COPIED), as CUDA producers do, or, with
    copy=False, raises BufferError."""

    def __init__(self, cuda: Cuda, managed: _abi.ManagedTensor, device: tuple[int, int]):
        super().__init__(managed, device=device)
        self.cuda = cuda

    def __dlpack__(self, **keywords):
        dl_device = keywords.get("dl_device")
        if dl_device is None or tuple(dl_device) != (CPU, 0):
            return super().__dlpack__(**keywords)
        self.calls.append(keywords)
        if keywords.get("copy") is False:
            raise BufferError("copy=False: device memory reaches the host only by a copy")
        t = self.managed.struct.dl_tensor
        values = struct.unpack("<6f", self.cuda.read(t.data, 24))
        host = _abi.ManagedTensor(values, shape=SHAPE, strides=_abi.c_order_strides(SHAPE),
                                  dtype=_abi.DTYPES[DTYPE][0], ctype=ctypes.c_float, flags=FLAG_IS_COPIED)
        return host.capsule()


@contextlib.contextmanager
def _cuda_producer(cuda: Cuda) -> Iterator[tuple[_abi.Producer, int, int]]:
    """(a DLPack producer of the kit's values in device memory, its data
    address, its device); the memory goes once the consumer has called the
    deleter."""
    memory = _device_values(cuda)
    _, ordinal = cuda.memory(memory.address)
    managed = _abi.ManagedTensor(shape=SHAPE, strides=_abi.c_order_strides(SHAPE), dtype=_abi.DTYPES[DTYPE][0],
                                 device=(CUDA, ordinal), data=memory.address)
    producer = _CudaProducer(cuda, managed, (CUDA, ordinal))
    try:
        yield producer, memory.address, ordinal
    finally:
        gc.collect()
        taken = (_abi.capsule_name(producer.capsule) or b"").startswith(b"used_")
        if taken and managed.deleter_calls == 0:  # the consumer may still use it
            _kept.append(memory)


@clause("consumer.gpu-dlpack.to-host",
        title="from_dlpack(x, device=CPU) of CUDA data gives its values in host memory; with copy=False, "
              "ValueError or BufferError",
        source=ARRAY_API,
        cites="If the array library does not support such cases at all, the function must raise BufferError. If a "
              "copy must be made to enable this support but copy is set to False, the function must raise "
              "ValueError.",
        tier="gpu")
def consumer_to_host(consumer: Consumer) -> str:
    consumer.require("device")
    cuda = driver()
    with _cuda_producer(cuda) as (producer, _, _):
        try:
            result = consumer.consume(producer, device="cpu")
        except BufferError as error:  # the library does not support such cases at all
            return f"device=\"cpu\": refused ({describe(error)})"
        readout = read_back(cuda, result)
        del result
    if readout.device[0] not in (CPU, CUDA_HOST, CUDA_MANAGED):
        raise Failed(f"device=\"cpu\": the result is on {label_name(readout.device)}, not in host memory")
    seen = [_check_readout(readout, f"device=\"cpu\": the result, on {label_name(readout.device)},")]
    if consumer.keywords["copy"]:
        with _cuda_producer(cuda) as (producer, _, _):
            try:
                consumer.consume(producer, device="cpu", copy=False)
            except (ValueError, BufferError) as error:
                seen.append(f"with copy=False: refused ({describe(error)})")
            else:
                raise Failed("; ".join(seen) + "; with copy=False: imported, though CUDA memory cannot reach the host "
                             "without a copy")
    return "; ".join(seen)


@clause("consumer.gpu-dlpack.stream", title="a CUDA producer's __dlpack__ is called with a stream, never 0",
        source=PYTHON_SPEC,
        cites="The consumer must pass the stream it will use to the producer; the producer must synchronize or wait "
              "on the stream when necessary.",
        tier="gpu")
def consumer_stream(consumer: Consumer) -> str:
    with _cuda_producer(driver()) as (producer, _, _):
        try:
            consumer.consume(producer)
        except Exception as error:
            if producer.calls:  # a stream the specification disallows fails even so
                consumer_stream_verdict(producer.calls)
            raise NotApplicable(f"the consumer does not import CUDA data: {describe(error)}") from None
        return consumer_stream_verdict(producer.calls)


@clause("consumer.gpu-dlpack.device", title="what a consumer makes of a CUDA producer is on the GPU, with its values",
        source=ARRAY_API,
        cites="If device is None and x supports DLPack, the output array must be on the same device as x.",
        tier="gpu")
def consumer_device(consumer: Consumer) -> str:
    cuda = driver()
    with _cuda_producer(cuda) as (producer, address, ordinal):
        try:
            result = consumer.consume(producer)
        except Exception as error:
            raise NotApplicable(f"the consumer does not import CUDA data: {describe(error)}") from None
        readout = read_back(cuda, result)
        del result
    if readout.device != (CUDA, ordinal):
        raise Failed(f"the result is on {label_name(readout.device)}, the producer's data on "
                     f"{label_name((CUDA, ordinal))}")
    observed = _check_readout(readout, f"the result, on {label_name(readout.device)},")
    return observed + (", sharing the producer's memory" if readout.address == address else ", a copy")
