"""dlbridge as a DLPack consumer, fed capsules built by hand with ctypes.

Every tensor here is a DLManagedTensor[Versioned] made field by field
(dlbridge.testing._abi, the conformance kit's), so each rule of the DLPack 1.3 ABI and
python_spec can be exercised exactly, including tensors no library would make.
The deleter counts its calls: it must run exactly once, and only when the last
dlbridge array (or view) on the tensor is gone.
"""
import ctypes
import gc
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dlbridge
from dlbridge.testing._abi import (FLAG_IS_COPIED, FLAG_READ_ONLY, INT32, DevicelessProducer, ManagedTensor, Producer,
                           capsule_name, stray_deleter_calls)
from messages import exactly

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def no_stray_deleter_calls():
    """No deleter may ever be called with a pointer that is not one we made."""
    before = len(stray_deleter_calls)
    yield
    gc.collect()
    assert stray_deleter_calls[before:] == []


def collect():
    gc.collect()


def import_hand_built(managed, **from_dlpack_kwargs):
    producer = Producer(managed)
    array = dlbridge.from_dlpack(producer, **from_dlpack_kwargs)
    return producer, array


# -- layouts ------------------------------------------------------------------


def test_null_strides_mean_c_order():
    mt = ManagedTensor(range(6), shape=(2, 3))
    producer, a = import_hand_built(mt)
    assert a.shape == (2, 3)
    assert a.strides == (3, 1)
    assert a.dtype == dlbridge.DType("float64")
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert a.data_ptr == mt.data_address  # shared, not copied
    assert not a.readonly
    assert a.device == dlbridge.Device("cpu")
    assert producer.calls == [{"max_version": (1, 3)}]
    assert mt.deleter_calls == 0
    del a
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize(
    "shape, strides, byte_offset, expected",
    [
        ((2, 3), (1, 2), 0, [[0, 2, 4], [1, 3, 5]]),                 # Fortran order
        ((2, 3), (3, 1), 0, [[0, 1, 2], [3, 4, 5]]),                 # explicit C order
        ((2, 3), (-3, -1), 5 * 8, [[5, 4, 3], [2, 1, 0]]),           # both axes reversed
        ((3,), (-2,), 4 * 8, [4, 2, 0]),                             # negative with a step
        ((2, 3), (0, 1), 0, [[0, 1, 2], [0, 1, 2]]),                 # broadcast (zero) stride
        ((1, 3), (1000, 1), 0, [[0, 1, 2]]),                         # arbitrary stride on extent 1
        ((2, 2), (2, 1), 2 * 8, [[2, 3], [4, 5]]),                   # strides and byte_offset
    ],
)
def test_explicit_strides(shape, strides, byte_offset, expected):
    mt = ManagedTensor(range(6), shape=shape, strides=strides, byte_offset=byte_offset)
    producer, a = import_hand_built(mt)
    assert a.shape == shape
    assert a.strides == strides
    assert a.tolist() == expected
    assert a.data_ptr == mt.data_address + byte_offset
    assert mt.deleter_calls == 0
    del a
    collect()
    assert mt.deleter_calls == 1


def test_negative_strides_with_data_pointing_at_the_first_element():
    # The other common spelling: data itself is the first element, byte_offset 0.
    mt = ManagedTensor(range(6), shape=(2, 3), strides=(-3, -1), data=None)
    mt.struct.dl_tensor.data = mt.data_address + 5 * 8
    producer, a = import_hand_built(mt)
    assert a.tolist() == [[5, 4, 3], [2, 1, 0]]
    del a
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("byte_offset", [8, 16, 24])
def test_byte_offset_is_added_to_data(byte_offset):
    mt = ManagedTensor([10.0, 11.0, 12.0, 13.0, 14.0, 15.0], shape=(3,), byte_offset=byte_offset)
    producer, a = import_hand_built(mt)
    first = byte_offset // 8
    assert a.tolist() == [10.0 + first, 11.0 + first, 12.0 + first]
    assert a.data_ptr == mt.data_address + byte_offset
    # Re-exported, the offset is folded into data (DLPack pitfall 6).
    b = dlbridge.from_dlpack(a)
    assert b.tolist() == a.tolist()
    del a, b
    collect()
    assert mt.deleter_calls == 1


def test_int32_values():
    mt = ManagedTensor([-1, 2, 2**31 - 1], dtype=INT32, ctype=ctypes.c_int32)
    producer, a = import_hand_built(mt)
    assert a.dtype == dlbridge.DType("int32")
    assert a.tolist() == [-1, 2, 2**31 - 1]
    del a
    collect()
    assert mt.deleter_calls == 1


