"""asarray and every source it accepts, in its order: Arrays, DLPack
producers, __cuda_array_interface__, __array_interface__, the buffer
protocol, nested sequences and Python scalars; then the dtype= and copy=
rules."""
import array
import gc
import math
import os
import re
import subprocess
import sys
import textwrap
import weakref

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dlbridge import Array, Device
from exporters import DROP, CudaInterface, HostInterface, RawBuffer
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)


def element_strides(n):
    return tuple(s // n.itemsize for s in n.strides)


# ---------------------------------------------------------------------------
# Arrays


def test_array_is_returned_as_is():
    a = dlbridge.asarray([1.0, 2.0])
    assert dlbridge.asarray(a) is a
    assert dlbridge.asarray(a, copy=None) is a
    assert dlbridge.asarray(a, copy=False) is a
    assert dlbridge.asarray(a, dtype="float64") is a
    assert dlbridge.asarray(a, dtype=np.float64, copy=False) is a
    assert dlbridge.asarray(a, device="cpu") is a


def test_array_copy_true_copies():
    n = np.arange(6.0).reshape(2, 3)
    a = dlbridge.asarray(n)
    c = dlbridge.asarray(a, copy=True)
    assert c is not a
    assert c.data_ptr != a.data_ptr
    assert c.tolist() == a.tolist()
    n[0, 0] = 42.0
    assert c[0, 0].tolist() == 0.0
    assert c.readonly is False


def test_array_copy_true_of_read_only_view():
    n = np.arange(12, dtype=np.int16).reshape(3, 4)
    n.flags.writeable = False
    v = dlbridge.asarray(n)[::-1, ::2]
    c = dlbridge.asarray(v, copy=True)
    assert c.readonly is False
    assert c.tolist() == n[::-1, ::2].tolist()
    assert c.__array_interface__["strides"] is None


def test_array_dtype_conversion():
    a = dlbridge.asarray([1, 2, 3])
    f = dlbridge.asarray(a, dtype="float32")
    assert f.dtype == "float32"
    assert f.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="copy=False"):
        dlbridge.asarray(a, dtype="float32", copy=False)


# ---------------------------------------------------------------------------
# DLPack producers


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "uint64", "float16",
                                   "float32", "float64", "complex64", "complex128"])
def test_numpy_is_imported_without_copy(dtype):
    n = np.ones((3, 4), dtype=dtype)
    a = dlbridge.asarray(n)
    assert a.dtype == dtype
    assert a.shape == (3, 4)
    assert a.data_ptr == n.ctypes.data
    assert a.readonly is False
    assert a.device == "cpu"
    assert a.tolist() == n.tolist()


def test_numpy_views_and_0d():
    n = np.arange(24.0).reshape(4, 6)[::-2, 1::2]
    a = dlbridge.asarray(n)
    assert a.strides == element_strides(n)
    assert a.data_ptr == n.ctypes.data
    assert a.tolist() == n.tolist()
    z = dlbridge.asarray(np.array(3.5, dtype=np.float32))
    assert z.shape == () and z.dtype == "float32" and z.tolist() == 3.5


def test_numpy_scalar_is_imported():
    assert dlbridge.asarray(np.float32(1.5)).dtype == "float32"
    assert dlbridge.asarray(np.int8(-3)).tolist() == -3
    assert dlbridge.asarray(np.uint64(2**64 - 1)).tolist() == 2**64 - 1


def test_numpy_read_only_stays_read_only():
    n = np.arange(3.0)
    n.flags.writeable = False
    a = dlbridge.asarray(n)
    assert a.readonly is True
    assert a.data_ptr == n.ctypes.data


def test_numpy_writes_are_visible():
    n = np.zeros(4)
    a = dlbridge.asarray(n)
    n[2] = 5.0
    assert a.tolist() == [0.0, 0.0, 5.0, 0.0]


def test_imported_array_keeps_the_producer_alive():
    n = np.arange(5.0)
    a = dlbridge.asarray(n)
    del n
    gc.collect()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("dtype, name", [(torch.float32, "float32"), (torch.int64, "int64"),
                                         (torch.bool, "bool"), (torch.bfloat16, "bfloat16"),
                                         (torch.float8_e4m3fn, "float8_e4m3fn"),
                                         (torch.float8_e5m2, "float8_e5m2"), (torch.uint16, "uint16"),
                                         (torch.complex64, "complex64")])
def test_torch_is_imported_without_copy(dtype, name):
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(dtype)
    a = dlbridge.asarray(t)
    assert a.dtype == name
    assert a.shape == (2, 3)
    assert a.data_ptr == t.data_ptr()
    assert a.device == "cpu"
    assert a.tolist() == t.tolist()


def test_torch_non_contiguous():
    t = torch.arange(12.0).reshape(3, 4).T[::2]
    a = dlbridge.asarray(t)
    assert a.strides == t.stride()
    assert a.tolist() == t.tolist()
    assert a.data_ptr == t.data_ptr()


def test_torch_writes_are_visible():
    t = torch.zeros(3)
    a = dlbridge.asarray(t)
    t[1] = 2.0
    assert a.tolist() == [0.0, 2.0, 0.0]


def test_dlpack_comes_before_the_array_interface():
    dl_source = np.arange(3.0)
    other = np.arange(10.0, 13.0)

    class Both:
        def __dlpack__(self, **kwargs):
            return dl_source.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return dl_source.__dlpack_device__()

        __array_interface__ = other.__array_interface__

    a = dlbridge.asarray(Both())
    assert a.data_ptr == dl_source.ctypes.data
    assert a.tolist() == [0.0, 1.0, 2.0]


def test_dlpack_copy_true():
    n = np.arange(4)
    a = dlbridge.asarray(n, copy=True)
    assert a.data_ptr != n.ctypes.data
    n[0] = 9
    assert a.tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------------------
# __cuda_array_interface__ (built by hand over host memory)


@pytest.fixture
def host():
    return np.arange(12, dtype=np.float32).reshape(3, 4)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_cuda_interface_versions(host, version):
    a = dlbridge.asarray(CudaInterface(host, version=version))
    assert a.shape == (3, 4)
    assert a.dtype == "float32"
    assert a.strides == (4, 1)
    assert a.data_ptr == host.ctypes.data


