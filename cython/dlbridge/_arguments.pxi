# Included by _importers.pyx; uses from it: _shared_array, _from_sequence, _is_nested, _is_jax_array,
# _jax_buffer, is_ndarray_type, read_ndarray_fields, _own_table; and from dlbridge._array: Array, wrap,
# _require, _type_exchange_api, _torch_state_checked, _fail, _slot_wrap, _slot_wrap_like, _slot_zeros;
# copy_to, copy_state (dlbridge._backend).
# The argument converter: any framework's array as a validated DLTensor
# borrowed for the length of a call, for dlbridge/python/argument.hpp
# (array_argument<Views...>), published as the capsule _argument_api.
from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.pycapsule cimport PyCapsule_New
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t
from libcpp.optional cimport optional
from libcpp.string cimport string
from libcpp.vector cimport vector

cimport dlbridge.cpp as cpp
from dlbridge.cpp cimport raise_python_error


cdef extern from "dlbridge/python/argument.hpp" namespace "dlb::python":
    # "f(): argument 'x': expected float32 or float64, got int32", as array_argument words it.
    string dtype_mismatch_message(const vector[cpp.dtype]& expected, cpp.dtype received, const char* function,
                                  const char* name) except +raise_python_error


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


cdef int _check_pointers(PyObject* obj, cpp.borrowed_array* out, const char* function, const char* name) except -1:
    if obj == NULL:
        if PyErr_Occurred() != NULL:
            return -1  # the object came from a call that failed: its error stands
        raise ValueError(f"{_label(function, name)}: expected an object, got NULL")
    if out == NULL:
        raise ValueError(f"{_label(function, name)}: expected a borrowed_array to fill, got out=NULL")
    return 0


cdef int _borrow_found(x, cpp.borrowed_array* out) except -1:
    """Fills `out` by the fastest route for each producer: an exact
    ndarray's fields; an Array's own tensor; a C exchange table's
    dltensor_from_py_object_no_sync (host memory: GPU data goes through
    from_dlpack, which orders streams); a JAX host array's buffer; anything
    else through asarray's protocols without a copy, whose Array is kept.
    Returns 1, `out` untouched, where x has no array protocol."""
    cdef const cpp.DLPackExchangeAPI* api
    cdef PyObject* obj = <PyObject*>x
    if is_ndarray_type(Py_TYPE(x)) and read_ndarray_fields(obj, out[0]):
        return _borrow_validated(out)
    api = _type_exchange_api(x)
    # Arrays and subclasses keeping dlbridge's table (argument.hpp takes
    # exact Arrays inline; those holding no array come here for the error).
    if api == _own_table and isinstance(x, Array):
        return _borrow_array(<Array>x, out, False)
    # A bare DLTensor says nothing of read-only data: the slot serves
    # PyTorch's tensors, which are never read-only; others export a
    # managed tensor, which has the flag. Float4 pairs (lanes 2) go through
    # from_dlpack too, whose Array holds them in DLPack's spelling.
    if api != NULL and api != _own_table and api.dltensor_from_py_object_no_sync != NULL:
        if api.dltensor_from_py_object_no_sync(<void*>obj, &out.tensor) != 0:
            PyErr_Clear()  # a fast path only: from_dlpack below gives the protocol's answer
        elif (out.tensor.device.device_type == cpp.kDLCPU and out.tensor.dtype.lanes == 1
                and _torch_state_checked(x, cpp.is_complex(cpp.dtype(out.tensor.dtype)),
                                         out.tensor.dtype.code not in (cpp.kDLInt, cpp.kDLUInt, cpp.kDLBool))):
            out.readonly = False
            return _borrow_validated(out)
    if api == NULL and _is_jax_array(Py_TYPE(x)):
        held = _jax_buffer(x, out)  # JAX's host arrays; None where __dlpack__ answers
        if held is not None:
            _borrow_validated(out)
            Py_INCREF(held)
            out.owner = <PyObject*>held
            return 0
    cdef Array a = _shared_array(x)
    if a is None:
        return 1
    return _borrow_array(a, out, True)


cdef int _slot_borrow(PyObject* obj, cpp.borrowed_array* out, const char* function, const char* name) noexcept:
    """The argument_api's borrow: an object with no array protocol is
    TypeError, as a wrong argument. NULL names are left out of messages
    (argument.hpp says how)."""
    try:
        _check_pointers(obj, out, function, name)
        if _borrow_found(<object>obj, out) == 1:
            raise TypeError(f"{_label(function, name)}: expected an array (an object with __dlpack__, "
                            f"__cuda_array_interface__, __array_interface__ or the buffer protocol), "
                            f"got {type(<object>obj).__name__}")
        return 0
    except BaseException as e:
        return _fail(e)


