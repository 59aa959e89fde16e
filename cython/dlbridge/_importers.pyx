# cython: language_level=3
"""from_dlpack and asarray: the import pipeline (the door, the route lists,
the finish), their routes (the DLPack producers', a producer type's C
exchange table, the array interfaces, the buffer protocol, nested
sequences), and the memory Python objects own; and the argument converter
behind dlbridge/python/argument.hpp (_arguments.pxi), whose table this
module publishes as dlbridge._array._argument_api. Over dlbridge._array
(the Array type, scalars, exchange tables, buffer exports: _array.pxd),
_dlpack, _types and _backend; nothing cimports this module."""
import sys
import warnings

cimport cython
from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_CheckBuffer
from cpython.exc cimport PyErr_Clear
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.pycapsule cimport PyCapsule_CheckExact
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t, uintptr_t
from libc.string cimport memset, strcmp, strcpy, strlen
from libcpp cimport bool as cbool
from libcpp.optional cimport optional
from libcpp.vector cimport vector

cimport dlbridge.cpp as cpp
from dlbridge._array cimport (Array, _adopt_buffer, _as_copy_mode, _check_slot, _common_dtype, _copy_always,
                              _copy_mode, _copy_never, _element_value, _export_buffer, _fail, _object_release,
                              _own_exchange_api, _require, _scalar_once, _slot_wrap, _slot_wrap_like, _slot_zeros,
                              _stream_int64, _torch_state_checked, _type_exchange_api, _whole_view, wrap)
from dlbridge._backend cimport copy_state, copy_to, cuda_pointer_device, order_after_producer, ordered_import
from dlbridge._dlpack cimport call_dlpack, dlpack_device, import_capsule
from dlbridge._types cimport DType, Device, as_device, as_dtype, device_from_cpp, dtype_from_cpp

import dlbridge._array


# NumPy's ndarray read from its own fields, for from_dlpack and the argument
# converter (NumPy's C API is imported when the first ndarray arrives).
cdef extern from "dlbridge/numpy_arrays.hpp" namespace "dlb::python::numpy":
    cbool is_ndarray_type(PyTypeObject*) noexcept
    cbool read_ndarray_fields "dlb::python::numpy::read_fields"(PyObject*, cpp.borrowed_array&) noexcept


def _reads_ndarray_fields(x):
    """Whether from_dlpack(x) and array arguments take the route that reads
    x's own fields (x is an exact numpy.ndarray and NumPy's C API is
    imported), for the tests."""
    return is_ndarray_type(Py_TYPE(x))


# This module's copies use the backend's copy state (set_copy_threads()).
cpp.use_copy_state(copy_state()[0])
# dlbridge._array's release_object: the one whose owners the collector follows.
cdef cpp.release_fn _release_object = _object_release()
# dlbridge's own exchange table: an Array that keeps it is viewed, not exported.
cdef const cpp.DLPackExchangeAPI* _own_table = _own_exchange_api()


# ---------------------------------------------------------------------------
# Memory that Python objects own: the tensor on it holds the object and
# gives it back exactly once, by its release, which tensor.adopt runs itself
# where validation fails (a buffer export's: dlbridge._array's _adopt_buffer).

cdef cpp.tensor _adopt_object(owner, void* data, cpp.dtype t, cpp.device d, cpp.extents_t shape,
                              cpp.extents_t strides, bint readonly) except *:
    """A tensor on memory `owner` keeps alive; no strides mean C order."""
    Py_INCREF(owner)
    return cpp.tensor.adopt(data, t, d, shape, strides, readonly, _release_object, <void*>owner)


cdef inline Array _wrap_host_fields(owner, cpp.borrowed_array* fields):
    """An Array on the host memory `fields` describes (read from an object's
    own fields: read_ndarray_fields, _jax_buffer), kept alive by `owner`.
    from_dlpack(ndarray)'s whole path: adopt is called here, not through
    _adopt_object, whose returned tensor and error check made that path
    measurably slower (benchmarks/run.py --only exchange, its first row;
    docs/performance.md has the figures)."""
    cdef size_t ndim = fields.tensor.ndim
    Py_INCREF(owner)  # given back by release_object, exactly once (adopt runs it where validation fails)
    return wrap(cpp.tensor.adopt(fields.tensor.data, cpp.dtype(fields.tensor.dtype.code, fields.tensor.dtype.bits, 1),
                                 cpp.device(cpp.kDLCPU, 0), cpp.extents_t(fields.tensor.shape, ndim),
                                 cpp.extents_t(fields.tensor.strides, ndim), fields.readonly, _release_object,
                                 <void*>owner))


