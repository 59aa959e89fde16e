# cython: language_level=3
"""The Array type: wrap, views, copies, its exports (__dlpack__, the array
interfaces, the buffer protocol, dlbridge's DLPack C exchange table) and
what makes one here (empty, zeros, full, unpickling, wrap_like); Python
scalars; the reading of a producer type's exchange table. Over
dlbridge._types, _dlpack and _backend (the one module that links the CUDA
runtime); dlbridge._importers (from_dlpack, asarray, the argument
converter) is above it and cimports what _array.pxd declares. Written in
files by concern, each naming on its first line what it uses from the
others:

- _streams.pxi: the stream arguments of __dlpack__ and to_device;
- _scalars.pxi: Python scalars, elements and the dtype of a value (and of
  a list of them);
- _indexing.pxi: basic indexing (views);
- _exchange.pxi: the DLPack C exchange API: dlbridge's table, and the
  reading of a producer type's;
- _creation.pxi: empty, zeros, full and the shape rule's errors;
- _pickle.pxi: pickling;
- _copy_threads.pxi: get_copy_threads, set_copy_threads;
- _returns.pxi: arrays made in C++ returned like an input (wrap_like), and
  the argument API's slots that make arrays."""
import operator

cimport cython
from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_F_CONTIGUOUS, PyBUF_FORMAT,
                             PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE, PyObject_GetBuffer)
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libcpp.optional cimport optional
from libcpp.utility cimport move

cimport dlbridge.cpp as cpp
from dlbridge._backend cimport copy_state, copy_to, empty_on, fill_on_device, inherited_across_fork, lend
from dlbridge._dlpack cimport export_capsule
from dlbridge._types cimport DType, Device, as_device, device_from_cpp, dtype_from_cpp

from dlbridge._types import DeviceType

# This module's copies use the backend's copy state, the one
# set_copy_threads() sets and the argument API publishes.
cpp.use_copy_state(copy_state()[0])


# Where __array_interface__ says an empty array with no data pointer lies:
# NumPy before 2.4 refuses the address 0 even for no elements. Never read.
cdef extern from *:
    """
    alignas(64) static char dlbridge_empty_data[64];
    """
    char _empty_data "dlbridge_empty_data"[64]

cdef dict _device_types = {int(t): t for t in DeviceType}


# ---------------------------------------------------------------------------
# The Array type

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)


cdef Array wrap(cpp.tensor& t):
    cdef Array a = Array.__new__(Array)
    a.t = move(t)
    if cpp.collectable_owner(a.t) == NULL:
        PyObject_GC_UnTrack(<void*>a)  # no Python object it refers to can close a cycle the collector sees
    return a


cdef Array _view(Array base, cpp.tensor& t):
    """wrap(t) for a view of base's memory. Where a Python object holds that
    memory, the view holds base rather than sharing its keeper: every Array
    then has a keeper of its own, whose reference the collector can follow."""
    cdef PyObject* owner = cpp.collectable_owner(base.t)
    if owner == NULL:
        return wrap(t)
    root = base
    if isinstance(<object>owner, Array):
        root = <object>owner  # base is itself such a view: hold the Array it holds
    Py_INCREF(root)
    cdef cpp.tensor kept = t.kept_by(cpp.release_object, <void*>root)
    return wrap(kept)


cdef int _require(Array a) except -1:
    if not a.t.has_value():
        raise _not_initialised(a)
    return 0


cdef tuple _extents(const cpp.tensor& t):
    """t's shape. Array's own code describes an array by this and t's other
    fields, never by properties, which a subclass may override to lie."""
    return tuple([t.shape(i) for i in range(t.ndim())])


cdef object _element_at(const cpp.tensor& t, tuple key):
    """The element at `key`, one exact int per axis, each checked against its
    axis (negative ones count from the end): the one read of a single element
    by index (item(), and so repr)."""
    if len(key) != t.ndim():
        raise IndexError(f"expected {t.ndim()} indices, one per axis, got {len(key)}")
    cdef int64_t offset = 0
    for axis, i in enumerate(key):
        offset += _int_offset(i, t.shape(axis), axis) * t.stride(axis)
    return _to_python(cpp.load(t.type(), _element(t, offset), offset if t.type().is_subbyte() else 0))


