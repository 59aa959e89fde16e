# The backend's calls, for dlbridge's other modules: dlbridge._backend is the
# one module that links dlbridge_cuda (the CUDA backend or, where it was not
# built, the implementation that refuses GPU work), so the process holds one
# copy of the static CUDA runtime. Each is the call of the same name in
# dlbridge/cuda/arrays.hpp (empty_on and copy_to through backend.hpp's GIL
# glue); a C++ exception becomes the Python one (cpp.raise_python_error).
cimport dlbridge.cpp as cpp


# Those that run without the GIL put their tensor in `out`.
cdef int empty_on(cpp.device where, cpp.extents_t shape, cpp.dtype type, cpp.tensor* out) except -1 nogil
# Called with the GIL, which it releases for large copies and any GPU work.
cdef cpp.tensor copy_to(const cpp.tensor& t, cpp.device where, cpp.dtype type,
                        cpp.cuda_stream stream=*) except *
cdef int fill_on_device(const cpp.tensor& t, const cpp.scalar& value) except -1 nogil
cdef cpp.tensor lend(const cpp.tensor& t, cpp.cuda_stream stream) except *
cdef int ordered_import(const cpp.tensor& t, cpp.cuda_stream producer, cpp.tensor* out) except -1 nogil
cdef int order_after_producer(const cpp.tensor& t, cpp.cuda_stream producer) except -1 nogil
cdef cpp.device cuda_pointer_device(const void* p) except *
cdef bint inherited_across_fork(const cpp.tensor& t) noexcept nogil
# The process's copy state (dlbridge/copy/threads.hpp): the backend's own,
# which its CPU copies (copy_to's host half) use; the other modules use it
# too (cpp.use_copy_state), set_copy_threads() sets it, and the argument API
# publishes it.
cdef cpp.copy_state* copy_state() noexcept nogil