def test_zero_dimensional_tensor_with_null_shape_and_strides():
    mt = ManagedTensor([42.0], shape=())
    assert not mt.struct.dl_tensor.shape and not mt.struct.dl_tensor.strides
    producer, a = import_hand_built(mt)
    assert a.shape == ()
    assert a.tolist() == 42.0
    del a
    collect()
    assert mt.deleter_calls == 1


# -- views keep the tensor -----------------------------------------------------


def test_views_keep_the_tensor_until_the_last_one_goes():
    mt = ManagedTensor(range(6), shape=(2, 3))
    producer, a = import_hand_built(mt)
    t = a.T
    row = a[1]
    tail = a[:, ::-2]
    del a
    collect()
    assert mt.deleter_calls == 0
    assert t.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert row.tolist() == [3, 4, 5]
    del t, row
    collect()
    assert mt.deleter_calls == 0
    assert tail.tolist() == [[2, 0], [5, 3]]
    del tail
    collect()
    assert mt.deleter_calls == 1


# -- flags ----------------------------------------------------------------------


def test_read_only_flag_gives_a_read_only_array():
    mt = ManagedTensor(range(4), flags=FLAG_READ_ONLY)
    producer, a = import_hand_built(mt)
    assert a.readonly
    assert memoryview(a).readonly
    with pytest.raises(TypeError, match="^cannot modify read-only memory$"):  # memoryview's own
        memoryview(a)[0] = 1.0
    view = a[1:]
    assert view.readonly
    del a
    collect()
    assert mt.deleter_calls == 0
    del view
    collect()
    assert mt.deleter_calls == 1


def test_writable_versioned_import_is_writable_and_shares_memory():
    mt = ManagedTensor(range(4))
    producer, a = import_hand_built(mt)
    assert not a.readonly
    memoryview(a)[2] = 99.0
    assert mt.buffer[2] == 99.0
    del a
    collect()
    assert mt.deleter_calls == 1


def test_is_copied_flag_is_accepted_and_writable():
    mt = ManagedTensor(range(4), flags=FLAG_IS_COPIED)
    producer, a = import_hand_built(mt)
    assert not a.readonly
    assert a.tolist() == [0, 1, 2, 3]
    assert a.data_ptr == mt.data_address
    del a
    collect()
    assert mt.deleter_calls == 1


def test_copy_true_trusts_is_copied_and_does_not_copy_again():
    mt = ManagedTensor(range(4), flags=FLAG_IS_COPIED)
    producer, a = import_hand_built(mt, copy=True)
    assert producer.calls == [{"max_version": (1, 3)}]  # never passed on (guide.md)
    assert a.data_ptr == mt.data_address
    assert mt.deleter_calls == 0
    del a
    collect()
    assert mt.deleter_calls == 1


def test_copy_true_copies_when_the_producer_did_not():
    mt = ManagedTensor(range(4))
    producer, a = import_hand_built(mt, copy=True)
    assert a.data_ptr != mt.data_address
    assert a.tolist() == [0, 1, 2, 3]
    assert not a.readonly
    # The producer's tensor is no longer needed once copied.
    collect()
    assert mt.deleter_calls == 1
    del a
    collect()
    assert mt.deleter_calls == 1


def test_copy_true_of_read_only_data_is_writable():
    mt = ManagedTensor(range(4), flags=FLAG_READ_ONLY)
    producer, a = import_hand_built(mt, copy=True)
    assert not a.readonly
    assert a.data_ptr != mt.data_address
    del a
    collect()
    assert mt.deleter_calls == 1


def test_copy_false_passes_the_keyword_and_shares():
    mt = ManagedTensor(range(4))
    producer, a = import_hand_built(mt, copy=False)
    assert producer.calls == [{"max_version": (1, 3), "copy": False}]
    assert a.data_ptr == mt.data_address
    del a
    collect()
    assert mt.deleter_calls == 1


# -- versions -------------------------------------------------------------------


@pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2), (1, 3), (1, 99)])
def test_any_minor_of_major_1_is_accepted(version):
    mt = ManagedTensor(range(3), version=version)
    producer, a = import_hand_built(mt)
    assert a.tolist() == [0, 1, 2]
    del a
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("version", [(2, 0), (0, 9), (7, 3)])
def test_other_major_version_is_refused_after_calling_the_deleter(version):
    mt = ManagedTensor(range(3), version=version)
    # With another major the layout past `flags` is unknown: garbage there must
    # not matter (and must not be what the error talks about).
    mt.struct.dl_tensor.ndim = -7
    mt.struct.dl_tensor.dtype.code = 250
    producer = Producer(mt)
    with pytest.raises(BufferError, match="version") as info:
        dlbridge.from_dlpack(producer)
    assert f"{version[0]}.{version[1]}" in str(info.value)
    assert mt.deleter_calls == 1
    assert capsule_name(producer.capsule) == b"used_dltensor_versioned"
    del producer
    collect()
    assert mt.deleter_calls == 1


