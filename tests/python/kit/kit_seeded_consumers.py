"""Seeded consumers for test_kit_consumer.py: a correct DLPack consumer written
in Python over the kit's ctypes reading of the ABI (its arrays are NumPy
arrays on the producer's memory), and copies of it with one bug each, which
the kit's consumer clauses must catch. A module of its own so that the kit's
child processes can import it too."""
from __future__ import annotations

import ctypes
import math

import numpy as np

from dlbridge.testing._abi import DELETER, DTYPES, FLAG_IS_COPIED, FLAG_READ_ONLY, Consumed, c_order_strides, dtype_name

HOST_DEVICES = (1, 3, 11, 13, 20)


class _Owner:
    """Owns a consumed tensor: calls its deleter `calls` times (once, when
    correct) when the last array on its memory goes."""

    def __init__(self, tensor: Consumed, calls: int):
        self.tensor, self.calls = tensor, calls

    def __del__(self):
        release(self.tensor, self.calls)


def release(tensor: Consumed, calls: int) -> None:
    if tensor.managed.deleter:
        for _ in range(calls):
            DELETER(tensor.managed.deleter)(tensor.address)


def consume(x, *, copy=None, device=None, retry=True, error_type=BufferError, deleter_calls=1, byte_offset=True, strides=True,
            read_only=True, legacy_answer_error=None, honours_copy=True, asks_max_version=True):
    """np.from_dlpack's work in Python, `copy` as the array API's; each
    other keyword turns a part of it off (or wrong); `legacy_answer_error`:
    refuse a legacy capsule answered to max_version with it; `device`:
    None or "cpu", where its arrays are."""
    if device not in (None, "cpu"):
        raise BufferError(f"this consumer's arrays are on the CPU, not {device}")
    asked = True
    keywords = {"copy": copy} if copy is not None and honours_copy else {}
    try:
        capsule = x.__dlpack__(**({"max_version": (1, 3)} if asks_max_version else {}), **keywords)
    except TypeError:
        if not retry:
            raise
        capsule, asked = x.__dlpack__(), False
    try:
        tensor = Consumed(capsule)
    except AssertionError as error:
        raise BufferError(str(error)) from None
    if legacy_answer_error and asked and not tensor.versioned:
        release(tensor, deleter_calls)
        raise legacy_answer_error("a legacy capsule answered to max_version (1, 3)")
    name = dtype_name(tensor.dtype)
    problem = (f"DLPack major version {tensor.version[0]}" if tensor.versioned and tensor.version[0] != 1
               else f"dtype {tensor.dtype}" if name is None
               else f"device {tensor.device}" if tensor.device[0] not in HOST_DEVICES else None)
    if problem:
        release(tensor, deleter_calls)
        raise (error_type if "version" in problem else BufferError)(f"cannot import: {problem}")
    shape = tensor.shape
    if math.prod(shape) == 0:
        release(tensor, deleter_calls)
        return np.empty(shape, name)
    itemsize = DTYPES[name][0][1] // 8
    steps = (tensor.strides if strides else None) or c_order_strides(shape)
    t = tensor.tensor
    first = t.data + (t.byte_offset if byte_offset else 0)
    low = first + itemsize * sum(min(0, (n - 1) * s) for n, s in zip(shape, steps))
    high = first + itemsize * (sum(max(0, (n - 1) * s) for n, s in zip(shape, steps)) + 1)
    block = (ctypes.c_uint8 * (high - low)).from_address(low)
    block.owner = _Owner(tensor, deleter_calls)  # the array's base: its deleter runs when the array goes
    array = np.ndarray(shape, name, buffer=block, offset=first - low, strides=[s * itemsize for s in steps])
    if read_only and tensor.flags & FLAG_READ_ONLY:
        array.flags.writeable = False
    if copy and honours_copy and not tensor.flags & FLAG_IS_COPIED:  # the producer did not copy: copy here
        return array.copy()
    return array


def reference(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device)


def ignores_byte_offset(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device, byte_offset=False)


def ignores_strides(x, *, copy=None, device=None):  # as if every tensor had NULL strides: C order
    return consume(x, copy=copy, device=device, strides=False)


def writable_read_only(x, *, copy=None, device=None):  # NumPy arrays can be read-only: READ_ONLY must not be ignored
    return consume(x, copy=copy, device=device, read_only=False)


def no_retry(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device, retry=False)


def leaks(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device, deleter_calls=0)


def frees_twice(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device, deleter_calls=2)


def value_error_on_major_2(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device, error_type=ValueError)


def refuses_legacy_answers(x, *, copy=None, device=None):  # pyarrow 26's way, with BufferError
    return consume(x, copy=copy, device=device, legacy_answer_error=BufferError)


def value_error_on_legacy_answers(x, *, copy=None, device=None):
    return consume(x, copy=copy, device=device, legacy_answer_error=ValueError)


