# cython: language_level=3
"""The DLPack capsule protocol: making capsules, consuming them, and asking a
producer for one. Nothing else in dlbridge touches a DLPack capsule."""
from cpython.pycapsule cimport (PyCapsule_CheckExact, PyCapsule_GetName, PyCapsule_GetPointer,
                                PyCapsule_IsValid, PyCapsule_New, PyCapsule_SetName)
from cpython.bool cimport PyBool_Check
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_Check
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t, uint64_t
from libcpp.optional cimport optional

cimport dlbridge.cpp as cpp


# Destructors for capsules nobody consumed. A consumer renames the capsule to
# used_..., after which it owns the tensor and the destructor does nothing.
# The tensors are dlbridge's own exports, whose deleters need no Python.
cdef void _versioned_capsule_destructor(object capsule) noexcept:
    cdef cpp.DLManagedTensorVersioned* v
    if PyCapsule_IsValid(capsule, cpp.capsule_name_versioned):
        v = <cpp.DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, cpp.capsule_name_versioned)
        v.deleter(v)


cdef void _legacy_capsule_destructor(object capsule) noexcept:
    cdef cpp.DLManagedTensor* m
    if PyCapsule_IsValid(capsule, cpp.capsule_name_legacy):
        m = <cpp.DLManagedTensor*>PyCapsule_GetPointer(capsule, cpp.capsule_name_legacy)
        m.deleter(m)


# A capsule destructor that does nothing, for capsules made by hand (the
# conformance kit's producers): their destructor's work is done by the
# producer (DLPack's deleters may need Python, which a destructor must not run
# while a failed import drops the capsule with an exception in flight), but
# the capsule has one, so that a consumer that clears it can be told from one
# that leaves it. Its address is all Python code gets: nothing calls it but
# a capsule's deallocation.
cdef void _inert_destructor(object capsule) noexcept:
    pass


INERT_DESTRUCTOR = <size_t>&_inert_destructor


cdef object export_capsule(const cpp.tensor& t, bint versioned, uint64_t flags):
    """A new capsule lending `t`: versioned (DLPack 1.3) or legacy."""
    cdef cpp.DLManagedTensorVersioned* v
    cdef cpp.DLManagedTensor* m
    if versioned:
        v = t.export_versioned(flags)
        try:
            return PyCapsule_New(v, cpp.capsule_name_versioned, _versioned_capsule_destructor)
        except BaseException:
            v.deleter(v)
            raise
    m = t.export_legacy()
    try:
        return PyCapsule_New(m, cpp.capsule_name_legacy, _legacy_capsule_destructor)
    except BaseException:
        m.deleter(m)
        raise


cdef cpp.tensor import_capsule(object capsule, bint* copied) except *:
    """Takes ownership of the tensor in a DLPack capsule (renaming it used_...).

    Legacy capsules import read-only: the legacy struct cannot say whether the
    producer allows writes (NumPy does the same). Invalid tensors raise
    BufferError after their deleter ran.
    """
    cdef cpp.DLManagedTensorVersioned* v
    cdef cpp.DLManagedTensor* m
    if PyCapsule_IsValid(capsule, cpp.capsule_name_versioned):
        v = <cpp.DLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, cpp.capsule_name_versioned)
        PyCapsule_SetName(capsule, cpp.capsule_name_versioned_used)
        copied[0] = (v.flags & cpp.dlpack_flag_is_copied) != 0
        return cpp.tensor.import_(v, cpp.release_versioned)
    if PyCapsule_IsValid(capsule, cpp.capsule_name_legacy):
        m = <cpp.DLManagedTensor*>PyCapsule_GetPointer(capsule, cpp.capsule_name_legacy)
        PyCapsule_SetName(capsule, cpp.capsule_name_legacy_used)
        copied[0] = False
        return cpp.tensor.import_(m, True, cpp.release_legacy)
    cdef const char* cname
    if PyCapsule_CheckExact(capsule):
        cname = PyCapsule_GetName(capsule)
        name = "NULL" if cname == NULL else repr(cname.decode("utf-8", "replace"))
        if name.startswith("'used_"):
            raise BufferError(f"the DLPack capsule was already consumed (its name is {name})")
        raise BufferError(f"expected a capsule named 'dltensor_versioned' or 'dltensor', got one named {name}")
    raise TypeError(f"__dlpack__ must return a PyCapsule, got {type(capsule).__name__}")


cdef extern from "Python.h":
    object PyObject_VectorcallMethod(object name, PyObject** args, size_t nargsf, PyObject* kwnames)