@pytest.mark.parametrize("strides", [DROP, None])
def test_cuda_interface_strides_absent_or_none_mean_c_order(host, strides):
    a = dlbridge.asarray(CudaInterface(host, strides=strides))
    assert a.strides == (4, 1)


@pytest.mark.parametrize("strides, want", [((16, 4), (4, 1)), ((4, 12), (1, 3)), ((32, 4), (8, 1)),
                                           ((-16, 4), (-4, 1)), ((0, 4), (0, 1))])
def test_cuda_interface_byte_strides_become_element_strides(host, strides, want):
    shape = (2, 4) if strides[0] == 32 else (3, 4)
    data = host.ctypes.data + (32 if strides[0] < 0 else 0)
    a = dlbridge.asarray(CudaInterface(host, shape=shape, strides=strides, data=(data, False)))
    assert a.strides == want
    assert a.shape == shape


@pytest.mark.parametrize("strides", [(16, 3), (6, 4), (16, 2)])
def test_cuda_interface_strides_not_a_multiple_of_itemsize(host, strides):
    with pytest.raises(BufferError, match="multiple"):
        dlbridge.asarray(CudaInterface(host, strides=strides))


def test_cuda_interface_mask_none_is_fine(host):
    assert dlbridge.asarray(CudaInterface(host, version=1, mask=None)).shape == (3, 4)


@pytest.mark.parametrize("mask", [object(), np.zeros((3, 4), dtype=bool), 0])
def test_cuda_interface_mask_is_refused(host, mask):
    with pytest.raises(BufferError, match="mask"):
        dlbridge.asarray(CudaInterface(host, mask=mask))


def test_cuda_interface_null_pointer_for_empty_array():
    owner = np.zeros((0, 4), dtype=np.float32)
    a = dlbridge.asarray(CudaInterface(owner, data=(0, False)))
    assert a.shape == (0, 4)
    assert a.size == 0
    assert a.device == "cuda:0"


def test_cuda_interface_null_pointer_for_non_empty_array(host):
    with pytest.raises(BufferError, match=exactly("invalid tensor: data: expected a pointer for a non-empty tensor, "
                                                  "got NULL")):
        dlbridge.asarray(CudaInterface(host, data=(0, False)))


@pytest.mark.parametrize("stream", [None, 1])
def test_cuda_interface_streams_needing_no_order(host, stream):
    # None: nothing to wait for; 1: the legacy default stream, dlbridge's own.
    assert dlbridge.asarray(CudaInterface(host, stream=stream)).shape == (3, 4)


@pytest.mark.parametrize("stream", [0, -1, True, 1.0, "1"])
def test_cuda_interface_bad_stream_raises_value_error(host, stream):
    message = f"__cuda_array_interface__: stream must be None or a positive int, got {stream!r}"
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        dlbridge.asarray(CudaInterface(host, stream=stream))


@pytest.mark.parametrize("stream", [1 << 63, -(1 << 63) - 1, 1 << 100])
def test_cuda_interface_stream_past_64_bits_raises_value_error(host, stream):
    message = f"__cuda_array_interface__: stream must fit in 64 bits, got {stream}"
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        dlbridge.asarray(CudaInterface(host, stream=stream))


def test_cuda_interface_result_is_on_cuda_and_keeps_the_owner_alive(host):
    obj = CudaInterface(host)
    ref = weakref.ref(obj)
    a = dlbridge.asarray(obj)
    assert a.device == Device("cuda", 0)
    assert a.__dlpack_device__() == (2, 0)
    del obj
    gc.collect()
    assert ref() is not None
    del a
    gc.collect()
    assert ref() is None


def test_cuda_interface_views_keep_the_owner_alive(host):
    obj = CudaInterface(host)
    ref = weakref.ref(obj)
    v = dlbridge.asarray(obj)[1:]
    del obj
    gc.collect()
    assert ref() is not None
    assert v.shape == (2, 4)
    del v
    gc.collect()
    assert ref() is None


def test_cuda_interface_read_only_flag(host):
    assert dlbridge.asarray(CudaInterface(host, data=(host.ctypes.data, True))).readonly is True
    assert dlbridge.asarray(CudaInterface(host, data=(host.ctypes.data, False))).readonly is False


def test_cuda_interface_device_memory_is_not_read_on_the_host(host):
    a = dlbridge.asarray(CudaInterface(host))
    for action in (a.tolist, lambda: memoryview(a), lambda: a.__array_interface__, lambda: float(a[0, 0])):
        with pytest.raises(BufferError, match="host"):
            action()
    assert repr(a) == "Array(<shape (3, 4)>, dtype=float32, device=cuda:0)"
    assert a[1].shape == (4,) and a.T.shape == (4, 3)


@pytest.mark.parametrize("version", [4, -1, None, DROP, "3"])
def test_cuda_interface_bad_version(host, version):
    with pytest.raises(ValueError, match="version"):
        dlbridge.asarray(CudaInterface(host, version=version))


@pytest.mark.parametrize("fields, error, mention", [
    ({"typestr": ">f4"}, BufferError, ">f4"),
    ({"typestr": "<V4"}, BufferError, "<V4"),
    ({"typestr": 4}, TypeError, "typestr"),
    ({"shape": [3, 4]}, TypeError, "shape"),
    ({"shape": (3.0, 4)}, TypeError, "shape"),
    ({"strides": [16, 4]}, TypeError, "strides"),
    ({"strides": (16,)}, TypeError, "strides"),
    ({"data": [0, False]}, TypeError, "data"),
    ({"data": (1,)}, TypeError, "data"),
])
def test_cuda_interface_malformed(host, fields, error, mention):
    with pytest.raises(error, match=mention):
        dlbridge.asarray(CudaInterface(host, **fields))


def test_cuda_interface_comes_before_the_array_interface(host):
    class Both(CudaInterface):
        __array_interface__ = np.arange(3.0).__array_interface__

    assert dlbridge.asarray(Both(host)).device == "cuda:0"


