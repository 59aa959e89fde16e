"""PyTorch's float4_e2m1fn_x2: float4 pairs, as PyTorch exports them over
DLPack (code 17, bits 4, lanes 2), each element one byte holding two float4
values, the first in the low nibble.

dlbridge takes a tensor of shape S as float4_e2m1fn of shape
S[:-1] + (2 * S[-1],) (a 0-d tensor as (2,)) on the same bytes, where the
bytes are C-contiguous with stride 1 on the last axis (dlb::validate), and
exports float4 only in DLPack's own spelling, lanes 1. The values are checked
element by element against ml_dtypes' float4_e2m1fn codec, from producers
built by hand with ctypes and from real PyTorch tensors.
"""
import ctypes

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dlbridge.testing._abi import Consumed, ManagedTensor, Producer
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

PAIRS = (17, 4, 2)
STRIDED_LAST_AXIS = ("invalid tensor: strides: axis {axis}: expected stride 1 on the last axis of float4 pairs "
                     "(float4_e2m1fn_x2, lanes 2), got stride {stride}")
NOT_CONTIGUOUS = ("invalid tensor: strides: expected C-contiguous strides for a packed sub-byte dtype, "
                  "got non-contiguous strides")


def float4_values(data):
    """The float4 values of bytes `data`, low nibble first, by ml_dtypes' codec."""
    codes = np.frombuffer(bytes(data), dtype=np.uint8)
    nibbles = np.stack([codes & 0xF, codes >> 4], axis=-1).ravel()
    return nibbles.view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def assert_same_values(got, want):
    """Equal element by element, the sign of zero counted."""
    got, want = np.asarray(got, dtype=np.float64).ravel(), np.asarray(want, dtype=np.float64).ravel()
    assert got.shape == want.shape
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), (got, want)


EVERY_BYTE = bytes(range(256))  # every pair of float4 codes


# ---------------------------------------------------------------------------
# From a producer built by hand


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize("strides", [None, (16, 1)])
def test_pairs_from_a_hand_built_producer(versioned, strides):
    mt = ManagedTensor(EVERY_BYTE, shape=(16, 16), strides=strides, dtype=PAIRS, ctype=ctypes.c_uint8,
                       versioned=versioned)
    a = dlbridge.from_dlpack(Producer(mt))
    assert a.dtype == "float4_e2m1fn"
    assert a.shape == (16, 32) and a.strides == (32, 1)
    assert a.data_ptr == mt.data_address and a.nbytes == 256
    assert a.readonly == (not versioned)
    assert_same_values(a.tolist(), float4_values(EVERY_BYTE))
    # Element by element too: a[i, 2k] is byte (i, k)'s low nibble.
    for i, k in ((0, 0), (3, 7), (15, 15)):
        byte = EVERY_BYTE[16 * i + k]
        assert_same_values([a.item(i, 2 * k), a.item(i, 2 * k + 1)], float4_values([byte]))
    # It exports as DLPack's float4, lanes 1, on the same bytes.
    consumed = Consumed(a.__dlpack__(max_version=(1, 3)))
    assert consumed.dtype == (17, 4, 1) and consumed.shape == (16, 32) and consumed.strides == (32, 1)
    assert consumed.tensor.data == mt.data_address
    consumed.release()
    assert_same_values(dlbridge.asarray(a, dtype="float32").tolist(), float4_values(EVERY_BYTE))
    del a
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("shape, strides, unpaired", [
    ((), None, (2,)),                 # 0-d: one byte, two values
    ((5,), (1,), (10,)),
    ((2, 1, 3), (3, 99, 1), (2, 1, 6)),  # an axis of extent 1 may have any stride
    ((3, 1), (1, -4), (3, 2)),        # the last one too
    ((0, 4), (7, 3), (0, 8)),          # empty: any strides
    ((4, 0), None, (4, 0)),
])
def test_shapes(shape, strides, unpaired):
    count = int(np.prod(shape))
    data = EVERY_BYTE[37:37 + count]
    mt = ManagedTensor(data, shape=shape, strides=strides, dtype=PAIRS, ctype=ctypes.c_uint8,
                       data="buffer" if count else None)
    a = dlbridge.from_dlpack(Producer(mt))
    assert a.dtype == "float4_e2m1fn" and a.shape == unpaired and a.nbytes == count
    assert_same_values(np.array(a.tolist()), float4_values(data))


