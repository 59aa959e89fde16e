# Included by _array.pyx; uses from it: Array, wrap, _view, _require; empty_on (dlbridge._backend).
# The DLPack 1.3 C exchange API: dlbridge's own table, published on Array as
# __dlpack_c_exchange_api__ (a capsule) and __c_dlpack_exchange_api__ (the
# DLPack 1.2 int form), and the reading of a producer type's table, which
# dlbridge._importers imports through (from_exchange_api).
#
# Slots report failure by returning -1 with a Python exception set (the
# allocator through its SetError callback instead); none lets a Python or C++
# exception escape.
from cpython.exc cimport PyErr_Occurred, PyErr_SetObject
from cpython.long cimport PyLong_AsVoidPtr, PyLong_CheckExact, PyLong_FromVoidPtr
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport int32_t, uintptr_t
from libcpp.optional cimport optional

cimport dlbridge.cpp as cpp


cdef extern from "Python.h":
    # The attribute lookup type(x).name does, without building an
    # AttributeError on a miss: a borrowed reference or NULL.
    PyObject* _PyType_Lookup(PyTypeObject* type, PyObject* name)

    # C descriptors, called without a bound method or a second lookup
    # (_torch_state_checked).
    ctypedef PyObject* (*_getter "getter")(PyObject*, void*)
    ctypedef struct PyGetSetDef:
        _getter get
        void* closure
    ctypedef struct PyDescrObject:
        PyTypeObject* d_type
    ctypedef struct PyGetSetDescrObject:
        PyDescrObject d_common
        PyGetSetDef* d_getset
    PyTypeObject PyGetSetDescr_Type
    PyTypeObject PyMethodDescr_Type
    PyObject* PyObject_Vectorcall(PyObject* callable, PyObject** args, size_t nargsf, PyObject* kwnames)
    int PyObject_TypeCheck(object, PyTypeObject*)


# dlbridge's work stream on a CUDA device: the array rule of dlbridge/cuda/arrays.hpp makes
# every array ready in the order of the device's legacy default stream. It is
# reported as cudaStreamLegacy, the handle 0x1, not as NULL: NULL means the
# per-thread default stream in code built with --default-stream per-thread,
# while 0x1 names the legacy stream in any build (it is DLPack's stream 1).
cdef void* _legacy_default_stream = <void*>cpp.legacy_default_stream


cdef int _fail(error) noexcept:
    """Makes `error` this thread's pending Python exception; returns -1."""
    PyErr_SetObject(type(error), error)
    return -1


cdef Array _array_argument(void* py_object, str slot):
    if py_object == NULL:
        raise ValueError(f"{slot}: expected a dlbridge.Array, got NULL")
    obj = <object>py_object
    if not isinstance(obj, Array):
        raise TypeError(f"{slot}: expected a dlbridge.Array, got {type(obj).__name__}")
    _require(<Array>obj)
    return <Array>obj


# -- the five slots of dlbridge's table ---------------------------------------

cdef cpp.DLTensor _prototype_fields(const cpp.DLTensor* prototype) except *:
    """The fields of an allocator's prototype that it may read, checked."""
    if prototype == NULL:
        raise ValueError("managed_tensor_allocator: expected a prototype DLTensor, got NULL")
    # Only dtype, ndim, shape and device count. The one validation routine
    # checks them when data points somewhere (the prototype itself) and the
    # strides are left out (C order).
    cdef cpp.DLTensor fields = prototype[0]
    fields.data = <void*>prototype
    fields.strides = NULL
    fields.byte_offset = 0
    cdef optional[cpp.import_error] error = cpp.validate(fields)
    if error.has_value():
        raise ValueError(f"managed_tensor_allocator: prototype: {error.value().message().decode()}")
    if cpp.is_float4_pairs(cpp.dtype(fields.dtype)):  # valid, but an allocation has DLPack's spelling only
        raise ValueError("managed_tensor_allocator: prototype: float4_e2m1fn_x2 (code 17, bits 4, lanes 2) is "
                         "not allocated; ask for float4_e2m1fn (lanes 1) with the last extent doubled")
    return fields