def test_cuda_array_interface_must_be_a_dict():
    class NotADict:
        __cuda_array_interface__ = [1]

    with pytest.raises(TypeError, match=exactly("__cuda_array_interface__ must be a dict, got list")):
        dlbridge.asarray(NotADict())


def test_cuda_array_interface_typestr_needs_a_byte_order_character():
    host = np.zeros(3, dtype=np.float32)
    with pytest.raises(TypeError, match=exactly(
            "__cuda_array_interface__: typestr must be a NumPy typestr such as '<f4', got 'f4'")):
        dlbridge.asarray(CudaInterface(host, typestr="f4"))


# ---------------------------------------------------------------------------
# __array_interface__ (built by hand)


@pytest.fixture
def host16():
    return np.arange(12, dtype=np.int16).reshape(3, 4)


@pytest.mark.parametrize("version", [2, 3, DROP])
def test_array_interface_import(host16, version):
    a = dlbridge.asarray(HostInterface(host16, version=version))
    assert a.shape == (3, 4)
    assert a.dtype == "int16"
    assert a.device == "cpu"
    assert a.data_ptr == host16.ctypes.data
    assert a.tolist() == host16.tolist()
    assert a.readonly is False


@pytest.mark.parametrize("readonly", [True, False, 1, 0])
def test_array_interface_read_only_flag_is_honoured(host16, readonly):
    a = dlbridge.asarray(HostInterface(host16, data=(host16.ctypes.data, readonly)))
    assert a.readonly is bool(readonly)
    assert np.asarray(a).flags.writeable is not bool(readonly)


def test_array_interface_strides(host16):
    a = dlbridge.asarray(HostInterface(host16, shape=(4, 3), strides=(2, 8)))
    assert a.strides == (1, 4)
    assert a.tolist() == host16.T.tolist()
    assert dlbridge.asarray(HostInterface(host16, strides=None)).strides == (4, 1)


def test_array_interface_strides_not_a_multiple_of_itemsize(host16):
    with pytest.raises(BufferError, match="multiple"):
        dlbridge.asarray(HostInterface(host16, strides=(8, 3)))


def test_array_interface_keeps_the_owner_alive(host16):
    obj = HostInterface(host16)
    ref = weakref.ref(obj)
    a = dlbridge.asarray(obj)
    del obj
    gc.collect()
    assert ref() is not None
    assert a.tolist() == host16.tolist()
    del a
    gc.collect()
    assert ref() is None


def test_array_interface_writes_go_to_the_owner(host16):
    a = dlbridge.asarray(HostInterface(host16))
    np.asarray(a)[0, 0] = -7
    assert host16[0, 0] == -7


def test_array_interface_null_pointer_for_empty():
    owner = np.zeros((0,), dtype=np.int16)
    a = dlbridge.asarray(HostInterface(owner, data=(0, False)))
    assert a.shape == (0,) and a.tolist() == []


def test_array_interface_null_pointer_for_non_empty(host16):
    with pytest.raises(BufferError, match=exactly("invalid tensor: data: expected a pointer for a non-empty tensor, "
                                                  "got NULL")):
        dlbridge.asarray(HostInterface(host16, data=(0, False)))


def test_array_interface_errors(host16):
    with pytest.raises(ValueError, match="version"):
        dlbridge.asarray(HostInterface(host16, version=1))
    with pytest.raises(BufferError, match="mask"):
        dlbridge.asarray(HostInterface(host16, mask=object()))
    with pytest.raises(BufferError, match=">i2"):
        dlbridge.asarray(HostInterface(host16, typestr=">i2"))


def test_array_interface_of_a_dlbridge_array_round_trips():
    n = np.arange(6.0).reshape(2, 3)
    src = dlbridge.asarray(n)[:, ::-1]

    class Holder:
        __array_interface__ = src.__array_interface__

    a = dlbridge.asarray(Holder())
    assert a.tolist() == n[:, ::-1].tolist()
    assert a.strides == (3, -1)
    assert a.data_ptr == src.data_ptr


def test_array_interface_comes_before_the_buffer_protocol():
    n = np.arange(4, dtype=np.int32)

    class Both(bytearray):
        __array_interface__ = n.__array_interface__

    a = dlbridge.asarray(Both(b"xy"))
    assert a.dtype == "int32"
    assert a.data_ptr == n.ctypes.data


def test_asarray_array_interface_without_data_and_without_buffer():
    obj = HostInterface(np.zeros(3), data=DROP)
    with pytest.raises(BufferError, match=exactly(
            "asarray: __array_interface__ without a (pointer, read_only) data tuple needs the object "
            "to export the buffer protocol, and it does not")):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("field, value, message", [
    ("shape", (3.0, 4), "__array_interface__: shape must be a tuple of ints, got (3.0, 4)"),
    ("typestr", 4, "__array_interface__: typestr must be a NumPy typestr such as '<f4', got 4"),
    ("data", (1,), "__array_interface__: data must be a (pointer, read_only) tuple, got (1,)"),
    ("data", ("x", False), "__array_interface__: data must be a (pointer, read_only) tuple, got ('x', False)"),
    ("strides", (8,), "__array_interface__: strides must be None or a tuple of 2 ints, got (8,)"),
], ids=["shape", "typestr", "data-length", "data-pointer", "strides"])
def test_array_interface_malformed(field, value, message):
    owner = np.arange(12, dtype=np.int16).reshape(3, 4)
    with pytest.raises(TypeError, match=exactly(message)):
        dlbridge.asarray(HostInterface(owner, **{field: value}))


def test_array_interface_negative_extent():
    owner = np.zeros(4)
    obj = HostInterface(owner, shape=(2, -2), version=DROP)
    with pytest.raises(BufferError, match=exactly(
            "invalid tensor: shape: axis 1: expected extent >= 0, got extent -2")):
        dlbridge.asarray(obj)


# ---------------------------------------------------------------------------
# The buffer protocol


def test_bytes_are_read_only_uint8():
    a = dlbridge.asarray(b"abc")
    assert a.dtype == "uint8"
    assert a.shape == (3,)
    assert a.readonly is True
    assert a.tolist() == [97, 98, 99]


