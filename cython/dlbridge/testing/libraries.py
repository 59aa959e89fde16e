"""The kit's factories and consumer functions for the libraries it is run
against (docs/compatibility.md): dlbridge itself, Python's own buffer
exporters, NumPy, PyTorch, JAX, array-api-strict, pyarrow, MLX and Apache
TVM FFI. Each library is
imported only when its callable is first called, so this module imports
with none of them installed; they are also worked examples of the
protocol (docs/check-your-library.md).

    python -m dlbridge check --producer dlbridge.testing.libraries:numpy_array \\
                             --consumer dlbridge.testing.libraries:numpy_from_dlpack
"""
from __future__ import annotations

import array
import importlib
import math
import struct
from typing import Any, cast

# struct formats of the dtypes Python's buffer exporters can hold
_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
            "uint32": "I", "uint64": "Q", "float32": "f", "float64": "d"}


def _values(shape: tuple[int, ...], dtype: str) -> list:
    from dlbridge.testing._model import expected_values
    return expected_values(shape, dtype)


def _nested(flat: list, shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _no_device(device: str | None) -> None:
    if device is not None:
        raise NotImplementedError(f"host memory only, not {device}")


def _base_shape(shape: tuple[int, ...], view: str | None) -> tuple[int, ...]:
    """The shape of the array a view (dlbridge.testing._model.VIEWS) is taken of."""
    from dlbridge.testing._model import VIEWS
    return shape if view is None else VIEWS[view][0]


def _viewed(made: Any, view: str | None) -> Any:
    """`made` indexed as the view names, with the library's own indexing."""
    if view is None:
        return made
    if view == "transposed":
        return made.T
    return made[{"strided": slice(None, None, 2), "offset": slice(2, None), "reversed": slice(None, None, -1)}[view]]


# -- dlbridge --------------------------------------------------------------------

def dlbridge_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None,
                   view: str | None = None):
    import dlbridge
    if dtype == "unexportable":
        raise NotImplementedError("dlbridge holds nothing DLPack cannot carry")
    if view is not None:
        base = _base_shape(shape, view)
        return _viewed(dlbridge.asarray(_nested(_values(base, dtype), base), dtype=dtype), view)
    if math.prod(shape) == 0:
        made = dlbridge.empty(shape, dtype=dtype)
    else:
        made = dlbridge.asarray(_nested(_values(shape, dtype), shape), dtype=dtype)
    if read_only:  # dlbridge's read-only arrays come from read-only memory
        made = dlbridge.asarray(memoryview(cast(Any, made)).toreadonly())
    return made if device is None else made.to_device(device)


def dlbridge_from_dlpack(producer: Any, *, copy: bool | None = None, device: str | None = None):
    import dlbridge
    return dlbridge.from_dlpack(producer, copy=copy, device=device)


# -- Python's buffer exporters ------------------------------------------------------

def _buffer(shape: tuple[int, ...], dtype: str) -> memoryview:
    if dtype not in _FORMATS:
        raise NotImplementedError(f"the buffer protocol's struct module has no {dtype}")
    if 0 in shape:
        raise NotImplementedError("memoryview.cast cannot make a shape with a 0 extent")
    values = _values(shape, dtype)
    # struct, not array: array.array has no "?" (bool)
    flat: Any = memoryview(array.array("B", bytes(math.prod(shape) * struct.calcsize(_FORMATS[dtype]))))
    typed = flat.cast(_FORMATS[dtype])
    typed[:] = array.array(_FORMATS[dtype], values) if dtype != "bool" else memoryview(bytes(values)).cast("?")
    return typed.cast("B").cast(_FORMATS[dtype], shape)


def memoryview_of(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None):
    _no_device(device)
    view = _buffer(shape, dtype)
    return view.toreadonly() if read_only else view


def array_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None):
    _no_device(device)
    if read_only:
        raise NotImplementedError("array.array is always writable")
    if len(shape) != 1 or dtype not in _FORMATS or dtype == "bool":
        raise NotImplementedError("array.array is one-dimensional, of C numbers")
    return array.array(_FORMATS[dtype], _values(shape, dtype))