# GPU memory comes from dlbridge's pool, allocated on the device's legacy
# default stream: it is ready in the order of the stream _slot_current_work_stream
# names (the legacy one), and the deleter frees it there, as PyTorch's
# allocator slot works on its current stream. A caller working on a
# non-blocking stream must order that stream after the legacy one before
# using the memory, and the legacy stream after its own work before calling
# the deleter (docs/cuda-backend.md); the slot takes no stream to do it for
# the caller, and a host wait per allocation is what the table exists to avoid.
cdef int _slot_allocate_with_gil(cpp.DLTensor* prototype, cpp.DLManagedTensorVersioned** out, void* error_ctx,
                            cpp.DLPackSetError set_error) noexcept:
    cdef cpp.DLTensor fields
    cdef cpp.tensor t
    try:
        if out == NULL:
            raise ValueError("managed_tensor_allocator: expected somewhere to put the tensor, got out=NULL")
        out[0] = NULL
        fields = _prototype_fields(prototype)
        with nogil:  # a GPU out of memory waits for the GPU before its one retry
            empty_on(cpp.device(fields.device.device_type, fields.device.device_id),
                     cpp.extents_t(fields.shape, fields.ndim),
                     cpp.dtype(fields.dtype.code, fields.dtype.bits, fields.dtype.lanes), &t)
        out[0] = t.export_versioned(0)
        return 0
    except BaseException as e:
        error = e
    if set_error == NULL:
        return _fail(error)
    set_error(error_ctx, type(error).__name__.encode(), str(error).encode("utf-8", "replace"))
    return -1


cdef int _slot_allocate(cpp.DLTensor* prototype, cpp.DLManagedTensorVersioned** out, void* error_ctx,
                   cpp.DLPackSetError set_error) noexcept nogil:
    with gil:
        return _slot_allocate_with_gil(prototype, out, error_ctx, set_error)


cdef int _slot_managed_from_object(void* py_object, cpp.DLManagedTensorVersioned** out) noexcept:
    cdef Array a
    try:
        a = _array_argument(py_object, "managed_tensor_from_py_object_no_sync")
        if out == NULL:
            raise ValueError("managed_tensor_from_py_object_no_sync: expected somewhere to put the tensor, "
                             "got out=NULL")
        out[0] = a.t.export_versioned(0)  # READ_ONLY when the array is read-only
        return 0
    except BaseException as e:
        return _fail(e)


cdef int _slot_managed_to_object(cpp.DLManagedTensorVersioned* tensor, void** out_py_object) noexcept:
    cdef cpp.tensor t
    try:
        if tensor == NULL:
            raise ValueError("managed_tensor_to_py_object_no_sync: expected a DLManagedTensorVersioned, got NULL")
        if out_py_object == NULL:
            cpp.release_versioned(tensor)  # the tensor was handed over: release it even so
            raise ValueError("managed_tensor_to_py_object_no_sync: expected somewhere to put the array, "
                             "got out_py_object=NULL (the tensor was released)")
        t = cpp.tensor.import_(tensor, cpp.release_versioned)  # on failure its deleter has run
        a = wrap(t)
        Py_INCREF(a)  # the caller's new reference
        out_py_object[0] = <void*>a
        return 0
    except BaseException as e:
        return _fail(e)


cdef int _slot_dltensor_from_object(void* py_object, cpp.DLTensor* out) noexcept:
    cdef Array a
    try:
        a = _array_argument(py_object, "dltensor_from_py_object_no_sync")
        if out == NULL:
            raise ValueError("dltensor_from_py_object_no_sync: expected a DLTensor to fill, got out=NULL")
        if a.t.readonly():
            # As with legacy capsules: a bare DLTensor cannot say read-only.
            raise BufferError("dltensor_from_py_object_no_sync: a read-only array cannot be described by a "
                              "bare DLTensor (it has no read-only flag); use "
                              "managed_tensor_from_py_object_no_sync, which sets READ_ONLY")
        out[0] = a.t.dltensor()  # shape and strides point into the array
        if a.t.size() == 0:
            out.data = NULL  # as in every dlbridge export
        return 0
    except BaseException as e:
        return _fail(e)


