# The backend's calls, for dlbridge's other modules: dlbridge._backend is the
# one module that links dlbridge_cuda (the CUDA backend or, where it was not
# built, the implementation that refuses GPU work), so the process holds one
# copy of the static CUDA runtime. Each is the call of the same name in
# dlbridge/cuda/arrays.hpp (empty_on and copy_to through backend.hpp's GIL
# glue); a C++ exception becomes the Python one (cpp.raise_python_error).
cimport dlbridge.cpp as cpp


cdef cpp.tensor empty_on(cpp.device where, cpp.extents_t shape, cpp.dtype type) except * nogil
# Called with the GIL, which it releases for large copies and any GPU work.
cdef cpp.tensor copy_to(const cpp.tensor& t, cpp.device where, cpp.dtype type,
                        cpp.cuda_stream stream=*) except *
cdef int fill_on_device(const cpp.tensor& t, const cpp.scalar& value) except -1 nogil
cdef cpp.tensor lend(const cpp.tensor& t, cpp.cuda_stream stream) except * nogil
cdef cpp.tensor ordered_import(const cpp.tensor& t, cpp.cuda_stream producer) except * nogil
cdef int order_after_producer(const cpp.tensor& t, cpp.cuda_stream producer) except -1 nogil
cdef cpp.device cuda_pointer_device(const void* p) except *
cdef bint inherited_across_fork(const cpp.tensor& t) noexcept nogil
# Makes the backend's CPU copies (copy_to's host half) use `state`: the one
# dlbridge._array publishes, which set_copy_threads() sets.
cdef void use_copy_state(cpp.copy_state& state) noexcept nogil