# -- invalid tensors -------------------------------------------------------------

# case: (how the tensor is broken, a part the message must name, the whole message)
INVALID = {
    "unknown dtype code": (dict(dtype=(99, 64, 1)), "dtype code 99",
                           "dtype: expected a DLPack dtype code (0 to 18), got dtype code 99"),
    "ndim 70": (dict(shape=(1,) * 70, values=[1.0]), "expected ndim <= 64, got 70",
                "ndim: expected ndim <= 64, got 70"),
    "negative ndim": (dict(ndim=-1), "ndim", "ndim: expected ndim <= 64, got -1"),
    "negative extent": (dict(shape=(2, -3), values=range(6)), "extent -3",
                        "shape: axis 1: expected extent >= 0, got extent -3"),
    "null data, non-empty": (dict(data=None), "data", "data: expected a pointer for a non-empty tensor, got NULL"),
    "unknown device type": (dict(device=(99, 0)), "device type 99",
                            "device: expected a DLPack device type, got device type 99"),
    "unused device type 5": (dict(device=(5, 0)), "device type 5",
                             "device: expected a DLPack device type, got device type 5"),
    "negative device id": (dict(device=(1, -1)), "device", "device: expected device_id >= 0, got -1"),
    "lanes 4": (dict(dtype=(2, 32, 4)), "lanes 4", "dtype: expected lanes == 1, got lanes 4"),
    "unsupported bits": (dict(dtype=(2, 7, 1)), "dtype",
                         "dtype: expected a supported (code, bits) pair, got (code 2, bits 7, lanes 1)"),
    "fp4 with bits 8": (dict(dtype=(17, 8, 1)), "dtype",
                        "dtype: expected a supported (code, bits) pair, got (code 17, bits 8, lanes 1)"),
    "bcomplex with bits 64": (dict(dtype=(18, 64, 1)), "dtype",
                              "dtype: expected a supported (code, bits) pair, got (code 18, bits 64, lanes 1)"),
    "fp4 pairs with bits 8": (dict(dtype=(17, 8, 2)), "lanes 2", "dtype: expected lanes == 1, got lanes 2"),
    "fp4 with lanes 4": (dict(dtype=(17, 4, 4)), "lanes 4", "dtype: expected lanes == 1, got lanes 4"),
    "fp4 pairs, last axis strided": (dict(dtype=(17, 4, 2), shape=(2, 2), strides=(4, 2), values=range(8)),
                                     "stride 2", "strides: axis 1: expected stride 1 on the last axis of float4 "
                                     "pairs (float4_e2m1fn_x2, lanes 2), got stride 2"),
    "fp4 pairs, rows apart": (dict(dtype=(17, 4, 2), shape=(2, 2), strides=(3, 1), values=range(8)), "strides",
                              "strides: expected C-contiguous strides for a packed sub-byte dtype, "
                              "got non-contiguous strides"),
    "fp4 pairs, last extent 2^62": (dict(dtype=(17, 4, 2), shape=(2**62,), values=[1.0]), "doubled",
                                    "shape: expected C-order strides that fit in int64 with the last extent doubled "
                                    "(float4 pairs), got extents (4611686018427387904,)"),
    "null shape": (dict(shape=(2, 2), values=range(4)), "shape", "shape: expected a shape array, got NULL"),
    "bool with bits 1": (dict(dtype=(6, 1, 1)), "dtype",
                         "dtype: expected a supported (code, bits) pair, got (code 6, bits 1, lanes 1)"),
    "overflowing size": (dict(shape=(2**62, 4), values=[1.0]), "shape",
                         "shape: expected a byte size that fits in int64, got an overflowing element count"),
    "overflowing stride": (dict(shape=(2, 2), strides=(2**61, 1), values=range(4)), "strides",
                           "strides: expected byte offsets that fit in int64, got an overflowing stride"),
    "byte_offset past the address space": (dict(byte_offset=2**64 - 8), "byte_offset",
                                           "byte_offset: expected an address inside the address space, "
                                           "got byte_offset 18446744073709551608"),
    "unknown flag": (dict(flags=1 << 7), "flags",
                     "flags: expected only DLPack 1.3 flag bits (mask 0x7), got flags 128"),
}


def _make_invalid(case, versioned):
    kwargs = dict(INVALID[case][0])
    values = kwargs.pop("values", range(4))
    mt = ManagedTensor(values, versioned=versioned, **kwargs)
    if case == "null shape":
        mt.struct.dl_tensor.shape = None
    return mt