cdef cpp.tensor _reversed_axes(const cpp.tensor& t) except *:
    """The same memory with its axes in reverse order (a transpose)."""
    cdef int64_t shape[64]
    cdef int64_t strides[64]
    cdef int32_t i, n = t.ndim()
    for i in range(n):
        shape[i] = t.shape(n - 1 - i)
        strides[i] = t.stride(n - 1 - i)
    return t.restrided(t.data(), cpp.extents_t(shape, n), cpp.extents_t(strides, n))


cdef int _convert_borrowed(cpp.borrowed_array* out, const cpp.requirements* demands, size_t count,
                           const char* function, const char* name) except -1:
    """Replaces the borrowed tensor in `out` by a copy that fits one of
    `demands`, where its dtype or memory order is all that keeps it out;
    otherwise leaves it to the argument's own error."""
    cdef cpp.DLTensor* t = &out.tensor
    cdef cpp.dtype got = cpp.dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    cdef size_t i, pick = count
    cdef optional[cpp.import_error] error
    cdef vector[cpp.dtype] choices
    for i in range(count):
        if demands[i].type == got:
            pick = i
            break
    if pick < count:
        error = cpp.check_demands(t[0], out.readonly, demands[pick])
        if not error.has_value() or error.value().field.data()[:error.value().field.size()] != b"strides":
            return 0  # it fits, or a copy would not (its device, ndim or shape)
    else:
        for i in range(count):
            if cpp.can_cast_safely(got, demands[i].type):
                pick = i
                break
        if pick == count:
            for i in range(count):
                choices.push_back(demands[i].type)
            raise TypeError(dtype_mismatch_message(choices, got, function, name).decode("utf-8", "replace")
                            + " (converting would lose precision)")
    if demands[pick].has_device and t.device.device_type != demands[pick].device_type:
        return 0  # never to another device: the argument says which it wants
    cdef int32_t ndim = t.ndim
    # A tensor of the borrowed memory for the copy to read, which `out`
    # keeps alive meanwhile (no release of its own).
    cdef cpp.tensor source = cpp.tensor.adopt(
        <char*>t.data + t.byte_offset, got, cpp.device(t.device.device_type, t.device.device_id),
        cpp.extents_t(t.shape, ndim), cpp.extents_t(t.strides, ndim if t.strides != NULL else 0),
        out.readonly, NULL, NULL)
    # copy_to writes C order: a Fortran-order copy is the C-order copy of the transpose, transposed back.
    cdef bint fortran = demands[pick].order == cpp.memory_order.f
    cdef cpp.tensor copied = copy_to(_reversed_axes(source) if fortran else source, source.get_device(),
                                     demands[pick].type)
    cdef Array a = wrap(_reversed_axes(copied) if fortran else copied)
    Py_XDECREF(out.owner)
    out.owner = NULL
    out.readonly = False
    return _borrow_array(a, out, True)


cdef int _slot_convert(PyObject* obj, cpp.borrowed_array* out, const cpp.requirements* demands, size_t count,
                  const char* function, const char* name) noexcept:
    """The argument_api's convert (copy_if_needed): the object as _slot_borrow
    lends it where a view takes it, else a fresh copy that fits; a list or
    a scalar as asarray reads it, then the same."""
    cdef Array a
    try:
        _check_pointers(obj, out, function, name)
        x = <object>obj
        if _borrow_found(x, out) == 1:
            if not (_is_nested(x) or isinstance(x, (bool, int, float, complex))):
                raise TypeError(f"{_label(function, name)}: expected an array (an object with __dlpack__, "
                                f"__cuda_array_interface__, __array_interface__ or the buffer protocol), a "
                                f"nested sequence or a scalar, got {type(x).__name__}")
            try:
                a = _from_sequence(x, None)
            except (TypeError, ValueError, OverflowError) as e:
                raise type(e)(f"{_label(function, name)}: {e}") from None
            _borrow_array(a, out, True)
        try:
            return _convert_borrowed(out, demands, count, function, name)
        except BaseException:
            Py_XDECREF(out.owner)
            out.owner = NULL
            raise
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
_argument_api_table.borrow = _slot_borrow
_argument_api_table.wrap = _slot_wrap
_argument_api_table.wrap_like = _slot_wrap_like
_argument_api_table.zeros = _slot_zeros
_argument_api_table.convert = _slot_convert
_argument_api_table.copy_state = copy_state()

# The table lives as long as the module, which Python never unloads. It is
# published where extension modules look for it (argument_api.hpp: the ABI),
# on dlbridge._array, which has finished its import before this one begins.
dlbridge._array._argument_api = PyCapsule_New(&_argument_api_table, cpp.argument_api_capsule, NULL)
