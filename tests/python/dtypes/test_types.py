"""DType, Device and DeviceType: construction from every accepted spelling,
properties, equality, hashing, repr and pickling, and the errors for specs
that name nothing dlbridge supports."""
import pickle
import re

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dlbridge import Device, DeviceType, DType
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again

# name -> (DLPack code, bits, itemsize, NumPy typestr or None)
DTYPES = {
    "bool": (6, 8, 1, "|b1"),
    "int8": (0, 8, 1, "|i1"),
    "int16": (0, 16, 2, "<i2"),
    "int32": (0, 32, 4, "<i4"),
    "int64": (0, 64, 8, "<i8"),
    "uint8": (1, 8, 1, "|u1"),
    "uint16": (1, 16, 2, "<u2"),
    "uint32": (1, 32, 4, "<u4"),
    "uint64": (1, 64, 8, "<u8"),
    "float16": (2, 16, 2, "<f2"),
    "float32": (2, 32, 4, "<f4"),
    "float64": (2, 64, 8, "<f8"),
    "bfloat16": (4, 16, 2, None),
    "complex64": (5, 64, 8, "<c8"),
    "complex128": (5, 128, 16, "<c16"),
    "float8_e3m4": (7, 8, 1, None),
    "float8_e4m3": (8, 8, 1, None),
    "float8_e4m3b11fnuz": (9, 8, 1, None),
    "float8_e4m3fn": (10, 8, 1, None),
    "float8_e4m3fnuz": (11, 8, 1, None),
    "float8_e5m2": (12, 8, 1, None),
    "float8_e5m2fnuz": (13, 8, 1, None),
    "float8_e8m0fnu": (14, 8, 1, None),
    "float6_e2m3fn": (15, 6, 1, None),
    "float6_e3m2fn": (16, 6, 1, None),
    "float4_e2m1fn": (17, 4, 1, None),
    "bcomplex32": (18, 32, 4, None),  # two bfloat16: DLPack main's kDLBcomplex, ml_dtypes' name
}
NUMPY_NAMES = [n for n, v in DTYPES.items() if v[3] is not None]
ML_DTYPES_NAMES = [n for n, v in DTYPES.items() if v[3] is None]  # bfloat16, the minifloats, bcomplex32
TORCH_NAMES = {
    torch.bool: "bool", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
    torch.int64: "int64", torch.uint8: "uint8", torch.uint16: "uint16", torch.uint32: "uint32",
    torch.uint64: "uint64", torch.float16: "float16", torch.float32: "float32",
    torch.float64: "float64", torch.bfloat16: "bfloat16", torch.complex64: "complex64",
    torch.complex128: "complex128", torch.float8_e4m3fn: "float8_e4m3fn",
    torch.float8_e4m3fnuz: "float8_e4m3fnuz", torch.float8_e5m2: "float8_e5m2",
    torch.float8_e5m2fnuz: "float8_e5m2fnuz", torch.float8_e8m0fnu: "float8_e8m0fnu",
}


# ---------------------------------------------------------------------------
# DType: construction


def test_there_are_27_dtypes():
    assert len(DTYPES) == 27
    assert len(ML_DTYPES_NAMES) == 13  # bfloat16, the 11 minifloats and bcomplex32


@pytest.mark.parametrize("name", list(DTYPES))
def test_dtype_from_name_and_properties(name):
    code, bits, itemsize, typestr = DTYPES[name]
    t = DType(name)
    assert t.name == name
    assert str(t) == name
    assert t.code == code
    assert t.bits == bits
    assert t.lanes == 1
    assert t.itemsize == itemsize
    assert t.typestr == typestr
    assert repr(t) == f"DType('{name}')"


@pytest.mark.parametrize("name", list(DTYPES))
def test_dtype_from_code_bits_tuple(name):
    code, bits, _, _ = DTYPES[name]
    assert DType((code, bits)) == DType(name)
    assert DType((code, bits, 1)).name == name


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_dtype_from_typestr(name):
    typestr = DTYPES[name][3]
    assert DType(typestr).name == name          # "<f4", "|b1"
    assert DType(typestr[1:]).name == name      # "f4", "b1"
    assert DType("=" + typestr[1:]).name == name


