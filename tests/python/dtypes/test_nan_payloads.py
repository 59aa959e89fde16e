"""What conversions make of a NaN's payload (docs/guide.md, "DTypes"),
against the libraries themselves, bit for bit: NumPy for float16, float32
and float64 (float16 NaNs move bit for bit, signalling or not; float32 <->
float64 go through the CPU, which makes them quiet), ml_dtypes 0.6 for
bfloat16 (read with its payload, written as the quiet NaN of its sign) and
the float8/6/4 formats (the quiet NaN of its sign both ways).

Every NaN bit pattern of the 16- and 8-bit formats is converted to every
other float dtype, and every float32 NaN (a sample for the formats converted
element by element) and a dense sample of float64 NaNs to the small formats.
"""
import struct

import numpy as np
import pytest

import dlbridge
from dtype_codes import NAMES, all_codes, array_from_codes, bits_of, code_type, codes_of, ml_type

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)

SMALL = [n for n in NAMES if bits_of(n) >= 8]  # float6/float4 have no NaN to read
# NumPy's own float dtypes, and the unsigned type of their bits (a complex
# element's parts one after the other).
WIDE = {"float32": np.uint32, "float64": np.uint64, "complex64": np.uint32, "complex128": np.uint64}


def np_type(name):
    return np.dtype(name) if name in WIDE else ml_type(name)


def bits_type(name):
    return WIDE.get(name) or code_type(name)


def nan_codes(name):
    codes = all_codes(name)
    with np.errstate(invalid="ignore"):
        values = codes.view(ml_type(name)).astype(np.float32)
    return codes[np.isnan(values)]


def reference(source, target, bits):
    """The peer's conversion of `bits` (of dtype `source`) to `target`, as
    bits: NumPy's own astype between its dtypes, ml_dtypes' where either is one
    of its types (through float32 where ml_dtypes has no direct cast: between
    float8_e8m0fnu and the other float8, float6 and float4 formats)."""
    values = np.asarray(bits).view(np_type(source))
    with np.errstate(invalid="ignore", over="ignore"):
        try:
            out = values.astype(np_type(target))
        except TypeError:
            out = values.astype(np.float32).astype(np_type(target))
    return out.view(bits_type(target))


def source_array(source, bits):
    """A dlbridge array of dtype `source` holding `bits` (NumPy cannot export
    ml_dtypes arrays through DLPack, so those are written in place)."""
    if source in ("float16", "float32", "float64"):
        return dlbridge.asarray(np.asarray(bits).view(np_type(source)))
    return array_from_codes(source, bits)


def bits_of_array(a):
    """The bits of each element of dlbridge array `a`, in C order."""
    name = a.dtype.name
    return np.from_dlpack(a).view(WIDE[name]).ravel() if name in WIDE else codes_of(a)


def converted(source, target, bits):
    """dlbridge's conversion of `bits` (of dtype `source`) to `target`, as bits."""
    return bits_of_array(dlbridge.asarray(source_array(source, bits), dtype=target))


def assert_same_bits(got, want, source_bits, context):
    got, want = np.asarray(got), np.asarray(want)
    bad = np.flatnonzero(got != want)
    detail = [(hex(int(source_bits[i])), hex(int(want[i])), hex(int(got[i]))) for i in bad[:8]]
    assert bad.size == 0, f"{context}: {bad.size} of {len(want)} differ (source, peer, dlbridge): {detail}"


def every_float32_nan():
    payloads = np.arange(1, 1 << 23, dtype=np.uint32)
    return np.concatenate([0x7F800000 | payloads, 0xFF800000 | payloads])


def float64_nans(count=20000, seed=0):
    """float64 NaNs: each payload bit alone and all but one, low bits only
    (which a narrower format's leading bits miss), both quiet bits and signs,
    and random payloads of every length."""
    rng = np.random.default_rng(seed)
    mask = (1 << 52) - 1
    payloads = {p for b in range(52) for p in (1 << b, mask ^ (1 << b), (1 << b) - 1, (1 << 51) | (1 << b))}
    payloads |= {int(x) >> int(s) for x, s in zip(rng.integers(0, 1 << 52, count, dtype=np.uint64),
                                                  rng.integers(0, 52, count))}
    payloads.discard(0)
    payloads = np.array(sorted(payloads), dtype=np.uint64)
    return np.concatenate([np.uint64(0x7FF0000000000000) | payloads, np.uint64(0xFFF0000000000000) | payloads])


# ---------------------------------------------------------------------------
# From every NaN of the 16- and 8-bit formats