cdef int _slot_current_work_stream(cpp.DLDeviceType device_type, int32_t device_id,
                              void** out_current_stream) noexcept nogil:
    if out_current_stream != NULL and cpp.is_dlpack_device_type(device_type) and device_id >= 0:
        if cpp.device(device_type, device_id).is_stream_ordered():
            out_current_stream[0] = _legacy_default_stream
        else:
            out_current_stream[0] = NULL  # no stream orders this memory
        return 0
    with gil:
        if out_current_stream == NULL:
            return _fail(ValueError("current_work_stream: expected somewhere to put the stream, "
                                    "got out_current_stream=NULL"))
        if device_id < 0:
            return _fail(ValueError(f"current_work_stream: expected device_id >= 0, got {device_id}"))
        return _fail(ValueError(f"current_work_stream: expected a DLPack device type, "
                                f"got {<int>device_type}"))


cdef cpp.DLPackExchangeAPI _exchange_api
_exchange_api.header.version.major = cpp.dlpack_major_version
_exchange_api.header.version.minor = cpp.dlpack_minor_version
_exchange_api.header.prev_api = NULL
_exchange_api.managed_tensor_allocator = _slot_allocate
_exchange_api.managed_tensor_from_py_object_no_sync = _slot_managed_from_object
_exchange_api.managed_tensor_to_py_object_no_sync = _slot_managed_to_object
_exchange_api.dltensor_from_py_object_no_sync = _slot_dltensor_from_object
_exchange_api.current_work_stream = _slot_current_work_stream


# The table as Array publishes it. Functions, not module globals: the Array
# class reads them as its body runs, wherever this file is included (the
# table's address is all they read). The table lives as long as the module,
# which Python never unloads.
cdef object _exchange_api_capsule():
    return PyCapsule_New(&_exchange_api, cpp.capsule_name_exchange_api, NULL)


cdef object _exchange_api_address():
    return PyLong_FromVoidPtr(&_exchange_api)


cdef const cpp.DLPackExchangeAPI* _own_exchange_api() noexcept:
    return &_exchange_api


# -- a producer type's table -------------------------------------------------

cdef str _api_attribute = "__dlpack_c_exchange_api__"  # identifier-like literals are interned
cdef str _int_api_attribute = "__c_dlpack_exchange_api__"


cdef str _dunder_dlpack = "__dlpack__"
# Addresses below this cannot hold a table (the first page is never mapped),
# and a table is pointer-aligned.
cdef uintptr_t _lowest_table_address = 4096
# prev_api steps walked before a chain is taken to loop.
cdef int _max_prev_api_steps = 16


cdef const cpp.DLPackExchangeAPIHeader* _table_header(object kind, str attribute, object value) except NULL:
    """The table a __dlpack_c_exchange_api__ capsule or a __c_dlpack_exchange_api__
    int points at; BufferError for any other value (None is handled before)."""
    cdef uintptr_t address = 0
    if attribute == _api_attribute and PyCapsule_IsValid(value, cpp.capsule_name_exchange_api):
        address = <uintptr_t>PyCapsule_GetPointer(value, cpp.capsule_name_exchange_api)
    elif attribute == _int_api_attribute and PyLong_CheckExact(value) and 0 <= value < 2**64:
        address = <uintptr_t>PyLong_AsVoidPtr(value)
    else:
        expected = ("a PyCapsule named 'dlpack_exchange_api'" if attribute == _api_attribute
                    else "an int holding its address")
        raise BufferError(f"from_dlpack: {kind.__name__}.{attribute} must be {expected} or None, got {value!r}")
    if address < _lowest_table_address or address % sizeof(void*):
        raise BufferError(f"from_dlpack: {kind.__name__}.{attribute} points at {address:#x}, which cannot "
                          f"hold a DLPack exchange table")
    return <const cpp.DLPackExchangeAPIHeader*>address