@pytest.mark.parametrize("spec, name", [("<f4", "float32"), ("f4", "float32"), ("|b1", "bool"),
                                        ("<c16", "complex128"), ("|u1", "uint8"), ("=i8", "int64")])
def test_dtype_typestr_examples(spec, name):
    assert DType(spec).name == name


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_dtype_from_numpy_dtype_and_scalar_type(name):
    assert DType(np.dtype(name)).name == name
    assert DType(np.dtype(name).type).name == name
    assert DType(np.dtype(name).str).name == name


@pytest.mark.parametrize("spec, name", [
    (np.float32, "float32"), (np.dtype("int16"), "int16"), (np.bool_, "bool"),
    (np.intc, "int32"), (np.half, "float16"), (np.complex64, "complex64"),
    (np.uint64, "uint64"), (np.dtype("<f8"), "float64"), (np.dtype("=u2"), "uint16"),
    (np.dtype(">i1"), "int8"),  # one byte: byte order is irrelevant
])
def test_dtype_numpy_examples(spec, name):
    assert DType(spec).name == name


@pytest.mark.parametrize("name", ML_DTYPES_NAMES)
def test_dtype_from_ml_dtypes(name):
    scalar_type = getattr(ml_dtypes, name)
    assert DType(scalar_type).name == name
    assert DType(np.dtype(scalar_type)).name == name


@pytest.mark.parametrize("spec", list(TORCH_NAMES))
def test_dtype_from_torch(spec):
    assert DType(spec).name == TORCH_NAMES[spec]


@pytest.mark.parametrize("spec, name", [(bool, "bool"), (int, "int64"), (float, "float64"),
                                        (complex, "complex128")])
def test_dtype_from_python_types(spec, name):
    assert DType(spec).name == name


@pytest.mark.parametrize("alias, name", [("bool_", "bool"), ("?", "bool"), ("float", "float64"),
                                         ("int", "int64"), ("complex", "complex128"),
                                         ("half", "float16"), ("single", "float32"),
                                         ("double", "float64")])
def test_dtype_aliases(alias, name):
    assert DType(alias).name == name


def test_dtype_from_dtype_is_equal():
    t = DType("float32")
    assert DType(t) == t
    assert DType(DType(t)).name == "float32"


# ---------------------------------------------------------------------------
# DType: equality, hashing, pickling


def test_dtype_equality_with_other_specs():
    t = DType("float32")
    for spec in ("float32", "<f4", "f4", np.float32, np.dtype("float32"), torch.float32, (2, 32),
                 (2, 32, 1), DType("float32")):
        assert t == spec, spec
        assert not (t != spec), spec
    for spec in ("float64", "<f8", np.int32, torch.bfloat16, (2, 64), DType("bfloat16")):
        assert t != spec, spec
        assert not (t == spec), spec


@pytest.mark.parametrize("other", [object(), None, "float99", [2, 32], 3.5, np.dtype("V2"), "garbage"])
def test_dtype_equality_with_non_dtypes_is_false(other):
    t = DType("float32")
    assert not (t == other)
    assert t != other


def test_dtype_equality_with_ml_dtypes():
    assert DType("bfloat16") == ml_dtypes.bfloat16
    assert DType("float8_e4m3fn") == np.dtype(ml_dtypes.float8_e4m3fn)
    assert DType("float8_e4m3fn") != ml_dtypes.float8_e4m3fnuz
    assert DType("bcomplex32") == ml_dtypes.bcomplex32
    assert DType("bcomplex32") != ml_dtypes.complex32  # complex of two float16: DLPack spells it (5, 32), unsupported


