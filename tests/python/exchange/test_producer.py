"""dlbridge.Array as a DLPack producer: the rules of ``__dlpack__`` (array API
2025.12 / DLPack 1.3 python_spec), checked by consuming the capsules with
ctypes and reading the exported structs field by field."""
import ctypes
import gc
import re
import weakref

import numpy as np
import pytest

import dlbridge
from dlbridge import DeviceType
from dlbridge.testing._abi import (FLAG_IS_COPIED, FLAG_READ_ONLY, Consumed, ManagedTensor, Producer,
                           capsule_name)
from exporters import on_cuda
from gpu import NO_GPU
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)


def collect():
    gc.collect()


def read_only(shape=(2, 3)):
    n = np.arange(float(np.prod(shape))).reshape(shape)
    n.flags.writeable = False
    a = dlbridge.from_dlpack(n)
    assert a.readonly
    return a


@pytest.fixture
def a():
    return dlbridge.from_dlpack(np.arange(6.0).reshape(2, 3))


def consume(array, **kwargs):
    return Consumed(array.__dlpack__(**kwargs))


# -- __dlpack_device__ ----------------------------------------------------------


def test_dlpack_device(a):
    device = a.__dlpack_device__()
    assert device == (DeviceType.CPU, 0)
    assert device == (1, 0)
    assert type(device) is tuple
    assert isinstance(device[0], DeviceType)
    assert type(device[1]) is int


# -- versions -------------------------------------------------------------------


@pytest.mark.parametrize("max_version", [(1, 0), (1, 3), (1, 99), (2, 0), (9, 9)])
def test_versioned_capsule_when_max_version_major_is_at_least_1(a, max_version):
    c = consume(a, max_version=max_version)
    assert c.name == b"dltensor_versioned"
    assert c.version == (1, 3)  # the producer's own version
    assert c.flags == 0
    assert c.read() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    c.release()


@pytest.mark.parametrize("kwargs", [{}, {"max_version": None}, {"max_version": (0, 8)},
                                    {"max_version": (0, 0)}])
def test_legacy_capsule_when_max_version_is_none_or_major_0(a, kwargs):
    c = consume(a, **kwargs)
    assert c.name == b"dltensor"
    assert c.shape == (2, 3)
    assert c.read() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    c.release()


def test_read_only_array_refuses_legacy_export():
    r = read_only()
    refusal = exactly("a read-only array cannot be exported as a legacy DLPack capsule (it has no read-only flag); "
                      "pass max_version=(1, 3)")
    with pytest.raises(BufferError, match=refusal):
        r.__dlpack__()
    with pytest.raises(BufferError, match=refusal):
        r.__dlpack__(max_version=(0, 8))


def test_read_only_array_exports_read_only_flag():
    r = read_only()
    c = consume(r, max_version=(1, 3))
    assert c.flags & FLAG_READ_ONLY
    assert not c.flags & FLAG_IS_COPIED
    assert c.read() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    c.release()
    # ... and a consumer honouring it (dlbridge itself) gets a read-only array.
    assert dlbridge.from_dlpack(r).readonly


def test_writable_array_exports_no_read_only_flag(a):
    c = consume(a, max_version=(1, 3))
    assert not c.flags & FLAG_READ_ONLY
    c.release()


def test_dlpack_max_version_message():
    with pytest.raises(TypeError, match=exactly("max_version must be a (major, minor) tuple of ints, got [1, 3]")):
        dlbridge.zeros(2).__dlpack__(max_version=[1, 3])


@pytest.mark.parametrize("max_version", [None, (0, 8)])
def test_dlpack_read_only_legacy_message(max_version):
    n = np.arange(3.0)
    n.flags.writeable = False
    with pytest.raises(BufferError, match=exactly(
            "a read-only array cannot be exported as a legacy DLPack capsule (it has no read-only flag); "
            "pass max_version=(1, 3)")):
        dlbridge.asarray(n).__dlpack__(max_version=max_version)


# -- stream ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [0, 1, 2, -1, 5, 2**40])
def test_stream_must_be_none_on_cpu(a, stream):
    refusal = exactly(f"stream must be None for arrays on cpu, got {stream!r}")
    with pytest.raises(ValueError, match=refusal):
        a.__dlpack__(stream=stream)
    with pytest.raises(ValueError, match=refusal):
        a.__dlpack__(stream=stream, max_version=(1, 3))


def test_stream_none_is_accepted(a):
    c = consume(a, stream=None, max_version=(1, 3))
    c.release()