# ---------------------------------------------------------------------------
# The import pipeline. from_dlpack and asarray convert their arguments once,
# at the door, into an _import_request; try their routes in order, each an
# acquire step that answers with an Array sharing what it found (saying in
# the request whether that is a copy already) or None where it does not
# apply; and end in one finish, which moves, converts, copies and refuses.
# A new producer route is one function in a list.

cdef struct _import_request:
    const char* function  # who asked, for messages: "from_dlpack", "asarray"
    _copy_mode copy
    bint moves            # a target device was given ...
    cpp.device target     # ... this one
    bint converts         # a dtype was given (asarray) ...
    cpp.dtype dtype       # ... this one
    bint copied           # set by the route that answers: its Array is a copy already


ctypedef Array (*_import_route)(object, _import_request*)


cdef inline int _request(_import_request* r, const char* function, device, copy, dtype) except -1:
    """Fills `r` from the arguments of `function`, each converted once."""
    r.function = function
    r.copy = _as_copy_mode(copy)
    r.moves = device is not None
    if r.moves:
        r.target = (<Device>as_device(device)).value
    r.converts = dtype is not None
    if r.converts:
        r.dtype = (<DType>as_dtype(dtype)).value
    r.copied = False
    return 0


cdef inline Array _acquire(object x, const _import_route* routes, _import_request* r):
    """The Array of the first route that answers (routes ends with NULL), or None."""
    cdef Array a
    while routes[0] != NULL:
        a = routes[0](x, r)
        if a is not None:
            return a
        routes += 1
    return None


cdef inline bint _cpu_reads_in_place(cpp.device source, cpp.device target) noexcept:
    """Memory on `source` can serve a CPU target without a copy."""
    return target.type == cpp.kDLCPU and source.is_host_accessible()


cdef inline bint _must_move(cpp.device source, const _import_request* r) noexcept:
    """Data on `source` must be copied to reach the request's target device."""
    return r.moves and not (source == r.target) and not _cpu_reads_in_place(source, r.target)


cdef int _refuse_move(cpp.device source, const _import_request* r) except -1:
    raise ValueError(f"{r.function.decode()}: copy=False, but moving data from {device_from_cpp(source)} "
                     f"to {device_from_cpp(r.target)} needs a copy")


cdef inline Array _finish(Array a, const _import_request* r, object x):
    """a as the request asks: on its device, of its dtype, copied or not."""
    if r.moves or r.converts or r.copy == _copy_always or (r.copied and r.copy == _copy_never):
        return _finish_as_asked(a, r, x)
    return a  # what most calls ask: the array shared as it is


cdef Array _finish_as_asked(Array a, const _import_request* r, object x):
    cdef cpp.device where = a.t.get_device()
    cdef cpp.dtype element = a.t.type()
    if _must_move(where, r):
        if r.copy == _copy_never:
            _refuse_move(where, r)
        where = r.target
    if r.converts and not (r.dtype == element):
        if r.copy == _copy_never:
            raise ValueError(f"{r.function.decode()}: copy=False, but converting {dtype_from_cpp(element).name} "
                             f"to {dtype_from_cpp(r.dtype).name} needs a copy")
        if cpp.is_complex(element) and not cpp.is_complex(r.dtype):
            raise TypeError(f"{r.function.decode()}: cannot convert complex {dtype_from_cpp(element).name} "
                            f"to {dtype_from_cpp(r.dtype).name}")
        element = r.dtype
    if r.copied and r.copy == _copy_never:
        raise ValueError(f"{r.function.decode()}: copy=False, but {type(x).__name__} copied the data "
                         f"(its DLPack tensor has IS_COPIED set)")  # a's release frees the copy
    cdef cpp.tensor t
    if not (where == a.t.get_device() and element == a.t.type()) or (r.copy == _copy_always and not r.copied):
        t = copy_to(a.t, where, element)
        return wrap(t)
    return a


# ---------------------------------------------------------------------------
# from_dlpack and its routes