def test_bytearray_is_writable_uint8_and_shared():
    b = bytearray(b"\x01\x02\x03")
    a = dlbridge.asarray(b)
    assert a.dtype == "uint8"
    assert a.readonly is False
    np.asarray(a)[0] = 9
    assert b[0] == 9
    b[2] = 7
    assert a.tolist() == [9, 2, 7]


def test_memoryview_of_bytes_is_read_only():
    a = dlbridge.asarray(memoryview(b"ab"))
    assert a.readonly is True
    assert a.tolist() == [97, 98]


def test_memoryview_of_numpy():
    n = np.arange(12, dtype=np.int64).reshape(3, 4)
    a = dlbridge.asarray(memoryview(n))
    assert a.dtype == "int64"
    assert a.shape == (3, 4)
    assert a.data_ptr == n.ctypes.data
    assert a.tolist() == n.tolist()


@pytest.mark.parametrize("key", [(slice(None, None, 2), slice(None, None, -3)), (slice(None), 1),
                                 (slice(None, None, -1),)], ids=repr)
def test_memoryview_of_non_contiguous_numpy(key):
    n = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = n[key]
    a = dlbridge.asarray(memoryview(view))
    assert a.shape == view.shape
    assert a.strides == element_strides(view)
    assert a.data_ptr == view.ctypes.data
    assert a.tolist() == view.tolist()


def test_memoryview_cast_to_2d():
    a = dlbridge.asarray(memoryview(b"abcd").cast("B", (2, 2)))
    assert a.shape == (2, 2)
    assert a.tolist() == [[97, 98], [99, 100]]


@pytest.mark.parametrize("code, name, values", [
    ("b", "int8", [-1, 2]), ("B", "uint8", [1, 255]), ("h", "int16", [-300, 5]), ("H", "uint16", [60000]),
    ("i", "int32", [1, 2, 3]), ("I", "uint32", [2**32 - 1]), ("l", "int64", [-(2**40)]),
    ("L", "uint64", [2**40]), ("q", "int64", [2**62]), ("Q", "uint64", [2**64 - 1]),
    ("f", "float32", [0.5, -1.25]), ("d", "float64", [1e300]), ("h", "int16", []),
])
def test_array_array(code, name, values):
    arr = array.array(code, values)
    a = dlbridge.asarray(arr)
    assert a.dtype == name
    assert a.shape == (len(values),)
    assert a.tolist() == values
    assert a.readonly is False
    if values:
        np.asarray(a)[0] = 0
        assert arr[0] == 0


@pytest.mark.parametrize("dtype", [">i4", ">i2", ">f8", ">u8", ">f2", ">c16"])
def test_big_endian_buffer_formats_are_refused(dtype):
    view = memoryview(np.zeros(3, dtype=dtype))
    assert view.format.startswith(">")
    with pytest.raises(BufferError, match="big-endian"):
        dlbridge.asarray(view)


@pytest.mark.parametrize("dtype, name", [("|i1", "int8"), (">i1", "int8"), ("|b1", "bool"), (">?", "bool"),
                                         ("<f2", "float16"), ("<c8", "complex64"), ("c16", "complex128")])
def test_buffer_formats_without_byte_order_issues(dtype, name):
    assert dlbridge.asarray(memoryview(np.zeros(3, dtype=dtype))).dtype == name


@pytest.mark.parametrize("dtype", ["V4", "S2", "U1", np.dtype([("a", "<i4")])], ids=str)
def test_buffer_formats_without_a_dlpack_dtype(dtype):
    with pytest.raises(BufferError, match="format"):
        dlbridge.asarray(memoryview(np.zeros(3, dtype=dtype)))


@pytest.mark.parametrize("fmt", ["c", "P", "x"])
def test_struct_formats_without_a_dlpack_dtype(fmt):
    view = memoryview(bytearray(16)).cast(fmt) if fmt != "x" else memoryview(np.zeros(2, "V1"))
    # NumPy spells V1's format itself ("1x" today): the message quotes the format as received.
    with pytest.raises(BufferError, match=exactly(f"buffer format {view.format!r} has no DLPack dtype")):
        dlbridge.asarray(view)


def _run_isolated(code):
    """Runs `code` in a fresh interpreter (a crash there cannot take the test run down)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([p for p in sys.path if p]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("ctype, name, values", [("c_int32", "int32", [1, 2, 3]),
                                                 ("c_double", "float64", [1.5, -2.0]),
                                                 ("c_uint16", "uint16", [7, 65535]),
                                                 ("c_bool", "bool", [True, False])])
def test_ctypes_arrays(ctype, name, values):
    """ctypes exports its buffers with strides NULL (allowed for C-contiguous
    data); the import must read them as C order."""
    result = _run_isolated(f"""
        import ctypes, dlbridge
        buf = (ctypes.{ctype} * {len(values)})(*{values!r})
        a = dlbridge.asarray(buf)
        assert a.dtype == {name!r}, a.dtype
        assert a.shape == ({len(values)},), a.shape
        assert a.strides == (1,), a.strides
        assert a.tolist() == {values!r}, a.tolist()
        assert a.data_ptr == ctypes.addressof(buf)
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", (
        f"exit status {result.returncode}; stderr: {result.stderr[-2000:]}")