# The legacy struct has no flags field, so the flag cases are versioned only.
INVALID_PARAMS = [pytest.param(case, True, id=f"{case}-versioned") for case in INVALID] + [
    pytest.param(case, False, id=f"{case}-legacy") for case in INVALID if "flags" not in INVALID[case][0]]


@pytest.mark.parametrize("case, versioned", INVALID_PARAMS)
def test_invalid_tensor_raises_buffer_error_after_calling_the_deleter_once(case, versioned):
    mt = _make_invalid(case, versioned)
    producer = Producer(mt)
    with pytest.raises(BufferError, match="^" + re.escape("invalid tensor: " + INVALID[case][2]) + "$") as info:
        dlbridge.from_dlpack(producer)
    assert INVALID[case][1] in str(info.value)
    # The consumer took ownership (renamed the capsule) and gave it back at once.
    assert capsule_name(producer.capsule).startswith(b"used_")
    assert mt.deleter_calls == 1
    del producer, info
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("strides", [None, (3, 1), (7, -5), (0, 0)])
def test_null_data_for_an_empty_tensor_is_accepted(strides):
    mt = ManagedTensor([], shape=(0, 3), strides=strides, data=None)
    producer, a = import_hand_built(mt)
    assert a.shape == (0, 3)
    assert a.size == 0
    assert a.tolist() == []
    assert mt.deleter_calls == 0
    del a
    collect()
    assert mt.deleter_calls == 1


def _refused(managed, match):
    producer = Producer(managed)
    with pytest.raises(BufferError, match=match):
        dlbridge.from_dlpack(producer)
    assert capsule_name(producer.capsule).startswith(b"used_")
    assert managed.deleter_calls == 1
    del producer
    gc.collect()
    assert managed.deleter_calls == 1


def test_subbyte_padded_flag_is_refused():
    mt = ManagedTensor(range(4), flags=1 << 2)
    _refused(mt, exactly("invalid tensor: flags: expected packed sub-byte data, got IS_SUBBYTE_TYPE_PADDED"))


def test_non_contiguous_packed_subbyte_tensor_is_refused():
    mt = ManagedTensor(range(4), dtype=(17, 4, 1), ctype=ctypes.c_uint8, shape=(2, 2), strides=(1, 2))
    _refused(mt, exactly("invalid tensor: strides: expected C-contiguous strides for a packed sub-byte "
                         "dtype, got non-contiguous strides"))


def test_strided_span_below_address_zero_is_refused():
    # float64 elements at 16, 16 - 64 and 16 - 128: below address 0.
    mt = ManagedTensor(range(3), shape=(3,), strides=(-8,), data=16)
    _refused(mt, exactly("invalid tensor: strides: expected a strided span inside the address space, "
                         "got a span of [-128, 8) bytes around address 16"))


# -- legacy capsules ----------------------------------------------------------------


def test_legacy_capsule_imports_read_only_and_is_released_once():
    mt = ManagedTensor(range(6), shape=(3, 2), versioned=False)
    producer, a = import_hand_built(mt)
    assert a.readonly
    assert a.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert a.data_ptr == mt.data_address
    assert capsule_name(producer.capsule) == b"used_dltensor"
    view = a[::2]
    del a
    collect()
    assert mt.deleter_calls == 0
    del view
    collect()
    assert mt.deleter_calls == 1


def test_legacy_capsule_with_strides_and_byte_offset():
    mt = ManagedTensor(range(6), shape=(2, 2), strides=(1, 2), byte_offset=8, versioned=False)
    producer, a = import_hand_built(mt)
    assert a.tolist() == [[1, 3], [2, 4]]
    del a
    collect()
    assert mt.deleter_calls == 1


# -- capsule names and ownership ----------------------------------------------------


def test_versioned_capsule_is_renamed_used_after_consumption():
    mt = ManagedTensor(range(3))
    producer = Producer(mt)
    assert capsule_name(producer.capsule) == b"dltensor_versioned"
    a = dlbridge.from_dlpack(producer)
    assert capsule_name(producer.capsule) == b"used_dltensor_versioned"
    del producer  # the producer's own destructor must now leave the tensor alone
    collect()
    assert mt.deleter_calls == 0
    del a
    collect()
    assert mt.deleter_calls == 1


def test_capsule_consumed_twice_raises_buffer_error():
    mt = ManagedTensor(range(3))
    producer = Producer(mt)
    a = dlbridge.from_dlpack(producer)
    with pytest.raises(BufferError, match="already consumed"):
        dlbridge.from_dlpack(producer)  # the same capsule again
    assert mt.deleter_calls == 0
    assert a.tolist() == [0, 1, 2]
    del a
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("name", [b"dltensor_v2", b"DLTENSOR", b"numpy_dltensor", b""])
def test_capsule_with_a_wrong_name_is_refused_and_left_alone(name):
    mt = ManagedTensor(range(3))
    producer = Producer(mt, name=name)
    with pytest.raises(BufferError, match="expected a capsule named"):
        dlbridge.from_dlpack(producer)
    # Not dlbridge's to consume or free: unchanged name, deleter not called.
    assert capsule_name(producer.capsule) == name
    assert mt.deleter_calls == 0
    del producer  # the producer frees its unconsumed tensor
    collect()
    assert mt.deleter_calls == 1


