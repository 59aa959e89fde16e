"""Array.__repr__: values written as NumPy writes them, summarised past 1000
elements. Only the elements printed are read, so the cost does not grow
with the array's size."""
import struct
from collections.abc import Sequence
from decimal import Decimal

_THRESHOLD = 1000  # elements above which only the edges are shown
_EDGE = 3          # elements shown at each end of a summarised axis
_STRUCT_FORMATS = {"float16": "e", "float32": "f"}
_COMPLEX_PARTS = {"bcomplex32": "bfloat16", "complex64": "float32", "complex128": "float64"}


# Digits NumPy counts for each float type (numpy.finfo(...).precision): it
# writes a value positionally from 1e-4 up to 10**min(precision, 8).
_PRECISION = {"float16": 3, "float32": 6, "float64": 15}


def _shortest(value: float, code: str) -> str:
    """The shortest decimal that reads back as the same float16/float32."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        try:
            if struct.unpack(code, struct.pack(code, float(text)))[0] == value:
                return text
        except OverflowError:  # rounded past the type's largest value
            pass
    return repr(value)


def _numpy_style(text: str, precision: int) -> str:
    """A shortest decimal written as NumPy writes one element: 10., 0.5,
    1.e+08, 1.5e-05."""
    exact = Decimal(text)
    if exact == 0 or 1e-4 <= abs(exact) < 10 ** min(precision, 8):
        digits = format(exact, "f")
        return digits.rstrip("0") if "." in digits else digits + "."
    sign, figures, exponent = exact.normalize().as_tuple()
    power = len(figures) - 1 + int(exponent)  # finite: NaN and infinities never get here
    mantissa = f"{figures[0]}.{''.join(map(str, figures[1:]))}"
    return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"


def _real(value: float, dtype_name: str) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)
    precision = _PRECISION.get(dtype_name)
    if precision is None:  # bfloat16 and the float8/6/4 family: a few digits say it all
        return _numpy_style(f"{value:.4g}", 8)
    code = _STRUCT_FORMATS.get(dtype_name)
    return _numpy_style(_shortest(value, code) if code else repr(value), precision)


def _scalar(value, dtype_name: str) -> str:
    if isinstance(value, complex):
        part = _COMPLEX_PARTS[dtype_name]
        imag = _real(value.imag, part)
        return f"{_real(value.real, part)}{'' if imag.startswith('-') else '+'}{imag}j"
    if isinstance(value, float):
        return _real(value, dtype_name)
    return str(value)


def _block(a, shape: tuple, index: tuple, indent: int, summarise: bool, dtype_name: str) -> str:
    """The text of the sub-array of `a` at `index` (a prefix of a full index)."""
    depth = len(index)
    if depth == len(shape):
        return _scalar(a.item(*index), dtype_name)
    n = shape[depth]
    rows: Sequence[int | None] = range(n)
    if summarise and n > 2 * _EDGE:
        rows = [*range(_EDGE), None, *range(n - _EDGE, n)]
    parts = ["..." if i is None else _block(a, shape, index + (i,), indent, summarise, dtype_name)
             for i in rows]
    below = len(shape) - depth
    if below == 1:
        return "[" + ", ".join(parts) + "]"
    separator = "," + "\n" * (below - 1) + " " * (indent + depth + 1)
    return "[" + separator.join(parts) + "]"


def format_array(a) -> str:
    """repr(a), for an exact Array; each element shown is read by a.item(*index),
    which checks the index."""
    summarise = a.size > _THRESHOLD
    suffix = f", dtype={a.dtype.name}"
    if summarise or a.size == 0 and a.ndim != 1:
        suffix = f", shape={a.shape}" + suffix  # as NumPy 2.2 writes it
    if a.device != "cpu":
        suffix += f", device={a.device}"
    if a.size == 0:
        return f"Array([]{suffix})"
    try:
        body = _block(a, a.shape, (), len("Array("), summarise, a.dtype.name)
    except BufferError:  # memory the CPU cannot read
        body = f"<shape {a.shape}>"
    return f"Array({body}{suffix})"