def test_dtype_hash():
    assert hash(DType("float32")) == hash(DType("<f4")) == hash(DType(np.float32))
    names = {DType(n) for n in DTYPES}
    assert len(names) == 27
    assert DType("int64") in {DType(int)}
    assert {DType("f8"): 1}[DType(float)] == 1


@pytest.mark.parametrize("name", list(DTYPES))
def test_dtype_pickle_round_trip(name):
    t = DType(name)
    back = pickle.loads(pickle.dumps(t))
    assert isinstance(back, DType)
    assert back == t
    assert back.name == name
    assert hash(back) == hash(t)


def test_dtype_of_arrays_is_a_dtype():
    a = dlbridge.zeros(3, dtype="bfloat16")
    assert isinstance(a.dtype, DType)
    assert a.dtype == "bfloat16"


# ---------------------------------------------------------------------------
# DType: errors


# Each refusal's whole message for a spec: the spec (or the NumPy dtype of a
# scalar type) as repr() shows it, so that NumPy's, ml_dtypes' and PyTorch's
# spellings in this version are the ones expected.
def cannot_interpret(spec):
    return f"cannot interpret {spec!r} (of type {type(spec).__name__}) as a dlbridge dtype"


def cannot_interpret_its_numpy_dtype(spec):
    return cannot_interpret(np.dtype(spec))


def big_endian(spec):
    return f"dtype {spec!r} has non-native (big-endian) byte order"


def not_a_dlpack_triple(spec):
    return f"dtype {spec!r} is not a supported DLPack (code, bits, lanes) triple"


@pytest.mark.parametrize("spec, mention, refusal", [
    ("float99", "float99", cannot_interpret),
    (">f4", ">f4", cannot_interpret),
    (">i2", ">i2", cannot_interpret),
    ("S1", "S1", cannot_interpret),
    ("V2", "V2", cannot_interpret),
    ("", "''", cannot_interpret),
    ("Float32", "Float32", cannot_interpret),
    (np.dtype("V2"), "V2", cannot_interpret),
    (np.dtype("O"), "O", cannot_interpret),
    (np.dtype(">f4"), ">f4", big_endian),
    (np.dtype(">u2"), ">u2", big_endian),
    *([(np.longdouble, np.dtype(np.longdouble).name, cannot_interpret_its_numpy_dtype)]
      if np.dtype(np.longdouble).itemsize > 8 else []),
    (ml_dtypes.int4, "int4", cannot_interpret_its_numpy_dtype),
    (torch.complex32, "complex32", cannot_interpret),
    (torch.float4_e2m1fn_x2, "float4_e2m1fn_x2", cannot_interpret),
    ((2, 33), "(2, 33)", not_a_dlpack_triple),
    ((2, 32, 2), "(2, 32, 2)", not_a_dlpack_triple),
    ((99, 8), "(99, 8)", not_a_dlpack_triple),
    ((2.0, 32), "(2.0, 32)", cannot_interpret),
    ([2, 32], "[2, 32]", cannot_interpret),
    (None, "None", cannot_interpret),
    (3.5, "3.5", cannot_interpret),
    (list, "list", cannot_interpret),
])
def test_dtype_bad_spec_raises_type_error_naming_it(spec, mention, refusal):
    with pytest.raises(TypeError, match=exactly(refusal(spec))) as info:
        DType(spec)
    assert mention in str(info.value)


class _DtypeLike:
    """Something with NumPy dtype's attributes, of the types given."""
    kind = "f"

    def __init__(self, name="float32", byteorder="=", itemsize=4):
        self.name, self.byteorder, self.itemsize = name, byteorder, itemsize

    def __repr__(self):
        return f"_DtypeLike({self.name!r}, {self.byteorder!r}, {self.itemsize!r})"


@pytest.mark.parametrize("spec", [
    _DtypeLike(name=["float32"]), _DtypeLike(name=b"float32"), _DtypeLike(itemsize="4", byteorder=">"),
    _DtypeLike(itemsize=4.0), _DtypeLike(byteorder=b">"), _DtypeLike(name=None)], ids=repr)