class _Given:
    """A producer of one capsule already made."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **keywords):
        return self.capsule


_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.argtypes = [ctypes.py_object, ctypes.c_void_p]
_set_destructor = ctypes.pythonapi.PyCapsule_SetDestructor
_set_destructor.argtypes = [ctypes.py_object, ctypes.c_void_p]
_NAMES = {name: ctypes.create_string_buffer(name) for name in (b"dltensor", b"dltensor_versioned")}  # static storage


def clears_the_destructor(x, *, copy=None):
    """MLX's way (0.32), which is no bug: it copies, calls the deleter once,
    and clears the capsule's destructor where the specification says to
    rename the capsule; the deleter runs once all the same."""
    if copy is False:
        raise BufferError("this consumer always copies")
    try:
        capsule = x.__dlpack__(max_version=(1, 3))
    except TypeError:
        capsule = x.__dlpack__()
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    original = name(capsule)
    copied = np.array(consume(_Given(capsule)), copy=True)  # the deleter runs as the view goes
    if original in _NAMES:
        _set_name(capsule, ctypes.addressof(_NAMES[original]))  # as if never renamed
        _set_destructor(capsule, None)
    return copied


class _Huge:
    """A result whose __dlpack__ claims 2**40 float32 elements over a buffer of six."""

    def __dlpack__(self, **keywords):
        from dlbridge.testing._abi import ManagedTensor
        self.tensor = ManagedTensor(range(6), shape=(1 << 40,), strides=(1,), dtype=(2, 32, 1), ctype=ctypes.c_float)
        return self.tensor.capsule()


def claims_2_to_the_40_elements(x):
    consume(x)
    return _Huge()


# -- consumers that import nothing, or not what they say (issue 35) -----------------------------------


def returns_the_producer(x):
    return x


class _Forwards:
    """Holds the producer and asks it again for each export: an array of its own in name only."""

    def __init__(self, producer):
        self.producer = producer

    def __dlpack__(self, **keywords):
        return self.producer.__dlpack__(**keywords)


def forwards_to_the_producer(x):
    return _Forwards(x)


def refuses_everything(x):
    x.__dlpack__(max_version=(1, 3))  # asks, as a consumer does, then refuses whatever it got
    raise BufferError("this consumer imports nothing")


class _StridesKeptForExport(np.ndarray):
    """Memory read as if in C order, whatever the strides (the buffer shows
    it), with an export of the strides as given: the kit's read-back
    through __dlpack__ alone would find the values right."""

    def __dlpack__(self, **keywords):
        return self.given.__dlpack__(**keywords)


def stores_strides_it_cannot_use(x, *, copy=None, device=None):
    result = consume(x, copy=copy, device=device, strides=False).view(_StridesKeptForExport)
    result.given = consume(x, copy=copy, device=device)
    return result


def one_d_only(x, *, copy=None, device=None):
    """pyarrow's way: its arrays are 1-D, and it says so."""
    return consume(x, copy=copy, device=device)


one_d_only.dlpack_ndims = (1,)


def declines_two_d(x, *, copy=None, device=None):
    """Declines each 2-d case, after a look at it: NotImplementedError."""
    array = consume(x, copy=copy, device=device)
    if array.ndim == 2:
        raise NotImplementedError("this consumer's arrays have no second axis")
    return array


# -- the array API's copy keyword ------------------------------------------------------------------


def shares_on_copy_true(x, *, copy=None, device=None):
    """Takes copy, and passes it nowhere: copy=True shares the producer's memory."""
    return consume(x, copy=copy, device=device, honours_copy=False)


def copies_on_copy_false(x, *, copy=None, device=None):
    """copy=False asked of the producer, and a copy made all the same."""
    array = consume(x, copy=copy, device=device)
    return array.copy() if copy is False else array


def value_error_when_a_copy_is_needed(x, *, copy=None, device=None):
    """The producer's BufferError (a copy is needed, copy=False) turned into ValueError."""
    try:
        return consume(x, copy=copy, device=device)
    except BufferError as error:
        if copy is False:
            raise ValueError(f"cannot import without a copy: {error}") from None
        raise


def legacy_call_only(x, *, copy=None, device=None):
    """JAX's way (0.10): __dlpack__ without max_version, and nothing else."""
    return consume(x, copy=copy, device=device, asks_max_version=False)


# -- consumers of __array_interface__ ----------------------------------------------------------


def numpy_asarray(x):
    return np.asarray(x)


def _from_interface(x, strides, *, read_only_flag=True):
    interface = x.__array_interface__
    address, read_only = interface["data"]
    size = math.prod(interface["shape"]) * np.dtype(interface["typestr"]).itemsize
    memory = (ctypes.c_uint8 * size).from_address(address)
    memory.owner = x  # the array's base keeps the object, and so its memory
    array = np.ndarray(interface["shape"], interface["typestr"], buffer=memory, strides=strides)
    array.flags.writeable = not (read_only and read_only_flag)
    return array


def ignores_the_read_only_flag(x):
    """Writes through a read-only __array_interface__."""
    return _from_interface(x, x.__array_interface__.get("strides"), read_only_flag=False)


def needs_strides(x):
    """Reads "strides" as if every interface had it."""
    return _from_interface(x, x.__array_interface__["strides"])


def copies_for_a_device(x, *, copy=None, device=None):
    """Copies whenever a device is named, even the one the data is on."""
    array = consume(x, copy=copy, device=device)
    return array.copy() if device is not None else array


def index_error_on_0_d(x, *, copy=None, device=None):
    """Reads the first extent of every tensor: IndexError on a 0-d one, a fault, not a refusal."""
    array = consume(x, copy=copy, device=device)
    array.shape[0]
    return array


def refuses_0_d(x, *, copy=None, device=None):
    array = consume(x, copy=copy, device=device)
    if array.ndim == 0:
        raise BufferError("this consumer's arrays have at least one axis")
    return array
