# Included by _array.pyx; uses from it: nothing.
# The stream arguments of __dlpack__ and to_device, read by dlbridge/stream.hpp.
from libc.stdint cimport int64_t
from libcpp.optional cimport optional

cimport dlbridge.cpp as cpp
from dlbridge._types cimport device_from_cpp

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