def test_dlpack_stream_on_cpu_message():
    with pytest.raises(ValueError, match=exactly("stream must be None for arrays on cpu, got 1")):
        dlbridge.zeros(2).__dlpack__(stream=1)


@pytest.mark.parametrize("stream, name", [(1.0, "float"), (True, "bool"), ("1", "str"), ((1,), "tuple"),
                                          (object(), "object")])
@pytest.mark.parametrize("where", ["cpu", "cuda", "cuda copy to cpu"])
def test_dlpack_stream_of_a_wrong_type_is_a_type_error_on_every_device(stream, name, where):
    a = dlbridge.zeros(2) if where == "cpu" else on_cuda()
    extra = {"dl_device": (1, 0)} if where == "cuda copy to cpu" else {}
    with pytest.raises(TypeError, match=exactly(f"stream must be an int or None, got {name}")):
        a.__dlpack__(stream=stream, max_version=(1, 3), **extra)


@pytest.mark.parametrize("stream, message", [(0, "stream 0 is ambiguous on CUDA"),
                                             (-2, "stream must be -1, 1, 2 or a stream handle, got -2"),
                                             (1 << 63, f"stream must fit in 64 bits, got {1 << 63}"),
                                             (-(1 << 64), f"stream must fit in 64 bits, got {-(1 << 64)}")])
def test_dlpack_stream_value_on_a_device(stream, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        on_cuda().__dlpack__(stream=stream, max_version=(1, 3))


# -- dl_device ------------------------------------------------------------------


@pytest.mark.parametrize("dl_device", [(1, 0), (DeviceType.CPU, 0), None])
def test_dl_device_cpu_is_accepted(a, dl_device):
    c = consume(a, max_version=(1, 3), dl_device=dl_device)
    assert c.device == (1, 0)
    assert c.read() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    c.release()


# Why each device is refused (a regex): the CUDA ones for want of a usable
# GPU here (the reason in parentheses depends on the machine and the build).
_NO_CUDA = r"no CUDA device is available \("
_DL_DEVICE_REFUSALS = {
    (2, 0): _NO_CUDA,
    (1, 1): re.escape("the CPU is device 0") + "$",
    (3, 0): _NO_CUDA,
    (13, 0): _NO_CUDA,
    (10, 0): re.escape("dlbridge cannot copy data to or from rocm") + "$",
    (99, 0): re.escape("device type 99 is not a DLPack device type") + "$",
    (1, -1): re.escape("device id must be an integer in [0, 2**31), got -1") + "$",
}


@pytest.mark.parametrize("dl_device", list(_DL_DEVICE_REFUSALS))
def test_other_dl_device_raises_buffer_error(a, dl_device):
    if _DL_DEVICE_REFUSALS[dl_device] == _NO_CUDA and not NO_GPU:
        # With a GPU the copy is made: a capsule flagged IS_COPIED.
        c = consume(a, max_version=(1, 3), dl_device=dl_device)
        assert c.device == dl_device and c.flags & FLAG_IS_COPIED
        c.release()
        return
    refusal = re.escape(f"cannot export an array on cpu to device {dl_device}: ") + _DL_DEVICE_REFUSALS[dl_device]
    with pytest.raises(BufferError, match="^" + refusal):
        a.__dlpack__(max_version=(1, 3), dl_device=dl_device)


@pytest.mark.parametrize("dl_device", [[1, 0], 1, "cpu", (1,), (1, 0, 0), ("1", 0), (1.0, 0), (1, None)])
def test_malformed_dl_device_raises_type_error(a, dl_device):
    with pytest.raises(TypeError, match=exactly("dl_device must be a (device_type, device_id) tuple, "
                                                f"got {dl_device!r}")):
        a.__dlpack__(max_version=(1, 3), dl_device=dl_device)


def test_dlpack_dl_device_messages():
    a = dlbridge.zeros(2)
    with pytest.raises(TypeError, match=exactly("dl_device must be a (device_type, device_id) tuple, got [1, 0]")):
        a.__dlpack__(max_version=(1, 3), dl_device=[1, 0])
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (1, 1): the CPU is device 0")):
        a.__dlpack__(max_version=(1, 3), dl_device=(1, 1))
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (99, 0): "
                                                  "device type 99 is not a DLPack device type")):
        a.__dlpack__(max_version=(1, 3), dl_device=(99, 0))
    with pytest.raises(BufferError, match=exactly("cannot export an array on cpu to device (10, 0): "
                                                  "dlbridge cannot copy data to or from rocm")):
        a.__dlpack__(max_version=(1, 3), dl_device=(10, 0))
    with pytest.raises(BufferError, match=exactly("copy=False, but exporting an array on cpu to device (2, 0) "
                                                  "needs a copy")):
        a.__dlpack__(max_version=(1, 3), dl_device=(2, 0), copy=False)