cdef const cpp.DLPackExchangeAPI* _read_exchange_api(object kind) except? NULL:
    """The DLPack 1.x exchange table of type `kind`, or NULL when it has none
    or when its __dlpack__ overrides the one the table belongs to (the table
    is found on a base of the class defining __dlpack__). BufferError for a
    table that is malformed."""
    cdef Py_ssize_t table_at = -1, dlpack_at = -1
    for i, base in enumerate(kind.__mro__):
        namespace = base.__dict__
        if dlpack_at < 0 and _dunder_dlpack in namespace:
            dlpack_at = i
        if table_at < 0 and (_api_attribute in namespace or _int_api_attribute in namespace):
            table_at = i
    if table_at < 0 or dlpack_at < table_at:
        return NULL
    cdef const cpp.DLPackExchangeAPIHeader* header = NULL
    for attribute in (_api_attribute, _int_api_attribute):
        value = getattr(kind, attribute, None)
        if value is not None:
            header = _table_header(kind, attribute, value)
            break
    if header == NULL:
        return NULL
    # A table of a newer major version may chain to the 1.x one we read.
    cdef int steps = 0
    while header.version.major != cpp.dlpack_major_version:
        header = header.prev_api
        steps += 1
        if header == NULL:
            return NULL  # no 1.x table: __dlpack__ it is
        if steps > _max_prev_api_steps:
            raise BufferError(f"from_dlpack: the prev_api chain of {kind.__name__}'s DLPack exchange table "
                              f"reaches no version 1 table in {_max_prev_api_steps} steps (it loops or is "
                              f"too long)")
        if <uintptr_t>header < _lowest_table_address or <uintptr_t>header % sizeof(void*):
            raise BufferError(f"from_dlpack: the prev_api chain of {kind.__name__}'s DLPack exchange table "
                              f"points at {<uintptr_t>header:#x}, which cannot hold a table")
    cdef const cpp.DLPackExchangeAPI* api = <const cpp.DLPackExchangeAPI*>header
    # DLPack 1.3: only dltensor_from_py_object_no_sync may be NULL.
    for slot, missing in (("managed_tensor_allocator", api.managed_tensor_allocator == NULL),
                          ("managed_tensor_from_py_object_no_sync", api.managed_tensor_from_py_object_no_sync == NULL),
                          ("managed_tensor_to_py_object_no_sync", api.managed_tensor_to_py_object_no_sync == NULL),
                          ("current_work_stream", api.current_work_stream == NULL)):
        if missing:
            raise BufferError(f"from_dlpack: the DLPack exchange table of {kind.__name__} has no {slot} "
                              f"(NULL); only dltensor_from_py_object_no_sync may be NULL")
    return api


# The per-type cache of _read_exchange_api, direct-mapped on the type's
# version tag. CPython gives a type a new tag whenever it or a base changes,
# never reuses one, and leaves it 0 until it has one (_PyType_Lookup assigns
# it), so an entry whose type still has the entry's tag is still right.
# Tables that fail to read are not cached: their error is raised each time.
cdef struct _CachedTable:
    PyTypeObject* type
    unsigned int tag
    const cpp.DLPackExchangeAPI* api

cdef _CachedTable[8] _table_cache


cdef const cpp.DLPackExchangeAPI* _type_exchange_api(object x) except? NULL:
    """The DLPack 1.x exchange table of type(x) (see _read_exchange_api),
    cached per type."""
    cdef PyTypeObject* tp = Py_TYPE(x)
    cdef _CachedTable* entry = &_table_cache[tp.tp_version_tag % 8]
    if entry.type == tp and entry.tag == tp.tp_version_tag and entry.tag != 0:
        return entry.api
    _PyType_Lookup(tp, <PyObject*>_dunder_dlpack)  # gives the type a version tag if it has none
    cdef const cpp.DLPackExchangeAPI* api = _read_exchange_api(type(x))
    if tp.tp_version_tag != 0:
        entry = &_table_cache[tp.tp_version_tag % 8]
        entry.type = tp
        entry.tag = tp.tp_version_tag
        entry.api = api
    return api