def test_capsule_with_a_null_name_is_a_clean_error():
    # Run in a child: a crash must fail this test, not the whole session.
    code = textwrap.dedent("""
        import dlbridge
        from dlbridge.testing._abi import ManagedTensor, Producer, capsule_name
        mt = ManagedTensor(range(3))
        producer = Producer(mt, name=None)
        assert capsule_name(producer.capsule) is None
        try:
            dlbridge.from_dlpack(producer)
        except (BufferError, TypeError) as e:
            print("clean", type(e).__name__, e)
        print("deleter", mt.deleter_calls)
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in sys.path if p])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, (f"child exited with {proc.returncode} (negative: killed by that "
                                  f"signal; -11 is SIGSEGV): {proc.stderr[-2000:]}")
    assert "clean" in proc.stdout
    assert "deleter 0" in proc.stdout


def test_raw_capsule_works_with_a_deprecation_warning():
    mt = ManagedTensor(range(4))
    capsule = mt.capsule()
    with pytest.warns(DeprecationWarning, match="raw DLPack capsule"):
        a = dlbridge.from_dlpack(capsule)
    assert a.tolist() == [0, 1, 2, 3]
    assert a.data_ptr == mt.data_address
    assert capsule_name(capsule) == b"used_dltensor_versioned"
    del capsule
    collect()
    assert mt.deleter_calls == 0
    del a
    collect()
    assert mt.deleter_calls == 1


def test_raw_legacy_capsule_works_with_a_deprecation_warning():
    mt = ManagedTensor(range(4), versioned=False)
    capsule = mt.capsule()
    with pytest.warns(DeprecationWarning):
        a = dlbridge.from_dlpack(capsule)
    assert a.readonly
    assert capsule_name(capsule) == b"used_dltensor"
    del a
    collect()
    assert mt.deleter_calls == 1


def test_raw_capsule_consumed_twice_raises_buffer_error():
    mt = ManagedTensor(range(4))
    capsule = mt.capsule()
    with pytest.warns(DeprecationWarning):
        a = dlbridge.from_dlpack(capsule)
        with pytest.raises(BufferError, match="already consumed"):
            dlbridge.from_dlpack(capsule)
    del a
    collect()
    assert mt.deleter_calls == 1


def test_null_capsule_name_message():
    # In a child: a crash must fail this test, not the whole session.
    code = textwrap.dedent("""
        import dlbridge
        from dlbridge.testing._abi import ManagedTensor, Producer
        mt = ManagedTensor(range(3))
        producer = Producer(mt, name=None)
        try:
            dlbridge.from_dlpack(producer)
        except BaseException as e:
            print(type(e).__name__, e)
        print("deleter", mt.deleter_calls)
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in sys.path if p])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "BufferError expected a capsule named 'dltensor_versioned' or 'dltensor', got one named NULL",
        "deleter 0",
    ]


# -- producers -----------------------------------------------------------------------


class OldProducer:
    """A DLPack 0.x producer: no max_version, dl_device or copy keywords."""

    def __init__(self, managed):
        self.managed = managed
        self.capsule = managed.capsule()
        self.calls = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_old_producer_is_retried_without_keywords():
    mt = ManagedTensor(range(3), versioned=False)
    producer = OldProducer(mt)
    a = dlbridge.from_dlpack(producer)
    assert producer.calls == [None]  # the keyword call failed before reaching the body
    assert a.tolist() == [0, 1, 2]
    assert a.readonly  # legacy
    del a
    collect()
    assert mt.deleter_calls == 1


def test_old_producer_with_copy_true_is_copied_by_the_consumer():
    mt = ManagedTensor(range(3), versioned=False)
    producer = OldProducer(mt)
    a = dlbridge.from_dlpack(producer, copy=True)
    assert a.data_ptr != mt.data_address
    assert a.tolist() == [0, 1, 2]
    assert not a.readonly
    collect()
    assert mt.deleter_calls == 1
    del a
    collect()
    assert mt.deleter_calls == 1


class FakeCapsuleName:
    pass


FakeCapsuleName.__name__ = "PyCapsule"  # a non-capsule whose type is merely named like one