@cython.binding(False)
@cython.embedsignature.format("clinic")
def from_dlpack(x, /, *, device=None, copy=None):
    """An Array sharing the memory of any DLPack producer (array API).

    Reads an exact ``numpy.ndarray``'s own fields where DLPack can carry
    it, uses the DLPack C exchange API of ``type(x)`` when it has one
    (PyTorch does), and a JAX host array's buffer; otherwise asks
    ``x.__dlpack__`` for a DLPack 1.3 capsule, falling back to the legacy
    protocol for producers older than DLPack 1.0 (a producer with no
    ``__dlpack_device__`` is taken too: its tensor says where the data is).
    ``copy=True`` always copies (the result is writable), and dlbridge
    makes the copy: no producer is asked for one; ``copy=False`` raises
    ValueError if a copy would be needed, a tensor the producer flagged
    IS_COPIED included; ``device`` asks for the data on another device. An
    object with no ``__dlpack__`` is TypeError: ``asarray`` takes sequences,
    scalars and the other array protocols. GPU data ready on a stream being
    captured into a CUDA graph (inside ``torch.cuda.graph``) is refused
    (BufferError): import it before or after the capture.
    """
    cdef _import_request r
    _request(&r, b"from_dlpack", device, copy, None)
    return _finish(_acquire(x, _dlpack_routes, &r), &r, x)


# No producer is asked for a copy: copy=True takes what x shares and copies
# it here. A GPU producer's own copy would be made on its stream after it
# ordered ours (PyTorch's is), so ours would read it unwritten, and it would
# be freed without waiting for that read. The last route always answers.
cdef _import_route[5] _dlpack_routes = [_ndarray_fields, _exchange_table, _jax_host_buffer, _dlpack_capsule, NULL]


cdef Array _ndarray_fields(object x, _import_request* r):
    """An exact ndarray's own fields (numpy_arrays.hpp), no capsule; None
    where DLPack cannot carry the array as it is, so that __dlpack__ answers."""
    cdef cpp.borrowed_array fields
    if not is_ndarray_type(Py_TYPE(x)) or not read_ndarray_fields(<PyObject*>x, fields):
        return None
    return _wrap_host_fields(x, &fields)


cdef Array _exchange_table(object x, _import_request* r):
    """Through type(x)'s DLPack C exchange API, when it has one."""
    return from_exchange_api(x, &r.copied)


cdef Array _jax_host_buffer(object x, _import_request* r):
    """A JAX host array's buffer (see _jax_buffer), holding it; None where
    __dlpack__ must answer."""
    if not _is_jax_array(Py_TYPE(x)):
        return None
    cdef cpp.borrowed_array fields
    held = _jax_buffer(x, &fields)
    if held is None:
        return None
    return _wrap_host_fields(held, &fields)


cdef Array _dlpack_capsule(object x, _import_request* r):
    """x.__dlpack__'s capsule (or x itself, a raw capsule, deprecated)."""
    cdef optional[cpp.DLDevice] source
    cdef cpp.tensor t
    if PyCapsule_CheckExact(x):
        warnings.warn("from_dlpack: passing a raw DLPack capsule is deprecated; pass the object "
                      "that produced it (any object with __dlpack__)", DeprecationWarning, stacklevel=2)
        t = import_capsule(x, &r.copied)
        return wrap(t)
    # Asked first, as the protocol asks of consumers: a device DLPack does not
    # define is refused before __dlpack__ runs, and so is a move copy=False forbids.
    source = dlpack_device(x)
    cdef cpp.device said  # where __dlpack_device__ says the data is
    if source.has_value():
        said = cpp.device(source.value().device_type, source.value().device_id)
        if r.copy == _copy_never and _must_move(said, r):
            _refuse_move(said, r)
    # dlbridge's GPU work is ordered on the legacy default stream: CUDA
    # producers are told so (stream 1), so that they order their own
    # streams' work before it. One with no __dlpack_device__ is told no
    # stream, which DLPack reads as that same stream on CUDA and ROCm (the
    # producer may wait for more than it must). Only copy=False is passed on.
    t = import_capsule(call_dlpack(x, _legacy_stream if source.has_value() and said.is_stream_ordered() else None,
                                   False if r.copy == _copy_never else None), &r.copied)
    if source.has_value() and _must_move(t.get_device(), r) and not _must_move(said, r):
        raise BufferError(f"{r.function.decode()}: the producer returned data on {device_from_cpp(t.get_device())}, "
                          f"not on the requested {device_from_cpp(r.target)}")  # t's destructor releases it
    if t.get_device().type == cpp.kDLCUDAManaged:
        with nogil:  # the host may read it next: waits for the GPU
            order_after_producer(t, cpp.legacy_default_stream)
    return wrap(t)


