"""The small-float codes shared by the dtype tests (test_dtypes_values.py,
test_integer_rounding.py, test_nan_payloads.py, test_bcomplex.py): bits in
and out of dlbridge arrays, packing of float6/float4, and the rounding
reference (test_dtypes_values.py's docstring explains it)."""
import ctypes
import math

import ml_dtypes
import numpy as np

import dlbridge

NAMES = ["bfloat16", "float16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
         "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
         "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"]
BITS = {"bfloat16": 16, "float16": 16, "float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4}
def bits_of(name):
    return BITS.get(name, 8)


def ml_type(name):
    return np.dtype(np.float16 if name == "float16" else getattr(ml_dtypes, name))


def code_type(name):
    return np.dtype(np.uint16 if bits_of(name) == 16 else np.uint8)


def all_codes(name):
    return np.arange(1 << bits_of(name), dtype=code_type(name))


def pack(codes, bits):
    """Packs codes (one per element) at bit i * bits, little bit order."""
    out = bytearray((len(codes) * bits + 7) // 8)
    for i, c in enumerate(codes):
        bit = i * bits
        value = int(c) << (bit % 8)
        out[bit // 8] |= value & 0xFF
        if value >> 8:
            out[bit // 8 + 1] |= value >> 8
    return bytes(out)


def unpack(data, bits, count):
    x = int.from_bytes(data, "little")
    return np.array([(x >> (i * bits)) & ((1 << bits) - 1) for i in range(count)], dtype=np.uint8)


def raw_bytes(codes, name):
    codes = np.asarray(codes, dtype=code_type(name))
    return codes.tobytes() if bits_of(name) >= 8 else pack(codes.tolist(), bits_of(name))


def array_from_codes(name, codes, shape=None):
    """A dlbridge array of dtype `name` holding the given bit patterns."""
    codes = np.asarray(codes, dtype=code_type(name))
    a = dlbridge.empty(codes.size if shape is None else shape, dtype=name)
    data = raw_bytes(codes.ravel(), name)
    assert a.nbytes == len(data)
    ctypes.memmove(a.data_ptr, data, len(data))
    return a


def codes_of(a):
    """The bit patterns of a C-contiguous dlbridge array, one per element."""
    name = a.dtype.name
    data = ctypes.string_at(a.data_ptr, a.nbytes)
    if bits_of(name) < 8:
        return unpack(data, bits_of(name), a.size)
    return np.frombuffer(data, dtype=code_type(name)).copy()


def ml_values(name, codes):
    with np.errstate(invalid="ignore"):
        return np.asarray(codes, dtype=code_type(name)).view(ml_type(name)).astype(np.float64)


def same_float(x, y):
    """Equal as floats, with NaN equal to NaN and the sign of zero counted."""
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


def assert_same_floats(got, want, context):
    got = [float(v) for v in got]
    want = [float(v) for v in want]
    assert len(got) == len(want)
    bad = [(i, want[i], got[i]) for i in range(len(want)) if not same_float(got[i], want[i])]
    assert not bad, f"{context}: {len(bad)} mismatches (index, want, got), first: {bad[:8]}"


def show(value):
    value = float(value)
    return ("-nan" if math.copysign(1.0, value) < 0 else "nan") if math.isnan(value) else value


def assert_same_codes(got, want, values, name, context):
    got = np.asarray(got).astype(np.int64)
    want = np.asarray(want).astype(np.int64)
    bad = np.flatnonzero(got != want)
    detail = [(show(values[i]), hex(int(want[i])), hex(int(got[i]))) for i in bad[:8]]
    assert bad.size == 0, (f"{name} {context}: {bad.size} of {len(values)} values encode differently "
                           f"(value, ml_dtypes, dlbridge): {detail}")


def round_to_odd_float32(values):
    """float64 -> float32 rounded to odd: truncate toward zero, then set the
    last bit if anything was lost. NaN and infinities pass through."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = values.astype(np.float32)
        back = f.astype(np.float64)
    inexact = np.isfinite(values) & (back != values)
    too_far = inexact & (np.abs(back) > np.abs(values))
    f[too_far] = np.nextafter(f[too_far], np.float32(0))
    f.view(np.uint32)[inexact] |= np.uint32(1)
    return f


def float32_exact(values):
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float32).astype(np.float64) == values


def reference_codes(name, values):
    """ml_dtypes' encoding of float64 `values`, rounded once (see module docstring)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return round_to_odd_float32(values).astype(ml_type(name)).view(code_type(name))


def finite_values(name):
    v = ml_values(name, all_codes(name))
    return np.unique(v[np.isfinite(v)])


def e8m0_ml_defect(values):
    """Where ml_dtypes 0.6 mis-rounds float8_e8m0fnu: inputs strictly between
    2**-127 and 1.5 * 2**-127 (float32 subnormals) go to 2**-126 instead of the
    nearer 2**-127. Tested separately in test_e8m0_bottom_of_range_rounds_to_nearest."""
    a = np.abs(np.asarray(values, dtype=np.float64))
    return (a > 2.0**-127) & (a < 1.5 * 2.0**-127)


def sample_values(name, seed=0):
    """float64 values to encode: every finite value of the format, the
    midpoints between neighbours (ties) and their float32 and float64
    neighbours, values around the largest finite value and the overflow
    threshold, subnormals, tiny and huge values, zeros, infinities and random
    values across the range; both signs."""
    rng = np.random.default_rng(seed)
    fin = finite_values(name)
    pos = fin[fin > 0]
    top = fin[-1]
    mids = (fin[1:] + fin[:-1]) / 2  # exact in float64
    mids32 = mids.astype(np.float32)
    parts = [
        fin,
        mids,
        np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
        np.nextafter(mids32, np.float32(np.inf)).astype(np.float64),
        np.nextafter(mids32, np.float32(-np.inf)).astype(np.float64),
        fin * (1 + 2.0**-30), fin * (1 - 2.0**-30),
        [top * 1.0625, top * 1.125, top * 1.25, top * 1.5, top * 2, top * 4, 1e30, 1e300, 1.7e308],
        [pos[0] / 2, pos[0] / 4, pos[0] * 0.75, pos[0] * 0.5000001, pos[0] * 0.4999999,
         pos[0] * 1.5, pos[0] * 1.25],
        [5e-324, 1e-320, 2.0**-1022, 1e-300, 1e-45, 1.4e-45, 1e-40, 2.0**-126, 2.0**-149],
        [0.0, math.inf],
        rng.standard_normal(3000) * top / 3,
        np.exp(rng.uniform(math.log(pos[0]) - 3, math.log(top) + 3, 3000)),
        rng.uniform(0, top, 2000).astype(np.float32).astype(np.float64),
    ]
    values = np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])
    values = np.concatenate([values, -values])
    return values[~np.isnan(values)]


def values_per_route(name, values):
    """The codes dlbridge writes for float64 `values` along each route."""
    routes = {
        "asarray(list, dtype=)": dlbridge.asarray(values.tolist(), dtype=name),
        "asarray(float64 ndarray, dtype=)": dlbridge.asarray(values, dtype=name),
    }
    return {route: codes_of(a) for route, a in routes.items()}
