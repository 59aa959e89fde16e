# The argument converter (included by _array.pyx, after _exchange.pxi and
# _importers.pxi): any framework's array as a validated DLTensor borrowed for
# the length of a call, for dlbridge/argument.hpp (array_argument<View>),
# published as the capsule _argument_api.
from cpython.exc cimport PyErr_Clear, PyErr_Occurred


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


cdef str _label(const char* function, const char* name):
    return cpp.argument_label(function, name).decode("utf-8", "replace")


cdef int _borrow(PyObject* obj, cpp.borrowed_array* out, const char* function, const char* name) noexcept:
    """The fastest route for each producer: an exact ndarray's fields; an
    Array's own tensor; a C exchange table's dltensor_from_py_object_no_sync
    (host memory: GPU data goes through from_dlpack, which orders streams);
    a JAX host array's buffer; anything else through asarray's protocols
    without a copy, whose Array is kept. An object with no array protocol
    is TypeError, as a wrong argument.
    NULL names are left out of messages (argument.hpp says how)."""
    cdef const cpp.DLPackExchangeAPI* api
    cdef Array a
    try:
        if obj == NULL:
            if PyErr_Occurred() != NULL:
                return -1  # the object came from a call that failed: its error stands
            raise ValueError(f"{_label(function, name)}: expected an object, got NULL")
        if out == NULL:
            raise ValueError(f"{_label(function, name)}: expected a borrowed_array to fill, got out=NULL")
        if is_ndarray_type(Py_TYPE(<object>obj)) and borrow_ndarray(obj, out[0]):
            return _borrow_validated(out)
        x = <object>obj
        api = _exchange_api_of(x)
        # Arrays and subclasses keeping dlbridge's table (argument.hpp takes
        # exact Arrays inline; those holding no array come here for the error).
        if api == &_exchange_api and isinstance(x, Array):
            return _borrow_array(<Array>x, out, False)
        # A bare DLTensor says nothing of read-only data: the slot serves
        # PyTorch's tensors, which are never read-only; others export a
        # managed tensor, which has the flag.
        if api != NULL and api != &_exchange_api and api.dltensor_from_py_object_no_sync != NULL:
            if api.dltensor_from_py_object_no_sync(<void*>obj, &out.tensor) != 0:
                PyErr_Clear()  # a fast path only: from_dlpack below gives the protocol's answer
            elif (out.tensor.device.device_type == cpp.kDLCPU
                    and _torch_state_checked(x, out.tensor.dtype.code == cpp.kDLComplex)):
                out.readonly = False
                return _borrow_validated(out)
        if api == NULL and _is_jax_array(Py_TYPE(x)):
            held = _jax_buffer(x, out)  # JAX's host arrays; None where __dlpack__ answers
            if held is not None:
                _borrow_validated(out)
                Py_INCREF(held)
                out.owner = <PyObject*>held
                return 0
        a = _shared_array(x, None, True)
        if a is None:
            raise TypeError(f"{_label(function, name)}: expected an array (an object with __dlpack__, "
                            f"__cuda_array_interface__, __array_interface__ or the buffer protocol), "
                            f"got {type(x).__name__}")
        return _borrow_array(a, out, True)
    except BaseException as e:
        return _fail(e)


cdef Py_ssize_t _tensor_offset():
    """Where an Array's tensor lies in the object, measured on one."""
    cdef Array probe = Array.__new__(Array)
    return <char*>&probe.t - <char*><PyObject*>probe


cdef cpp.argument_api _argument_api_table
_argument_api_table.abi_version = cpp.argument_api_version
_argument_api_table.size = sizeof(cpp.argument_api)
_argument_api_table.array_type = <PyTypeObject*>Array
_argument_api_table.tensor_offset = _tensor_offset()
_argument_api_table.borrow = _borrow
_argument_api_table.wrap = _slot_wrap
_argument_api_table.wrap_like = _slot_wrap_like
_argument_api_table.zeros = _slot_zeros

# The table lives as long as the module, which Python never unloads.
_argument_api = PyCapsule_New(&_argument_api_table, cpp.argument_api_capsule, NULL)