cdef object _legacy_stream = cpp.legacy_default_stream


# JAX's host arrays, through the buffer protocol of jaxlib's ArrayImpl: it
# describes the same memory as JAX's __dlpack__ (read-only, kept alive, and
# kept from donation, until the buffer is released) in a fifth of the time.
# Where it cannot (bfloat16, float8 and the sub-byte types have no buffer
# format; sharded, deleted and non-CPU arrays have no buffer), __dlpack__
# gives the protocol's answer. Only this type is trusted so: another
# producer's buffer and DLPack answers may differ (a NumPy subclass's
# __dlpack__ may refuse what its buffer gives).
# Its name proves nothing (any class may take it): only the type jaxlib's
# module holds is trusted, and cached.
cdef PyTypeObject* _jax_array_type = NULL


cdef int _is_jax_array(PyTypeObject* tp) except -1:
    global _jax_array_type
    if tp == _jax_array_type:
        return True
    if _jax_array_type != NULL or strcmp(tp.tp_name, b"jaxlib._jax.ArrayImpl") != 0:
        return False
    jaxlib = sys.modules.get("jaxlib._jax")
    if jaxlib is None or getattr(jaxlib, "ArrayImpl", None) is not <object>tp:
        return False
    Py_INCREF(<object>tp)  # never released: the cached pointer stays a type's
    _jax_array_type = tp
    return True


cdef extern from "Python.h":
    # Failure is a fall-back here, not an error: no exception is raised for it.
    int _get_buffer "PyObject_GetBuffer"(object exporter, Py_buffer* view, int flags) noexcept


@cython.final
@cython.freelist(8)
@cython.auto_pickle(False)
cdef class _HeldBuffer:
    """A buffer export, released when this object dies: the owner of the
    memory of a JAX array taken through its buffer."""
    cdef Py_buffer view

    def __dealloc__(self):
        PyBuffer_Release(&self.view)  # nothing when the export failed (view.obj is NULL: zeroed at allocation)


@cython.cdivision(True)  # itemsize > 0 is checked first
cdef _HeldBuffer _jax_buffer(object x, cpp.borrowed_array* out):
    """x's buffer, held, with `out` describing it (shape in the buffer,
    strides in out.strides; not validated, no owner), or None where the
    buffer protocol cannot describe x as DLPack does."""
    cdef _HeldBuffer held = _HeldBuffer.__new__(_HeldBuffer)
    if _get_buffer(x, &held.view, PyBUF_RECORDS_RO) != 0:
        PyErr_Clear()
        return None
    cdef Py_buffer* b = &held.view
    cdef cpp.dtype t
    if (b.itemsize <= 0 or not _format_dtype(b.format, b.itemsize, &t) or b.ndim > cpp.max_ndim
            or b.suboffsets != NULL or (b.ndim and b.strides == NULL) or sizeof(Py_ssize_t) != sizeof(int64_t)):
        return None
    for i in range(b.ndim):
        if b.strides[i] % b.itemsize:
            return None
        out.strides[i] = b.strides[i] // b.itemsize
    out.tensor.data = b.buf
    out.tensor.device.device_type = cpp.kDLCPU
    out.tensor.device.device_id = 0
    out.tensor.ndim = b.ndim
    out.tensor.dtype.code = t.code
    out.tensor.dtype.bits = t.bits
    out.tensor.dtype.lanes = t.lanes
    out.tensor.shape = <int64_t*>b.shape
    out.tensor.strides = out.strides
    out.tensor.byte_offset = 0
    out.readonly = b.readonly
    return held


# ---------------------------------------------------------------------------
# asarray and its sources