@pytest.mark.parametrize("shape, strides, message", [
    ((2, 3), (6, 2), STRIDED_LAST_AXIS.format(axis=1, stride=2)),
    ((4,), (-1,), STRIDED_LAST_AXIS.format(axis=0, stride=-1)),
    ((3, 2), (1, 3), STRIDED_LAST_AXIS.format(axis=1, stride=3)),  # a transpose
    ((2, 3), (4, 1), NOT_CONTIGUOUS),  # rows apart
    ((2, 3), (-3, 1), NOT_CONTIGUOUS),
])
def test_pairs_that_are_not_contiguous_bytes_are_refused(shape, strides, message):
    mt = ManagedTensor(EVERY_BYTE[:16], shape=shape, strides=strides, dtype=PAIRS, ctype=ctypes.c_uint8,
                       byte_offset=8)
    with pytest.raises(BufferError, match=exactly(message)):
        dlbridge.from_dlpack(Producer(mt))
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("dtype", [(17, 4, 4), (17, 8, 2), (15, 6, 2), (1, 8, 2), (18, 32, 2)])
def test_other_lanes_stay_refused(dtype):
    mt = ManagedTensor(EVERY_BYTE[:16], shape=(2,), dtype=dtype, ctype=ctypes.c_uint8)
    with pytest.raises(BufferError, match=exactly(f"invalid tensor: dtype: expected lanes == 1, got lanes {dtype[2]}")):
        dlbridge.from_dlpack(Producer(mt))
    assert mt.deleter_calls == 1


# ---------------------------------------------------------------------------
# From PyTorch


def torch_pairs(data, shape):
    return torch.tensor(list(data), dtype=torch.uint8).reshape(shape).view(torch.float4_e2m1fn_x2)


@pytest.mark.parametrize("entry", ["from_dlpack", "asarray", "capsule"])
def test_torch_float4_e2m1fn_x2(entry):
    t = torch_pairs(EVERY_BYTE, (4, 8, 8))
    assert t.dtype == torch.float4_e2m1fn_x2 and t.shape == (4, 8, 8)
    a = dlbridge.from_dlpack(_Capsule(t)) if entry == "capsule" else getattr(dlbridge, entry)(t)
    assert a.dtype == "float4_e2m1fn"
    assert a.shape == (4, 8, 16) and a.strides == (128, 16, 1)
    assert a.data_ptr == t.data_ptr() and not a.readonly
    # Each value against the codec, element by element, from torch's own bytes.
    raw = t.view(torch.uint8).flatten().tolist()
    assert_same_values(a.tolist(), float4_values(raw))
    for index in ((0, 0, 0), (1, 2, 3), (3, 7, 15), (2, 5, 8)):
        byte = raw[64 * index[0] + 8 * index[1] + index[2] // 2]
        assert a.item(index) == float4_values([byte])[index[2] % 2]


class _Capsule:
    """A producer handing over PyTorch's own __dlpack__ capsule (no C exchange table)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kwargs):
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_torch_0d_and_empty():
    t = torch.tensor(0x3A, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    a = dlbridge.from_dlpack(t)
    assert a.shape == (2,) and a.tolist() == [-1.0, 1.5]  # 0xA, then 0x3
    e = dlbridge.from_dlpack(torch.zeros(0, 3, dtype=torch.uint8).view(torch.float4_e2m1fn_x2))
    assert e.dtype == "float4_e2m1fn" and e.shape == (0, 6)


@pytest.mark.parametrize("entry", ["from_dlpack", "asarray"])
def test_torch_views_that_are_not_contiguous_bytes_are_refused(entry):
    t = torch_pairs(EVERY_BYTE[:24], (4, 6))
    cases = [(t[:, ::2], STRIDED_LAST_AXIS.format(axis=1, stride=2)),
             (t.T, STRIDED_LAST_AXIS.format(axis=1, stride=6)),
             (t[:, :3], NOT_CONTIGUOUS)]
    for view, message in cases:
        with pytest.raises(BufferError, match=exactly(message)):
            getattr(dlbridge, entry)(view)
    assert t.view(torch.uint8).flatten().tolist() == list(EVERY_BYTE[:24])  # untouched


def test_dlbridge_float4_to_torch_is_refused_by_torch():
    """PyTorch 2.13 reads float4 only as its x2 spelling (lanes 2); dlbridge
    exports DLPack's (lanes 1), which torch.from_dlpack refuses."""
    a = dlbridge.from_dlpack(torch_pairs(EVERY_BYTE[:4], (4,)))
    with pytest.raises(BufferError, match=exactly("Unsupported kDLFloat4_e2m1fn lanes 1")):
        torch.from_dlpack(a)
    assert_same_values(a.tolist(), float4_values(EVERY_BYTE[:4]))