@pytest.mark.parametrize("returned", [42, None, b"dltensor", "dltensor_versioned", object(),
                                      FakeCapsuleName()],
                         ids=["int", "None", "bytes", "str", "object", "class-named-PyCapsule"])
def test_producer_returning_a_non_capsule_raises_type_error(returned):
    class Bad:
        def __dlpack__(self, **kwargs):
            return returned

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match="PyCapsule"):
        dlbridge.from_dlpack(Bad())


class Refusing:
    """A producer whose `method` raises `error`; with a `dtype` attribute
    only where one is given."""

    def __init__(self, error, method, dtype=None):
        self.error, self.method = error, method
        if dtype is not None:
            self.dtype = dtype

    def __dlpack__(self, **kwargs):
        if self.method == "__dlpack__":
            raise self.error
        return ManagedTensor(range(3)).capsule()

    def __dlpack_device__(self):
        if self.method == "__dlpack_device__":
            raise self.error
        return (1, 0)


@pytest.mark.parametrize("method", ["__dlpack__", "__dlpack_device__"])
@pytest.mark.parametrize("kind", [BufferError, TypeError])
@pytest.mark.parametrize("dtype, got", [(None, ""), ("float16", "; got dtype float16")], ids=["no-dtype", "dtype"])
def test_a_producers_refusal_keeps_its_words_and_names_the_producer(method, kind, dtype, got):
    # BufferError and TypeError are what a caller acts on: they say which
    # producer refused, and its dtype where it has one. (A TypeError from
    # __dlpack__ is first taken for a producer older than DLPack 1.0: asked
    # again without keywords, it raises again.)
    error = kind("cannot export this")
    with pytest.raises(kind, match=exactly(f"cannot export this (from Refusing.{method}(){got})")) as info:
        dlbridge.from_dlpack(Refusing(error, method, dtype))
    assert info.value.__cause__ is error


@pytest.mark.parametrize("method", ["__dlpack__", "__dlpack_device__"])
@pytest.mark.parametrize("error", [RuntimeError("the producer failed"), ValueError("no"), KeyError("k"),
                                   AttributeError("'Refusing' object has no attribute 'state'")],
                         ids=["runtime", "value", "key", "attribute"])
def test_a_producers_own_failures_stand_as_they_are(method, error):
    # An AttributeError raised inside __dlpack_device__ is its own, not a
    # missing method (which dlbridge would accept: see below).
    with pytest.raises(type(error)) as info:
        dlbridge.from_dlpack(Refusing(error, method))
    assert info.value is error


class DtypeRaising(Refusing):
    @property
    def dtype(self):
        raise RuntimeError("no dtype either")


def test_a_producer_whose_dtype_fails_is_named_without_it():
    with pytest.raises(BufferError, match=exactly("no (from DtypeRaising.__dlpack__())")):
        dlbridge.from_dlpack(DtypeRaising(BufferError("no"), "__dlpack__"))


class DeviceOnly:
    def __dlpack_device__(self):
        return (1, 0)


NOT_PRODUCERS = [[1, 2, 3], (1.0, 2.0), range(3), 3.5, 7, True, 1j, None, "abc", object(), memoryview(b"ab"),
                 DeviceOnly()]


@pytest.mark.parametrize("obj", NOT_PRODUCERS, ids=[type(o).__name__ for o in NOT_PRODUCERS])
@pytest.mark.parametrize("kwargs", [{}, {"device": "cpu"}, {"copy": True}, {"copy": False}],
                         ids=["plain", "device", "copy", "no-copy"])
def test_an_object_without_dlpack_is_type_error_pointing_to_asarray(obj, kwargs):
    message = (f"from_dlpack: expected an object with __dlpack__ (a DLPack producer), got {type(obj).__name__}; "
               f"use dlbridge.asarray for sequences, scalars and other array-likes")
    with pytest.raises(TypeError, match=exactly(message)):
        dlbridge.from_dlpack(obj, **kwargs)


def test_object_without_dlpack_message():
    with pytest.raises(TypeError, match=exactly(
            "from_dlpack: expected an object with __dlpack__ (a DLPack producer), got list; "
            "use dlbridge.asarray for sequences, scalars and other array-likes")):
        dlbridge.from_dlpack([1, 2, 3])


def test_from_dlpack_with_device_of_a_non_producer_names_the_protocol():
    with pytest.raises(TypeError, match=exactly(
            "from_dlpack: expected an object with __dlpack__ (a DLPack producer), got object; "
            "use dlbridge.asarray for sequences, scalars and other array-likes")):
        dlbridge.from_dlpack(object(), device="cpu")


def test_from_dlpack_copy_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match=exactly("copy must be True, False or None, got 1")):
        dlbridge.from_dlpack(dlbridge.zeros(3), copy=1)