# -- copy -----------------------------------------------------------------------


@pytest.mark.parametrize("max_version", [(1, 3), None])
def test_copy_true_exports_a_new_buffer(a, max_version):
    c = consume(a, max_version=max_version, copy=True)
    assert c.tensor.data != a.data_ptr
    assert c.read() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    if max_version is not None:
        assert c.flags & FLAG_IS_COPIED
        assert not c.flags & FLAG_READ_ONLY
    # The copy is the consumer's: writing it leaves the original alone.
    ctypes.c_double.from_address(c.tensor.data + c.tensor.byte_offset).value = -1.0
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    c.release()


def test_copy_true_of_a_read_only_array_is_writable():
    r = read_only()
    c = consume(r, max_version=(1, 3), copy=True)
    assert c.flags & FLAG_IS_COPIED
    assert not c.flags & FLAG_READ_ONLY
    assert c.tensor.data != r.data_ptr
    c.release()
    # A copy carries no read-only data, so even the legacy struct is fine.
    c = consume(r, copy=True)
    assert c.name == b"dltensor"
    c.release()


@pytest.mark.parametrize("view", ["T", "reversed", "column"])
def test_copy_true_of_a_strided_view_keeps_the_values(a, view):
    v = {"T": lambda: a.T, "reversed": lambda: a[::-1, ::-1], "column": lambda: a[:, 1]}[view]()
    c = consume(v, max_version=(1, 3), copy=True)
    assert c.flags & FLAG_IS_COPIED
    assert c.shape == v.shape
    assert c.read() == list(np.asarray(v.tolist()).ravel())
    c.release()


def test_copy_true_of_an_empty_array():
    e = dlbridge.zeros((0, 4))
    c = consume(e, max_version=(1, 3), copy=True)
    assert c.flags & FLAG_IS_COPIED
    assert c.shape == (0, 4)
    assert not c.tensor.data
    c.release()


@pytest.mark.parametrize("copy", [False, None])
def test_copy_false_or_none_shares_memory(a, copy):
    c = consume(a, max_version=(1, 3), copy=copy)
    assert c.tensor.data == a.data_ptr
    assert not c.flags & FLAG_IS_COPIED
    c.release()


@pytest.mark.parametrize("copy", [1, 0, "yes", np.bool_(True)])
def test_malformed_copy_raises_type_error(a, copy):
    with pytest.raises(TypeError, match=exactly(f"copy must be True, False or None, got {copy!r}")):
        a.__dlpack__(max_version=(1, 3), copy=copy)


def test_dlpack_copy_message():
    with pytest.raises(TypeError, match=exactly("copy must be True, False or None, got 1")):
        dlbridge.zeros(2).__dlpack__(max_version=(1, 3), copy=1)


# -- argument validation ------------------------------------------------------------


@pytest.mark.parametrize("max_version", [[1, 3], (1, 2, 3), (1,), "1.3", ("1", "3"), (1.0, 3), 1, (1, None)])
def test_malformed_max_version_raises_type_error(a, max_version):
    with pytest.raises(TypeError, match=exactly("max_version must be a (major, minor) tuple of ints, "
                                                f"got {max_version!r}")):
        a.__dlpack__(max_version=max_version)


def test_positional_arguments_raise_type_error(a):
    with pytest.raises(TypeError, match=exactly("__dlpack__() takes exactly 0 positional arguments (1 given)")):
        a.__dlpack__(None)
    with pytest.raises(TypeError, match=exactly("__dlpack__() takes exactly 0 positional arguments (2 given)")):
        a.__dlpack__(None, (1, 3))


@pytest.mark.parametrize("kwarg", ["streams", "version", "device", "max_versions", "Copy"])
def test_unknown_keyword_raises_type_error(a, kwarg):
    with pytest.raises(TypeError, match=exactly(f"__dlpack__() got an unexpected keyword argument '{kwarg}'")):
        a.__dlpack__(**{kwarg: None})


# -- the exported struct ----------------------------------------------------------