def bytes_of(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None):
    _no_device(device)  # bytes are immutable: the usual bytes are read-only
    if len(shape) != 1 or dtype != "uint8":
        raise NotImplementedError("bytes are one-dimensional uint8")
    return bytes(_values(shape, dtype))


# -- NumPy -------------------------------------------------------------------------

def numpy_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None,
                view: str | None = None):
    import numpy as np
    _no_device(device)
    if dtype == "unexportable":
        return np.array(["a", "b", "c"])  # DLPack has no strings
    base = _base_shape(shape, view)
    made = _viewed(np.arange(math.prod(base)).astype(dtype).reshape(base), view)
    made.flags.writeable = not read_only
    return made


def numpy_from_dlpack(producer: Any, *, copy: bool | None = None, device: str | None = None):
    import numpy as np
    return np.from_dlpack(producer, copy=copy, device=None if device is None else "cpu")


# -- PyTorch -------------------------------------------------------------------------

def torch_tensor(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None,
                 view: str | None = None):
    torch = _torch()
    if read_only:
        raise NotImplementedError("PyTorch has no read-only tensors")
    if device is not None and not torch.cuda.is_available():
        raise NotImplementedError(f"torch {torch.__version__} has no usable {device} device")
    if view == "reversed":
        raise NotImplementedError("PyTorch has no negative steps (flip copies)")
    base = _base_shape(shape, view)
    made = _viewed(torch.arange(math.prod(base)).to(getattr(torch, dtype)).reshape(base), view)
    return made if device is None else made.to(device)


def torch_from_dlpack(producer: Any, *, copy: bool | None = None, device: str | None = None):
    torch = _torch()
    return torch.from_dlpack(producer, copy=copy, device=device)


# -- JAX ---------------------------------------------------------------------------------

def jax_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None,
              view: str | None = None):
    # JAX arrays are immutable: its usual array is a read-only one too.
    import jax
    import jax.numpy as jnp
    if device is not None and not jax.devices("gpu" if device == "cuda" else device):
        raise NotImplementedError(f"JAX has no {device} device")
    if jax.dtypes.canonicalize_dtype(dtype) != jnp.dtype(dtype):  # 64 bits without jax_enable_x64: astype gives 32
        raise NotImplementedError(f"JAX makes no {dtype} arrays without jax_enable_x64")
    placed = jax.devices("cpu" if device is None else "gpu")[0]
    base = _base_shape(shape, view)  # JAX's indexing copies: the view arrives compact
    return jax.device_put(_viewed(jnp.arange(math.prod(base)).astype(dtype).reshape(base), view), placed)


def jax_from_dlpack(producer: Any, *, copy: bool | None = None, device: str | None = None):
    import jax
    import jax.numpy as jnp
    return jnp.from_dlpack(producer, copy=copy, device=None if device is None else jax.devices(device)[0])


# -- array-api-strict ------------------------------------------------------------------------

def array_api_strict_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False,
                           device: str | None = None, view: str | None = None):
    import array_api_strict as xp
    _no_device(device)
    if read_only:
        raise NotImplementedError("array-api-strict makes no read-only arrays")
    if not hasattr(xp, dtype):
        raise NotImplementedError(f"array-api-strict has no {dtype}")
    if view == "reversed":
        raise NotImplementedError("the array API has no negative steps")
    base = _base_shape(shape, view)
    return _viewed(xp.reshape(xp.astype(xp.arange(math.prod(base)), getattr(xp, dtype)), base), view)


def array_api_strict_from_dlpack(producer: Any, *, copy: bool | None = None, device: str | None = None):
    import array_api_strict as xp
    return xp.from_dlpack(producer, copy=copy, device=None if device is None else xp.Device("CPU_DEVICE"))


# -- pyarrow -------------------------------------------------------------------------------