# -- producers with no __dlpack_device__ -----------------------------------------
# NumPy and nanobind take them: the device is the tensor's. dlbridge asks with
# no stream (DLPack: the legacy default stream, on CUDA) and decides about
# device= requests once the tensor is in.

ENTRY_POINTS = {
    "from_dlpack": dlbridge.from_dlpack,
    "asarray": dlbridge.asarray,
    "Array": lambda x, **kwargs: dlbridge.Array(x, **kwargs),
}
REQUESTS = [({}, False), ({"copy": True}, True), ({"copy": False}, False), ({"device": "cpu"}, False),
            ({"device": "cpu", "copy": True}, True), ({"device": "cpu", "copy": False}, False),
            ({"device": ("cpu", 0), "copy": None}, False)]


@pytest.mark.parametrize("entry, kwargs, copies", [
    pytest.param(entry, kwargs, copies, id=f"{entry}-{kwargs}")
    for entry in ENTRY_POINTS for kwargs, copies in REQUESTS if not (entry == "Array" and "device" in kwargs)])
@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_a_producer_without_dlpack_device_is_taken(entry, versioned, kwargs, copies):
    mt = ManagedTensor(range(6), shape=(2, 3), versioned=versioned)
    producer = DevicelessProducer(mt)
    a = ENTRY_POINTS[entry](producer, **kwargs)
    assert not hasattr(producer, "__dlpack_device__")
    assert len(producer.calls) == 1 and "stream" not in producer.calls[0]
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]] and a.device == "cpu"
    assert (a.data_ptr != mt.data_address) == copies
    assert a.readonly == (not versioned and not copies)  # a legacy capsule cannot say it may be written
    del a
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
@pytest.mark.parametrize("convert", [dlbridge.from_dlpack, dlbridge.asarray], ids=["from_dlpack", "asarray"])
def test_a_producer_without_dlpack_device_asked_to_move_without_a_copy_is_refused(convert, versioned):
    # Only the tensor says the data is on the CPU: the refusal comes once it is
    # in, and the producer's tensor is released, once.
    mt = ManagedTensor(range(3), versioned=versioned)
    with pytest.raises(ValueError, match=exactly(f"{convert.__name__}: copy=False, but moving data from cpu "
                                                 "to cuda:0 needs a copy")):
        convert(DevicelessProducer(mt), device="cuda:0", copy=False)
    collect()
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("device", [(2, 0), (2, 1), (3, 0)], ids=["cuda", "cuda-1", "cuda_host"])
def test_a_producer_without_dlpack_device_is_asked_with_no_stream_wherever_its_data_is(device):
    # No stream, not stream 1: without a device dlbridge cannot know that the
    # producer understands CUDA streams. DLPack reads None as the legacy
    # default stream, where dlbridge orders its own work.
    mt = ManagedTensor(range(3), device=device)
    producer = DevicelessProducer(mt)
    a = dlbridge.from_dlpack(producer)
    assert producer.calls == [{"max_version": (1, 3)}]
    assert a.__dlpack_device__() == device and a.data_ptr == mt.data_address


@pytest.mark.parametrize("device", [(11, 0), (20, 1)], ids=["rocm_host", "tpu_host"])
def test_pinned_host_memory_of_other_devices_is_read_on_the_host(device):
    # kDLTPUHost (20) is on DLPack's main branch after 1.3: JAX exports TPU
    # pinned memory so. Host memory, as kDLCUDAHost's and kDLROCMHost's.
    mt = ManagedTensor(range(3), device=device)
    a = dlbridge.from_dlpack(Producer(mt, device=device))
    assert a.device.type == device[0] and a.tolist() == [0, 1, 2] and a[1:].tolist() == [1, 2]
    assert np.asarray(a).tolist() == memoryview(a).tolist() == [0, 1, 2]
    assert dlbridge.Device(device).type.name == {11: "ROCM_HOST", 20: "TPU_HOST"}[device[0]]
    name = {11: "rocm_host", 20: "tpu_host"}[device[0]]
    with pytest.raises(ValueError, match=exactly(f"dlbridge cannot copy data to or from {name}")):
        a.copy()  # dlbridge copies CPU and CUDA memory only


def test_null_deleter_is_allowed():
    mt = ManagedTensor(range(3), deleter=False)
    producer, a = import_hand_built(mt)
    assert a.tolist() == [0, 1, 2]
    del a
    collect()
    bad = ManagedTensor(range(3), dtype=(99, 8, 1), deleter=False)
    with pytest.raises(BufferError, match="dtype code 99"):
        dlbridge.from_dlpack(Producer(bad, name=b"dltensor_versioned"))
    legacy = ManagedTensor(range(3), versioned=False, deleter=False)
    producer, a = import_hand_built(legacy)
    assert a.tolist() == [0, 1, 2]