@pytest.mark.parametrize("max_version", [(1, 3), None])
@pytest.mark.parametrize(
    "view, shape, strides",
    [
        (lambda a: a, (2, 3), (3, 1)),
        (lambda a: a.T, (3, 2), (1, 3)),
        (lambda a: a[::-1], (2, 3), (-3, 1)),
        (lambda a: a[:, ::-2], (2, 2), (3, -2)),
        (lambda a: a[:, 1], (2,), (3,)),
        (lambda a: a[1:, 1:], (1, 2), (3, 1)),
        (lambda a: a[None, :, None, 0], (1, 2, 1), None),  # strides of extent-1 axes are free
    ],
    ids=["c", "T", "rows-reversed", "cols-step-2", "column", "offset", "new-axes"],
)
def test_exported_strides_are_always_filled(a, view, shape, strides, max_version):
    v = view(a)
    c = consume(v, max_version=max_version)
    assert c.tensor.ndim == len(shape)
    assert c.shape == shape
    assert c.tensor.strides  # never NULL for ndim > 0 (DLPack >= 1.2)
    assert c.strides == v.strides
    if strides is not None:
        assert c.strides == strides
    assert c.tensor.byte_offset == 0
    assert c.tensor.data == v.data_ptr  # data is the first element
    assert c.dtype == (2, 64, 1)
    assert c.device == (1, 0)
    assert c.read() == list(np.asarray(v.tolist(), dtype=float).ravel())
    c.release()


def test_zero_dimensional_export():
    s = dlbridge.asarray(2.5)
    c = consume(s, max_version=(1, 3))
    assert c.tensor.ndim == 0
    assert c.tensor.data
    assert c.read() == [2.5]
    c.release()


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0, 2)])
def test_empty_array_exports_null_data(shape):
    e = dlbridge.zeros(shape)
    c = consume(e, max_version=(1, 3))
    assert not c.tensor.data
    assert c.tensor.byte_offset == 0
    assert c.shape == shape
    assert c.tensor.strides
    c.release()


@pytest.mark.parametrize("dtype, expected", [("bool", (6, 8, 1)), ("int8", (0, 8, 1)), ("uint16", (1, 16, 1)),
                                             ("int32", (0, 32, 1)), ("float32", (2, 32, 1)),
                                             ("complex128", (5, 128, 1))])
def test_exported_dtype(dtype, expected):
    c = consume(dlbridge.zeros(3, dtype=dtype), max_version=(1, 3))
    assert c.dtype == expected
    c.release()


def test_byte_offset_of_an_import_is_folded_into_exported_data():
    mt = ManagedTensor(range(6), shape=(4,), byte_offset=16)
    producer = Producer(mt)
    imported = dlbridge.from_dlpack(producer)
    c = consume(imported, max_version=(1, 3))
    assert c.tensor.data == mt.data_address + 16
    assert c.tensor.byte_offset == 0
    assert c.read() == [2.0, 3.0, 4.0, 5.0]
    c.release()
    del imported, producer
    collect()
    assert mt.deleter_calls == 1


# -- capsule lifetime ---------------------------------------------------------------


@pytest.mark.parametrize("max_version", [(1, 3), None])
def test_unconsumed_capsule_releases_its_tensor_when_collected(max_version):
    mt = ManagedTensor(range(3))
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    capsule = a.__dlpack__(max_version=max_version) if max_version else a.__dlpack__()
    del a, producer
    collect()
    assert mt.deleter_calls == 0  # the capsule still holds the memory
    del capsule
    collect()
    assert mt.deleter_calls == 1


def test_unconsumed_capsule_releases_the_numpy_source_when_collected():
    class Owned(np.ndarray):
        pass

    source = np.arange(4.0).view(Owned)
    alive = weakref.ref(source)
    a = dlbridge.from_dlpack(source)
    capsule = a.__dlpack__(max_version=(1, 3))
    legacy = a.__dlpack__()
    del source, a
    collect()
    assert alive() is not None
    del capsule
    collect()
    assert alive() is not None
    del legacy
    collect()
    assert alive() is None


def test_consumed_capsule_is_left_to_the_consumer():
    mt = ManagedTensor(range(3))
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    capsule = a.__dlpack__(max_version=(1, 3))
    c = Consumed(capsule)
    assert capsule_name(capsule) == b"used_dltensor_versioned"
    del a, producer, capsule  # the destructor of a used_ capsule does nothing
    collect()
    assert mt.deleter_calls == 0
    assert c.read() == [0.0, 1.0, 2.0]
    c.release()
    collect()
    assert mt.deleter_calls == 1


def test_every_export_is_independent():
    mt = ManagedTensor(range(3))
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    exports = [consume(a, max_version=(1, 3)) for _ in range(5)] + [consume(a) for _ in range(5)]
    del a, producer
    collect()
    for c in exports:
        assert mt.deleter_calls == 0
        assert c.read() == [0.0, 1.0, 2.0]
        c.release()
    collect()
    assert mt.deleter_calls == 1