def pyarrow_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None,
                  view: str | None = None):
    # pyarrow's arrays are 1-D and immutable: its usual array is a read-only one too.
    import numpy as np
    pa = _module("pyarrow")
    _no_device(device)
    if dtype == "unexportable":
        return pa.array(["a", "b", "c"])  # DLPack has no strings
    if len(shape) != 1:
        raise NotImplementedError("pyarrow's arrays are 1-D")
    if dtype == "bool":
        raise NotImplementedError("pyarrow's booleans are bit-packed, which DLPack cannot carry")
    if dtype.startswith("complex"):
        raise NotImplementedError(f"pyarrow has no {dtype}")
    if view not in (None, "offset"):
        raise NotImplementedError("a pyarrow array is a slice of a buffer: an offset, no step")
    base = _base_shape(shape, view)
    made = pa.array(np.arange(math.prod(base)).astype(dtype))
    return made if view is None else made.slice(2)


def pyarrow_from_dlpack(producer: Any, *, copy: bool | None = None, device: str | None = None):
    return _module("pyarrow").Array.from_dlpack(producer, copy=copy, device=None if device is None else (1, 0))


pyarrow_from_dlpack.dlpack_ndims = (1,)  # type: ignore[attr-defined]


# -- MLX (its CPU build) ------------------------------------------------------------------------

def mlx_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None,
              view: str | None = None):
    import numpy as np
    mx = _module("mlx.core")
    _no_device(device)
    if read_only:
        raise NotImplementedError("MLX makes no read-only arrays")
    if not hasattr(mx, dtype):
        raise NotImplementedError(f"MLX has no {dtype}")
    base = _base_shape(shape, view)
    # dtype named: MLX would take NumPy's float64 as float32
    return _viewed(mx.array(np.arange(math.prod(base)).astype(dtype).reshape(base), dtype=getattr(mx, dtype)), view)


def mlx_from_dlpack(producer: Any, *, copy: bool | None = None):
    return _module("mlx.core").from_dlpack(producer, copy=copy)


# -- Apache TVM FFI -------------------------------------------------------------------------------

def tvm_ffi_tensor(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None):
    # A tvm_ffi.Tensor is made from another library's array: NumPy's, imported without a copy.
    import numpy as np
    tvm_ffi = _module("tvm_ffi")
    _no_device(device)
    if read_only:
        raise NotImplementedError("TVM FFI's tensors have no read-only flag")
    return tvm_ffi.from_dlpack(np.arange(math.prod(shape)).astype(dtype).reshape(shape))


def tvm_ffi_from_dlpack(producer: Any):
    return _module("tvm_ffi").from_dlpack(producer)


# -- CuPy, and consumers of the CUDA array interface (the GPU tier) ---------------------------

def cupy_array(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None):
    # CuPy's arrays live on a GPU: only the GPU tier, which asks for device="cuda", gets one.
    if device != "cuda":
        raise NotImplementedError(f"CuPy arrays live on a GPU, not on {device or 'the host'}")
    if read_only:
        raise NotImplementedError("CuPy makes no read-only arrays")
    return _cupy().arange(math.prod(shape)).astype(dtype).reshape(shape)


def cupy_from_dlpack(producer: Any):
    return _cupy().from_dlpack(producer)


def _cupy() -> Any:
    # CuPy is installed on GPU machines only: imported by name, type checkers elsewhere would not find it.
    return importlib.import_module("cupy")


def _torch() -> Any:
    # Nor is PyTorch installed everywhere (PyPI's CUDA build is gigabytes): imported by name, as CuPy.
    return importlib.import_module("torch")


def _module(name: str) -> Any:
    # pyarrow, MLX and TVM FFI ship no type information: imported by name, as CuPy.
    return importlib.import_module(name)


# from_dlpack takes DLPack producers only; these take a __cuda_array_interface__
# too, which the GPU tier's consumer.gpu-interface clauses hand them.

def cupy_asarray(producer: Any):
    return _cupy().asarray(producer)


def torch_as_tensor(producer: Any):
    torch = _torch()
    return torch.as_tensor(producer)


def dlbridge_asarray(producer: Any, *, device: str | None = None):
    import dlbridge
    return dlbridge.asarray(producer, device=device)