def test_dtype_like_object_of_other_types_is_not_interpreted(spec):
    # A NumPy dtype look-alike whose attributes are not a str and an int:
    # refused as any spec dlbridge cannot interpret (not an error about
    # hashing or comparing them).
    with pytest.raises(TypeError, match=exactly(cannot_interpret(spec))):
        DType(spec)


def test_dtype_like_object_is_read_once():
    class Counting(_DtypeLike):
        reads = 0

        def __getattribute__(self, attr):
            if attr in ("name", "byteorder", "itemsize"):
                type(self).reads += 1
            return object.__getattribute__(self, attr)
    assert DType(Counting()) == "float32" and Counting.reads == 3


def test_dtype_object_named_in_error():
    thing = object()
    with pytest.raises(TypeError, match="object"):
        DType(thing)


def test_dtype_big_endian_numpy_dtype_says_so():
    with pytest.raises(TypeError, match="big-endian"):
        DType(np.dtype(">f4"))


def test_dtype_bad_specs_in_functions():
    with pytest.raises(TypeError, match="float99"):
        dlbridge.zeros(3, dtype="float99")
    with pytest.raises(TypeError, match="float99"):
        dlbridge.asarray([1.0], dtype="float99")


# ---------------------------------------------------------------------------
# DeviceType


def test_device_type_values_equal_the_dlpack_enum():
    expected = {"CPU": 1, "CUDA": 2, "CUDA_HOST": 3, "OPENCL": 4, "VULKAN": 7, "METAL": 8,
                "VPI": 9, "ROCM": 10, "ROCM_HOST": 11, "EXT_DEV": 12, "CUDA_MANAGED": 13,
                "ONEAPI": 14, "WEBGPU": 15, "HEXAGON": 16, "MAIA": 17, "TRN": 18,
                "TPU": 19, "TPU_HOST": 20, "ASCEND": 21}
    assert {t.name: t.value for t in DeviceType} == expected
    assert DeviceType.CUDA == 2
    assert DeviceType(1) is DeviceType.CPU
    assert isinstance(DeviceType.CPU, int)


# ---------------------------------------------------------------------------
# Device


@pytest.mark.parametrize("args, kind, index, text", [
    (("cpu",), DeviceType.CPU, 0, "cpu"),
    (("cpu:0",), DeviceType.CPU, 0, "cpu"),
    (("cuda",), DeviceType.CUDA, 0, "cuda:0"),
    (("cuda", 1), DeviceType.CUDA, 1, "cuda:1"),
    (("cuda:1",), DeviceType.CUDA, 1, "cuda:1"),
    ((DeviceType.CUDA, 1), DeviceType.CUDA, 1, "cuda:1"),
    ((2, 3), DeviceType.CUDA, 3, "cuda:3"),
    (((2, 1),), DeviceType.CUDA, 1, "cuda:1"),
    (((1, 0),), DeviceType.CPU, 0, "cpu"),
    (((DeviceType.ROCM, 2),), DeviceType.ROCM, 2, "rocm:2"),
    (("cuda_host",), DeviceType.CUDA_HOST, 0, "cuda_host:0"),
    (("cuda_managed:4",), DeviceType.CUDA_MANAGED, 4, "cuda_managed:4"),
    (("rocm:0",), DeviceType.ROCM, 0, "rocm:0"),
    (("metal",), DeviceType.METAL, 0, "metal:0"),
    (("gpu", 1), DeviceType.CUDA, 1, "cuda:1"),
])
def test_device_construction(args, kind, index, text):
    d = Device(*args)
    assert d.type is kind
    assert d.id == index
    assert str(d) == text
    assert repr(d) == f"Device('{text}')"
    assert d.name == text.partition(":")[0]


def test_device_from_dlpack_device_tuple_of_an_array():
    a = dlbridge.zeros(2)
    assert Device(a.__dlpack_device__()) == Device("cpu")
    assert a.device == Device("cpu")
    assert isinstance(a.device, Device)