@cython.binding(False)
@cython.embedsignature.format("clinic")
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An Array from any array-like (array API).

    Accepts, in this order: Arrays; DLPack producers (NumPy, PyTorch, JAX,
    CuPy, ..., and Array subclasses, through their ``__dlpack__``); ``__cuda_array_interface__`` (versions 0 to 3);
    ``__array_interface__``; the buffer protocol; nested sequences and Python
    scalars. Shares memory unless a copy is needed or asked for.
    """
    cdef _import_request r
    _request(&r, b"asarray", device, copy, dtype)
    return _finish(_acquire(obj, _asarray_routes, &r), &r, obj)


# Each interface is read once (a property may answer differently each time),
# and its dict copied (a dict subclass's methods may lie): what is checked is
# what is used. The last route always answers.
cdef _import_route[7] _asarray_routes = [_the_array, _dlpack_producer, _cuda_array_interface, _array_interface,
                                         _buffer_export, _nested_sequence, NULL]
# The argument converter's: asarray's that share memory (argument.hpp: it copies no sequence itself).
cdef _import_route[6] _sharing_routes = [_the_array, _dlpack_producer, _cuda_array_interface, _array_interface,
                                         _buffer_export, NULL]


cdef Array _shared_array(obj):
    """An Array sharing obj's memory through the first array protocol obj
    has (in asarray's order), or None where it has none (a sequence, a scalar)."""
    cdef _import_request r
    _request(&r, b"asarray", None, False, None)
    cdef Array a = _acquire(obj, _sharing_routes, &r)
    return None if a is None else _finish(a, &r, obj)


cdef Array _the_array(object obj, _import_request* r):
    if type(obj) is not Array:
        return None
    _require(<Array>obj)
    return <Array>obj


cdef Array _dlpack_producer(object obj, _import_request* r):
    """from_dlpack's routes, for an object whose type has __dlpack__."""
    if not hasattr(type(obj), "__dlpack__"):
        return None
    return _acquire(obj, _dlpack_routes, r)


cdef Array _cuda_array_interface(object obj, _import_request* r):
    interface = getattr(obj, "__cuda_array_interface__", _absent)
    if interface is _absent:
        return None
    return _from_cuda_array_interface(obj, interface)


cdef Array _array_interface(object obj, _import_request* r):
    """__array_interface__ with a (pointer, read_only) data tuple; one
    without leaves the data to the buffer protocol."""
    interface = getattr(obj, "__array_interface__", _absent)
    if interface is _absent:
        return None
    if isinstance(interface, dict):
        interface = dict(interface)
        if isinstance(interface.get("data"), tuple):
            return _from_array_interface(obj, interface)
    if not PyObject_CheckBuffer(obj) or isinstance(obj, str):
        raise BufferError("asarray: __array_interface__ without a (pointer, read_only) data tuple "
                          "needs the object to export the buffer protocol, and it does not")
    return None


cdef Array _buffer_export(object obj, _import_request* r):
    if not PyObject_CheckBuffer(obj) or isinstance(obj, str):
        return None
    return _from_buffer(obj)


cdef Array _nested_sequence(object obj, _import_request* r):
    """A new array of a nested sequence's (or a scalar's) values."""
    if r.copy == _copy_never:
        raise ValueError(f"{r.function.decode()}: copy=False, but a {type(obj).__name__} must be copied "
                         f"into an array")
    r.copied = True
    return _from_sequence(obj, dtype_from_cpp(r.dtype) if r.converts else None)


cdef object _absent = object()  # an attribute getattr did not find


# The fields of an array interface's dict (a copy), each read once; tuples
# are copied too (a tuple subclass may iterate differently each time).

cdef tuple _shape_tuple(dict interface, str name):
    shape = interface.get("shape")
    if isinstance(shape, tuple):
        shape = tuple(shape)
    if not isinstance(shape, tuple) or not all(type(e) is int for e in shape):
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}")
    for axis, e in enumerate(shape):
        if not -2**63 <= e < 2**63:
            raise BufferError(f"{name}: axis {axis}: expected an extent that fits in int64, got {e}")
    return shape


cdef tuple _data_field(dict interface, str name):
    """The (pointer, read_only) data tuple: the pointer an int in [0, 2**64),
    read_only a bool."""
    data = interface.get("data")
    if isinstance(data, tuple):
        data = tuple(data)
    if not (isinstance(data, tuple) and len(data) == 2 and type(data[0]) is int):
        raise TypeError(f"{name}: data must be a (pointer, read_only) tuple, got {data!r}")
    if not 0 <= data[0] < 2**64:
        raise BufferError(f"{name}: expected a data pointer in [0, 2**64), got {data[0]}")
    return data[0], bool(data[1])