# PyTorch's table (2.13) exports tensors whose state DLPack cannot carry, which
# its __dlpack__ refuses: one that requires grad, and one with a pending
# conjugation or negation (lazy views such as t.conj() and its .imag), whose
# raw memory holds other values than the tensor. They are refused here too,
# for any type with PyTorch's requires_grad, is_conj and is_neg.
cdef str _requires_grad = "requires_grad"
cdef str _is_conj = "is_conj"
cdef str _is_neg = "is_neg"


cdef bint _truth_of(PyObject* value) except -1:
    """bool(value) of a new reference (NULL: the call that made it failed),
    released."""
    if value == NULL:
        return -1
    answer = <object>value
    Py_DECREF(answer)  # the new reference; `answer` holds its own
    return bool(answer)


cdef bint _state_attribute(object x, object found, str name) except -1:
    """bool(x.<name>), where `found` is type(x)'s attribute: a C getter is
    called directly (it is a data descriptor, so this is what Python does),
    once x is of the type that defined it."""
    cdef PyGetSetDescrObject* descriptor = <PyGetSetDescrObject*>found
    if (Py_TYPE(found) == &PyGetSetDescr_Type and descriptor.d_getset.get != NULL
            and PyObject_TypeCheck(x, descriptor.d_common.d_type)):
        return _truth_of(descriptor.d_getset.get(<PyObject*>x, descriptor.d_getset.closure))
    return bool(getattr(x, name))


cdef bint _state_method(object x, object found, str name) except -1:
    """bool(x.<name>()), where `found` is type(x)'s attribute: a C method
    is called with x, without a bound method (it checks x's type itself)."""
    cdef PyObject* self = <PyObject*>x
    if Py_TYPE(found) == &PyMethodDescr_Type:
        return _truth_of(PyObject_Vectorcall(<PyObject*>found, &self, 1, NULL))
    return bool(getattr(x, name)())


cdef object _type_attribute(PyTypeObject* tp, str name):
    """type's attribute `name` as a strong reference (code run by a check
    could take it off the type), or None."""
    cdef PyObject* found = _PyType_Lookup(tp, <PyObject*>name)
    return None if found == NULL else <object>found


cdef int _torch_state_checked(object x, bint complex_data=True, bint float_data=True) except -1:
    """1 for a tensor of PyTorch's kind whose state DLPack carries (BufferError
    where it cannot), 0 for any other type. Where the caller knows the dtype,
    only complex data can have its conjugate bit set, and only floating or
    complex data can require grad (PyTorch refuses it of any other dtype)."""
    cdef PyTypeObject* tp = Py_TYPE(x)
    requires_grad = _type_attribute(tp, _requires_grad)
    is_conj = _type_attribute(tp, _is_conj)
    is_neg = _type_attribute(tp, _is_neg)
    if requires_grad is None or is_conj is None or is_neg is None:
        return 0
    if float_data and _state_attribute(x, requires_grad, _requires_grad):
        raise BufferError(f"from_dlpack: the {type(x).__name__} requires gradient, which DLPack cannot express; "
                          f"call .detach() first")
    if complex_data and _state_method(x, is_conj, _is_conj):
        raise BufferError(f"from_dlpack: the {type(x).__name__} has its conjugate bit set, which DLPack cannot "
                          f"express; call .resolve_conj() first")
    if _state_method(x, is_neg, _is_neg):
        raise BufferError(f"from_dlpack: the {type(x).__name__} has its negative bit set, which DLPack cannot "
                          f"express; call .resolve_neg() first")
    return 1


cdef int _check_slot(int status, object x, str slot) except -1:
    if status == 0:
        return 0
    if PyErr_Occurred() == NULL:
        raise SystemError(f"the DLPack exchange API of {type(x).__name__}: {slot} failed "
                          f"(returned {status}) without setting an exception")
    return -1


cdef Array _whole_view(Array a):
    """A new Array on all of a's memory."""
    _require(a)
    cdef cpp.tensor t = a.t
    return _view(a, t)
