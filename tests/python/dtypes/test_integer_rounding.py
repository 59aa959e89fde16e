"""Integers convert to every float dtype with one rounding, from their exact
value (docs/guide.md, "DTypes"): int64, uint64 and Python integers to
float32, float64, float16, bfloat16 and the float8/6/4 formats.

The reference is computed here with Python's integers: the magnitude rounded
to the format's precision, to nearest, ties to even, then the format's rule
for what lies past its largest value (infinity, NaN or saturation, which
ml_dtypes' own conversion of an infinity gives); float8_e8m0fnu rounds
1.5 * 2^k up, as ml_dtypes does. None of it goes through a double: a double
rounded to nearest is what rounded twice (2**60 + 2**52 + 1 became 2**60 in
bfloat16).
"""
import random

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge
from dtype_codes import NAMES, assert_same_codes, code_type, codes_of, ml_type

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

TARGETS = ["float32", "float64"] + NAMES
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def round_int(m, bits):
    """m > 0 rounded to `bits` significant bits, to nearest, ties to even."""
    shift = m.bit_length() - bits
    if shift <= 0:
        return m
    q, rest = divmod(m, 1 << shift)
    half = 1 << (shift - 1)
    if rest > half or (rest == half and q & 1):
        q += 1
    return q << shift


def expected_value(name, x):
    """What integer x becomes in float dtype `name`, as a Python float: the
    rounded value, or +-inf past the format's largest value (ml_dtypes turns
    an infinity into the format's overflow code), or NaN."""
    if name in ("float32", "float64"):
        bits = 24 if name == "float32" else 53
        return float(round_int(x, bits)) if x >= 0 else -float(round_int(-x, bits))
    if name == "float8_e8m0fnu":
        if x <= 0:
            return float("nan")
        k = x.bit_length() - 1
        k += (x - (1 << k)) * 2 >= 1 << k  # 1.5 * 2^k and up
        return float(2**k) if k <= 127 else float("inf")
    if x == 0:
        return 0.0
    info = ml_dtypes.finfo(ml_type(name))
    r = round_int(abs(x), info.nmant + 1)
    value = float(r) if r <= float(info.max) else float("inf")
    return value if x > 0 else -value


WIDE_BITS = {"float32": np.uint32, "float64": np.uint64}


def expected_bits(name, ints):
    """The bits each of `ints` gets in dtype `name`: expected_value() written
    by NumPy (exact: it is a value of the dtype) or ml_dtypes (exact, or the
    format's code for an infinity or NaN)."""
    values = np.array([expected_value(name, x) for x in ints])
    with np.errstate(over="ignore", invalid="ignore"):
        if name in WIDE_BITS:
            return values.astype(name).view(WIDE_BITS[name])
        return values.astype(ml_type(name)).view(code_type(name))


def got_codes(name, a):
    """The bits of each element of dlbridge array `a` of dtype `name`."""
    return np.from_dlpack(a).view(WIDE_BITS[name]).ravel() if name in WIDE_BITS else codes_of(a)


def edge_integers():
    """Integers at the edges of one rounding, as magnitudes: for precisions of
    1 to 24 bits and 53, from 2**50 to 2**64, the values on the grid, halfway
    between (next to an even and an odd neighbour: ties both ways) and one
    above and below (the sticky bits below the 53rd that a double drops);
    powers of two and their neighbours; random values of every length."""
    out = {0, 1, 2, 3, 255, 256, 65504, 65519, 65520, 65536, 2**60 + 2**52 + 1, 2**64 - 1}
    for e in range(50, 64):
        base = 1 << e
        out.update({base - 1, base, base + 1, 3 << (e - 1), (3 << (e - 1)) - 1, (3 << (e - 1)) + 1})
        for p in list(range(1, 25)) + [53]:
            shift = e - p + 1
            if shift < 1:
                continue
            top = (1 << (p - 1)) - 1
            for m in {0, 1, 2, 3, max(top - 1, 0), top}:
                grid = base + (m << shift)
                tie = grid + (1 << (shift - 1))
                out.update({grid, grid - 1, grid + 1, tie, tie - 1, tie + 1})
    rng = random.Random(23)
    out.update(rng.getrandbits(rng.randrange(1, 65)) for _ in range(2000))
    return sorted(out)


EDGES = edge_integers()
SIGNED = sorted({x for m in EDGES for x in (m, -m) if INT64_MIN <= x <= INT64_MAX} | {INT64_MIN, INT64_MAX})
UNSIGNED = [m for m in EDGES if m <= UINT64_MAX]