cdef cpp.dtype _typestr_dtype(dict interface, str name) except *:
    typestr = interface.get("typestr")
    if isinstance(typestr, str):
        typestr = str.__str__(typestr)  # an exact str (a copy for a subclass, whose methods may lie)
    if not isinstance(typestr, str) or typestr[:1] not in ("<", ">", "|", "="):
        raise TypeError(f"{name}: typestr must be a NumPy typestr such as '<f4', got {typestr!r}")
    try:
        return as_dtype(typestr).value
    except TypeError:
        raise BufferError(f"{name}: typestr {typestr!r} is not a supported native-endian type") from None


cdef object _element_strides(dict interface, cpp.dtype t, Py_ssize_t ndim, str name):
    """Byte strides to element strides; None (C order) when absent or None."""
    strides = interface.get("strides")
    if strides is None:
        return None
    if isinstance(strides, tuple):
        strides = tuple(strides)
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


cdef cpp.tensor _adopt_interface(obj, dict interface, str name, bint cuda) except *:
    """A tensor on the memory an array interface describes, holding obj: on
    the device where the CUDA runtime finds the pointer (cuda), else the CPU."""
    shape = _shape_tuple(interface, name)
    cdef cpp.dtype t = _typestr_dtype(interface, name)
    address, readonly = _data_field(interface, name)
    cdef void* data = <void*><uintptr_t>address
    strides = _element_strides(interface, t, len(shape), name)
    cdef vector[int64_t] dims = shape
    cdef vector[int64_t] steps
    if strides is not None:
        steps = strides
    return _adopt_object(obj, data, t, cuda_pointer_device(data) if cuda else cpp.device(cpp.kDLCPU, 0),
                         cpp.extents_t(dims.data(), dims.size()), cpp.extents_t(steps.data(), steps.size()),
                         readonly)


cdef Array _from_cuda_array_interface(obj, interface):
    cdef str name = "__cuda_array_interface__"
    if not isinstance(interface, dict):
        raise TypeError(f"{name} must be a dict, got {type(interface).__name__}")
    interface = dict(interface)
    version = interface.get("version")
    if type(version) is not int or not 0 <= version <= 3:
        raise ValueError(f"{name}: expected version 0 to 3, got {version!r}")
    mask = interface.get("mask")
    if mask is not None:
        raise BufferError(f"{name}: masked arrays are not supported (mask is {type(mask).__name__}, expected None)")
    stream = interface.get("stream")
    cdef cpp.cuda_stream producer = cpp.legacy_default_stream
    if stream is not None:
        if type(stream) is not int:
            raise ValueError(f"{name}: stream must be None or a positive int, got {stream!r}")
        try:
            producer = cpp.producer_stream(_stream_int64(stream))
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    cdef cpp.tensor out = _adopt_interface(obj, interface, name, True)
    if out.size() and stream is not None:
        # The producer's work may still be queued on its stream: the legacy
        # default stream waits for it (the host too, for pinned and managed
        # memory). No stream: the producer says the data is ready.
        with nogil:
            order_after_producer(out, producer)
    return wrap(out)


cdef Array _from_array_interface(obj, dict interface):
    cdef str name = "__array_interface__"
    version = interface.get("version", 3)
    if version not in (2, 3):
        raise ValueError(f"{name}: expected version 2 or 3, got {version!r}")
    if interface.get("mask") is not None:
        raise BufferError(f"{name}: masked arrays are not supported (mask must be None)")
    cdef cpp.tensor out = _adopt_interface(obj, interface, name, False)
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
# _buffer_dtype's answers, remembered for formats of up to 7 characters (a
# linear search: buffers use a handful of formats).
cdef struct _KnownFormat:
    char format[8]
    cpp.dtype type

cdef _KnownFormat[16] _known_formats
cdef int _known_format_count = 0


cdef bint _format_dtype(const char* format, Py_ssize_t itemsize, cpp.dtype* out) except -1:
    """_buffer_dtype of a buffer's format (NULL: bytes) into `out`: True, or
    False where it raises."""
    global _known_format_count
    if format == NULL:
        format = b"B"
    cdef int i
    for i in range(_known_format_count):
        if strcmp(_known_formats[i].format, format) == 0:
            out[0] = _known_formats[i].type
            return out[0].itemsize() == <size_t>itemsize
    try:
        out[0] = (<DType>_buffer_dtype(format.decode("ascii", "replace"), itemsize)).value
    except BufferError:
        return False
    if strlen(format) < 8 and _known_format_count < 16:
        strcpy(_known_formats[_known_format_count].format, format)
        _known_formats[_known_format_count].type = out[0]
        _known_format_count += 1
    return True


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
    cdef Py_buffer* view = _export_buffer(obj, PyBUF_RECORDS_RO)
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
        cpp.release_buffer(view)
        raise
    out = _adopt_buffer(view, (<DType>dt).value, cpp.extents_t(dims.data(), dims.size()),
                        cpp.extents_t(steps.data(), steps.size()), view.readonly)
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
        leaves.append(_scalar_once(obj))