def test_ctypes_scalar():
    result = _run_isolated("""
        import ctypes, dlbridge
        a = dlbridge.asarray(ctypes.c_int64(42))
        assert a.shape == () and a.dtype == "int64" and a.tolist() == 42
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_buffer_keeps_the_exporter_alive():
    b = bytearray(b"hello")
    a = dlbridge.asarray(b)
    del b
    gc.collect()
    assert bytes(np.asarray(a)) == b"hello"


def test_buffer_exporter_cannot_resize_while_imported():
    b = bytearray(b"abc")
    a = dlbridge.asarray(b)
    with pytest.raises(BufferError, match="^Existing exports of data: object cannot be re-sized$"):  # bytearray's own
        b.extend(b"more")
    del a
    gc.collect()
    b.extend(b"more")
    assert b == bytearray(b"abcmore")


@pytest.mark.parametrize("fmt", ["c", "P"])
def test_a_refused_buffer_is_given_back(fmt):
    """The export is released where the buffer is refused after it was taken."""
    b = bytearray(16)
    view = memoryview(b).cast(fmt)
    with pytest.raises(BufferError, match="has no DLPack dtype"):
        dlbridge.asarray(view)
    view.release()  # BufferError while an export of it is held
    b.extend(b"more")


def test_raw_buffer_exporter_works():
    a = dlbridge.asarray(RawBuffer((1,), (8,)))
    assert a.shape == (1,) and a.dtype == "float64" and a.readonly


def test_buffer_with_suboffsets():
    with pytest.raises(BufferError, match=exactly("buffers with suboffsets (PIL-style) are not supported")):
        dlbridge.asarray(RawBuffer((1,), (8,), suboffsets=True))


def test_buffer_stride_not_a_multiple_of_the_itemsize():
    with pytest.raises(BufferError, match=exactly(
            "buffer: axis 0: expected a byte stride that is a multiple of the itemsize 8, got 12")):
        dlbridge.asarray(RawBuffer((2,), (12,)))


@pytest.mark.parametrize("shape", [(1,), (2, 3), (1,) * 64], ids=["1-d", "2-d", "64-d"])
def test_buffer_with_axes_but_no_shape(shape):
    with pytest.raises(BufferError, match=exactly(
            f"buffer: the exporter (RawBuffer) reports {len(shape)} axes but no shape")):
        dlbridge.asarray(RawBuffer(shape, (8,) * len(shape), null_shape=True))


def test_a_0_d_buffer_needs_no_shape():
    assert dlbridge.asarray(RawBuffer((), (), null_shape=True)).shape == ()


@pytest.mark.parametrize("fmt, itemsize, size", [
    (b"d", 4, 8), (b"f", 8, 4), (b"d", 16, 8), (b"i", 8, 4), (b"q", 4, 8), (b"e", 4, 2), (b"?", 8, 1),
    (b"<l", 8, 4), (b"=L", 8, 4), (b"l", 4, 8), (b"Zd", 8, 16), (b"Zf", 16, 8), (b"@B", 2, 1),
])
def test_buffer_format_that_disagrees_with_its_itemsize(fmt, itemsize, size):
    # Format "d" with itemsize 4 was read as float32: the format names the type.
    with pytest.raises(BufferError, match=exactly(
            f"buffer format {fmt.decode()!r} has {size}-byte items, but the exporter reports itemsize {itemsize}")):
        dlbridge.asarray(RawBuffer((1,), (itemsize,), format=fmt, itemsize=itemsize))


@pytest.mark.parametrize("fmt, itemsize, dtype", [
    (b"d", 8, "float64"), (b"<l", 4, "int32"), (b"l", 8, "int64"), (b"=q", 8, "int64"), (b"@N", 8, "uint64"),
    (b"<Zf", 8, "complex64"), (b"?", 1, "bool"), (b"<e", 2, "float16"), (b">b", 1, "int8"),
])
def test_buffer_formats_map_to_the_dtype_of_their_item_size(fmt, itemsize, dtype):
    assert dlbridge.asarray(RawBuffer((1,), (itemsize,), format=fmt, itemsize=itemsize)).dtype == dtype


@pytest.mark.parametrize("fmt", [b"<n", b"=N", b"2d", b"T{d:x:}", b"x", b"P", b"s", b"dd", b"&d"])
def test_buffer_formats_without_a_dtype(fmt):
    with pytest.raises(BufferError, match=exactly(f"buffer format {fmt.decode()!r} has no DLPack dtype")):
        dlbridge.asarray(RawBuffer((1,), (8,), format=fmt))


# ---------------------------------------------------------------------------
# Nested sequences and Python scalars


@pytest.mark.parametrize("obj", [
    True, 1, -5, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 1.5, -0.0, math.inf, 1j, 1 + 0j,
    [True, False], [True, 1], [1, 2.0], [1, 1j], [True, 1.5], [2**63], [2**63, 2**64 - 1],
    [[1, 2], [3, 4]], ((1, 2), (3, 4)), [[1, 2], (3, 4)], [[[1.5]]], [[True], [False]],
    [1.0, math.nan], [[1j, 2], [3, 4.5]],
], ids=repr)
def test_sequence_and_scalar_inference_matches_numpy(obj):
    a = dlbridge.asarray(obj)
    n = np.array(obj)
    assert a.dtype == n.dtype.name
    assert a.shape == n.shape
    got, want = a.tolist(), n.tolist()
    if isinstance(want, list) and any(isinstance(x, float) and math.isnan(x) for x in want):
        assert [str(x) for x in got] == [str(x) for x in want]
    else:
        assert got == want


@pytest.mark.parametrize("obj, dtype", [(True, "bool"), (3, "int64"), (2**63, "uint64"), (2.5, "float64"),
                                        (2j, "complex128")])
def test_python_scalars_are_0d(obj, dtype):
    a = dlbridge.asarray(obj)
    assert a.shape == ()
    assert a.dtype == dtype
    assert a.tolist() == obj
    assert a.readonly is False


@pytest.mark.parametrize("obj, shape", [([], (0,)), ([[]], (1, 0)), ([[], []], (2, 0)), ((), (0,)),
                                        ([[[]]], (1, 1, 0))], ids=repr)
def test_empty_sequences_are_float64(obj, shape):
    a = dlbridge.asarray(obj)
    assert a.shape == shape == np.array(obj).shape
    assert a.dtype == "float64"
    assert a.tolist() == np.array(obj).tolist()


@pytest.mark.parametrize("dtype", ["int8", "bool", "bfloat16", "float8_e5m2", "float4_e2m1fn", "complex64"])
def test_empty_sequences_with_dtype(dtype):
    a = dlbridge.asarray([[], []], dtype=dtype)
    assert a.shape == (2, 0)
    assert a.dtype == dtype


@pytest.mark.parametrize("obj, axis", [([[1, 2], [3]], "axis 1"), ([[1], [2, 3]], "axis 1"),
                                       ([[[1, 2]], [[3]]], "axis 2"), ([[1, 2], [3, 4], [5]], "axis 1")],
                         ids=repr)
def test_ragged_sequences_name_the_axis(obj, axis):
    with pytest.raises(ValueError, match=axis):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("obj", [[[1, 2], 3], [1, [2, 3]], [[[1]], [2]], [[1, [2]], [3, [4]]]], ids=repr)
def test_ragged_depth_raises_value_error(obj):
    with pytest.raises(ValueError, match="ragged"):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("obj", ["abc", ["a"], [b"x"], [[1, "2"]], [1, "x"]], ids=repr)
def test_strings_raise_type_error(obj):
    with pytest.raises(TypeError, match="string"):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("obj, got", [pytest.param(obj, got, id=name) for obj, got, name in [
    (None, "NoneType", "None"), ([None], "NoneType", "[None]"), ([1, None], "NoneType", "[1, None]"),
    ([object()], "object", "[object()]"), ({1: 2}, "dict", "{1: 2}")]])
def test_non_numbers_raise_type_error(obj, got):
    with pytest.raises(TypeError, match=exactly(f"expected a Python scalar (bool, int, float or complex), got {got}")):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("obj, message", [pytest.param(obj, message, id=repr(obj)) for obj, message in [
    (2**64, "Python int 18446744073709551616 does not fit in 64 bits"),
    (-(2**63) - 1, "Python int -9223372036854775809 does not fit in 64 bits"),
    ([1, 2**64], "Python int 18446744073709551616 does not fit in 64 bits"),
    ([[2**70]], "Python int 1180591620717411303424 does not fit in 64 bits"),
    ([2**63, -1], "Python int -1 is out of bounds for uint64"),  # 2**63 made the dtype uint64
]])
def test_ints_beyond_64_bits_raise_overflow_error(obj, message):
    with pytest.raises(OverflowError, match=exactly(message)):
        dlbridge.asarray(obj)


def test_nesting_deeper_than_64_raises_value_error():
    deep = 1.0
    for _ in range(65):
        deep = [deep]
    with pytest.raises(ValueError, match="64"):
        dlbridge.asarray(deep)
    ok = 1.0
    for _ in range(64):
        ok = [ok]
    assert dlbridge.asarray(ok).ndim == 64


@pytest.mark.parametrize("obj", [[np.int64(2**62 + 1), 1], [np.int8(3), np.int8(-4)], [np.uint64(2**64 - 1)],
                                 [np.True_, np.False_], [np.float32(1.5), 2.0], [np.complex64(1 + 2j)],
                                 [np.float16(0.5)], [[np.int32(1), np.int32(2)]]], ids=repr)
def test_numpy_scalars_in_sequences_keep_their_kind_and_value(obj):
    """NumPy scalars in a list infer a dtype of the same kind as NumPy does
    (bool, signed, unsigned, float, complex), and keep their values."""
    a = dlbridge.asarray(obj)
    n = np.array(obj)
    assert a.dtype.code == dlbridge.DType(n.dtype).code, (a.dtype, n.dtype)
    assert a.tolist() == n.tolist()


_NUMPY_SCALARS = [np.bool_(True), np.int8(-2), np.uint8(3), np.int16(-4), np.uint16(5), np.int32(-6),
                  np.uint32(7), np.int64(-8), np.uint64(9), np.float16(0.5), np.float32(1.5), np.float64(2.5),
                  np.complex64(1 - 1j), np.complex128(2 + 1j)]
_PYTHON_SCALARS = [True, 3, 2**63 + 1, 1.25, 1 + 2j]


@pytest.mark.parametrize("first", _NUMPY_SCALARS, ids=lambda v: type(v).__name__)
def test_mixed_numpy_scalars_promote_as_numpy_does(first):
    # [np.float32(1), np.int8(2)] is float32 and [np.int8(1), np.uint8(2)]
    # int16 in NumPy; with Python scalars beside them, those count as bool,
    # int64 (uint64 past int64), float64 and complex128, as np.array counts them.
    for second in _NUMPY_SCALARS + _PYTHON_SCALARS:
        for obj in ([first, second], [second, first], [[first], [second]], [first, first, second]):
            n = np.array(obj)
            a = dlbridge.asarray(obj)
            assert a.dtype == dlbridge.DType(n.dtype), (obj, a.dtype, n.dtype)
            assert a.tolist() == n.tolist(), obj


def test_mixed_ml_dtypes_scalars_promote_as_numpy_does():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for obj in ([ml_dtypes.bfloat16(1.5), np.float32(2.0)], [np.int8(1), ml_dtypes.bfloat16(2)],
                [ml_dtypes.bfloat16(1), 2.0], [ml_dtypes.bfloat16(1), ml_dtypes.bfloat16(2)],
                [np.float16(1), ml_dtypes.bfloat16(2)], [ml_dtypes.float8_e4m3fn(1), ml_dtypes.bfloat16(2)]):
        expected = np.array(obj).dtype
        if expected != object:
            assert dlbridge.asarray(obj).dtype == dlbridge.DType(expected), obj
            continue
        # Where NumPy (with this ml_dtypes) finds no common dtype it makes an object array; dlbridge has
        # none. ml_dtypes 0.7 promotes float16 with bfloat16 to float32, 0.6 had no rule for them.
        names = ", ".join(sorted(type(x).__name__ for x in obj))
        with pytest.raises(TypeError, match=exactly(f"asarray: the scalars' dtypes ({names}) have no common dtype")):
            dlbridge.asarray(obj)


@pytest.mark.parametrize("obj, dtype", [
    ([1, 2], "float32"), ([1.5, 2.5], "int32"), ([True, False], "float16"), ([0.0, 0.5], "bool"),
    ([1, 2, 3], "uint8"), ([1.5, -2.25], "complex64"), ([[1, 2], [3, 4]], "int16"), (5, "uint8"),
    ([2**64 - 1], "float32"), ([2**53 + 1], "float64"), ([2**63 + 1], "float32"), ([1e10], "float16"),
    ([65519.0, 65520.0], "float16"), ([1 + 2j], "complex64"), (True, "int8"),
], ids=repr)
def test_sequence_with_dtype_matches_numpy(obj, dtype):
    a = dlbridge.asarray(obj, dtype=dtype)
    with np.errstate(over="ignore"):
        n = np.array(obj, dtype=dtype)
    assert a.dtype == dtype
    assert a.tolist() == n.tolist()


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                   "float8_e8m0fnu", "float8_e3m4", "float6_e2m3fn", "float4_e2m1fn"])
def test_sequence_to_small_floats_matches_ml_dtypes(dtype):
    values = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 0.25, 6.0]
    a = dlbridge.asarray([values, values[::-1]], dtype=dtype)
    n = np.array([values, values[::-1]], dtype=np.float32).astype(getattr(ml_dtypes, dtype))
    assert a.dtype == dtype
    assert a.shape == (2, 8)
    assert a.tolist() == n.astype(np.float64).tolist()


@pytest.mark.parametrize("value, dtype", [(300, "uint8"), (-1, "uint8"), (128, "int8"), (2**63, "int64"),
                                          (-1, "uint64"), (70000, "int16")])
def test_sequence_int_out_of_range_for_dtype(value, dtype):
    with pytest.raises(OverflowError, match=dtype):
        dlbridge.asarray([1, value], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool", "bfloat16"])
def test_sequence_complex_to_real_dtype_raises_type_error(dtype):
    with pytest.raises(TypeError, match="complex"):
        dlbridge.asarray([1.0, 2j], dtype=dtype)


def test_sequence_results_are_fresh_and_writable():
    a = dlbridge.asarray([1, 2, 3])
    b = dlbridge.asarray([1, 2, 3], copy=True)
    assert a.readonly is False and b.readonly is False
    assert a.data_ptr != b.data_ptr
    assert a.__array_interface__["strides"] is None


def test_sequence_copy_false_raises_value_error():
    with pytest.raises(ValueError, match="copy=False"):
        dlbridge.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        dlbridge.asarray(1.5, copy=False)


@pytest.mark.parametrize("obj, value", [([1, 2**64], 2**64), (-(2**63) - 1, -(2**63) - 1)])
def test_int_beyond_64_bits_message(obj, value):
    with pytest.raises(OverflowError, match=exactly(f"Python int {value} does not fit in 64 bits")):
        dlbridge.asarray(obj)


@pytest.mark.parametrize("make, name", [(lambda: dlbridge.asarray([1, None]), "NoneType"),
                                        (lambda: dlbridge.asarray({1: 2}), "dict"),
                                        (lambda: dlbridge.full(3, "a"), "str")])
def test_non_scalar_leaf_message(make, name):
    with pytest.raises(TypeError, match=exactly(
            f"expected a Python scalar (bool, int, float or complex), got {name}")):
        make()


def test_ragged_scalar_before_sequence_message():
    with pytest.raises(ValueError, match=exactly(
            "asarray: ragged nested sequence (a sequence where a scalar was found before)")):
        dlbridge.asarray([1, [2, 3]])


def test_arrays_in_sequences_nest_and_arrays_are_not_scalars():
    assert dlbridge.asarray([np.array([1.0, 2.0])]).tolist() == [[1.0, 2.0]]
    assert dlbridge.asarray([[1], np.array([2])]).tolist() == [[1], [2]]
    with pytest.raises(TypeError, match=exactly("expected a scalar, got an array of shape (1,)")):
        dlbridge.full(2, np.array([3.0]))


# ---------------------------------------------------------------------------
# dtype= and copy=


@pytest.mark.parametrize("copy", [1, 0, "yes", "no", 1.0])
def test_copy_must_be_a_bool_or_none(copy):
    with pytest.raises(TypeError, match="copy"):
        dlbridge.asarray(np.arange(3), copy=copy)


def test_copy_false_when_no_copy_is_needed():
    n = np.arange(6, dtype=np.int32)
    a = dlbridge.asarray(n, copy=False)
    assert a.data_ptr == n.ctypes.data
    assert dlbridge.asarray(n, dtype="int32", copy=False).data_ptr == n.ctypes.data
    assert dlbridge.asarray(bytearray(3), copy=False).readonly is False


@pytest.mark.parametrize("source", [np.arange(6, dtype=np.int32), torch.arange(4), bytearray(b"ab"),
                                    array.array("d", [1.0])], ids=lambda s: type(s).__name__)
def test_copy_false_with_dtype_change_raises_value_error(source):
    with pytest.raises(ValueError, match="copy=False"):
        dlbridge.asarray(source, dtype="complex128", copy=False)


def _read_only_interface():
    n = np.arange(1, 5, dtype=np.int16)
    n.flags.writeable = False
    return HostInterface(n, data=(n.ctypes.data, True))


COPY_SOURCES = {
    "numpy": lambda: np.arange(6.0).reshape(2, 3),
    "numpy view": lambda: np.arange(6.0).reshape(2, 3)[:, ::-1],
    "broadcast": lambda: np.broadcast_to(np.arange(3.0), (2, 3)),
    "read-only numpy": lambda: np.frombuffer(b"\x01\x02\x03", dtype=np.uint8),
    "torch": lambda: torch.arange(6.0).reshape(2, 3),
    "bytearray": lambda: bytearray(b"abc"),
    "bytes": lambda: b"abc",
    "array.array": lambda: array.array("i", [1, 2]),
    "read-only __array_interface__": _read_only_interface,
}


@pytest.mark.parametrize("label", list(COPY_SOURCES))
def test_copy_true_always_gives_a_new_writable_buffer(label):
    source = COPY_SOURCES[label]()
    shared = dlbridge.asarray(source)
    before = shared.tolist()
    a = dlbridge.asarray(source, copy=True)
    assert a.readonly is False
    assert a.data_ptr != shared.data_ptr
    assert a.tolist() == before
    assert a.__array_interface__["strides"] is None
    out = np.asarray(a)
    assert out.flags.writeable
    out.flat[0] = 99
    assert a.tolist() != before
    assert shared.tolist() == before  # the source did not change


def test_copy_true_leaves_the_source_untouched():
    n = np.zeros(4)
    a = dlbridge.asarray(n, copy=True)
    np.asarray(a)[:] = 5.0
    assert n.tolist() == [0.0] * 4
    b = bytearray(2)
    c = dlbridge.asarray(b, copy=True)
    np.asarray(c)[:] = 1
    assert b == bytearray(2)


INTS = np.array([-(2**31), -129, -128, -1, 0, 1, 127, 128, 255, 256, 2**24 + 1, 2**31 - 1], dtype=np.int64)
FLOATS = np.array([-127.9, -2.7, -2.5, -1.5, -0.5, -0.0, 0.0, 0.4, 0.5, 1.5, 2.5, 2.7, 126.99, 1e-300, 5e-324])
POSITIVE_FLOATS = np.array([0.0, 0.4, 0.5, 1.5, 2.5, 2.7, 126.99, 200.5, 254.9])
WIDE_FLOATS = np.array([0.1, 1 / 3, 65504.0, 65519.99, 65520.0, 1e-8, 6e-8, 3e-8, 1e300, -1e300, np.inf, -np.inf,
                        1e-300, -0.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1 + 2.0**-11, 1 + 3 * 2.0**-11])
with np.errstate(over="ignore"):
    WIDE32 = WIDE_FLOATS.astype(np.float32)
    WIDE16 = WIDE_FLOATS.astype(np.float16)


@pytest.mark.parametrize("source, target", [
    (INTS, "float64"), (INTS, "float32"), (INTS, "float16"), (INTS, "complex128"), (INTS, "int8"),
    (INTS, "uint8"), (INTS, "int16"), (INTS, "uint64"), (INTS, "bool"), (INTS.astype(np.int32), "int64"),
    (INTS.astype(np.int8), "uint16"), (np.array([2**64 - 1, 2**63, 2**53 + 1], dtype=np.uint64), "float64"),
    (np.array([2**64 - 1, 2**63, 2**53 + 1], dtype=np.uint64), "float32"),
    (np.array([2**64 - 1, 2**63, 5], dtype=np.uint64), "int64"),
    (FLOATS, "int8"), (FLOATS, "int16"), (FLOATS, "int32"), (FLOATS, "int64"), (FLOATS, "bool"),
    (FLOATS.astype(np.float32), "int32"), (POSITIVE_FLOATS, "uint8"), (POSITIVE_FLOATS, "uint64"),
    (WIDE_FLOATS, "float16"), (WIDE_FLOATS, "float32"), (WIDE32, "float16"),
    (WIDE16, "float64"), (WIDE16, "float32"), (WIDE_FLOATS, "complex64"), (WIDE32, "complex128"),
    (np.array([1 + 2j, -0.5j, 1e300 + 1e-300j]), "complex64"),
    (np.array([1 + 2j, -0.5j], dtype=np.complex64), "complex128"),
    (np.array([True, False]), "float32"), (np.array([True, False]), "int64"),
], ids=lambda v: v if isinstance(v, str) else str(v.dtype))
def test_dtype_conversion_matches_numpy_astype(source, target):
    a = dlbridge.asarray(source, dtype=target)
    with np.errstate(over="ignore", invalid="ignore"):
        want = source.astype(target)
    assert a.dtype == target
    assert a.shape == want.shape
    assert a.readonly is False
    got = np.asarray(a)
    assert got.tobytes() == want.tobytes(), list(zip(source.tolist(), got.tolist(), want.tolist()))


def test_dtype_conversion_of_a_strided_view():
    n = np.arange(24, dtype=np.int16).reshape(4, 6)[::-1, ::2]
    a = dlbridge.asarray(n, dtype="float64")
    assert a.tolist() == n.astype(np.float64).tolist()
    assert a.__array_interface__["strides"] is None


def test_dtype_conversion_of_a_read_only_source_is_writable():
    n = np.arange(3, dtype=np.int32)
    n.flags.writeable = False
    a = dlbridge.asarray(n, dtype="int64")
    assert a.readonly is False


@pytest.mark.parametrize("target", ["float64", "float32", "int64", "bool", "float16", "bfloat16"])
@pytest.mark.parametrize("source", ["complex64", "complex128"])
def test_complex_to_real_raises_type_error(source, target):
    with pytest.raises(TypeError, match="complex"):
        dlbridge.asarray(np.array([1 + 2j], dtype=source), dtype=target)


def test_dtype_conversion_to_small_floats_from_numpy():
    n = np.array([0.1, 1.0, 300.0, -2.5, 1e6], dtype=np.float32)
    for name in ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float6_e3m2fn"]:
        ml = getattr(ml_dtypes, name)
        a = dlbridge.asarray(n, dtype=name)
        with np.errstate(over="ignore"):
            want = n.astype(ml).astype(np.float64).tolist()
        got = a.tolist()
        assert [str(x) for x in got] == [str(x) for x in want], name


def test_dtype_accepts_every_spelling():
    n = np.arange(3, dtype=np.int32)
    for spec in ["float32", "<f4", "f4", np.float32, np.dtype("float32"), torch.float32, (2, 32),
                 dlbridge.DType("float32")]:
        assert dlbridge.asarray(n, dtype=spec).dtype == "float32"


def test_device_argument():
    n = np.arange(3)
    assert dlbridge.asarray(n, device="cpu").data_ptr == n.ctypes.data
    assert dlbridge.asarray([1, 2], device=Device("cpu")).device == "cpu"
    with pytest.raises(ValueError, match="copy=False, but moving data from cpu to cuda:1 needs a copy"):
        dlbridge.asarray(bytearray(2), device="cuda:1", copy=False)


def test_from_dlpack_and_asarray_agree():
    n = np.arange(6.0).reshape(2, 3)[:, ::2]
    a, b = dlbridge.from_dlpack(n), dlbridge.asarray(n)
    assert (a.shape, a.strides, a.data_ptr, a.dtype) == (b.shape, b.strides, b.data_ptr, b.dtype)


def test_result_type_is_array():
    for source in [np.arange(2), torch.arange(2), b"ab", [1], 1.0, CudaInterface(np.zeros(2))]:
        assert type(dlbridge.asarray(source)) is Array
