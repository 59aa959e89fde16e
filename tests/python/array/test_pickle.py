"""Pickling Arrays, and copy.copy / copy.deepcopy.

CPU arrays pickle by value: their elements in C order, their dtype (every
one dlbridge has, packed sub-byte ones included), shape and read-only flag.
With protocol 5 the elements travel as a pickle.PickleBuffer, so a pickler
that takes out-of-band buffers shares them instead of copying, as NumPy's
arrays do. Arrays in GPU memory are refused with a clear error."""
import copy
import pickle

import numpy as np
import pytest

import dlbridge
from exporters import CudaInterface
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def arrays():
    base = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    read_only = np.arange(6, dtype=np.int16)
    read_only.flags.writeable = False
    return {
        "float64 3-d": dlbridge.asarray(base),
        "transposed": dlbridge.asarray(base).transpose(2, 0, 1),
        "reversed step": dlbridge.asarray(base)[:, ::-1, ::2],
        "0-d": dlbridge.asarray(np.float32(2.5)),
        "empty": dlbridge.zeros((3, 0), dtype="int8"),
        "bool": dlbridge.asarray([True, False, True]),
        "complex128": dlbridge.asarray([1 + 2j, -3j]),
        "uint64": dlbridge.asarray([2**64 - 1, 0], dtype="uint64"),
        "bfloat16": dlbridge.asarray([1.5, -2.0, 3.0], dtype="bfloat16"),
        "float8_e4m3fn": dlbridge.asarray([448.0, -0.5], dtype="float8_e4m3fn"),
        "float4_e2m1fn packed": dlbridge.asarray([[1.0, 2.0, 3.0], [4.0, 6.0, -1.0]], dtype="float4_e2m1fn"),
        "read-only": dlbridge.asarray(read_only),
        "broadcast": dlbridge.asarray(np.broadcast_to(np.arange(3.0), (4, 3))),
    }


ARRAYS = arrays()


def check(a, b):
    assert type(b) is dlbridge.Array
    assert (b.shape, b.dtype, b.device, b.readonly) == (a.shape, a.dtype, a.device, a.readonly)
    assert b.tolist() == a.tolist()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("name", list(ARRAYS))
def test_round_trip_by_value(name, protocol):
    a = ARRAYS[name]
    b = pickle.loads(pickle.dumps(a, protocol=protocol))
    check(a, b)  # read-only stays read-only and writable stays writable
    assert b.data_ptr != a.data_ptr or a.size == 0
    if b.dtype.typestr is not None and not b.readonly:
        assert memoryview(b).readonly is False


@pytest.mark.parametrize("name", list(ARRAYS))
def test_protocol_5_out_of_band_shares_contiguous_memory(name):
    a = ARRAYS[name]
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 400  # the elements are not in the pickle
    b = pickle.loads(data, buffers=buffers)
    check(a, b)
    contiguous = a.size == 0 or memoryview(buffers[0]).nbytes == a.nbytes and name not in (
        "transposed", "reversed step", "broadcast")
    if contiguous and a.size:
        assert b.data_ptr == a.data_ptr  # zero copy, as NumPy does


def test_writes_through_an_out_of_band_copy_reach_the_original():
    a = dlbridge.asarray(np.zeros(4))
    buffers = []
    b = pickle.loads(pickle.dumps(a, protocol=5, buffer_callback=buffers.append), buffers=buffers)
    np.asarray(b)[1] = 7.0
    assert a.tolist() == [0.0, 7.0, 0.0, 0.0]


def test_read_only_buffers_given_back_for_a_writable_array_are_copied():
    a = dlbridge.asarray(np.arange(4.0))
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    b = pickle.loads(data, buffers=[bytes(buffers[0])])
    assert not b.readonly and b.tolist() == a.tolist()
    np.asarray(b)[0] = 5.0
    assert b.tolist()[0] == 5.0 and a.tolist()[0] == 0.0


def test_a_buffer_of_the_wrong_size_is_refused():
    a = dlbridge.asarray(np.arange(4.0))
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    with pytest.raises(ValueError, match=exactly(
            "unpickling an Array: float64 of shape (4,) takes 32 bytes; the pickle holds 24")):
        pickle.loads(data, buffers=[bytearray(24)])


@pytest.mark.parametrize("route", ["shared", "copied", "refused"])
def test_unpickling_gives_the_buffer_back(route):
    """The buffer an unpickled array came from is released once: when the
    array dies where it shares the memory, at once where it was copied or
    refused."""
    a = dlbridge.asarray(np.arange(4.0))
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    raw = bytearray(bytes(buffers[0]) if route != "refused" else 24)
    given = memoryview(raw).toreadonly() if route == "copied" else memoryview(raw)
    if route == "refused":
        with pytest.raises(ValueError, match="the pickle holds 24"):
            pickle.loads(data, buffers=[given])
    else:
        b = pickle.loads(data, buffers=[given])
        assert b.tolist() == a.tolist() and not b.readonly
        if route == "shared":
            with pytest.raises(BufferError):
                given.release()  # b holds an export of it
            del b
    given.release()
    raw.extend(b"more")


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("name", list(ARRAYS))
def test_copy_and_deepcopy_copy_the_elements(name, deep):
    a = ARRAYS[name]
    b = (copy.deepcopy if deep else copy.copy)(a)
    assert type(b) is dlbridge.Array and b.tolist() == a.tolist() and b.shape == a.shape
    assert not b.readonly and (b.data_ptr != a.data_ptr or a.size == 0)


def test_arrays_inside_containers_pickle_and_deepcopy():
    a = dlbridge.asarray(np.arange(3.0))
    box = {"a": a, "again": a, "view": a[::-1]}
    for restored in (pickle.loads(pickle.dumps(box)), copy.deepcopy(box)):
        assert restored["a"] is restored["again"]  # the memo keeps identity, as for any object
        assert restored["a"].tolist() == [0.0, 1.0, 2.0] and restored["view"].tolist() == [2.0, 1.0, 0.0]


def test_arrays_in_gpu_memory_are_refused():
    gpu = dlbridge.asarray(CudaInterface(np.arange(4.0)))  # labelled cuda:0; never read
    for protocol in PROTOCOLS:
        with pytest.raises(TypeError, match=exactly(
                "cannot pickle an Array on cuda:0: a pickle holds host memory; copy the array to the CPU first "
                "(a.to_device('cpu'))")):
            pickle.dumps(gpu, protocol=protocol)
