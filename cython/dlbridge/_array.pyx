# cython: language_level=3
"""The Array type and the functions that make Arrays: from_dlpack, asarray,
empty, zeros, full; and build_info()."""
import operator
import sys
import warnings

cimport cython

from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_F_CONTIGUOUS, PyBUF_FORMAT,
                             PyBUF_ND, PyBUF_RECORDS_RO, PyBUF_STRIDES, PyBUF_WRITABLE)
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_FillInfo, PyBuffer_Release, PyObject_GetBuffer, PyObject_CheckBuffer
from cpython.pycapsule cimport PyCapsule_CheckExact
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t, uint64_t, uint8_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from libcpp cimport bool as cbool
from libcpp.optional cimport optional
from libcpp.string cimport string
from libcpp.utility cimport move
from libcpp.vector cimport vector

cimport dlbridge.cpp as cpp
from dlbridge.cpp cimport raise_python_error
from dlbridge._dlpack cimport call_dlpack, dlpack_device, export_capsule, import_capsule
from dlbridge._types cimport DType, Device, as_device, as_dtype, device_from_cpp, dtype_from_cpp

from dlbridge._types import DeviceType


cdef extern from "dlbridge/devices.hpp" namespace "dlb::python":
    cpp.tensor empty_on(cpp.device, cpp.extents_t, cpp.dtype) except +raise_python_error
    void fill_on_device(const cpp.tensor&, const cpp.scalar&) except +raise_python_error
    cpp.tensor copy_to(const cpp.tensor&, cpp.device, cpp.dtype, cpp.cuda_stream) except +raise_python_error nogil
    void order_for_consumer(const cpp.tensor&, cpp.cuda_stream) except +raise_python_error nogil
    void order_after_producer(const cpp.tensor&, cpp.cuda_stream) except +raise_python_error nogil
    cpp.device cuda_pointer_device(const void*) except +raise_python_error


# Copies of more bytes than this release the GIL.
cdef int64_t _nogil_bytes = 1 << 16

cdef dict _device_types = {int(t): t for t in DeviceType}


# ---------------------------------------------------------------------------
# Memory that Python objects own

cdef cpp.tensor _adopt_object(owner, void* data, cpp.dtype t, cpp.device d, shape, strides,
                              bint readonly) except *:
    """A tensor on memory `owner` keeps alive; strides None means C order."""
    cdef vector[int64_t] dims = shape
    cdef vector[int64_t] steps
    if strides is not None:
        steps = strides
    Py_INCREF(owner)
    return cpp.tensor.adopt(data, t, d, cpp.extents_t(dims.data(), dims.size()),
                            cpp.extents_t(steps.data(), steps.size()), readonly, cpp.release_object, <void*>owner)


# ---------------------------------------------------------------------------
# Python scalars <-> elements

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
    if dtype is not None and getattr(value, "shape", ()) != ():
        raise TypeError(f"expected a scalar, got an array of shape {value.shape}")
    if dtype is not None and getattr(value, "shape", None) == ():
        code = as_dtype(dtype).value.code
        if code == cpp.kDLBool:
            return 0
        if code == cpp.kDLInt or code == cpp.kDLUInt:
            return 1
        return 3 if code == cpp.kDLComplex else 2
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


cdef void _store_python(cpp.dtype t, void* p, value, int64_t index) except *:
    cdef cpp.scalar s = _from_python(value)
    if s.k == cpp.scalar_kind.complex and t.code != cpp.kDLComplex:
        raise TypeError(f"cannot store complex value {value!r} in a {dtype_from_cpp(t).name} array")
    if not cpp.fits(t, s):
        raise OverflowError(f"Python int {value} is out of bounds for {dtype_from_cpp(t).name}")
    cpp.store(t, p, s, index)


cdef DType _dtype_of_value(value):
    """The default dtype of a scalar: its own for NumPy scalars, else as the
    array API sets it (bool, int64 or uint64, float64, complex128)."""
    if getattr(value, "shape", None) == () and hasattr(value, "dtype"):
        return as_dtype(value.dtype)
    return _common_dtype([value])


# ---------------------------------------------------------------------------
# The Array type

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)


cdef Array wrap(cpp.tensor& t):
    cdef Array a = Array.__new__(Array)
    a.t = move(t)
    if cpp.python_owner(a.t) == NULL:
        PyObject_GC_UnTrack(<void*>a)  # it refers to no Python object: it cannot be in a cycle
    return a


cdef Array _view(Array base, cpp.tensor& t):
    """wrap(t) for a view of base's memory. Where a Python object holds that
    memory, the view holds base rather than sharing its keeper: every Array
    then has a keeper of its own, whose reference the collector can follow."""
    cdef PyObject* owner = cpp.python_owner(base.t)
    if owner == NULL:
        return wrap(t)
    root = base
    if isinstance(<object>owner, Array):
        root = <object>owner  # base is itself such a view: hold the Array it holds
    Py_INCREF(root)
    cdef cpp.tensor kept = t.kept_by(cpp.release_object, <void*>root)
    return wrap(kept)


cdef inline int _require(Array a) except -1:
    """Refuses an Array that holds no memory (see _not_initialised)."""
    if not a.t.has_value():
        raise _not_initialised(a)
    return 0


cdef object _not_initialised(Array a):
    return ValueError(f"this {type(a).__name__} holds no array: it was made by {type(a).__name__}.__new__ "
                      f"without Array.__init__ (a subclass's __init__ must call it)")


cdef inline char* _element(const cpp.tensor& t, int64_t offset) noexcept nogil:
    # Packed sub-byte arrays are addressed by element index, not pointer.
    if t.type().is_subbyte():
        return <char*>t.data()
    return <char*>t.data() + offset * <int64_t>t.type().itemsize()


cdef object _tolist(const cpp.tensor& t, int axis, int64_t offset):
    if axis == t.ndim():
        return _to_python(cpp.load(t.type(), _element(t, offset), offset if t.type().is_subbyte() else 0))
    cdef int64_t step = t.stride(axis)
    return [_tolist(t, axis + 1, offset + i * step) for i in range(t.shape(axis))]


def _value_at(Array a, tuple index):
    """The element at a full index, for repr (which reads no other element)."""
    _require_host(a, "reading values")
    cdef int64_t offset = 0
    for axis, i in enumerate(index):
        offset += <int64_t>i * a.t.stride(axis)
    return _to_python(cpp.load(a.t.type(), _element(a.t, offset), offset if a.t.type().is_subbyte() else 0))