def test_producer_ignoring_the_requested_device_is_refused():
    # __dlpack_device__ says CPU, but the capsule holds CUDA memory. (No
    # deleter, so this does not depend on deleters running with an exception
    # in flight; see the next test and the last one.)
    mt = ManagedTensor(range(3), device=(2, 0), deleter=False)
    producer = Producer(mt, device=(1, 0))
    with pytest.raises(BufferError, match="not on the requested"):
        dlbridge.from_dlpack(producer, device="cpu")


def test_producer_ignoring_the_requested_device_is_refused_and_released():
    # __dlpack_device__ says CPU, but the capsule holds CUDA memory.
    mt = ManagedTensor(range(3), device=(2, 0))
    producer = Producer(mt, device=(1, 0))
    with pytest.raises(BufferError, match="not on the requested"):
        dlbridge.from_dlpack(producer, device="cpu")
    assert mt.deleter_calls == 1


def test_deleter_called_while_an_exception_is_in_flight_keeps_the_exception():
    # The temporary array dies while IndexError propagates, so dlbridge calls the
    # producer's deleter with that exception set. NumPy's consumer (and the
    # python_spec reference destructor) save and restore the in-flight exception
    # around the deleter; a deleter written in Python must not turn it into
    # SystemError, and must run exactly once.
    mt = ManagedTensor(range(3))
    producer = Producer(mt)
    with pytest.raises(IndexError, match="^index 99 is out of bounds for axis 0 with size 3$"):
        dlbridge.from_dlpack(producer)[99]
    collect()
    assert mt.deleter_calls == 1


# -- __dlpack_device__ is asked first ----------------------------------------------


@pytest.mark.parametrize("device, error, message", [
    ((99, 0), BufferError, "from_dlpack: __dlpack_device__() returned (99, 0), which is not a DLPack device "
                           "(a DLDeviceType code and a device id >= 0)"),
    ((0, 0), BufferError, "from_dlpack: __dlpack_device__() returned (0, 0), which is not a DLPack device "
                          "(a DLDeviceType code and a device id >= 0)"),
    ((1, -1), BufferError, "from_dlpack: __dlpack_device__() returned (1, -1), which is not a DLPack device "
                           "(a DLDeviceType code and a device id >= 0)"),
    ((2**70, 0), BufferError, f"from_dlpack: __dlpack_device__() returned ({2**70}, 0), which is not a DLPack "
                              f"device (a DLDeviceType code and a device id >= 0)"),
    ([1, 0], TypeError, "from_dlpack: __dlpack_device__() must return a (device_type, device_id) tuple of ints, "
                        "got [1, 0]"),
    (("cpu", 0), TypeError, "from_dlpack: __dlpack_device__() must return a (device_type, device_id) tuple of "
                            "ints, got ('cpu', 0)"),
    ((True, 0), TypeError, "from_dlpack: __dlpack_device__() must return a (device_type, device_id) tuple of "
                           "ints, got (True, 0)"),
    ((1,), TypeError, "from_dlpack: __dlpack_device__() must return a (device_type, device_id) tuple of ints, "
                      "got (1,)"),
    (None, TypeError, "from_dlpack: __dlpack_device__() must return a (device_type, device_id) tuple of ints, "
                      "got None"),
], ids=["unknown-type", "type-0", "negative-id", "huge-type", "list", "str", "bool", "one", "none"])
@pytest.mark.parametrize("kwargs", [{}, {"device": "cpu"}, {"copy": True}], ids=["plain", "device", "copy"])
def test_a_device_dlpack_does_not_define_is_refused_before_dunder_dlpack(device, error, message, kwargs):
    mt = ManagedTensor(range(3))
    producer = Producer(mt, device=device)
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        dlbridge.from_dlpack(producer, **kwargs)
    assert producer.calls == []  # the capsule was never asked for
    del producer
    collect()
    assert mt.deleter_calls == 1  # the unconsumed capsule's tensor is released once


@pytest.mark.parametrize("device, stream", [((1, 0), None), ((2, 0), 1), ((13, 0), 1), ((3, 0), None)],
                         ids=["cpu", "cuda", "cuda_managed", "cuda_host"])
def test_cuda_producers_are_told_the_legacy_default_stream(device, stream):
    # DLPack: the consumer passes the stream it will use; dlbridge orders its
    # GPU work on the legacy default stream, 1. CPU-side producers get none.
    mt = ManagedTensor(range(3), device=device)
    producer = Producer(mt, device=device)
    a = dlbridge.from_dlpack(producer)
    expected = {"max_version": (1, 3)} if stream is None else {"stream": stream, "max_version": (1, 3)}
    assert producer.calls == [expected]
    assert a.__dlpack_device__() == device
