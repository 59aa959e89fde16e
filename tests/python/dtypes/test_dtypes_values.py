"""The small-float codec (float16, bfloat16 and the float8/6/4 family) against
ml_dtypes, bit for bit.

Raw bits go into a dlbridge array by writing them at ``data_ptr`` of an
``empty`` array (and, where PyTorch has the dtype, through DLPack), and come
out of one with ``ctypes.string_at(arr.data_ptr, arr.nbytes)``. float6 and
float4 are packed in dlbridge (element i at bit i * bits, little bit order),
while ml_dtypes stores one element per byte, so they are packed and unpacked
here.

The rounding reference. ml_dtypes 0.6 narrows a float64 to float32 before it
rounds to the small format (``static_cast<T>(static_cast<float>(x))``, see
jax-ml/ml_dtypes PR #401), so ``np.array(x).astype(T)`` double-rounds float64
values that are not float32 values and land on a float32 midpoint of T. The
encoding tests therefore compare float32-representable values with
``astype`` directly, and all other float64 values with ml_dtypes applied to
the float32 rounded *to odd* from them: round-to-odd into a format with at
least two more bits, then round-to-nearest-even, is the correctly rounded
result (Boldo and Melquiond), i.e. ml_dtypes' own rounding rule applied once.
"""
import math
import struct

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dtype_codes import (NAMES, all_codes, array_from_codes, assert_same_codes, assert_same_floats, bits_of, code_type,
                         codes_of, e8m0_ml_defect, float32_exact, ml_type, ml_values, pack, reference_codes,
                         round_to_odd_float32, sample_values, unpack, values_per_route)

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

TORCH_TYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16,
               "float8_e4m3fn": torch.float8_e4m3fn, "float8_e4m3fnuz": torch.float8_e4m3fnuz,
               "float8_e5m2": torch.float8_e5m2, "float8_e5m2fnuz": torch.float8_e5m2fnuz,
               "float8_e8m0fnu": torch.float8_e8m0fnu}


# ---------------------------------------------------------------------------
# Helpers


def test_pack_unpack_helpers():
    assert pack([1, 2, 3], 4) == bytes([0x21, 0x03])
    assert pack([0x3F, 0x01], 6) == bytes([0x7F, 0x00])
    assert unpack(bytes([0x21, 0x03]), 4, 3).tolist() == [1, 2, 3]
    codes = list(range(64)) * 3
    assert unpack(pack(codes, 6), 6, len(codes)).tolist() == codes


def test_round_to_odd_helper():
    # 1 + 2**-25 truncates to 1.0 and, being inexact, gets its last bit set:
    # 1 + 2**-23, where round-to-nearest would give 1.0.
    assert float(round_to_odd_float32([1 + 2.0**-25])[0]) == 1 + 2.0**-23
    assert float(round_to_odd_float32([1.0])[0]) == 1.0
    assert float(round_to_odd_float32([1e300])[0]) == float(np.finfo(np.float32).max)
    assert float(round_to_odd_float32([5e-324])[0]) == 2.0**-149
    assert math.copysign(1, float(round_to_odd_float32([-0.0])[0])) == -1


@pytest.mark.parametrize("name", NAMES)
def test_memory_layout_of_packed_and_byte_types(name):
    a = dlbridge.zeros(5, dtype=name)
    assert a.nbytes == (5 * bits_of(name) + 7) // 8
    codes = all_codes(name)[: 1 << min(bits_of(name), 6)]
    assert codes_of(array_from_codes(name, codes)).tolist() == codes.tolist()


# ---------------------------------------------------------------------------
# (a) Decoding: every bit pattern


@pytest.mark.parametrize("name", NAMES)
def test_decode_every_bit_pattern_with_tolist(name):
    codes = all_codes(name)
    a = array_from_codes(name, codes)
    assert a.dtype == name
    assert_same_floats(a.tolist(), ml_values(name, codes), f"{name} tolist")