cdef _require_host(Array a, str what):
    _require(a)
    if not a.t.get_device().is_host_accessible():
        raise BufferError(f"{what} needs host-accessible memory; this array is on {a.device}")


cdef cpp.tensor _copy_to(const cpp.tensor& t, cpp.device where, cpp.dtype type,
                        cpp.cuda_stream stream=cpp.legacy_default_stream) except *:
    """A C-contiguous copy of `t` on `where` as `type` (see devices.hpp: copy_to);
    the GIL is released for large copies and for any work on a GPU."""
    cdef cpp.tensor out
    if t.nbytes() > _nogil_bytes or t.get_device().type != cpp.kDLCPU or where.type != cpp.kDLCPU:
        with nogil:
            out = copy_to(t, where, type, stream)
    else:
        out = copy_to(t, where, type, stream)
    return out


cdef cpp.device _export_device(Array a, dl_device) except *:
    """The device a consumer asked __dlpack__ for (``dl_device``)."""
    if (type(dl_device) is not tuple or len(dl_device) != 2
            or not isinstance(dl_device[0], int) or not isinstance(dl_device[1], int)):
        raise TypeError(f"dl_device must be a (device_type, device_id) tuple, got {dl_device!r}")
    try:
        target = as_device(dl_device)
    except ValueError as e:
        raise BufferError(f"cannot export an array on {a.device} to device {tuple(dl_device)}: {e}") from None
    if (<Device>target).value.type == cpp.kDLCPU and dl_device[1] != 0:
        raise BufferError(f"cannot export an array on {a.device} to device {tuple(dl_device)}: "
                          f"the CPU is device 0")
    return (<Device>target).value


cdef optional[cpp.cuda_stream] _consumer_stream(stream, cpp.device target) except *:
    """The consumer's stream of ``__dlpack__(stream=...)``; none for -1."""
    if type(stream) is not int:
        raise TypeError(f"stream must be an int or None, got {type(stream).__name__}")
    if target.type == cpp.kDLCPU or target.type == cpp.kDLCUDAHost:
        raise ValueError(f"stream must be None for arrays on {device_from_cpp(target)}, got {stream!r}")
    return cpp.consumer_stream(_stream_int64(stream))


cdef cpp.cuda_stream _work_stream(stream) except? 0:
    """The stream of a ``stream=`` argument of to_device: None is the legacy
    default stream; objects may name theirs through ``__cuda_stream__``."""
    if stream is None:
        return cpp.legacy_default_stream
    if type(stream) is not int and hasattr(stream, "__cuda_stream__"):
        named = stream.__cuda_stream__()
        if type(named) is not tuple or len(named) != 2 or type(named[1]) is not int:
            raise TypeError(f"__cuda_stream__() must return a (version, handle) tuple, got {named!r}")
        stream = named[1]
    elif type(stream) is not int:
        raise TypeError(f"stream must be an int, an object with __cuda_stream__, or None, "
                        f"got {type(stream).__name__}")
    return cpp.work_stream(_stream_int64(stream))


cdef int64_t _stream_int64(stream) except? -1:
    # Stream handles are addresses, which fit in int64 on every CUDA platform.
    if not -(1 << 63) <= stream < (1 << 63):
        raise ValueError(f"stream must fit in 64 bits, got {stream}")
    return stream


include "_exchange.pxi"


