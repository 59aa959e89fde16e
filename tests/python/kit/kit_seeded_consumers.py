"""Seeded consumers for test_kit_consumer.py: a correct DLPack consumer written
in Python over the kit's ctypes reading of the ABI (its arrays are NumPy
arrays on the producer's memory), and copies of it with one bug each, which
the kit's consumer clauses must catch. A module of its own so that the kit's
child processes can import it too."""
from __future__ import annotations

import ctypes
import math

import numpy as np

from dlbridge.testing._abi import DELETER, DTYPES, FLAG_READ_ONLY, Consumed, c_order_strides, dtype_name

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


def consume(x, *, retry=True, error_type=BufferError, deleter_calls=1, byte_offset=True, strides=True,
            read_only=True, legacy_answer_error=None):
    """np.from_dlpack's work in Python; each keyword but the first turns a
    part of it off (or wrong); `legacy_answer_error`: refuse a legacy
    capsule answered to max_version with it."""
    asked = True
    try:
        capsule = x.__dlpack__(max_version=(1, 3))
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
    return array


def reference(x):
    return consume(x)


def ignores_byte_offset(x):
    return consume(x, byte_offset=False)


def ignores_strides(x):  # as if every tensor had NULL strides: C order
    return consume(x, strides=False)


def writable_read_only(x):  # NumPy arrays can be read-only: READ_ONLY must not be ignored
    return consume(x, read_only=False)


def no_retry(x):
    return consume(x, retry=False)


def leaks(x):
    return consume(x, deleter_calls=0)


def frees_twice(x):
    return consume(x, deleter_calls=2)


def value_error_on_major_2(x):
    return consume(x, error_type=ValueError)


def refuses_legacy_answers(x):  # pyarrow 26's way, with BufferError
    return consume(x, legacy_answer_error=BufferError)


def value_error_on_legacy_answers(x):
    return consume(x, legacy_answer_error=ValueError)


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


def clears_the_destructor(x):
    """MLX's way (0.32), which is no bug: it copies, calls the deleter once,
    and clears the capsule's destructor where the specification says to
    rename the capsule; the deleter runs once all the same."""
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
