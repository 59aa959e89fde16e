"""Writes the seed corpus of fuzz_import.cpp into tests/fuzz/corpus/.

Each seed is one named producer tensor in the harness's input layout (see
the comment at the top of fuzz_import.cpp): valid tensors of every route,
dtype family and stride kind the copy engine treats differently, and one
tensor for each refusal of dlb::validate. Run it after changing the layout:

    python tests/fuzz/seeds.py
"""

import pathlib
import struct

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"

VERSIONED, LEGACY, ADOPT = 0, 1, 2
NULL_SHAPE, NULL_STRIDES, READ_ONLY, EXTRA_STRIDE = 1, 2, 4, 8
CPU, CUDA = 1, 2
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL, F8_E4M3FN, F6_E2M3FN, F4_E2M1FN, BCOMPLEX = 0, 1, 2, 4, 5, 6, 10, 15, 17, 18
# Indices into dlb::dtype_table, for the cast.
TO_INT8, TO_FLOAT32, TO_FLOAT16, TO_COMPLEX64, TO_FLOAT4, TO_BCOMPLEX32 = 1, 10, 9, 13, 25, 26
ADDRESS = 0x7F00_0000_0000  # a typical heap address; the harness never reads there


def seed(route=VERSIONED, options=0, version=(1, 3), flags=0, device=(CPU, 0), dtype=(FLOAT, 32, 1),
         data=ADDRESS, byte_offset=0, shape=(), strides=None, ndim=None, cast_to=TO_FLOAT32,
         demand=0, demand_device=CPU, demand_dtype=TO_FLOAT32, demand_ndim=-1, demand_shape=()):
    if strides is None:
        options |= NULL_STRIDES
        strides = (0,) * len(shape)
    ndim = len(shape) if ndim is None else ndim
    out = struct.pack("<BBIIQiiBBHQQi", route, options, *version, flags, *device, *dtype, data, byte_offset, ndim)
    out += struct.pack(f"<{len(shape)}q", *shape) + struct.pack(f"<{len(strides)}q", *strides)
    out += struct.pack("<BBiBiB", cast_to, demand, demand_device, demand_dtype, demand_ndim, len(demand_shape))
    return out + struct.pack(f"<{len(demand_shape)}q", *demand_shape)