cdef class Array:
    """An n-dimensional strided array that speaks DLPack.

    Arrays come from ``from_dlpack``, ``asarray``, ``empty``, ``zeros`` and
    ``full``; ``Array(obj)`` is ``asarray(obj)``. Indexing, ``.T`` and
    ``transpose`` return views that share memory.
    """
    __dlpack_c_exchange_api__ = _exchange_api_capsule  # DLPack 1.3 C exchange API
    __c_dlpack_exchange_api__ = _exchange_api_address  # the same table, as DLPack 1.2 published it

    def __init__(self, obj, *, dtype=None, copy=None):
        cdef Array a = asarray(obj, dtype=dtype, copy=copy)
        # Checked after asarray, which may release the GIL, and set with no
        # release in between: of two threads initialising one Array, one wins.
        if self.t.has_value():
            raise ValueError(f"Array.__init__ was called on an initialised {type(self).__name__}: an Array's "
                             f"memory never changes once it has some (views and exports point into it); "
                             f"make a new Array instead")
        self.t = a.t

    # -- description --------------------------------------------------------
    @property
    def shape(self):
        _require(self)
        return tuple([self.t.shape(i) for i in range(self.t.ndim())])

    @property
    def strides(self):
        """Strides in elements, as DLPack counts them (NumPy counts bytes)."""
        _require(self)
        return tuple([self.t.stride(i) for i in range(self.t.ndim())])

    @property
    def dtype(self):
        _require(self)
        return dtype_from_cpp(self.t.type())

    @property
    def device(self):
        _require(self)
        return device_from_cpp(self.t.get_device())

    @property
    def ndim(self):
        _require(self)
        return self.t.ndim()

    @property
    def size(self):
        _require(self)
        return self.t.size()

    @property
    def itemsize(self):
        _require(self)
        return self.t.type().itemsize()

    @property
    def nbytes(self):
        """Bytes the elements occupy (packed for sub-byte dtypes)."""
        _require(self)
        return self.t.nbytes()

    @property
    def readonly(self):
        _require(self)
        return self.t.readonly()

    @property
    def data_ptr(self):
        """Address of the first element."""
        _require(self)
        return <uintptr_t>self.t.data()

    def __len__(self):
        _require(self)
        if self.t.ndim() == 0:
            raise TypeError("len() of a 0-d array")
        return self.t.shape(0)

    def __iter__(self):
        _require(self)
        if self.t.ndim() == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.t.shape(0)))

    # -- DLPack producer ----------------------------------------------------
    def __dlpack_device__(self):
        _require(self)
        cdef cpp.device d = self.t.get_device()
        return (_device_types[d.type], d.id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Exports the array as a DLPack capsule (array API 2025.12 semantics).

        A versioned DLPack 1.3 capsule when ``max_version`` has major >= 1,
        a legacy one when it is None or major 0 (refused for read-only data).
        On a GPU, ``stream`` is the consumer's: unless it is -1 it is made to
        wait (an event, never a host block) for the work that wrote the array.
        ``dl_device`` on another device, or ``copy=True``, exports a copy
        flagged IS_COPIED.
        """
        _require(self)
        cdef cpp.device d = self.t.get_device()
        cdef cpp.device target = d
        cdef bint versioned = False
        cdef optional[cpp.cuda_stream] consumer
        cdef cpp.tensor out
        if max_version is not None:
            if (type(max_version) is not tuple or len(max_version) != 2
                    or type(max_version[0]) is not int or type(max_version[1]) is not int):
                raise TypeError(f"max_version must be a (major, minor) tuple of ints, got {max_version!r}")
            versioned = max_version[0] >= 1
        if dl_device is not None:
            target = _export_device(self, dl_device)
        if copy is not None and type(copy) is not bool:
            raise TypeError(f"copy must be True, False or None, got {copy!r}")
        if stream is not None:
            consumer = _consumer_stream(stream, target)
        if not copy and target == d:
            if not versioned and self.t.readonly():
                raise BufferError("a read-only array cannot be exported as a legacy DLPack capsule "
                                  "(it has no read-only flag); pass max_version=(1, 3)")
            if consumer.has_value():
                order_for_consumer(self.t, consumer.value())
            return export_capsule(self.t, versioned, 0)
        if copy is False:
            raise BufferError(f"copy=False, but exporting an array on {self.device} to device "
                              f"{tuple(dl_device)} needs a copy")
        try:
            out = _copy_to(self.t, target, self.t.type())
        except (RuntimeError, ValueError) as e:
            what = f"to device {tuple(dl_device)}" if not (target == d) else "as a copy"
            raise BufferError(f"cannot export an array on {self.device} {what}: {e}") from None
        if consumer.has_value():
            order_for_consumer(out, consumer.value())
        return export_capsule(out, versioned, cpp.dlpack_flag_is_copied)

    # -- devices ------------------------------------------------------------
    def to_device(self, device, /, *, stream=None):
        """This array on ``device`` (array API): ``self`` when it is there
        already, else a C-contiguous copy. On a GPU the copy runs on ``stream``
        (an int as in ``__dlpack__``, or an object with ``__cuda_stream__``;
        None is the legacy default stream), ordered after the work that wrote
        this array and before later dlbridge work, without blocking the host."""
        _require(self)
        cdef Device target = as_device(device)
        cdef cpp.cuda_stream s = _work_stream(stream)
        if target.value == self.t.get_device():
            return self
        cdef cpp.tensor out = _copy_to(self.t, target.value, self.t.type(), s)
        return wrap(out)

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface (version 3) of an array on a GPU, pinned
        or managed memory; absent (AttributeError) elsewhere. Its ``stream``
        is 1: the data is ready in the order of the legacy default stream."""
        _require(self)
        cdef cpp.device d = self.t.get_device()
        if d.type != cpp.kDLCUDA and d.type != cpp.kDLCUDAManaged and d.type != cpp.kDLCUDAHost:
            raise AttributeError(f"__cuda_array_interface__ is only defined for arrays in CUDA memory; "
                                 f"this array is on {self.device}")
        typestr = self.dtype.typestr
        if typestr is None:
            raise BufferError(f"{self.dtype.name} has no CUDA-array-interface typestr; use DLPack")
        cdef int64_t itemsize = self.t.type().itemsize()
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": typestr,
            "data": (<uintptr_t>self.t.data() if self.t.size() else 0, self.t.readonly()),
            "strides": None if self.t.is_c_contiguous() else tuple(
                [self.t.stride(i) * itemsize for i in range(self.t.ndim())]),
            "stream": 1,
        }

    # -- host access --------------------------------------------------------
    @property
    def __array_interface__(self):
        """NumPy's array interface (version 3), for host memory."""
        _require_host(self, "__array_interface__")
        typestr = self.dtype.typestr
        if typestr is None:
            raise BufferError(f"{self.dtype.name} has no NumPy array-interface typestr; "
                              f"use numpy.from_dlpack")
        cdef int64_t itemsize = self.t.type().itemsize()
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": typestr,
            "data": (<uintptr_t>self.t.data(), self.t.readonly()),
            "strides": None if self.t.is_c_contiguous() else tuple(
                [self.t.stride(i) * itemsize for i in range(self.t.ndim())]),
        }

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        _require_host(self, "the buffer protocol")
        if (flags & PyBUF_WRITABLE) and self.t.readonly():
            raise BufferError("the array is read-only; a writable buffer was requested")
        cdef cpp.string_view fmt = cpp.find_dtype(self.t.type()).buffer_format  # NUL-terminated, static
        if fmt.empty():
            raise BufferError(f"{self.dtype.name} has no buffer-protocol format; use DLPack")
        cdef int ndim = self.t.ndim()
        cdef int64_t itemsize = self.t.type().itemsize()
        # The request flags nest (STRIDES includes ND): compare whole masks.
        cdef bint strided = (flags & PyBUF_STRIDES) == PyBUF_STRIDES
        cdef bint c_contig = self.t.is_c_contiguous(), f_contig = self.t.is_f_contiguous()
        if (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS and not c_contig:
            raise BufferError("a C-contiguous buffer was requested; the array is not C-contiguous")
        if (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS and not f_contig:
            raise BufferError("a Fortran-contiguous buffer was requested; the array is not")
        if (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS and not (c_contig or f_contig):
            raise BufferError("a contiguous buffer was requested; the array is not contiguous")
        if not strided and not c_contig:
            raise BufferError("the array is not C-contiguous; request a strided buffer (PyBUF_STRIDES)")
        cdef Py_ssize_t* dims = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (2 * ndim + 1))
        if dims == NULL:
            raise MemoryError()
        for i in range(ndim):
            dims[i] = self.t.shape(i)
            dims[ndim + i] = self.t.stride(i) * itemsize
        buffer.buf = self.t.data()
        buffer.obj = self
        buffer.len = self.t.size() * itemsize
        buffer.readonly = self.t.readonly()
        buffer.itemsize = itemsize
        buffer.format = <char*>fmt.data() if (flags & PyBUF_FORMAT) else NULL
        buffer.ndim = ndim
        buffer.shape = dims if (flags & PyBUF_ND) == PyBUF_ND else NULL
        buffer.strides = dims + ndim if strided else NULL
        buffer.suboffsets = NULL
        buffer.internal = dims

    def __releasebuffer__(self, Py_buffer* buffer):
        free(buffer.internal)

    # -- copies and values --------------------------------------------------
    def copy(self):
        """A new C-contiguous, writable array with the same values, on the
        same device."""
        _require(self)
        cdef cpp.tensor out = _copy_to(self.t, self.t.get_device(), self.t.type())
        return wrap(out)

    def tolist(self):
        """The values as nested Python lists of bool, int, float or complex."""
        _require_host(self, "tolist()")
        return _tolist(self.t, 0, 0)

    def _scalar(self, kind):
        _require(self)
        if self.t.size() != 1:
            raise TypeError(f"only arrays with one element convert to {kind.__name__}, "
                            f"got shape {self.shape}")
        _require_host(self, f"{kind.__name__}()")
        return kind(_tolist(self.t.restrided(self.t.data(), cpp.extents_t(), cpp.extents_t()), 0, 0))

    def __bool__(self):
        return self._scalar(bool)

    def __int__(self):
        return self._scalar(int)

    def __float__(self):
        return self._scalar(float)

    def __complex__(self):
        return self._scalar(complex)

    def __index__(self):
        _require(self)
        if self.t.type().code != cpp.kDLInt and self.t.type().code != cpp.kDLUInt:
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype.name}")
        return self._scalar(int)

    def __repr__(self):
        if not self.t.has_value():
            return f"<{type(self).__name__} holding no array>"
        from dlbridge._format import format_array
        return format_array(self, _value_at)

    # -- pickling and copy.copy ------------------------------------------------
    def __reduce_ex__(self, protocol):
        """Pickles by value (CPU arrays only): the elements in C order and the
        read-only flag; with protocol 5 the elements travel as a
        pickle.PickleBuffer, out of band when the pickler takes buffers."""
        _require(self)
        if self.t.get_device().type != cpp.kDLCPU:
            raise TypeError(f"cannot pickle an Array on {self.device}: a pickle holds host memory; "
                            f"copy the array to the CPU first (a.to_device('cpu'))")
        cdef Array c = self if self.t.is_c_contiguous() else self.copy()
        cdef _Bytes raw = _Bytes.__new__(_Bytes)
        raw.a = c
        raw.readonly = self.t.readonly()
        if protocol < 5:
            data = bytes(memoryview(raw))
        else:
            from pickle import PickleBuffer
            data = PickleBuffer(raw)
        return _from_pickle, (data, self.dtype.name, self.shape, bool(self.t.readonly()))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    # -- views ----------------------------------------------------------------
    def __getitem__(self, key):
        _require(self)
        return _index(self, key)

    @property
    def T(self):
        """The array with its axes reversed (a view)."""
        return self.transpose()

    def transpose(self, *axes):
        """A view with permuted axes: ``transpose()`` reverses them;
        ``transpose(1, 0, 2)`` or ``transpose((1, 0, 2))`` permutes them."""
        _require(self)
        cdef int ndim = self.t.ndim()
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(range(ndim - 1, -1, -1))
        try:
            axes = tuple([operator.index(a) for a in axes])
        except TypeError:
            raise TypeError(f"transpose axes must be integers, got {axes!r}") from None
        normalized = tuple([a + ndim if a < 0 else a for a in axes])
        if sorted(normalized) != list(range(ndim)):
            raise ValueError(f"axes {axes!r} are not a permutation of the {ndim} axes")
        if self.t.type().is_subbyte() and normalized != tuple(range(ndim)) and self.t.size() > 1:
            raise TypeError(f"packed {self.dtype.name} arrays cannot be transposed; "
                            f"convert to a wider dtype first")
        cdef int64_t[64] dims
        cdef int64_t[64] steps
        for i, a in enumerate(normalized):
            dims[i] = self.t.shape(a)
            steps[i] = self.t.stride(a)
        cdef cpp.tensor out = self.t.restrided(self.t.data(), cpp.extents_t(dims, ndim),
                                               cpp.extents_t(steps, ndim))
        return _view(self, out)


# The collector's view of an Array: the Python object its keeper holds, when
# the keeper is the Array's alone (see python.hpp: sole_python_owner), and
# clearing drops the memory. Without this, a cycle such as
# `o.a = asarray(o)` would never be collected.
cdef extern from *:
    """
    static void dlbridge_set_gc_slots(PyTypeObject* type, traverseproc traverse, inquiry clear) {
      type->tp_traverse = traverse;
      type->tp_clear = clear;
    }
    """
    ctypedef int (*_visitproc "visitproc")(PyObject*, void*) noexcept
    ctypedef int (*_traverseproc "traverseproc")(PyObject*, _visitproc, void*) noexcept
    ctypedef int (*_inquiry "inquiry")(PyObject*) noexcept
    void dlbridge_set_gc_slots(PyTypeObject*, _traverseproc, _inquiry)


cdef int _traverse_array(PyObject* o, _visitproc visit, void* arg) noexcept:
    cdef PyObject* owner = cpp.sole_python_owner((<Array>o).t)
    return visit(owner, arg) if owner != NULL else 0


cdef int _clear_array(PyObject* o) noexcept:
    cdef cpp.tensor dropped
    dropped.swap((<Array>o).t)  # the Array is empty before the owner's release runs any Python code
    return 0


dlbridge_set_gc_slots(<PyTypeObject*>Array, _traverse_array, _clear_array)


@cython.auto_pickle(False)
cdef class _Bytes:
    """The bytes of a C-contiguous CPU Array as one flat buffer, whatever its
    dtype (packed ones included): what Array.__reduce_ex__ pickles."""
    cdef Array a
    cdef bint readonly

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        PyBuffer_FillInfo(buffer, self, self.a.t.data(), self.a.t.nbytes(), self.readonly, flags)


def _from_pickle(data, str dtype, shape, bint readonly):
    """Array.__reduce_ex__'s inverse: the Array whose elements, in C order,
    are the bytes of `data` (any contiguous buffer). Shares them where it can;
    copies them where the buffer is read-only but the array was not."""
    cdef DType dt = as_dtype(dtype)
    cdef str name = "unpickling an Array"
    shape, nbytes = _checked_shape(shape, dt, name)
    cdef Py_buffer* view = <Py_buffer*>malloc(sizeof(Py_buffer))
    if view == NULL:
        raise MemoryError()
    try:
        PyObject_GetBuffer(data, view, PyBUF_SIMPLE)
    except BaseException:
        free(view)
        raise
    cdef cpp.tensor t
    cdef int64_t[64] dims
    cdef bint handed_over = False
    try:
        if view.len != nbytes:
            raise ValueError(f"{name}: {dt.name} of shape {shape} takes {nbytes} bytes; the pickle holds {view.len}")
        if readonly or not view.readonly:
            for i, e in enumerate(shape):
                dims[i] = e
            handed_over = True  # adopt releases the buffer from here on, on failure too
            t = cpp.tensor.adopt(view.buf, dt.value, cpp.device(cpp.kDLCPU, 0), cpp.extents_t(dims, len(shape)),
                                 cpp.extents_t(), readonly or view.readonly, cpp.release_buffer, view)
        else:
            t = _allocate(shape, dt, None, name)
            if nbytes:
                memcpy(t.data(), view.buf, nbytes)
    finally:
        if not handed_over:
            PyBuffer_Release(view)
            free(view)
    return wrap(t)


cdef object _index_int(k):
    if not isinstance(k, (bool, Array)):
        try:
            return operator.index(k)
        except TypeError:
            pass
    raise IndexError(f"only integers, slices, Ellipsis and None are valid indices, "
                     f"got {type(k).__name__}")


cdef Array _index(Array a, key):
    """Basic indexing: ints, slices (any step), Ellipsis and None; a view."""
    if not isinstance(key, tuple):
        key = (key,)
    cdef int ndim = a.t.ndim()
    cdef Py_ssize_t ints = 0, slices = 0, added = 0, ellipses = 0
    for k in key:
        if k is Ellipsis:
            ellipses += 1
        elif k is None:
            added += 1
        elif isinstance(k, slice):
            slices += 1
        else:
            _index_int(k)
            ints += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single Ellipsis")
    if ints + slices > ndim:
        raise IndexError(f"too many indices: the array is {ndim}-dimensional, but {ints + slices} were indexed")
    # Every axis survives but those an int takes; each None adds one. Checked
    # before any axis is written, so every key form stays within max_ndim.
    if ndim - ints + added > cpp.max_ndim:
        raise IndexError(f"the result would have {ndim - ints + added} axes; at most {cpp.max_ndim} are allowed")
    cdef int64_t[64] dims
    cdef int64_t[64] steps
    cdef int out = 0
    cdef int axis = 0
    cdef int64_t offset = 0, n, i, start, length
    for k in key:
        if k is Ellipsis:
            for _ in range(ndim - ints - slices):
                dims[out] = a.t.shape(axis)
                steps[out] = a.t.stride(axis)
                out += 1
                axis += 1
        elif k is None:
            dims[out] = 1
            steps[out] = 0
            out += 1
        elif isinstance(k, slice):
            n = a.t.shape(axis)
            py_start, py_stop, py_step = k.indices(n)
            length = len(range(py_start, py_stop, py_step))
            start = py_start
            new_stride = py_step * a.t.stride(axis)
            if not -2**63 <= new_stride < 2**63:
                if length > 1:
                    raise ValueError(f"slicing axis {axis} with step {py_step} needs a stride of {new_stride} "
                                     f"elements, which does not fit in int64")
                new_stride = a.t.stride(axis)  # one element: the step is irrelevant, and too big for int64
            if length > 0:
                offset += start * a.t.stride(axis)
            dims[out] = length
            steps[out] = new_stride
            out += 1
            axis += 1
        else:
            n = a.t.shape(axis)
            i = _index_int(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            offset += (i + n if i < 0 else i) * a.t.stride(axis)
            axis += 1
    while axis < ndim:
        dims[out] = a.t.shape(axis)
        steps[out] = a.t.stride(axis)
        out += 1
        axis += 1
    cdef cpp.extents_t new_shape = cpp.extents_t(dims, out)
    cdef cpp.extents_t new_strides = cpp.extents_t(steps, out)
    if a.t.type().is_subbyte() and (offset != 0 or not cpp.is_c_contiguous(new_shape, new_strides)):
        raise TypeError(f"packed {a.dtype.name} arrays only support indexing that keeps them "
                        f"contiguous from the first element; convert to a wider dtype first")
    cdef char* data = <char*>a.t.data()
    if not a.t.type().is_subbyte():
        data += offset * <int64_t>a.t.type().itemsize()
    cdef cpp.tensor view = a.t.restrided(data, new_shape, new_strides)
    return _view(a, view)


# ---------------------------------------------------------------------------
# from_dlpack

def from_dlpack(x, /, *, device=None, copy=None):
    """An Array sharing the memory of any DLPack producer (array API).

    Uses the DLPack C exchange API of ``type(x)`` when it has one (PyTorch
    does) and neither ``device`` nor ``copy`` is given; otherwise asks
    ``x.__dlpack__`` for a DLPack 1.3 capsule, falling back to the legacy
    protocol for producers older than DLPack 1.0. ``copy=True`` always
    copies (the result is writable); ``copy=False`` raises ValueError if a copy
    would be needed; ``device`` asks for the data on another device.
    """
    if device is None and copy is None and not PyCapsule_CheckExact(x):
        a = from_exchange_api(x)  # through type(x)'s DLPack C exchange API, when it has one
        if a is not None:
            return a
    cdef bint copied = False
    cdef bint moving = False
    cdef cpp.DLDevice source
    cdef cpp.tensor t
    cdef Device target = None
    if copy is not None and type(copy) is not bool:
        raise TypeError(f"copy must be True, False or None, got {copy!r}")
    if device is not None:
        target = as_device(device)
    if PyCapsule_CheckExact(x):
        warnings.warn("from_dlpack: passing a raw DLPack capsule is deprecated; pass the object "
                      "that produced it (any object with __dlpack__)", DeprecationWarning, stacklevel=2)
        t = import_capsule(x, &copied)
    else:
        # Asked first, as the protocol asks of consumers: a device DLPack does
        # not define is refused before __dlpack__ runs.
        source = dlpack_device(x)
        if target is not None:
            moving = ((source.device_type, source.device_id) != (target.value.type, target.value.id)
                      and not _host_to_cpu(source.device_type, target))
            if moving and copy is False:
                raise ValueError(f"from_dlpack: copy=False, but moving data from device "
                                 f"{(<int>source.device_type, source.device_id)} to {target} needs a copy")
        # dlbridge's GPU work is ordered on the legacy default stream: CUDA
        # producers are told so (stream 1), so that they order their own
        # streams' work before it. dlbridge moves data itself, so a copy
        # asked of the producer would be a second one.
        t = import_capsule(call_dlpack(x, _legacy_stream if source.device_type == cpp.kDLCUDA
                                       or source.device_type == cpp.kDLCUDAManaged else None,
                                       None if moving else copy), &copied)
    if target is not None and not (t.get_device() == target.value) and not _host_to_cpu(t.get_device().type, target):
        if not moving:
            raise BufferError(f"from_dlpack: the producer returned data on {device_from_cpp(t.get_device())}, "
                              f"not on the requested {target}")
        t = _copy_to(t, target.value, t.type())
        return wrap(t)
    if copy and not copied:
        t = _copy_to(t, t.get_device(), t.type())
    return wrap(t)


cdef object _legacy_stream = cpp.legacy_default_stream


cdef bint _host_to_cpu(int source_type, Device target):
    """Memory of `source_type` can serve a CPU target without a copy."""
    return target.value.type == cpp.kDLCPU and cpp.device(<cpp.DLDeviceType>source_type, 0).is_host_accessible()


# ---------------------------------------------------------------------------
# asarray and its sources

def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An Array from any array-like (array API).

    Accepts, in this order: Arrays; DLPack producers (NumPy, PyTorch, JAX,
    CuPy, ..., and Array subclasses, through their ``__dlpack__``); ``__cuda_array_interface__`` (versions 0 to 3);
    ``__array_interface__``; the buffer protocol; nested sequences and Python
    scalars. Shares memory unless a copy is needed or asked for.
    """
    cdef Array a
    cdef bint fresh = False
    cdef DType want = None if dtype is None else as_dtype(dtype)
    cdef Device target = None if device is None else as_device(device)
    cdef cpp.tensor t
    if copy is not None and type(copy) is not bool:
        raise TypeError(f"copy must be True, False or None, got {copy!r}")
    if type(obj) is Array:
        a = <Array>obj
        _require(a)
    elif hasattr(type(obj), "__dlpack__"):
        a = from_dlpack(obj, device=device, copy=False if copy is False else None)
    elif hasattr(obj, "__cuda_array_interface__"):
        a = _from_cuda_array_interface(obj)
    elif _has_array_interface_data(obj):
        a = _from_array_interface(obj)
    elif PyObject_CheckBuffer(obj) and not isinstance(obj, str):
        a = _from_buffer(obj)
    elif hasattr(obj, "__array_interface__"):
        raise BufferError("asarray: __array_interface__ without a (pointer, read_only) data tuple "
                          "needs the object to export the buffer protocol, and it does not")
    else:
        if copy is False:
            raise ValueError(f"asarray: copy=False, but a {type(obj).__name__} must be copied into an array")
        a = _from_sequence(obj, want)
        fresh = True
    cdef cpp.device where = a.t.get_device()
    cdef cpp.dtype element = a.t.type()
    if target is not None and a.device != target and not _host_to_cpu(where.type, target):
        if copy is False:
            raise ValueError(f"asarray: copy=False, but moving data from {a.device} to {target} needs a copy")
        where = target.value
    if want is not None and not (want.value == element):
        if copy is False:
            raise ValueError(f"asarray: copy=False, but converting {a.dtype.name} to {want.name} needs a copy")
        if element.code == cpp.kDLComplex and want.value.code != cpp.kDLComplex:
            raise TypeError(f"asarray: cannot convert complex {a.dtype.name} to {want.name}")
        element = want.value
    if not (where == a.t.get_device() and element == a.t.type()):
        t = _copy_to(a.t, where, element)
        return wrap(t)
    if copy and not fresh:
        return a.copy()
    return a


cdef bint _has_array_interface_data(obj):
    try:
        interface = obj.__array_interface__
    except AttributeError:
        return False
    return isinstance(interface, dict) and isinstance(interface.get("data"), tuple)


cdef tuple _shape_tuple(interface, str name):
    shape = interface.get("shape")
    if not isinstance(shape, tuple) or not all(type(e) is int for e in shape):
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}")
    for axis, e in enumerate(shape):
        if not -2**63 <= e < 2**63:
            raise BufferError(f"{name}: axis {axis}: expected an extent that fits in int64, got {e}")
    return shape


cdef void* _data_pointer(data, str name) except? NULL:
    """The pointer of an interface's (pointer, read_only) data tuple."""
    if not (isinstance(data, tuple) and len(data) == 2 and type(data[0]) is int):
        raise TypeError(f"{name}: data must be a (pointer, read_only) tuple, got {data!r}")
    if not 0 <= data[0] < 2**64:
        raise BufferError(f"{name}: expected a data pointer in [0, 2**64), got {data[0]}")
    return <void*><uintptr_t>data[0]


cdef cpp.dtype _typestr_dtype(interface, str name) except *:
    typestr = interface.get("typestr")
    if not isinstance(typestr, str) or typestr[:1] not in ("<", ">", "|", "="):
        raise TypeError(f"{name}: typestr must be a NumPy typestr such as '<f4', got {typestr!r}")
    try:
        return as_dtype(typestr).value
    except TypeError:
        raise BufferError(f"{name}: typestr {typestr!r} is not a supported native-endian type") from None


cdef object _element_strides(interface, cpp.dtype t, Py_ssize_t ndim, str name):
    """Byte strides to element strides; None (C order) when absent or None."""
    strides = interface.get("strides")
    if strides is None:
        return None
    if not isinstance(strides, tuple) or len(strides) != ndim or not all(type(s) is int for s in strides):
        raise TypeError(f"{name}: strides must be None or a tuple of {ndim} ints, got {strides!r}")
    itemsize = t.itemsize()
    for axis, s in enumerate(strides):
        if not -2**63 <= s < 2**63:
            raise BufferError(f"{name}: axis {axis}: expected a byte stride that fits in int64, got {s}")
        if s % itemsize:
            raise BufferError(f"{name}: axis {axis}: expected a byte stride that is a multiple of "
                              f"the itemsize {itemsize}, got {s}")
    return tuple([s // itemsize for s in strides])


cdef Array _from_cuda_array_interface(obj):
    cdef str name = "__cuda_array_interface__"
    interface = obj.__cuda_array_interface__
    if not isinstance(interface, dict):
        raise TypeError(f"{name} must be a dict, got {type(interface).__name__}")
    version = interface.get("version")
    if type(version) is not int or not 0 <= version <= 3:
        raise ValueError(f"{name}: expected version 0 to 3, got {version!r}")
    if interface.get("mask") is not None:
        raise BufferError(f"{name}: masked arrays are not supported (mask is {type(interface['mask']).__name__}, "
                          f"expected None)")
    stream = interface.get("stream")
    cdef cpp.cuda_stream producer = cpp.legacy_default_stream
    if stream is not None:
        if type(stream) is not int:
            raise ValueError(f"{name}: stream must be None or a positive int, got {stream!r}")
        try:
            producer = cpp.producer_stream(_stream_int64(stream))
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    shape = _shape_tuple(interface, name)
    cdef cpp.dtype t = _typestr_dtype(interface, name)
    data = interface.get("data")
    cdef void* pointer = _data_pointer(data, name)
    strides = _element_strides(interface, t, len(shape), name)
    cdef cpp.tensor out = _adopt_object(obj, pointer, t, cuda_pointer_device(pointer),
                                        shape, strides, bool(data[1]))
    if out.size():
        # The producer's work may still be queued on its stream: the legacy
        # default stream waits for it, the host does not.
        order_after_producer(out, producer)
    return wrap(out)


cdef Array _from_array_interface(obj):
    cdef str name = "__array_interface__"
    interface = obj.__array_interface__
    version = interface.get("version", 3)
    if version not in (2, 3):
        raise ValueError(f"{name}: expected version 2 or 3, got {version!r}")
    if interface.get("mask") is not None:
        raise BufferError(f"{name}: masked arrays are not supported (mask must be None)")
    shape = _shape_tuple(interface, name)
    cdef cpp.dtype t = _typestr_dtype(interface, name)
    data = interface["data"]
    cdef void* pointer = _data_pointer(data, name)
    strides = _element_strides(interface, t, len(shape), name)
    cdef cpp.tensor out = _adopt_object(obj, pointer, t, cpp.device(cpp.kDLCPU, 0),
                                        shape, strides, bool(data[1]))
    return wrap(out)


# Buffer-protocol formats with a DLPack dtype: (kind, item size in native
# mode "@", item size in the standard modes "=<>!"; None: not allowed there),
# as the struct module defines them.
cdef dict _buffer_formats():
    """Buffer format -> (dtype name with no size, native bytes, standard bytes):
    the dtype table's formats, and the struct codes whose native size is the
    platform's (None: no standard size)."""
    cdef dict formats = {}
    cdef cpp.string_view f
    for i in range(cpp.dtype_table.size()):
        f = cpp.dtype_table[i].buffer_format
        if not f.empty():
            d = dtype_from_cpp(cpp.dtype_table[i].type)
            formats[f.data()[:f.size()].decode("ascii")] = (d.name.rstrip("0123456789"), d.itemsize, d.itemsize)
    formats.update({"l": ("int", sizeof(long), 4), "L": ("uint", sizeof(long), 4),
                    "n": ("int", sizeof(Py_ssize_t), None), "N": ("uint", sizeof(size_t), None)})
    return formats


cdef dict _format_kinds = _buffer_formats()
cdef str _foreign_order = ">!" if sys.byteorder == "little" else "<"


cdef DType _buffer_dtype(fmt, Py_ssize_t itemsize):
    """The dtype of a buffer's format string, which must agree with its itemsize."""
    mode = fmt[:1] if fmt[:1] in ("@", "=", "<", ">", "!") else ""
    entry = _format_kinds.get(fmt[len(mode):])
    size = None if entry is None else entry[1] if mode in ("", "@") else entry[2]
    if size is None:
        raise BufferError(f"buffer format {fmt!r} has no DLPack dtype")
    if size != itemsize:
        raise BufferError(f"buffer format {fmt!r} has {size}-byte items, but the exporter reports itemsize "
                          f"{itemsize}")
    if mode and mode in _foreign_order and size > 1:
        raise BufferError(f"buffer format {fmt!r} is {'big' if sys.byteorder == 'little' else 'little'}-endian; "
                          f"only native byte order is supported")
    return as_dtype("bool" if entry[0] == "bool" else f"{entry[0]}{size * 8}")


cdef Array _from_buffer(obj):
    cdef Py_buffer* view = <Py_buffer*>malloc(sizeof(Py_buffer))
    if view == NULL:
        raise MemoryError()
    try:
        PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO)
    except BaseException:
        free(view)
        raise
    cdef cpp.tensor out
    cdef vector[int64_t] dims
    cdef vector[int64_t] steps
    try:
        fmt = view.format.decode("ascii", "replace") if view.format != NULL else "B"
        dt = _buffer_dtype(fmt, view.itemsize)
        if view.suboffsets != NULL:
            raise BufferError("buffers with suboffsets (PIL-style) are not supported")
        if view.ndim < 0:  # (more than max_ndim axes is validate's to refuse)
            raise BufferError(f"invalid tensor: ndim: expected ndim <= {cpp.max_ndim}, got {view.ndim}")
        if view.ndim > 0 and view.shape == NULL:
            raise BufferError(f"buffer: the exporter ({type(obj).__name__}) reports {view.ndim} axes but no shape")
        dims.assign(view.shape, view.shape + view.ndim)
        if view.strides != NULL:  # contiguous exporters (ctypes) may leave strides out
            for i in range(view.ndim):
                if view.strides[i] % view.itemsize:
                    raise BufferError(f"buffer: axis {i}: expected a byte stride that is a multiple of "
                                      f"the itemsize {view.itemsize}, got {view.strides[i]}")
                steps.push_back(view.strides[i] // view.itemsize)
    except BaseException:
        PyBuffer_Release(view)
        free(view)
        raise
    out = cpp.tensor.adopt(view.buf, (<DType>dt).value, cpp.device(cpp.kDLCPU, 0),
                           cpp.extents_t(dims.data(), dims.size()), cpp.extents_t(steps.data(), steps.size()),
                           view.readonly, cpp.release_buffer, view)
    return wrap(out)


cdef bint _is_nested(obj):
    """Lists, tuples, ranges and arrays with at least one axis nest; 0-d arrays are scalars."""
    if isinstance(obj, (list, tuple, range)):
        return True
    shape = getattr(obj, "shape", None)
    return isinstance(shape, tuple) and len(shape) > 0 and hasattr(type(obj), "__len__")


cdef _discover(obj, list shape, int depth, list leaves):
    if _is_nested(obj):
        obj = list(obj)
        if depth >= cpp.max_ndim:
            raise ValueError(f"asarray: nested sequences deeper than {cpp.max_ndim} levels")
        if len(shape) <= depth:
            if len(shape) < depth or leaves:
                raise ValueError("asarray: ragged nested sequence (a sequence where a scalar was found before)")
            shape.append(len(obj))
        elif shape[depth] != len(obj):
            raise ValueError(f"asarray: ragged nested sequence: axis {depth} has lengths "
                             f"{shape[depth]} and {len(obj)}")
        for item in obj:
            _discover(item, shape, depth + 1, leaves)
    else:
        if depth != len(shape):
            raise ValueError(f"asarray: ragged nested sequence: a scalar at depth {depth}, "
                             f"sequences of depth {len(shape)} elsewhere")
        if isinstance(obj, (str, bytes)):
            raise TypeError(f"asarray: strings are not numbers, got {obj!r}")
        leaves.append(obj)


cdef Array _from_sequence(obj, DType want):
    shape = []
    leaves = []
    _discover(obj, shape, 0, leaves)
    cdef DType dt = want
    cdef Py_ssize_t i
    if dt is None:
        dt = as_dtype("float64") if not leaves else _common_dtype(leaves)
    cdef int64_t[64] dims
    for i in range(len(shape)):
        dims[i] = shape[i]
    cdef cpp.tensor t = cpp.tensor.empty(cpp.extents_t(dims, len(shape)), dt.value)
    cdef bint packed = dt.value.is_subbyte()
    cdef int64_t itemsize = dt.value.itemsize()
    cdef char* base = <char*>t.data()
    if packed:
        memset(base, 0, t.nbytes())
    for i in range(len(leaves)):
        _store_python(dt.value, base if packed else base + i * itemsize, leaves[i], i if packed else 0)
    return wrap(t)


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


# ---------------------------------------------------------------------------
# Creation

cdef tuple _checked_shape(shape, DType dt, str name):
    """(shape as a tuple of ints, bytes its elements take), or the error
    `name` reports for a shape no array can have (layout.hpp: check_shape)."""
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        shape = tuple([operator.index(e) for e in shape])
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a sequence of ints, got {shape!r}") from None
    count = 1
    for e in shape:
        count *= e
    nbytes = (count * dt.bits + 7) // 8
    cdef vector[int64_t] dims
    cdef bint fits = True
    for e in shape:
        fits = fits and e < (1 << 63)
        dims.push_back(min(max(e, -1), (1 << 63) - 1))
    cdef optional[cpp.shape_error] error = cpp.check_shape(cpp.extents_t(dims.data(), dims.size()), dt.value)
    cdef cpp.shape_defect defect
    if error.has_value():
        defect = error.value().defect
    elif not fits:  # an extent past int64: the size or the C-order strides overflow
        defect = cpp.shape_defect.size_overflow if count else cpp.shape_defect.strides_overflow
    else:
        return shape, nbytes
    if defect == cpp.shape_defect.too_many_axes:
        raise ValueError(f"{name}: expected ndim <= {cpp.max_ndim}, got {len(shape)}")
    if defect == cpp.shape_defect.negative_extent:
        raise ValueError(f"{name}: negative extents are not allowed, got shape {shape}")
    if defect == cpp.shape_defect.size_overflow:
        raise ValueError(f"{name}: shape {shape} of {dt.name} is too big: {nbytes} bytes do not fit in int64")
    raise ValueError(f"{name}: shape {shape} of {dt.name} is too big: its C-order strides do not fit in int64 "
                     f"(empty axes counted as extent 1)")


cdef cpp.tensor _allocate(shape, DType dt, device, str name) except *:
    cdef cpp.device where = cpp.device(cpp.kDLCPU, 0) if device is None else as_device(device).value
    shape, nbytes = _checked_shape(shape, dt, name)
    cdef vector[int64_t] dims = shape
    try:
        return empty_on(where, cpp.extents_t(dims.data(), dims.size()), dt.value)
    except MemoryError:
        raise MemoryError(f"{name}: cannot allocate {nbytes} bytes for shape {shape} of {dt.name}") from None


def empty(shape, *, dtype=None, device=None):
    """A new C-contiguous array with uninitialised values (float64 by default)."""
    cdef cpp.tensor t = _allocate(shape, as_dtype("float64" if dtype is None else dtype), device, "empty")
    return wrap(t)


def zeros(shape, *, dtype=None, device=None):
    """A new C-contiguous array of zero bits (float64 by default)."""
    cdef cpp.tensor t = _allocate(shape, as_dtype("float64" if dtype is None else dtype), device, "zeros")
    if t.get_device().type != cpp.kDLCPU:
        # Zero bits, as on the CPU: for float8_e8m0fnu, which has no zero,
        # that is its smallest value 2**-127 (so it is for ml_dtypes too).
        fill_on_device(t, cpp.scalar.from_real(2.0**-127) if t.type().code == cpp.kDLFloat8_e8m0fnu
                       else cpp.scalar.from_int(0))
        return wrap(t)
    with nogil:
        memset(t.data(), 0, t.nbytes())
    return wrap(t)


def full(shape, fill_value, *, dtype=None, device=None):
    """A new C-contiguous array filled with ``fill_value``; the dtype defaults
    to that of the value (bool, int64, float64 or complex128)."""
    cdef DType dt = _dtype_of_value(fill_value) if dtype is None else as_dtype(dtype)
    # Encode one element first: a bad value fails before any memory is asked for.
    cdef uint64_t[2] element = [0, 0]
    _store_python(dt.value, <void*>element, fill_value, 0)
    cdef cpp.scalar value = _from_python(fill_value)
    cdef cpp.tensor t = _allocate(shape, dt, device, "full")
    cdef int64_t n = t.size(), i
    cdef char* base = <char*>t.data()
    cdef int64_t itemsize = dt.value.itemsize()
    if n == 0:
        return wrap(t)
    if t.get_device().type != cpp.kDLCPU:
        fill_on_device(t, value)
        return wrap(t)
    with nogil:
        if dt.value.is_subbyte():
            memset(base, 0, t.nbytes())
            for i in range(n):
                cpp.store(dt.value, base, value, i)
        else:
            for i in range(n):
                memcpy(base + i * itemsize, element, itemsize)
    return wrap(t)


# ---------------------------------------------------------------------------
# What this dlbridge was built with (here, beside the one module that links the
# CUDA backend, so the process holds one copy of the static CUDA runtime)

cdef extern from "dlbridge/build_info.hpp" namespace "dlb::python":
    const char* compiler
    const long cplusplus
    const cbool have_cuda
    int cuda_runtime_version()
    int cuda_device_count()
    string cuda_device_status() except +


cdef extern from "dlbridge/version.hpp" namespace "dlb":
    const char* version


def build_info():
    """A dict describing this build: ``version``, ``dlpack_version``,
    ``compiler``, ``cpp_std``, ``cuda`` (backend compiled in),
    ``cuda_version`` (None without it), ``gpu_count`` and ``cuda_status``
    (why no GPU is usable, or "")."""
    cuda_version = None
    if have_cuda:
        v = cuda_runtime_version()
        cuda_version = f"{v // 1000}.{v % 1000 // 10}"
    std = {202002: "c++20", 202302: "c++23"}.get(cplusplus, f"__cplusplus {cplusplus}")
    return {
        "version": version.decode(),
        "dlpack_version": f"{cpp.dlpack_major_version}.{cpp.dlpack_minor_version}",
        "compiler": compiler.decode(),
        "cpp_std": std,
        "cuda": bool(have_cuda),
        "cuda_version": cuda_version,
        "gpu_count": cuda_device_count(),
        "cuda_status": cuda_device_status().decode(),
    }