cdef object _only_element(Array a, str what):
    """The element of an array of size 1, as a Python scalar."""
    _require_host(a, what)
    return _element_at(a.t, (0,) * a.t.ndim())


cdef object _scalar_of_0d(Array a, str kind):
    """The element of a 0-d array, for int(), float() and complex()."""
    _require(a)
    if a.t.ndim() != 0:
        raise TypeError(f"only 0-dimensional arrays convert to {kind}, got shape {_extents(a.t)}")
    return _only_element(a, f"{kind}()")


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


cdef _require_host(Array a, str what):
    _require(a)
    if not a.t.get_device().is_host_accessible():
        raise BufferError(f"{what} needs host-accessible memory; this array is on {a.device}")
    if inherited_across_fork(a.t):
        raise BufferError(f"{what}: this array's {a.device} memory was inherited across fork() from a process that "
                          f"used CUDA, and is not mapped in this one; start workers with the 'spawn' or "
                          f"'forkserver' method")


cdef cpp.release_fn _object_release() noexcept:
    return cpp.release_object


# Memory a buffer export holds: a Py_buffer of its own, which the tensor
# on it releases exactly once.

cdef Py_buffer* _export_buffer(obj, int flags) except NULL:
    """obj's buffer export, in a Py_buffer of its own: hand it to
    _adopt_buffer, or give it back with cpp.release_buffer."""
    cdef Py_buffer* view = <Py_buffer*>malloc(sizeof(Py_buffer))
    if view == NULL:
        raise MemoryError()
    try:
        PyObject_GetBuffer(obj, view, flags)
    except BaseException:
        free(view)
        raise
    return view


cdef cpp.tensor _adopt_buffer(Py_buffer* view, cpp.dtype t, cpp.extents_t shape, cpp.extents_t strides,
                              bint readonly) except *:
    """A CPU tensor on the memory of an _export_buffer export, which it
    releases; no strides mean C order."""
    return cpp.tensor.adopt(view.buf, t, cpp.device(cpp.kDLCPU, 0), shape, strides, readonly, cpp.release_buffer,
                            view)


cdef dict _interface_dict(const cpp.tensor& t, str interface, str instead, uintptr_t data):
    """The version-3 dict that NumPy's array interface and the CUDA array
    interface share (the latter adds "stream"), with `data` as t's address;
    BufferError naming `interface`, and the route to use `instead`, for a
    dtype with no typestr."""
    cdef DType dt = dtype_from_cpp(t.type())
    typestr = dt.typestr
    if typestr is None:
        raise BufferError(f"{dt.name} has no {interface} typestr; use {instead}")
    cdef int64_t itemsize = t.type().itemsize()
    return {
        "version": 3,
        "shape": _extents(t),
        "typestr": typestr,
        "data": (data, t.readonly()),
        "strides": None if t.is_c_contiguous() else tuple([t.stride(i) * itemsize for i in range(t.ndim())]),
    }


cdef object _export_shared(const cpp.tensor& t, bint versioned):
    """A capsule lending t's memory itself (Array.__dlpack__)."""
    if not versioned and t.readonly():
        raise BufferError("a read-only array cannot be exported as a legacy DLPack capsule "
                          "(it has no read-only flag); pass max_version=(1, 3)")
    return export_capsule(t, versioned, 0)


cdef object _export_as_asked(Array a, stream, bint versioned, dl_device, _copy_mode copy):
    """Array.__dlpack__ given a stream, a device or a copy request: the
    consumer's stream is ordered after a's work, and a copy is flagged IS_COPIED."""
    cdef cpp.device d = a.t.get_device()
    cdef cpp.device target = d
    cdef optional[cpp.cuda_stream] consumer
    cdef cpp.tensor out
    if dl_device is not None:
        target = _export_device(a, dl_device)
    if stream is not None:
        consumer = _consumer_stream(stream, target)
    if copy != _copy_always and target == d:
        if consumer.has_value():
            return _export_shared(lend(a.t, consumer.value()), versioned)
        return _export_shared(a.t, versioned)
    if copy == _copy_never:
        raise BufferError(f"copy=False, but exporting an array on {a.device} to device "
                          f"{tuple(dl_device)} needs a copy")
    try:
        out = copy_to(a.t, target, a.t.type())
    except (RuntimeError, ValueError) as e:
        what = f"to device {tuple(dl_device)}" if not (target == d) else "as a copy"
        raise BufferError(f"cannot export an array on {a.device} {what}: {e}") from None
    if consumer.has_value():
        out = lend(out, consumer.value())
    return export_capsule(out, versioned, cpp.dlpack_flag_is_copied)


