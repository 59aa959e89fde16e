"""Objects that hand dlbridge hand-built memory descriptions: array interfaces
(host and CUDA) and a buffer exporter written against the C API, so a test
can give dlbridge what no well-behaved library would."""
import ctypes

import numpy as np

import dlbridge
from dlbridge.testing._abi import Py_buffer


DROP = object()  # a field value that leaves the field out


class _Interface:
    def __init__(self, owner, **fields):
        """The interface NumPy would give of `owner`, with `fields` replaced
        (or left out: DROP)."""
        self.owner = owner
        interface = {"shape": owner.shape, "typestr": owner.dtype.str,
                     "data": (owner.ctypes.data, False), "version": 3}
        interface.update(fields)
        self.interface = {k: v for k, v in interface.items() if v is not DROP}


class CudaInterface(_Interface):
    """A hand-built __cuda_array_interface__ over `owner`'s host memory:
    dlbridge labels it cuda:0 and never reads it, so it stands in for device
    memory."""

    @property
    def __cuda_array_interface__(self):
        return self.interface


class HostInterface(_Interface):
    """An object with only a hand-built __array_interface__ over `owner`'s memory."""

    @property
    def __array_interface__(self):
        return self.interface


def on_cuda():
    """A dlbridge Array whose device is cuda:0 (over host memory it never reads)."""
    return dlbridge.asarray(CudaInterface(np.arange(6, dtype=np.float32).reshape(2, 3)))


# A buffer exporter written against the C API with ctypes (Python 3.11 classes
# cannot export buffers themselves), so a test can hand dlbridge any Py_buffer,
# including ones no standard type produces: suboffsets, more than 64 axes.

class _PyTypeSlot(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int), ("pfunc", ctypes.c_void_p)]


class _PyTypeSpec(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("basicsize", ctypes.c_int), ("itemsize", ctypes.c_int),
                ("flags", ctypes.c_uint), ("slots", ctypes.POINTER(_PyTypeSlot))]


_api = ctypes.PyDLL(None)  # own handle: argtypes set here stay ours
_api.PyType_FromSpec.restype = ctypes.py_object
_api.PyType_FromSpec.argtypes = [ctypes.POINTER(_PyTypeSpec)]
_api.Py_IncRef.argtypes = [ctypes.py_object]
_api.Py_IncRef.restype = None

_GETBUFFER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int)
_buffer_memory = []  # shape/strides/data arrays handed out; kept for the whole run


def _getbuffer(exporter, view, flags):
    layout = exporter.layout
    ndim = len(layout["shape"])
    shape = (ctypes.c_ssize_t * max(ndim, 1))(*layout["shape"])
    strides = (ctypes.c_ssize_t * max(ndim, 1))(*layout["strides"])
    suboffsets = (ctypes.c_ssize_t * max(ndim, 1))(*([-1] * ndim))
    data = (ctypes.c_char * 64)()
    _buffer_memory.extend([shape, strides, suboffsets, data])
    _api.Py_IncRef(exporter)  # view->obj owns a reference; PyBuffer_Release drops it
    v = view.contents
    v.buf = ctypes.addressof(data)
    v.obj = id(exporter)
    v.len = 8
    v.itemsize = layout.get("itemsize", 8)
    v.readonly = 1
    v.ndim = layout.get("ndim", ndim)
    v.format = layout.get("format", b"d")
    v.shape = None if layout.get("null_shape") else shape
    v.strides = strides
    v.suboffsets = suboffsets if layout.get("suboffsets") else None
    v.internal = None
    return 0


_getbuffer_callback = _GETBUFFER(_getbuffer)
_slots = (_PyTypeSlot * 2)(_PyTypeSlot(1, ctypes.cast(_getbuffer_callback, ctypes.c_void_p)),  # Py_bf_getbuffer
                           _PyTypeSlot(0, None))
_spec = _PyTypeSpec(b"exporters.RawBufferBase", 2 * ctypes.sizeof(ctypes.c_void_p), 0,
                    (1 << 10) | (1 << 18), _slots)  # Py_TPFLAGS_BASETYPE | Py_TPFLAGS_DEFAULT
_RawBufferBase = _api.PyType_FromSpec(ctypes.byref(_spec))


class RawBuffer(_RawBufferBase):
    """Exports a read-only float64 buffer with the given shape and byte strides;
    `layout` may set what a broken exporter gets wrong: suboffsets, a NULL
    shape (null_shape=True), an ndim other than len(shape), another format or
    itemsize."""

    def __init__(self, shape, strides, **layout):
        self.layout = dict(layout, shape=shape, strides=strides)
