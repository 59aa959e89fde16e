# Included by _array.pyx; uses from it: nothing.
# Python scalars and elements: reading, writing and the dtype of a value (and
# of a list of them).
import operator
import sys

cimport dlbridge.cpp as cpp
from dlbridge._types cimport DType, as_dtype, dtype_from_cpp

cdef object _to_python(cpp.scalar s):
    if s.k == cpp.scalar_kind.boolean:
        return s.u != 0
    if s.k == cpp.scalar_kind.signed_int:
        return s.i
    if s.k == cpp.scalar_kind.unsigned_int:
        return s.u
    if s.k == cpp.scalar_kind.real:
        return s.re
    return complex(s.re, s.im)


cdef int _scalar_kind(value) except -1:
    """0 bool, 1 integer, 2 real, 3 complex: the kind of a Python or NumPy scalar
    (or 0-d array); TypeError for anything else."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return 1
    if isinstance(value, float):
        return 2
    if isinstance(value, complex):
        return 3
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None) if dtype is not None else None  # each attribute read once
    if shape is not None and shape != ():
        raise TypeError(f"expected a scalar, got an array of shape {shape}")
    if shape == ():
        t = as_dtype(dtype).value
        if t.code == cpp.kDLBool:
            return 0
        if t.code == cpp.kDLInt or t.code == cpp.kDLUInt:
            return 1
        return 3 if cpp.is_complex(t) else 2
    if hasattr(value, "__index__"):
        return 1
    if hasattr(value, "__float__"):
        return 2
    if hasattr(value, "__complex__"):
        return 3
    raise TypeError(f"expected a Python scalar (bool, int, float or complex), got {type(value).__name__}")


cdef cpp.scalar _from_python(value) except *:
    cdef int kind = _scalar_kind(value)
    if kind == 0:
        return cpp.scalar.from_bool(bool(value))
    if kind == 1:
        v = operator.index(value)
        if -2**63 <= v < 2**63:
            return cpp.scalar.from_int(v)
        if 0 <= v < 2**64:
            return cpp.scalar.from_uint(v)
        raise OverflowError(f"Python int {v} does not fit in 64 bits")
    if kind == 2:
        return cpp.scalar.from_real(float(value))
    c = complex(value)
    return cpp.scalar.from_complex(c.real, c.imag)


cdef cpp.scalar _element_value(cpp.dtype t, value) except *:
    """`value` read once, as the scalar an element of type `t` stores: what
    is checked is what is stored (a value's __index__ or __float__ may answer
    differently the next time)."""
    cdef cpp.scalar s = _from_python(value)
    if s.k == cpp.scalar_kind.complex and not cpp.is_complex(t):
        raise TypeError(f"cannot store complex value {_to_python(s)!r} in a {dtype_from_cpp(t).name} array")
    if not cpp.fits(t, s):
        raise OverflowError(f"Python int {_to_python(s)} is out of bounds for {dtype_from_cpp(t).name}")
    return s


cdef object _scalar_once(value):
    """`value` read once: Python's bool, int, float and complex, and 0-d
    values with a dtype (NumPy's scalars and 0-d arrays, whose dtype counts),
    as they are; anything else as the Python scalar its __index__, __float__
    or __complex__ gives now, which may not be what it gives next time."""
    if type(value) in (bool, int, float, complex):
        return value
    if getattr(value, "dtype", None) is not None and getattr(value, "shape", None) == ():
        return value
    return _to_python(_from_python(value))


cdef DType _scalar_dtype(value):
    """The default dtype of a scalar: its own for NumPy scalars, else as the
    array API sets it (bool, int64 or uint64, float64, complex128)."""
    if getattr(value, "shape", None) == () and hasattr(value, "dtype"):
        return as_dtype(value.dtype)
    return _common_dtype([value])


cdef DType _common_dtype(list leaves):
    """NumPy's inference for lists: the leaves' own dtype when they all share
    one; where some are NumPy scalars, NumPy's promotion of their dtypes with
    those of the Python scalars (bool, int64 or uint64, float64, complex128);
    else the widest kind of the Python scalars."""
    cdef int kind = 0
    cdef int k
    big = False
    shared = getattr(leaves[0], "dtype", None)
    typed = set()  # the dtypes of leaves that have one
    python_kinds = set()
    for v in leaves:
        dtype = getattr(v, "dtype", None)
        if dtype is None:
            shared = None
        else:
            typed.add(dtype)
            if shared is not None and dtype != shared:
                shared = None
        k = _scalar_kind(v)
        if k == 1 and dtype is None:
            big = big or operator.index(v) >= 2**63
        if dtype is None:
            python_kinds.add(k)
        kind = max(kind, k)
    if shared is not None:
        return as_dtype(shared)
    numpy = sys.modules.get("numpy")
    if typed and numpy is not None and all(isinstance(t, numpy.dtype) for t in typed):
        defaults = [("bool", "uint64" if big else "int64", "float64", "complex128")[k] for k in python_kinds]
        try:
            return as_dtype(numpy.result_type(*typed, *defaults))
        except TypeError:  # NumPy would make an object array
            names = ", ".join(sorted({str(t) for t in typed} | set(defaults)))
            raise TypeError(f"asarray: the scalars' dtypes ({names}) have no common dtype") from None
    if kind == 1 and big:
        return as_dtype("uint64")
    return as_dtype(("bool", "int64", "float64", "complex128")[kind])
