"""What the peers do differently across the versions dlbridge supports, each
rule written once. Tests assert the rule of the version installed (never skip
it), so the suite passes, and means the same, from the oldest supported
version to the newest."""
import importlib.metadata
import sys

import numpy as np

NUMPY = np.lib.NumpyVersion(np.__version__)

# NumPy before 2.2 makes every array np.from_dlpack returns read-only, even of
# a writable producer and even with copy=True; 2.2 keeps the producer's flag.
NUMPY_FROM_DLPACK_KEEPS_WRITABLE = NUMPY >= "2.2.0"


def numpy_from_dlpack_writable(producer_writable: bool, size: int) -> bool:
    """Whether np.from_dlpack of a producer whose data is (or is not)
    writable gives a writable ndarray of `size` elements. An empty tensor
    (NULL data, as dlbridge exports it) gets a fresh array: writable from 2.2
    on, with the producer's flag before."""
    if size == 0:
        return producer_writable or NUMPY_FROM_DLPACK_KEEPS_WRITABLE
    return producer_writable and NUMPY_FROM_DLPACK_KEEPS_WRITABLE

# NumPy 2.4 refuses what earlier versions only deprecated: int(), float() and
# complex() of an array with axes (TypeError) and bool() of an empty array
# (ValueError); before, they convert with a DeprecationWarning. dlbridge
# refuses them on every NumPy, with 2.4's exception types.
def numpy_scalar_refusal(error: Exception, convert) -> type:
    """The exception type NumPy 2.4 raises where this NumPy raised `error`."""
    if isinstance(error, DeprecationWarning):
        return ValueError if convert is bool else TypeError
    return type(error)

# NumPy 2.3 writes floats in scientific notation from a limit that depends on
# the precision (1e3 for float16, 1e6 for float32 and complex64, 1e8 for
# float64 and complex128); before, from 1e8 for every type. dlbridge's repr
# follows 2.3's rule on every NumPy.
NUMPY_REPR_SCIENTIFIC_BY_PRECISION = NUMPY >= "2.3.0"
SCIENTIFIC_FROM = {"float16": 1e3, "float32": 1e6, "complex64": 1e6, "float64": 1e8, "complex128": 1e8}

# JAX: the version as numbers (a release may have a fourth part, 0.9.0.1).
JAX = tuple(int(part) for part in importlib.metadata.version("jax").split(".")[:3])

# JAX 0.8.0 copies an unaligned buffer even when asked for copy=False; from
# 0.8.1 it raises ValueError, as the array API asks.
JAX_HONOURS_COPY_FALSE = JAX >= (0, 8, 1)

# And from 0.8.1, jnp.from_dlpack(x, copy=True) of aligned host memory shares
# it (x[0] = 42 shows in the result); 0.8.0 copies, as the array API asks.
JAX_COPY_TRUE_SHARES = JAX >= (0, 8, 1)

# JAX before 0.9.2 imports packed float4_e2m1fn through DLPack, values intact;
# from 0.9.2 XLA on CPU refuses it (even JAX's own float4 arrays).
JAX_IMPORTS_FLOAT4 = JAX < (0, 9, 2)

# No JAX holds float6 arrays on CPU. Before 0.10.2 jnp refuses the NumPy dtype
# (TypeError); from 0.10.2 JAX knows the type and XLA refuses it.
JAX_KNOWS_FLOAT6 = JAX >= (0, 10, 2)

# NumPy before 2.4 raises ValueError for a dl_device it cannot export to
# (__dlpack__(dl_device=(9, 0))); from 2.4 BufferError, as the array API asks
# (numpy#30351, in 2.4.0).
NUMPY_DLPACK_DEVICE_BUFFER_ERROR = NUMPY >= "2.4.0"

# array-api-strict defines __buffer__ (PEP 688), which Python 3.12 and newer
# take as the buffer protocol; Python 3.11 ignores it, so there its arrays
# export no buffer.
ARRAY_API_STRICT_EXPORTS_A_BUFFER = sys.version_info >= (3, 12)