@pytest.mark.parametrize("name", NAMES)
def test_decode_every_bit_pattern_2d(name):
    codes = all_codes(name)
    rows = 4
    a = array_from_codes(name, codes, shape=(rows, codes.size // rows))
    got = [v for row in a.tolist() for v in row]
    assert_same_floats(got, ml_values(name, codes), f"{name} 2-d tolist")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("target", ["float64", "float32"])
def test_decode_every_bit_pattern_with_dtype_conversion(name, target):
    codes = all_codes(name)
    a = dlbridge.asarray(array_from_codes(name, codes), dtype=target)
    assert a.dtype == target
    want = ml_values(name, codes)
    if target == "float32":
        with np.errstate(invalid="ignore"):
            want = want.astype(np.float32).astype(np.float64)  # exact for every format here
    assert_same_floats(a.tolist(), want, f"{name} -> {target}")


@pytest.mark.parametrize("name", NAMES)
def test_decode_scalars(name):
    codes = all_codes(name)
    picks = codes[:: max(1, codes.size // 64)]
    a = array_from_codes(name, picks)
    want = ml_values(name, picks)
    got = [float(a[i]) for i in range(a.size)] if bits_of(name) >= 8 else a.tolist()
    assert_same_floats(got, want, f"{name} float(a[i])")


@pytest.mark.parametrize("name", sorted(TORCH_TYPES))
def test_decode_through_dlpack_from_torch(name):
    codes = all_codes(name)
    t = torch.from_numpy(codes.copy()).view(TORCH_TYPES[name])
    a = dlbridge.from_dlpack(t)
    assert a.dtype == name
    assert a.data_ptr == t.data_ptr()
    assert_same_floats(a.tolist(), ml_values(name, codes), f"{name} from torch")


# ---------------------------------------------------------------------------
# (b) Encoding


@pytest.mark.parametrize("name", NAMES)
def test_encode_float32_values_matches_astype(name):
    """Values exactly representable in float32: ml_dtypes' astype rounds once."""
    values = sample_values(name)
    values = values[float32_exact(values)]
    if name == "float8_e8m0fnu":
        values = values[~e8m0_ml_defect(values)]
    with np.errstate(over="ignore"):
        want = np.array(values).astype(ml_type(name)).view(code_type(name))
    for route, got in values_per_route(name, values).items():
        assert_same_codes(got, want, values, name, route)


@pytest.mark.parametrize("name", NAMES)
def test_encode_float32_ndarray_matches_astype(name):
    values = sample_values(name, seed=1)
    values = values[float32_exact(values)].astype(np.float32)
    if name == "float8_e8m0fnu":
        values = values[~e8m0_ml_defect(values)]
    with np.errstate(over="ignore"):
        want = values.astype(ml_type(name)).view(code_type(name))
    got = codes_of(dlbridge.asarray(values, dtype=name))
    assert_same_codes(got, want, values, name, "asarray(float32 ndarray, dtype=)")


@pytest.mark.parametrize("name", NAMES)
def test_encode_float64_values_rounds_once(name):
    """Every sampled float64 value, float32-representable or not."""
    values = sample_values(name, seed=2)
    if name == "float8_e8m0fnu":
        values = values[~e8m0_ml_defect(values)]
    want = reference_codes(name, values)
    for route, got in values_per_route(name, values).items():
        assert_same_codes(got, want, values, name, route)


@pytest.mark.parametrize("name", NAMES)
def test_encode_with_full(name):
    values = [0.0, -0.0, 1.0, -1.5, 0.3, 1e-3, 1e9, -1e9, math.inf, -math.inf]
    if name == "float8_e8m0fnu":
        values = [v for v in values if v > 0] + [0.5, 2.0**-127, 2.0**127]
    for v in values:
        a = dlbridge.full(5, v, dtype=name)
        want = int(reference_codes(name, [v])[0])
        assert codes_of(a).tolist() == [want] * 5, (name, v)


@pytest.mark.parametrize("name", NAMES)
def test_encode_integers_matches_astype(name):
    """Python and NumPy integers (exact in float32, so astype rounds once)."""
    ints = np.concatenate([np.arange(-300, 301), [2**20 + 1, -(2**20) - 3, 2**24, 65519, 65520, 65536,
                                                  57344, 61440, 448, 464, 480, 240, 248, 256]])
    with np.errstate(over="ignore"):
        want = ints.astype(np.float32).astype(ml_type(name)).view(code_type(name))
    if name == "float8_e8m0fnu":
        keep = ~e8m0_ml_defect(ints)
        ints, want = ints[keep], want[keep]
    assert_same_codes(codes_of(dlbridge.asarray(ints.tolist(), dtype=name)), want, ints, name,
                      "asarray(list of int, dtype=)")
    assert_same_codes(codes_of(dlbridge.asarray(ints.astype(np.int64), dtype=name)), want, ints, name,
                      "asarray(int64 ndarray, dtype=)")


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_every_finite_code(name):
    codes = all_codes(name)
    values = ml_values(name, codes)
    keep = ~np.isnan(values)
    a = dlbridge.asarray(values[keep].tolist(), dtype=name)
    assert codes_of(a).tolist() == codes[keep].tolist()


@pytest.mark.parametrize("name", NAMES)
def test_encode_signed_zero(name):
    want = reference_codes(name, [0.0, -0.0]).tolist()
    assert codes_of(dlbridge.asarray([0.0, -0.0], dtype=name)).tolist() == want


@pytest.mark.parametrize("name", NAMES)
def test_encode_infinities(name):
    want = reference_codes(name, [math.inf, -math.inf]).tolist()
    assert codes_of(dlbridge.asarray([math.inf, -math.inf], dtype=name)).tolist() == want


@pytest.mark.parametrize("name", NAMES)
def test_encode_nan_matches_ml_dtypes(name):
    """NaN of either sign is written as ml_dtypes writes it (ml_dtypes keeps
    the sign of a NaN where the format has a negative NaN)."""
    values = np.array([math.nan, -math.nan])
    with np.errstate(invalid="ignore"):
        want = values.astype(ml_type(name)).view(code_type(name))
    for route, got in values_per_route(name, values).items():
        assert_same_codes(got, want, values, name, route)


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith(("float6", "float4"))])
def test_encode_decodes_to_nan(name):
    """Whatever its bits, an encoded NaN decodes as NaN (float6 and float4
    have no NaN; ml_dtypes writes a zero for it)."""
    a = dlbridge.asarray([math.nan, -math.nan], dtype=name)
    assert all(math.isnan(v) for v in a.tolist())


def test_e8m0_bottom_of_range_rounds_to_nearest():
    """Between 2**-127 (code 0) and 2**-126 (code 1) the nearer value wins;
    the midpoint 1.5 * 2**-127 goes up, as every other e8m0 midpoint does in
    ml_dtypes. ml_dtypes 0.6 sends every float32 subnormal above 2**-127 to
    code 1 (see e8m0_ml_defect); dlbridge keeps to nearest here."""
    low = 2.0**-127
    values = [low * f for f in (1.0, 1.1, 1.25, 1.4, 1.4999, 1.5, 1.6, 2.0, 0.9, 0.5, 0.1)]
    a = dlbridge.asarray(values, dtype="float8_e8m0fnu")
    assert codes_of(a).tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    # Away from the bottom, ml_dtypes and dlbridge agree on the same shape of rule.
    normal = [1.0, 1.1, 1.25, 1.4, 1.4999, 1.5, 1.6, 2.0]
    want = np.array(normal, dtype=np.float32).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    assert codes_of(dlbridge.asarray(normal, dtype="float8_e8m0fnu")).tolist() == want.tolist()


@pytest.mark.parametrize("name", ["float8_e8m0fnu"])
def test_e8m0_specials(name):
    # No zero, no sign, no infinity: all of these are NaN (0xFF), as in ml_dtypes.
    values = [0.0, -0.0, -1.0, -2.0**-127, math.inf, -math.inf, 2.0**128, 1e300]
    with np.errstate(over="ignore"):
        want = np.array(values).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    assert want.tolist() == [0xFF] * len(values)
    assert codes_of(dlbridge.asarray(values, dtype=name)).tolist() == want.tolist()


def test_double_rounding_cases_round_once():
    """Documented examples: the correctly rounded result, which ml_dtypes'
    astype (narrowing to float32 first) misses."""
    cases = [
        ("float8_e4m3fn", -431.99999999999994, -416.0),
        ("float8_e3m4", 14.749999999999998, 14.5),
        ("bfloat16", 1 + 2.0**-8 + 2.0**-40, 1.0078125),
        ("float4_e2m1fn", 0.25000000000000006, 0.5),
        ("float6_e2m3fn", 2.8749999999999996, 2.75),
    ]
    for name, value, want in cases:
        assert dlbridge.asarray([value], dtype=name).tolist() == [want], name
        assert dlbridge.asarray(np.array([value]), dtype=name).tolist() == [want], name


# ---------------------------------------------------------------------------
# Conversions between small formats


@pytest.mark.parametrize("source", ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2",
                                    "float8_e3m4", "float8_e8m0fnu", "float6_e3m2fn", "float4_e2m1fn"])
@pytest.mark.parametrize("target", NAMES)
def test_convert_between_small_formats(source, target):
    codes = all_codes(source)
    if bits_of(source) == 16:
        codes = codes[::37]
    values = ml_values(source, codes)
    keep = ~np.isnan(values)  # NaN bit patterns are covered by test_encode_nan_matches_ml_dtypes
    codes, values = codes[keep], values[keep]
    if target == "float8_e8m0fnu":
        keep = ~e8m0_ml_defect(values)
        codes, values = codes[keep], values[keep]
    a = dlbridge.asarray(array_from_codes(source, codes), dtype=target)
    assert a.dtype == target
    assert_same_codes(codes_of(a), reference_codes(target, values), values, target, f"from {source}")


# ---------------------------------------------------------------------------
# Exporting small-float arrays keeps the bits


@pytest.mark.parametrize("name", sorted(TORCH_TYPES))
def test_export_to_torch_keeps_bits(name):
    codes = all_codes(name)
    a = array_from_codes(name, codes)
    t = torch.from_dlpack(a)
    assert t.dtype == TORCH_TYPES[name]
    assert t.view(torch.uint16 if bits_of(name) == 16 else torch.uint8).numpy().tolist() == codes.tolist()


def test_float16_struct_agrees():
    """float16 decoding also agrees with the struct module's IEEE half."""
    codes = all_codes("float16")
    a = array_from_codes("float16", codes)
    want = [struct.unpack("<e", int(c).to_bytes(2, "little"))[0] for c in codes]
    assert_same_floats(a.tolist(), want, "float16 vs struct")