@pytest.mark.parametrize("source", SMALL)
@pytest.mark.parametrize("target", ["float32", "float64", "complex64", "complex128"])
def test_small_nan_to_wide(source, target):
    codes = nan_codes(source)
    assert codes.size > 0
    want = reference(source, target, codes)
    assert_same_bits(converted(source, target, codes), want, np.repeat(codes, want.size // codes.size),
                     f"{source} -> {target}")


@pytest.mark.parametrize(("source", "target"), [(s, t) for t in NAMES for s in SMALL if s != t])  # same: a copy
def test_small_nan_to_small(source, target):
    codes = nan_codes(source)
    assert_same_bits(converted(source, target, codes), reference(source, target, codes), codes,
                     f"{source} -> {target}")


@pytest.mark.parametrize("source", SMALL)
def test_small_nan_to_python_float(source):
    """tolist() and float(): the value widened to float64, as the peer widens it."""
    codes = nan_codes(source)
    a = source_array(source, codes)
    got = np.array([struct.unpack("<Q", struct.pack("<d", v))[0] for v in a.tolist()], dtype=np.uint64)
    assert_same_bits(got, reference(source, "float64", codes), codes, f"{source}.tolist()")
    if bits_of(source) == 16:
        got = np.array([struct.unpack("<Q", struct.pack("<d", float(a[i])))[0] for i in range(0, a.size, 17)],
                       dtype=np.uint64)
        assert_same_bits(got, reference(source, "float64", codes[::17]), codes[::17], f"float({source}[i])")


# ---------------------------------------------------------------------------
# From float32 and float64 NaNs


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_every_float32_nan_to_16_bits(target):
    bits = every_float32_nan()
    assert_same_bits(converted("float32", target, bits), reference("float32", target, bits), bits,
                     f"float32 -> {target}")


@pytest.mark.parametrize("target", [n for n in NAMES if bits_of(n) < 16])
def test_float32_nans_to_8_bits_and_less(target):
    """Converted element by element: a dense sample, every 61st payload."""
    bits = every_float32_nan()[::61 if bits_of(target) == 8 else 4099]
    assert_same_bits(converted("float32", target, bits), reference("float32", target, bits), bits,
                     f"float32 -> {target}")


@pytest.mark.parametrize("target", ["float32"] + NAMES)
def test_float64_nans(target):
    bits = float64_nans() if bits_of(target) >= 8 else float64_nans(count=300)
    assert_same_bits(converted("float64", target, bits), reference("float64", target, bits), bits,
                     f"float64 -> {target}")


def test_float32_and_float64_nans_between_themselves():
    """Through the CPU both ways, as NumPy: quiet, the leading payload bits kept."""
    bits = every_float32_nan()[::7]
    assert_same_bits(converted("float32", "float64", bits), reference("float32", "float64", bits), bits,
                     "float32 -> float64")
    bits = float64_nans()
    assert_same_bits(converted("float64", "float32", bits), reference("float64", "float32", bits), bits,
                     "float64 -> float32")


@pytest.mark.parametrize("target", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_python_float_nans(target):
    """Python floats (stored one by one) and full(): a float64's rules."""
    bits = float64_nans(count=2000)
    values = [struct.unpack("<d", struct.pack("<Q", int(b)))[0] for b in bits]
    want = reference("float64", target, bits)
    assert_same_bits(codes_of(dlbridge.asarray(values, dtype=target)), want, bits, f"asarray(list) -> {target}")
    for i in range(0, bits.size, 997):
        assert codes_of(dlbridge.full(3, values[i], dtype=target)).tolist() == [int(want[i])] * 3


@pytest.mark.parametrize("source", ["float16", "bfloat16", "float32"])
def test_strided_and_transposed_sources_convert_alike(source):
    """The element-by-element and tiled paths give the typed loop's bits."""
    bits = nan_codes(source) if source != "float32" else every_float32_nan()[::4096]
    bits = np.concatenate([bits, bits[::-1]])[: (2 * bits.size // 16) * 16]
    whole = source_array(source, bits)
    matrix = (array_from_codes(source, bits, shape=(16, bits.size // 16)) if source == "bfloat16"
              else dlbridge.asarray(bits.view(np_type(source)).reshape(16, -1)))
    views = {"[::2]": (whole[::2], bits[::2]), "[::-1]": (whole[::-1], bits[::-1]),
             ".T": (matrix.T, bits.reshape(16, -1).T.ravel())}
    for target in ["float32", "float64", "float16", "bfloat16", "float8_e4m3fn"]:
        if target == source:
            continue
        for name, (src, src_bits) in views.items():
            got = bits_of_array(dlbridge.asarray(src, dtype=target))
            assert_same_bits(got, reference(source, target, src_bits), src_bits, f"{source}{name} -> {target}")