cdef cpp.device _export_device(Array a, dl_device) except *:
    """The device a consumer asked __dlpack__ for (``dl_device``)."""
    if (type(dl_device) is not tuple or len(dl_device) != 2
            or not isinstance(dl_device[0], int) or not isinstance(dl_device[1], int)):
        raise TypeError(f"dl_device must be a (device_type, device_id) tuple, got {dl_device!r}")
    cdef Device target
    try:
        target = as_device(dl_device)
    except ValueError as e:
        raise BufferError(f"cannot export an array on {a.device} to device {tuple(dl_device)}: {e}") from None
    # The device as read, not dl_device again (an int subclass may compare as it likes).
    if target.value.type == cpp.kDLCPU and target.value.id != 0:
        raise BufferError(f"cannot export an array on {a.device} to device {tuple(dl_device)}: "
                          f"the CPU is device 0")
    return target.value


# dlbridge._importers.asarray, which Array(obj) is: _importers cimports this
# module, so asarray is imported at the first Array(obj), not cimported.
cdef object _asarray = None


cdef class Array:
    """An n-dimensional strided array that speaks DLPack.

    Arrays come from ``from_dlpack``, ``asarray``, ``empty``, ``zeros`` and
    ``full``; ``Array(obj)`` is ``asarray(obj)``.

    An Array is a view: a data pointer, a shape, strides counted in
    elements (DLPack's unit; NumPy counts bytes), a DLPack dtype and device,
    and a read-only flag, over memory it keeps alive (its own, or the
    producer's, held until the last view or export of it is released).
    Which memory an Array views is fixed when it is made: indexing, ``.T``
    and ``transpose`` return new views of the same memory, and ``copy``,
    ``to_device``, ``dtype=`` and ``copy=True`` make new C-contiguous,
    writable memory. Read-only memory is never written: no writable buffer
    or legacy DLPack capsule of it is given out. Reading elements from
    Python (``tolist``, ``item``, the buffer protocol,
    ``__array_interface__``) needs memory the host can reach. On a GPU, an
    Array is ready in the order of its device's legacy default stream: work
    queued there may use it, and imports and exports order other streams
    around it. An Array's own code reads its fields, never its properties,
    which a subclass may override.
    """
    __dlpack_c_exchange_api__ = _exchange_api_capsule()  # DLPack 1.3 C exchange API
    __c_dlpack_exchange_api__ = _exchange_api_address()  # the same table, as DLPack 1.2 published it

    def __init__(self, obj, *, dtype=None, copy=None):
        global _asarray
        if _asarray is None:
            from dlbridge._importers import asarray
            _asarray = asarray
        cdef Array a = _asarray(obj, dtype=dtype, copy=copy)
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
        return _extents(self.t)

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

    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Exports the array as a DLPack capsule (array API 2025.12 semantics).

        A versioned DLPack 1.3 capsule when ``max_version`` has major >= 1,
        a legacy one when it is None or major 0 (refused for read-only data).
        On a GPU, ``stream`` is the consumer's: unless it is -1 it is made to
        wait (an event, never a host block) for the work that wrote the array.
        A non-blocking ``stream`` must outlive the capsule and what the
        consumer makes of it: its release makes dlbridge's stream wait for
        the consumer's work (except during a CUDA graph capture); default
        and blocking streams need not outlive it.
        ``dl_device`` on another device, or ``copy=True``, exports a copy
        flagged IS_COPIED.
        """
        _require(self)
        cdef bint versioned = False
        if max_version is not None:
            if (type(max_version) is not tuple or len(max_version) != 2
                    or type(max_version[0]) is not int or type(max_version[1]) is not int):
                raise TypeError(f"max_version must be a (major, minor) tuple of ints, got {max_version!r}")
            versioned = max_version[0] >= 1
        if stream is None and dl_device is None and copy is None:  # what most consumers ask
            return _export_shared(self.t, versioned)
        return _export_as_asked(self, stream, versioned, dl_device, _as_copy_mode(copy))

    # -- devices ------------------------------------------------------------
    def to_device(self, device, /, *, stream=None):
        """This array on ``device`` (array API): ``self`` when it is there
        already, else a C-contiguous copy. On a GPU the copy runs on ``stream``
        (an int as in ``__dlpack__``, or an object with ``__cuda_stream__``;
        None is the legacy default stream), ordered after the work that wrote
        this array and before later dlbridge work, without blocking the host.
        A ``stream`` being captured into a CUDA graph is refused
        (BufferError) before any work: copy before or after the capture."""
        _require(self)
        cdef Device target = as_device(device)
        cdef cpp.cuda_stream s = _work_stream(stream)
        if target.value == self.t.get_device():
            return self
        cdef cpp.tensor out = copy_to(self.t, target.value, self.t.type(), s)
        return wrap(out)

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface (version 3) of an array on a GPU, pinned
        or managed memory; absent (AttributeError) elsewhere. Its ``stream``
        is 1: the data is ready in the order of the legacy default stream."""
        _require(self)
        cdef cpp.device d = self.t.get_device()
        if not d.is_cuda_memory():
            raise AttributeError(f"__cuda_array_interface__ is only defined for arrays in CUDA memory; "
                                 f"this array is on {self.device}")
        interface = _interface_dict(self.t, "CUDA-array-interface", "DLPack",
                                    <uintptr_t>self.t.data() if self.t.size() else 0)
        interface["stream"] = 1
        return interface

    # -- host access --------------------------------------------------------
    @property
    def __array_interface__(self):
        """NumPy's array interface (version 3), for host memory."""
        _require_host(self, "__array_interface__")
        return _interface_dict(self.t, "NumPy array-interface", "numpy.from_dlpack",
                               <uintptr_t>(self.t.data() if self.t.data() != NULL else _empty_data))

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
        # Without PyBUF_ND the consumer gets no shape, and reads the buffer as ndim 1 (memoryview reads
        # shape[i] of a NULL shape otherwise, as PyBuffer_FillInfo's buffers are): C-contiguous here.
        buffer.ndim = ndim if (flags & PyBUF_ND) == PyBUF_ND or ndim == 0 else 1
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
        cdef cpp.tensor out = copy_to(self.t, self.t.get_device(), self.t.type())
        return wrap(out)

    def tolist(self):
        """The values as nested Python lists of bool, int, float or complex."""
        _require_host(self, "tolist()")
        return _tolist(self.t, 0, 0)

    def item(self, *args):
        """One element as a Python bool, int, float or complex, as NumPy's
        item(): with no argument the only element of a size-1 array; with
        one int the element at that flat (C-order) index; with one int per
        axis (or a tuple of them) the element there."""
        _require(self)
        if len(args) == 1 and type(args[0]) is tuple:
            args = args[0]
        for i in args:
            if isinstance(i, bool):  # as NumPy: True is no position
                raise TypeError(f"item(): indices must be integers, got {i!r}")
        cdef int ndim = self.t.ndim()
        cdef int64_t size = self.t.size()
        if not args:
            if size != 1:
                raise ValueError(f"item(): only an array of size 1 has an item without an index, "
                                 f"got shape {_extents(self.t)}")
            key = (0,) * ndim
        elif len(args) == 1 and ndim != 1:
            flat = operator.index(args[0])
            if not -size <= flat < size:
                raise IndexError(f"item(): index {flat} is out of bounds for size {size}")
            flat %= size
            unravelled = []
            for axis in range(ndim - 1, -1, -1):
                flat, i = divmod(flat, self.t.shape(axis))
                unravelled.append(i)
            key = tuple(reversed(unravelled))
        elif len(args) == ndim:
            key = tuple([operator.index(i) for i in args])
        else:
            raise ValueError(f"item(): expected no index, one flat index or {ndim} indices (one per axis), "
                             f"got {len(args)}")
        _require_host(self, "item()")
        return _element_at(self.t, key)

    # Scalar conversions, as NumPy 2.4: bool() of any array with one element;
    # int(), float() and complex() of a 0-d array; operator.index() of a 0-d
    # integer array.
    def __bool__(self):
        _require(self)
        if self.t.size() != 1:
            raise ValueError(f"the truth value of an array of shape {_extents(self.t)} is ambiguous: "
                             f"only an array with one element has one")
        return bool(_only_element(self, "bool()"))

    def __int__(self):
        return int(_scalar_of_0d(self, "int"))

    def __float__(self):
        return float(_scalar_of_0d(self, "float"))

    def __complex__(self):
        return complex(_scalar_of_0d(self, "complex"))

    def __index__(self):
        _require(self)
        if self.t.ndim() != 0 or (self.t.type().code != cpp.kDLInt and self.t.type().code != cpp.kDLUInt):
            raise TypeError(f"only 0-dimensional integer arrays can be used as an index, "
                            f"got {dtype_from_cpp(self.t.type()).name} of shape {_extents(self.t)}")
        return _only_element(self, "operator.index()")

    def __repr__(self):
        if not self.t.has_value():
            return f"<{type(self).__name__} holding no array>"
        from dlbridge._format import format_array
        return format_array(_whole_view(self))  # an exact Array: a subclass's overrides do not count

    # -- pickling and copy.copy ------------------------------------------------
    def __reduce_ex__(self, protocol):
        """Pickles by value (CPU arrays only): the elements in C order and the
        read-only flag; with protocol 5 the elements travel as a
        pickle.PickleBuffer, out of band when the pickler takes buffers."""
        _require(self)
        if self.t.get_device().type != cpp.kDLCPU:
            raise TypeError(f"cannot pickle an Array on {self.device}: a pickle holds host memory; "
                            f"copy the array to the CPU first (a.to_device('cpu'))")
        cdef Array c = self
        cdef cpp.tensor packed
        if not self.t.is_c_contiguous():
            packed = copy_to(self.t, self.t.get_device(), self.t.type())
            c = wrap(packed)
        cdef _Bytes raw = _Bytes.__new__(_Bytes)
        raw.a = c
        raw.readonly = self.t.readonly()
        if protocol < 5:
            data = bytes(memoryview(raw))
        else:
            from pickle import PickleBuffer
            data = PickleBuffer(raw)
        return _from_pickle, (data, dtype_from_cpp(self.t.type()).name, _extents(self.t), bool(self.t.readonly()))

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
        cdef _axes permuted
        permuted.n = 0
        for a in normalized:
            _add_axis(&permuted, self.t.shape(_axis_read(self.t, a)), self.t.stride(a))
        cdef cpp.tensor out = self.t.restrided(self.t.data(), cpp.extents_t(permuted.extent, permuted.n),
                                               cpp.extents_t(permuted.stride, permuted.n))
        return _view(self, out)