def test_round_int_helper():
    assert round_int(0b1011, 3) == 0b1100  # past halfway: up
    assert round_int(0b1010, 3) == 0b1010  # exact
    assert round_int(0b10101, 4) == 0b10100  # a tie next to an even value: down
    assert round_int(0b10111, 4) == 0b11000  # a tie next to an odd value: up
    assert expected_value("bfloat16", 2**60 + 2**52 + 1) == 2.0**60 + 2.0**53
    assert expected_value("bfloat16", 2**60 + 2**52) == 2.0**60
    assert expected_value("float8_e4m3fn", 464) == 448.0
    assert expected_value("float8_e4m3fn", 465) == float("inf")  # written as NaN by the format's rule
    assert expected_value("float8_e8m0fnu", 3 * 2**59 - 1) == 2.0**60
    assert expected_value("float8_e8m0fnu", 3 * 2**59) == 2.0**61


def test_a_value_just_past_a_rounding_tie_rounds_up_on_every_route():
    x = 2**60 + 2**52 + 1
    for a in (dlbridge.asarray(np.array([x, -x]), dtype="bfloat16"), dlbridge.asarray([x, -x], dtype="bfloat16"),
              dlbridge.asarray(torch.tensor([x, -x]), dtype="bfloat16")):
        assert a.tolist() == [2.0**60 + 2.0**53, -(2.0**60 + 2.0**53)]
    assert dlbridge.full(3, x, dtype="bfloat16").tolist() == [2.0**60 + 2.0**53] * 3


@pytest.mark.parametrize("name", TARGETS)
def test_int64_array_rounds_once(name):
    a = np.array(SIGNED, dtype=np.int64)
    want = expected_bits(name, SIGNED)
    # Contiguous (a typed loop where the pair has one), strided and
    # transposed (element by element or through tiles).
    routes = {
        "asarray(int64 ndarray)": (dlbridge.asarray(a, dtype=name), slice(None)),
        "Array(int64 ndarray)": (dlbridge.Array(a, dtype=name), slice(None)),
        "asarray(int64 ndarray[::3])": (dlbridge.asarray(a[::3], dtype=name), slice(None, None, 3)),
        "asarray(int64 ndarray[::-1])": (dlbridge.asarray(a[::-1], dtype=name), slice(None, None, -1)),
    }
    for route, (got, part) in routes.items():
        assert_same_codes(got_codes(name, got), want[part], a[part], name, route)
    if not name.startswith(("float6", "float4")):  # packed arrays are C-contiguous only
        m = a[: (a.size // 8) * 8].reshape(8, -1)
        got = dlbridge.asarray(m.T, dtype=name)
        assert_same_codes(got_codes(name, got), expected_bits(name, m.T.ravel().tolist()), m.T.ravel(), name,
                          "asarray(int64 ndarray.T)")


@pytest.mark.parametrize("name", TARGETS)
def test_uint64_array_rounds_once(name):
    a = np.array(UNSIGNED, dtype=np.uint64)
    want = expected_bits(name, UNSIGNED)
    assert_same_codes(got_codes(name, dlbridge.asarray(a, dtype=name)), want, a, name, "asarray(uint64 ndarray)")
    assert_same_codes(got_codes(name, dlbridge.asarray(a[1::2], dtype=name)), want[1::2], a[1::2], name,
                      "asarray(uint64 ndarray[1::2])")


@pytest.mark.parametrize("name", TARGETS)
def test_python_ints_round_once(name):
    """Python integers: each one through store() (asarray of a list), and full()."""
    ints = SIGNED + [m for m in UNSIGNED if m > INT64_MAX]
    assert_same_codes(got_codes(name, dlbridge.asarray(ints, dtype=name)), expected_bits(name, ints), ints, name,
                      "asarray(list of int)")
    for x in [2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), INT64_MIN, UINT64_MAX, 2**53 + 1, 2**63 - 2**39 - 1]:
        assert_same_codes(got_codes(name, dlbridge.full(2, x, dtype=name)), expected_bits(name, [x, x]), [x, x], name,
                          f"full(2, {x})")


@pytest.mark.parametrize("name", TARGETS)
def test_int64_from_torch_rounds_once(name):
    t = torch.tensor(SIGNED, dtype=torch.int64)
    assert_same_codes(got_codes(name, dlbridge.asarray(t, dtype=name)), expected_bits(name, SIGNED), SIGNED, name,
                      "asarray(torch int64)")


@pytest.mark.parametrize("name", TARGETS)
def test_narrow_integers_are_exact(name):
    """int8 to int32 and uint8 to uint32 are exact in a double: every int16
    and uint16, and int32 / uint32 edges."""
    for dtype, values in [(np.int16, range(-(2**15), 2**15)), (np.uint16, range(2**16)),
                          (np.int32, [-(2**31), 2**31 - 1, 2**24 + 1, -(2**24) - 3, 2**30 + 2**6 + 1]),
                          (np.uint32, [2**32 - 1, 2**31 + 2**7 + 1, 2**24 + 1])]:
        ints = list(values)
        got = dlbridge.asarray(np.array(ints, dtype=dtype), dtype=name)
        assert_same_codes(got_codes(name, got), expected_bits(name, ints), ints, name, f"asarray({np.dtype(dtype)})")