# The keyword sets of the call shapes, built once: a call passes C arrays,
# no per-call dict or tuple.
cdef tuple _max_version = (1, 3)
cdef tuple _names = ("max_version",)
cdef tuple _names_copy = ("max_version", "copy")
cdef tuple _names_stream = ("stream", "max_version")
cdef tuple _names_stream_copy = ("stream", "max_version", "copy")
cdef tuple _names_stream_only = ("stream",)


cdef _not_a_producer(object producer):
    return TypeError(f"from_dlpack: expected an object with __dlpack__ (a DLPack producer), got "
                     f"{type(producer).__name__}; use dlbridge.asarray for sequences, scalars and other array-likes")


cdef bint _lacks(object producer, str method):
    """type(producer) has no `method`: an AttributeError from calling it is
    not the method's own."""
    return getattr(type(producer), method, None) is None


cdef _producer_error(error, object producer, str method):
    """A producer's BufferError or TypeError (the answers a caller acts on),
    in its own words, with the producer named and its dtype where it has one;
    to raise from the original. (Other exceptions are the producer's failures,
    and stand as they are.)"""
    try:
        got = f"; got dtype {producer.dtype}"
    except Exception:
        got = ""
    kind = BufferError if isinstance(error, BufferError) else TypeError
    return kind(f"{error} (from {type(producer).__name__}.{method}(){got})")


cdef optional[cpp.DLDevice] dlpack_device(object producer) except *:
    """The producer's __dlpack_device__(), checked: TypeError for what is not
    a pair of ints, BufferError for a device DLPack does not define; no value
    where the producer has no __dlpack_device__ (the device is then the
    tensor's, once imported, as NumPy and nanobind read it)."""
    cdef optional[cpp.DLDevice] out
    cdef PyObject* args[1]
    args[0] = <PyObject*>producer
    try:
        device = PyObject_VectorcallMethod("__dlpack_device__", args, 1, NULL)
    except AttributeError:
        if not _lacks(producer, "__dlpack_device__"):
            raise
        if _lacks(producer, "__dlpack__"):
            raise _not_a_producer(producer) from None
        return out
    except (BufferError, TypeError) as e:
        raise _producer_error(e, producer, "__dlpack_device__") from e
    cdef long long kind, index
    cdef int overflow = 0
    if (not PyTuple_CheckExact(device) or PyTuple_GET_SIZE(device) != 2
            or not PyLong_Check(<object>PyTuple_GET_ITEM(device, 0)) or PyBool_Check(<object>PyTuple_GET_ITEM(device, 0))
            or not PyLong_Check(<object>PyTuple_GET_ITEM(device, 1)) or PyBool_Check(<object>PyTuple_GET_ITEM(device, 1))):
        raise TypeError(f"from_dlpack: __dlpack_device__() must return a (device_type, device_id) tuple "
                        f"of ints, got {device!r}")
    kind = PyLong_AsLongLongAndOverflow(<object>PyTuple_GET_ITEM(device, 0), &overflow)
    index = PyLong_AsLongLongAndOverflow(<object>PyTuple_GET_ITEM(device, 1), &overflow) if not overflow else 0
    if overflow or not cpp.is_dlpack_device_type(kind) or not 0 <= index < 2**31:
        raise BufferError(f"from_dlpack: __dlpack_device__() returned {device!r}, which is not a DLPack "
                          f"device (a DLDeviceType code and a device id >= 0)")
    cdef cpp.DLDevice said
    said.device_type = <cpp.DLDeviceType>kind
    said.device_id = <int32_t>index
    out = said
    return out


cdef object call_dlpack(object producer, object stream, object copy):
    """Asks `producer` for a capsule the DLPack 1.3 way (stream and copy are
    passed unless None), retrying with the stream alone when it raises
    TypeError (a producer older than DLPack 1.0)."""
    cdef PyObject* args[4]
    args[0] = <PyObject*>producer
    cdef Py_ssize_t n = 1
    if stream is not None:
        args[n] = <PyObject*>stream
        n += 1
    args[n] = <PyObject*>_max_version
    n += 1
    if copy is not None:
        args[n] = <PyObject*>copy
        n += 1
    names = (_names_stream_copy if copy is not None else _names_stream) if stream is not None else \
            (_names_copy if copy is not None else _names)
    try:
        try:
            return PyObject_VectorcallMethod("__dlpack__", args, 1, <PyObject*>names)
        except TypeError:
            pass
        return PyObject_VectorcallMethod("__dlpack__", args, 1,
                                         <PyObject*>_names_stream_only if stream is not None else NULL)
    except AttributeError:
        if _lacks(producer, "__dlpack__"):
            raise _not_a_producer(producer) from None
        raise
    except (BufferError, TypeError) as e:
        raise _producer_error(e, producer, "__dlpack__") from e