@pytest.mark.parametrize("spec, text", [
    (torch.device("cpu"), "cpu"),
    (torch.device("cuda"), "cuda:0"),
    (torch.device("cuda", 2), "cuda:2"),
    (torch.device("cuda:1"), "cuda:1"),
])
def test_device_from_torch(spec, text):
    assert str(Device(spec)) == text


class JaxLikeDevice:
    """What dlbridge reads from a JAX device: ``platform`` and ``id``."""

    def __init__(self, platform, id):
        self.platform = platform
        self.id = id


@pytest.mark.parametrize("platform, index, text", [("cpu", 0, "cpu"), ("gpu", 1, "cuda:1"),
                                                   ("cuda", 0, "cuda:0"), ("rocm", 3, "rocm:3")])
def test_device_from_jax_like_object(platform, index, text):
    assert str(Device(JaxLikeDevice(platform, index))) == text


def test_device_equality_and_hash():
    a = Device("cuda", 1)
    for same in (Device("cuda:1"), Device(DeviceType.CUDA, 1), Device((2, 1)), "cuda:1", (2, 1),
                 ("cuda", 1), torch.device("cuda", 1)):
        assert a == same, same
        assert not (a != same), same
    for other in (Device("cuda:0"), Device("cpu"), "cuda:2", (2, 2), "rocm:1"):
        assert a != other, other
    assert Device("cpu") == "cpu"
    assert Device("cpu") == torch.device("cpu")
    assert hash(Device("cuda:1")) == hash(Device((2, 1))) == hash(Device(DeviceType.CUDA, 1))
    assert len({Device("cpu"), Device("cpu:0"), Device((1, 0)), Device("cuda:0"), Device("cuda")}) == 2


@pytest.mark.parametrize("other", [object(), None, "npu", "cuda:x", 3.5, (2, -1), [2, 1]])
def test_device_equality_with_non_devices_is_false(other):
    assert not (Device("cuda:1") == other)
    assert Device("cuda:1") != other


@pytest.mark.parametrize("spec", ["cpu", "cuda:1", "cuda_host:0", "rocm:7", "cpu:1"])
def test_device_pickle_round_trip(spec):
    d = Device(spec)
    back = pickle.loads(pickle.dumps(d))
    assert isinstance(back, Device)
    assert back == d
    assert str(back) == str(d)
    assert hash(back) == hash(d)


# ---------------------------------------------------------------------------
# Device: errors


def test_device_unknown_type_lists_the_choices():
    with pytest.raises(ValueError, match=r"^unknown device type 'npu'; expected one of cpu, cuda(, \w+)+$") as info:
        Device("npu")
    message = str(info.value)
    assert "'npu'" in message
    assert "cpu" in message and "cuda" in message


# Each refusal as a regex, from the arguments of Device(...): Device(type, id)
# or Device((type, id)).
def unknown_type(*args):  # the choices after cpu and cuda are not pinned
    return "^" + re.escape(f"unknown device type {args[0]!r}; expected one of cpu, cuda") + r"(, \w+)+$"


def bad_id_in_name(*args):
    return exactly(f"device id in {args[0]!r} must be a non-negative integer")


def bad_id(*args):
    return exactly(f"device id must be an integer in [0, 2**31), got {(args if len(args) == 2 else args[0])[1]!r}")


def not_a_dlpack_type(*args):
    return exactly(f"device type {(args if len(args) == 2 else args[0])[0]} is not a DLPack device type")


def id_given_twice(*args):
    return exactly(f"give the device id once, got {args[0]!r} and id {args[1]!r}")


def cannot_interpret_as_device(*args):
    return exactly(f"cannot interpret {args[0]!r} (of type {type(args[0]).__name__}) as a device")


def not_a_pair(*args):
    return exactly(f"a device tuple is (type, id), got {args[0]!r}")


def type_not_a_name(*args):
    return exactly(f"device type must be a name or a DeviceType, got {args[0]!r}")


