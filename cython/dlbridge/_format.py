"""Array.__repr__: values written as NumPy writes them, summarised past 1000 elements."""
import struct

_THRESHOLD = 1000  # elements above which only the edges are shown
_EDGE = 3          # elements shown at each end of a summarised axis
_STRUCT_FORMATS = {"float16": "e", "float32": "f"}


def _shortest(value: float, code: str) -> str:
    """The shortest decimal that reads back as the same float16/float32."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack(code, struct.pack(code, float(text)))[0] == value:
            return text
    return repr(value)


def _real(value: float, dtype_name: str) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)
    code = _STRUCT_FORMATS.get(dtype_name)
    if code:
        text = _shortest(value, code)
    elif dtype_name == "float64":
        text = repr(value)
    else:  # bfloat16 and the float8/6/4 family: a few digits say it all
        text = f"{value:.4g}"
    if "e" not in text and "." not in text:
        text += "."
    elif "e" not in text:
        text = text.rstrip("0")
    return text


def _scalar(value, dtype_name: str) -> str:
    if isinstance(value, complex):
        part = "float32" if dtype_name == "complex64" else "float64"
        imag = _real(value.imag, part)
        return f"{_real(value.real, part)}{'' if imag.startswith('-') else '+'}{imag}j"
    if isinstance(value, float):
        return _real(value, dtype_name)
    return str(value)


def _block(node, ndim: int, depth: int, indent: int, summarise: bool, dtype_name: str) -> str:
    """`node` is an Array or the nested lists of its values (packed sub-byte
    arrays cannot be indexed, so they arrive as lists)."""
    if ndim == 0:
        return _scalar(node.tolist() if hasattr(node, "tolist") else node, dtype_name)
    n = len(node)
    rows: list[int | None] = list(range(n))
    if summarise and n > 2 * _EDGE:
        rows = rows[:_EDGE] + [None] + rows[-_EDGE:]
    parts = ["..." if i is None else _block(node[i], ndim - 1, depth + 1, indent, summarise, dtype_name)
             for i in rows]
    if ndim == 1:
        return "[" + ", ".join(parts) + "]"
    separator = "," + "\n" * (ndim - 1) + " " * (indent + depth + 1)
    return "[" + separator.join(parts) + "]"


def format_array(a) -> str:
    suffix = f", dtype={a.dtype.name}"
    if a.size == 0 and a.ndim != 1:
        suffix = f", shape={a.shape}" + suffix
    if a.device != "cpu":
        suffix += f", device={a.device}"
    summarise = a.size > _THRESHOLD
    try:
        values = a.tolist() if a.dtype.bits < 8 or not summarise else a
        body = _block(values, a.ndim, 0, len("Array("), summarise, a.dtype.name)
    except BufferError:  # memory the CPU cannot read
        body = f"<shape {a.shape}>"
    return f"Array({body}{suffix})"