# The collector's view of an Array: the Python object its keeper holds, when
# the keeper is the Array's alone (see dlbridge/python/core.hpp: sole_collectable_owner), and
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
    cdef PyObject* owner = cpp.sole_collectable_owner((<Array>o).t)
    return visit(owner, arg) if owner != NULL else 0


cdef int _clear_array(PyObject* o) noexcept:
    cdef cpp.tensor dropped
    dropped.swap((<Array>o).t)  # the Array is empty before the owner's release runs any Python code
    return 0


dlbridge_set_gc_slots(<PyTypeObject*>Array, _traverse_array, _clear_array)


# The rest of the module, by concern (see the module docstring). Their order
# does not matter. Cython declares every cdef name of the module before it
# compiles any body, so a file may call a function, or use a type or a C
# variable, that a later one defines. What runs at import runs in file
# order, and no file's module-level code reads a Python global that another
# file sets: the Array class above calls _exchange_api_capsule() rather
# than reading a global, for that reason. Keep it so: such a read, made
# before the other file sets the name, fails the import with NameError.
include "_copy_threads.pxi"
include "_creation.pxi"
include "_exchange.pxi"
include "_indexing.pxi"
include "_pickle.pxi"
include "_returns.pxi"
include "_scalars.pxi"
include "_streams.pxi"