SEEDS = {
    # Accepted tensors, one per layout family of the copy engine.
    "c-order-null-strides": seed(shape=(2, 3)),
    "c-order-strides": seed(shape=(2, 3), strides=(3, 1)),
    "transposed": seed(shape=(3, 2), strides=(1, 3), cast_to=TO_INT8),
    "transposed-64x64-f32-tiles": seed(shape=(64, 64), strides=(1, 64)),
    "transposed-32x32-f64-tiles": seed(dtype=(FLOAT, 64, 1), shape=(32, 32), strides=(1, 32)),
    "negative-strides": seed(shape=(2, 3), strides=(-3, -1), byte_offset=20),
    "broadcast-zero-stride": seed(shape=(4, 3), strides=(0, 1)),
    "gaps-3d": seed(dtype=(INT, 16, 1), shape=(2, 3, 4), strides=(40, 12, 2)),
    "size-one-axes-any-stride": seed(shape=(1, 5, 1), strides=(99, 1, -7)),
    "scalar": seed(shape=()),
    "empty-axis": seed(shape=(0, 5), data=0),
    "legacy-int8": seed(route=LEGACY, dtype=(INT, 8, 1), shape=(7,), strides=(1,)),
    "legacy-read-only-uint16": seed(route=LEGACY, options=READ_ONLY, dtype=(UINT, 16, 1), shape=(3, 2)),
    "adopt-complex128": seed(route=ADOPT, dtype=(COMPLEX, 128, 1), shape=(3, 4), strides=(1, 3)),
    "adopt-bool-c-order": seed(route=ADOPT, dtype=(BOOL, 8, 1), shape=(5, 2)),
    "bfloat16": seed(dtype=(BFLOAT, 16, 1), shape=(4,), strides=(2,), cast_to=TO_FLOAT16),
    "float8-e4m3fn": seed(dtype=(F8_E4M3FN, 8, 1), shape=(3, 3), strides=(1, 3)),
    "float4-packed": seed(dtype=(F4_E2M1FN, 4, 1), shape=(5, 3), cast_to=TO_FLOAT32),
    "float6-packed-strides": seed(dtype=(F6_E2M3FN, 6, 1), shape=(2, 3), strides=(3, 1), cast_to=TO_FLOAT4),
    "bcomplex32": seed(dtype=(BCOMPLEX, 32, 1), shape=(3, 2), strides=(1, 3), cast_to=TO_COMPLEX64),
    "float32-to-bcomplex32": seed(shape=(2, 3), strides=(1, 2), cast_to=TO_BCOMPLEX32),
    # PyTorch's float4_e2m1fn_x2: bytes of two float4 values, taken as packed float4.
    "float4-pairs": seed(dtype=(F4_E2M1FN, 4, 2), shape=(2, 3), strides=(3, 1), cast_to=TO_FLOAT32),
    "float4-pairs-0d": seed(route=LEGACY, dtype=(F4_E2M1FN, 4, 2), shape=()),
    "read-only-and-copied-flags": seed(flags=3, shape=(2,)),
    "cuda-device": seed(device=(CUDA, 1), shape=(8,)),
    "minor-version-99": seed(version=(1, 99), shape=(2,)),
    "check-c-order-shape": seed(shape=(2, 3), demand=1 | 2 | (1 << 2), demand_ndim=2, demand_shape=(2, -1)),
    "check-fortran": seed(shape=(2, 3), strides=(1, 2), demand=2 << 2, demand_ndim=2),
    # Refusals, one per check of dlb::validate, in its order.
    "unknown-flag": seed(flags=1 << 7, shape=(2,)),
    "padded-subbyte-flag": seed(flags=4, dtype=(F4_E2M1FN, 4, 1), shape=(2,)),
    "ndim-70": seed(ndim=70),
    "negative-ndim": seed(ndim=-1),
    "unknown-device": seed(device=(99, 0), shape=(2,)),
    "negative-device-id": seed(device=(CPU, -1), shape=(2,)),
    "unknown-dtype-code": seed(dtype=(99, 32, 1), shape=(2,)),
    "lanes-4": seed(dtype=(FLOAT, 32, 4), shape=(2,)),
    "unsupported-bits": seed(dtype=(FLOAT, 7, 1), shape=(2,)),
    "null-shape": seed(options=NULL_SHAPE, shape=(2, 3)),
    "negative-extent": seed(shape=(2, -3)),
    "overflowing-count": seed(shape=(1 << 32, 1 << 32)),
    "overflowing-bytes": seed(dtype=(FLOAT, 64, 1), shape=(1 << 61,)),
    "null-data": seed(data=0, shape=(2,)),
    "packed-non-contiguous": seed(dtype=(F4_E2M1FN, 4, 1), shape=(2, 3), strides=(1, 2)),
    "float4-pairs-strided-last-axis": seed(dtype=(F4_E2M1FN, 4, 2), shape=(2, 3), strides=(6, 2)),
    "float4-pairs-non-contiguous": seed(route=ADOPT, dtype=(F4_E2M1FN, 4, 2), shape=(2, 3), strides=(4, 1)),
    "overflowing-stride": seed(shape=(3,), strides=(1 << 62,)),
    "byte-offset-wraps": seed(byte_offset=(1 << 64) - 8, shape=(2,)),
    "span-below-zero": seed(data=16, shape=(5,), strides=(-8,)),
    "span-past-the-top": seed(data=(1 << 64) - 8, shape=(4,)),
    "major-version-2": seed(version=(2, 0), shape=(2,)),
    "adopt-one-stride-too-many": seed(route=ADOPT, options=EXTRA_STRIDE, shape=(2, 3), strides=(3, 1, 0)),
}


def main():
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.iterdir():
        old.unlink()
    for name, data in SEEDS.items():
        (CORPUS / name).write_bytes(data)
    print(f"wrote {len(SEEDS)} seeds to {CORPUS}")


if __name__ == "__main__":
    main()