@pytest.mark.parametrize("args, mention, refusal", [
    (("npu",), "npu", unknown_type),
    (("npu", 0), "npu", unknown_type),
    (("CUDA",), "CUDA", unknown_type),
    (("cuda:x",), "cuda:x", bad_id_in_name),
    (("cuda:",), "cuda:", bad_id_in_name),
    (("cuda:-1",), "cuda:-1", bad_id_in_name),
    (("cuda:1:2",), "cuda:1:2", bad_id_in_name),
    (("cuda", -1), "-1", bad_id),
    ((2, -1), "-1", bad_id),
    (((2, -1),), "-1", bad_id),
    (("cuda", 2**31), str(2**31), bad_id),
    (("cuda", 1.0), "1.0", bad_id),
    (((99, 0),), "99", not_a_dlpack_type),
    (((0, 0),), "0", not_a_dlpack_type),
    (((5, 0),), "5", not_a_dlpack_type),
    ((6, 0), "6", not_a_dlpack_type),
    (("cuda:1", 1), "cuda:1", id_given_twice),
])
def test_device_bad_values_raise_value_error(args, mention, refusal):
    with pytest.raises(ValueError, match=refusal(*args)) as info:
        Device(*args)
    assert mention in str(info.value)


@pytest.mark.parametrize("args, mention, refusal", [
    ((None,), "None", cannot_interpret_as_device),
    ((3.5,), "3.5", cannot_interpret_as_device),
    (([2, 1],), "[2, 1]", cannot_interpret_as_device),
    (((2, 1, 0),), "(2, 1, 0)", not_a_pair),
    ((object(),), "object", cannot_interpret_as_device),
    ((3.5, 1), "3.5", type_not_a_name),
])
def test_device_bad_types_raise_type_error(args, mention, refusal):
    with pytest.raises(TypeError, match=refusal(*args)) as info:
        Device(*args)
    assert mention in str(info.value)


def test_device_errors_from_functions():
    with pytest.raises(ValueError, match="npu"):
        dlbridge.zeros(3, device="npu")
    with pytest.raises(ValueError, match="cuda:x"):
        dlbridge.asarray([1.0], device="cuda:x")


@pytest.mark.parametrize("spec", [(True, 0), (1, False)])
def test_device_bool_in_tuple(spec):
    with pytest.raises(TypeError, match=exactly(f"a device is (type, id), got {spec!r}")):
        Device(spec)


def test_device_type_beyond_int32_is_value_error():
    with pytest.raises(ValueError, match="device type -1180591620717411303424 is not a DLPack device type"):
        Device((-2**70, 0))


# One typestr rule (dtype.hpp: dtype_from_typestr) for DType(...) and the
# array interfaces alike; until issue 11, DType refused "|f4", which the array
# interfaces' parser accepted.
@pytest.mark.parametrize("spec, name", [("|f4", "float32"), ("|c16", "complex128"), ("f8", "float64"),
                                        ("=u2", "uint16"), (">i1", "int8"), ("<b1", "bool"), ("b1", "bool")])
def test_every_typestr_spelling_numpy_reads_natively(spec, name):
    assert DType(spec).name == name
    assert np.dtype(spec) == np.dtype(name)


@pytest.mark.parametrize("spec", [">f4", ">c8", "f", "<f3", "|V2", "<i16", "f4 ", "!f4"])
def test_typestrs_with_no_native_dtype_are_refused(spec):
    with pytest.raises(TypeError, match=re.escape(f"cannot interpret {spec!r} (of type str) as a dlbridge dtype")):
        DType(spec)


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_buffer_format_comes_from_the_dtype_table_and_round_trips(name):
    a = dlbridge.zeros(3, dtype=name)
    view = memoryview(a)
    assert view.format == {"bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
                           "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f",
                           "float64": "d", "complex64": "Zf", "complex128": "Zd"}[name]
    assert dlbridge.asarray(view).dtype == name
