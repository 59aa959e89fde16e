# The argument converter (included by _array.pyx, after _exchange.pxi and
# _importers.pxi): any framework's array as a validated DLTensor borrowed for
# the length of a call, for dlbridge/argument.hpp (array_argument<View>),
# published as the capsule _argument_api.
from cpython.exc cimport PyErr_Clear
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE

cdef extern from "dlbridge/numpy_arrays.hpp" namespace "dlb::python::numpy":
    cbool is_ndarray_type(PyTypeObject*) noexcept
    cbool borrow_ndarray "dlb::python::numpy::borrow"(PyObject*, cpp.borrowed_array&) noexcept


cdef int _borrow_validated(cpp.borrowed_array* out) except -1:
    cdef optional[cpp.import_error] error = cpp.validate(out.tensor)
    if error.has_value():
        raise BufferError(f"invalid tensor: {error.value().message().decode()}")
    return 0


cdef int _borrow_array(Array a, cpp.borrowed_array* out, bint own) except -1:
    _require(a)
    out.tensor = a.t.dltensor()  # validated when the Array was made
    out.readonly = a.t.readonly()
    if own:
        Py_INCREF(a)
        out.owner = <PyObject*>a
    return 0


cdef int _borrow(PyObject* obj, cpp.borrowed_array* out) noexcept:
    """The fastest route for each producer: an Array's own tensor; an exact
    ndarray's fields; a C exchange table's dltensor_from_py_object_no_sync
    (host memory: GPU data goes through from_dlpack, which orders streams);
    anything else through asarray(obj, copy=False), whose Array is kept."""
    cdef PyTypeObject* tp = Py_TYPE(<object>obj)
    cdef const cpp.DLPackExchangeAPI* api
    try:
        if tp == <PyTypeObject*>Array:
            return _borrow_array(<Array>obj, out, False)
        if is_ndarray_type(tp) and borrow_ndarray(obj, out[0]):
            return _borrow_validated(out)
        x = <object>obj
        api = _exchange_api_of(x)
        if api == &_exchange_api and isinstance(x, Array):
            return _borrow_array(<Array>x, out, False)
        if api != NULL and api != &_exchange_api and api.dltensor_from_py_object_no_sync != NULL:
            _refuse_torch_state(x)
            if (api.dltensor_from_py_object_no_sync(<void*>obj, &out.tensor) == 0
                    and out.tensor.device.device_type == cpp.kDLCPU):
                out.readonly = False  # a bare DLTensor is writable: producers refuse read-only data
                return _borrow_validated(out)
            PyErr_Clear()  # the table is a fast path; asarray gives the protocol's answer
        return _borrow_array(asarray(x, copy=False), out, True)
    except BaseException as e:
        return _fail(e)


cdef cpp.argument_api _argument_api_table
_argument_api_table.version = cpp.argument_api_version
_argument_api_table.borrow = _borrow

# The table lives as long as the module, which Python never unloads.
_argument_api = PyCapsule_New(&_argument_api_table, cpp.argument_api_capsule, NULL)