cdef Array _from_sequence(obj, DType want):
    shape = []
    leaves = []
    _discover(obj, shape, 0, leaves)
    cdef DType dt = want
    cdef Py_ssize_t i
    if dt is None:
        dt = as_dtype("float64") if not leaves else _common_dtype(leaves)
    cdef vector[int64_t] dims = shape
    cdef cpp.tensor t = cpp.tensor.empty(cpp.extents_t(dims.data(), dims.size()), dt.value)
    # _discover found one leaf per element; the writes are bounded by the
    # array's own size all the same.
    if len(leaves) != t.size():
        raise ValueError(f"asarray: ragged nested sequence: {len(leaves)} scalars for shape {tuple(shape)}")
    cdef bint packed = dt.value.is_subbyte()
    cdef int64_t itemsize = dt.value.itemsize()
    cdef char* base = <char*>t.data()
    if packed:
        memset(base, 0, t.nbytes())
    for i in range(len(leaves)):
        cpp.store(dt.value, base if packed else base + i * itemsize, _element_value(dt.value, leaves[i]),
                  i if packed else 0)
    return wrap(t)


# ---------------------------------------------------------------------------
# Imports through a producer type's DLPack C exchange table (read by
# dlbridge._array: _type_exchange_api)

cdef Array from_exchange_api(object x, bint* copied):
    """from_dlpack(x) through the exchange table of type(x): an Array, or None
    when the type has no DLPack 1.x table or its table fails to export x.
    `copied`: set where the table says it copied the data (IS_COPIED)."""
    cdef const cpp.DLPackExchangeAPI* api = _type_exchange_api(x)
    if api == NULL:
        return None
    if api == _own_table and isinstance(x, Array):
        # An Array (or a subclass keeping dlbridge's table): a view of it, no
        # export in between, so that the collector can follow what holds the memory.
        return _whole_view(<Array>x)
    return _import_through(api, x, copied)


cdef Array _import_through(const cpp.DLPackExchangeAPI* api, object x, bint* copied):
    # Apart from from_exchange_api, so that producers with no table do not
    # pay for this function's C++ locals.
    _torch_state_checked(x)
    cdef cpp.DLManagedTensorVersioned* m = NULL
    try:
        _check_slot(api.managed_tensor_from_py_object_no_sync(<void*>x, &m), x,
                    "managed_tensor_from_py_object_no_sync")
    except Exception:
        # The table is a fast path; where it fails, __dlpack__ gives the
        # answer, in the array API's terms (PyTorch's table turns BufferError
        # into RuntimeError and appends a C++ backtrace).
        return None
    if m == NULL:
        return None
    # The slot takes no copy argument: a producer may copy (and says so with
    # IS_COPIED), which copy=False must not let pass (the import's finish).
    copied[0] = (m.flags & cpp.dlpack_flag_is_copied) != 0
    cdef cpp.tensor t = cpp.tensor.import_(m, cpp.release_versioned)
    # The slot does not synchronise: the data is ready in the order of the
    # producer's current work stream, which the legacy default stream (where
    # dlbridge's arrays are ready) must wait for, and the host too for
    # managed memory; that stream waits for dlbridge's work when the Array
    # lets the memory go (dlbridge/cuda/arrays.hpp: ordered_import). NULL names the legacy stream.
    # Refused (BufferError) while that stream is being captured into a CUDA graph
    # (inside torch.cuda.graph): the data exists only once the graph runs.
    cdef cpp.device d = t.get_device()
    cdef void* stream = NULL
    if d.is_stream_ordered():
        _check_slot(api.current_work_stream(d.type, d.id, &stream), x, "current_work_stream")
        with nogil:  # waits for the producer where the host may read next (pinned, managed)
            ordered_import(t, <cpp.cuda_stream>stream if stream != NULL else cpp.legacy_default_stream, &t)
    return wrap(t)


include "_arguments.pxi"
