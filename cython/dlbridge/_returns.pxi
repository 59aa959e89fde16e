# Included by _array.pyx; uses from it: Array, wrap; lend, empty_on, fill_on_device (dlbridge._backend); _exchange_api,
# _type_exchange_api, _check_slot, _fail (_exchange.pxi); _zero_bits (_creation.pxi).
# Arrays made in C++ returned to Python: wrap_like, and the argument API's
# wrap and wrap_like slots behind dlbridge/python/returns.hpp (to_python,
# to_python_like), which dlbridge._importers publishes (_arguments.pxi).
import sys
import weakref

from cpython.exc cimport PyErr_Occurred
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport int32_t, int64_t
from libcpp cimport bool as cbool

cimport dlbridge.cpp as cpp
from dlbridge._types cimport device_from_cpp, dtype_from_cpp

cdef extern from "dlbridge/numpy_arrays.hpp" namespace "dlb::python::numpy":
    cbool is_ndarray_subtype(PyTypeObject*) noexcept
    int type_num_of(cpp.DLDataType) noexcept
    object new_ndarray(const cpp.tensor&, int, PyObject*)  # a new reference, or NULL with an exception set


cdef str _currency(like):
    """How like's type is named in errors: numpy.ndarray, torch.Tensor."""
    kind = type(like)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__


cdef object _as_ndarray(cpp.tensor& t, like):
    """t (moved) as a base-class ndarray on its memory, whose base is the
    Array holding it."""
    cdef cpp.device d = t.get_device()
    if d.type != cpp.kDLCPU:
        raise BufferError(f"cannot return an array on {device_from_cpp(d)} like a {_currency(like)}: "
                          f"NumPy holds host memory only")
    cdef int type_num = type_num_of(t.dltensor().dtype)
    if type_num < 0:
        raise BufferError(f"cannot return a {dtype_from_cpp(t.type()).name} array like a {_currency(like)}: "
                          f"NumPy has no such dtype")
    cdef Array owner = wrap(t)
    Py_INCREF(owner)  # new_ndarray steals it
    return new_ndarray(owner.t, type_num, <PyObject*>owner)


cdef object _through_table(const cpp.DLPackExchangeAPI* api, cpp.tensor& t, like):
    """t (moved) as an object of like's library, made by its exchange table."""
    if t.readonly():
        raise BufferError(f"cannot return a read-only array like a {_currency(like)}: its library's arrays are "
                          f"always writable (return it like a numpy.ndarray or a dlbridge.Array)")
    cdef cpp.tensor held
    held.swap(t)
    # The slot does not synchronise: the consumer's current work stream waits
    # for dlbridge's legacy default stream, where the data is ready.
    cdef cpp.device d = held.get_device()
    cdef void* stream = NULL
    if d.is_stream_ordered():
        _check_slot(api.current_work_stream(d.type, d.id, &stream), like, "current_work_stream")
        held = lend(held, <cpp.cuda_stream>stream if stream != NULL else cpp.legacy_default_stream)
    cdef cpp.DLManagedTensorVersioned* m = held.export_versioned(0)
    cdef void* out = NULL
    # The slot owns m, even when it fails.
    _check_slot(api.managed_tensor_to_py_object_no_sync(m, &out), like, "managed_tensor_to_py_object_no_sync")
    if out == NULL:
        raise SystemError(f"the DLPack exchange API of {type(like).__name__}: managed_tensor_to_py_object_no_sync "
                          f"succeeded without an object")
    result = <object>out
    Py_DECREF(result)  # the slot's new reference, which `result` now holds
    return result


# Each type's from_dlpack found through its modules (or None), found once.
cdef object _module_from_dlpack_by_type = weakref.WeakKeyDictionary()


cdef object _library_from_dlpack(like):
    """The from_dlpack of like's library, or None: its array API namespace's
    (__array_namespace__, asked of `like` itself each time: instances of one
    type may belong to different namespaces), else that of the nearest module
    of its type's that has one (_module_from_dlpack_by_type)."""
    namespace = getattr(like, "__array_namespace__", None)
    if namespace is not None:
        found = getattr(namespace(), "from_dlpack", None)
        if found is not None:
            return found
    kind = type(like)
    try:
        return _module_from_dlpack_by_type[kind]
    except KeyError:
        pass
    found = None
    module = getattr(kind, "__module__", None)
    while found is None and isinstance(module, str) and module:
        found = getattr(sys.modules.get(module), "from_dlpack", None)
        module = module.rpartition(".")[0]
    _module_from_dlpack_by_type[kind] = found
    return found


cdef int _require_tensor(const cpp.tensor* t, str function) except -1:
    if t == NULL:
        raise ValueError(f"{function}: expected a dlb::tensor, got NULL")
    if not t[0].has_value():
        raise ValueError(f"{function}: expected a dlb::tensor holding an array, got an empty one "
                         f"(default-constructed or moved from)")
    return 0


cdef object wrap_like(cpp.tensor& t, object like):
    """t (moved) in the currency of `like`: see _array.pxd."""
    _require_tensor(&t, "wrap_like")
    if is_ndarray_subtype(Py_TYPE(like)):
        return _as_ndarray(t, like)
    if isinstance(like, Array):
        return wrap(t)
    cdef const cpp.DLPackExchangeAPI* api = _type_exchange_api(like)
    if api != NULL and api != &_exchange_api and api.managed_tensor_to_py_object_no_sync != NULL:
        return _through_table(api, t, like)
    from_dlpack = _library_from_dlpack(like)
    if from_dlpack is None:
        return wrap(t)
    return from_dlpack(wrap(t))


cdef int _slot_zeros(cpp.device where, const int64_t* shape, int32_t ndim, cpp.dtype type,
                     cpp.tensor* out) noexcept:
    cdef cpp.scalar zero
    try:
        if out == NULL:
            raise ValueError("zeros_like: expected a dlb::tensor to fill, got out=NULL")
        try:
            zero = _zero_bits(type)
            with nogil:  # waits for the GPU in pinned and managed memory
                empty_on(where, cpp.extents_t(shape, ndim), type, out)
                fill_on_device(out[0], zero)
        except (RuntimeError, ValueError) as e:
            raise BufferError(f"zeros_like: cannot allocate memory on {device_from_cpp(where)}: {e}") from None
        return 0
    except BaseException as e:
        return _fail(e)


cdef void _drop(cpp.tensor* t) noexcept:
    """Releases *t (the slots own it, failing too)."""
    cdef cpp.tensor dropped
    if t != NULL:
        dropped.swap(t[0])


cdef PyObject* _slot_wrap(cpp.tensor* t) noexcept:
    try:
        _require_tensor(t, "to_python")
        a = wrap(t[0])
        Py_INCREF(a)  # the caller's new reference
        return <PyObject*>a
    except BaseException as e:
        _drop(t)
        _fail(e)
        return NULL


cdef PyObject* _slot_wrap_like(cpp.tensor* t, PyObject* like) noexcept:
    try:
        if like == NULL:
            if PyErr_Occurred() != NULL:
                _drop(t)
                return NULL  # like came from a call that failed: its error stands
            raise ValueError("to_python_like: expected an object to return the array like, got NULL")
        _require_tensor(t, "to_python_like")
        out = wrap_like(t[0], <object>like)
        Py_INCREF(out)
        return <PyObject*>out
    except BaseException as e:
        _drop(t)
        _fail(e)
        return NULL
