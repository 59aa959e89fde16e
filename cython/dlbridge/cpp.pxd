# The dlbridge C++ core (lib/include/dlbridge), declared for Cython.
from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libcpp cimport bool as cbool
from libcpp.optional cimport optional
from libcpp.string cimport string
from libcpp.vector cimport vector


cdef extern from "dlbridge/python/core.hpp" namespace "dlb::python":
    # Translates the C++ exception in flight into a Python exception.
    cdef int raise_python_error() except *


cdef extern from "dlbridge/dlpack.hpp" namespace "dlb" nogil:
    ctypedef enum DLDeviceType "dlb::DLDeviceType":
        kDLCPU
        kDLCUDA
        kDLCUDAHost
        kDLCUDAManaged

    ctypedef struct DLDevice:
        DLDeviceType device_type
        int32_t device_id

    ctypedef enum DLDataTypeCode "dlb::DLDataTypeCode":
        kDLInt
        kDLUInt
        kDLFloat
        kDLBfloat
        kDLComplex
        kDLBool
        kDLFloat8_e8m0fnu

    ctypedef struct DLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes

    ctypedef struct DLTensor:
        void* data
        DLDevice device
        int32_t ndim
        DLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset

    ctypedef struct DLManagedTensor:
        DLTensor dl_tensor
        void* manager_ctx
        void (*deleter)(DLManagedTensor*) noexcept

    ctypedef struct DLPackVersion:
        uint32_t major
        uint32_t minor

    ctypedef struct DLManagedTensorVersioned:
        DLPackVersion version
        void* manager_ctx
        void (*deleter)(DLManagedTensorVersioned*) noexcept
        uint64_t flags
        DLTensor dl_tensor

    const uint32_t dlpack_major_version
    const uint32_t dlpack_minor_version
    const uint64_t dlpack_flag_read_only
    const uint64_t dlpack_flag_is_copied
    const uint64_t dlpack_flag_is_subbyte_type_padded
    const char* capsule_name_legacy
    const char* capsule_name_legacy_used
    const char* capsule_name_versioned
    const char* capsule_name_versioned_used
    const char* capsule_name_exchange_api


# The DLPack C exchange API. Declared without nogil: most slots take Python
# objects (as void*) and so run with the GIL; the allocator and
# current_work_stream may be called without it, and dlbridge's own versions
# of those two take it where they need it.
cdef extern from "dlbridge/dlpack.hpp" namespace "dlb":
    ctypedef void (*DLPackSetError)(void* error_ctx, const char* kind, const char* message) noexcept
    ctypedef int (*DLPackManagedTensorAllocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                                 void* error_ctx, DLPackSetError set_error) noexcept
    ctypedef int (*DLPackManagedTensorFromPyObjectNoSync)(void* py_object, DLManagedTensorVersioned** out) noexcept
    ctypedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned* tensor,
                                                        void** out_py_object) noexcept
    ctypedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out) noexcept
    ctypedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id,
                                            void** out_current_stream) noexcept

    ctypedef struct DLPackExchangeAPIHeader:
        DLPackVersion version
        DLPackExchangeAPIHeader* prev_api

    ctypedef struct DLPackExchangeAPI:
        DLPackExchangeAPIHeader header
        DLPackManagedTensorAllocator managed_tensor_allocator
        DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync
        DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync
        DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync
        DLPackCurrentWorkStream current_work_stream


cdef extern from "<string_view>" nogil:
    cdef cppclass string_view "std::string_view":
        string_view()
        string_view(const char*, size_t)
        const char* data()
        size_t size()
        cbool empty()


cdef extern from "dlbridge/dtype.hpp" namespace "dlb" nogil:
    cdef cppclass dtype:
        uint8_t code
        uint8_t bits
        uint16_t lanes
        dtype()
        dtype(uint8_t, uint8_t, uint16_t)
        dtype(DLDataType)
        cbool is_subbyte()
        size_t itemsize()
        uint64_t storage_bytes(uint64_t)
        cbool operator==(dtype)

    cdef cppclass dtype_info:
        dtype type
        string_view name
        string_view typestr
        string_view buffer_format

    cdef cppclass dtype_table_t "std::remove_cvref_t<decltype(dlb::dtype_table)>":
        size_t size()
        const dtype_info& operator[](size_t)
    const dtype_table_t dtype_table
    const dtype_info* find_dtype(dtype)
    cbool is_supported(dtype)
    cbool is_complex(dtype)  # kDLComplex and kDLBcomplex
    optional[dtype] dtype_from_typestr(string_view)
    # Whether every value of the first dtype is exactly one of the second
    # (the rule of cpp.copy_if_needed), and a set's names: "float32 or float64".
    cbool can_cast_safely(dtype, dtype)
    string dtype_choices(const vector[dtype]&) except +raise_python_error


cdef extern from * nogil:
    """
    #include "dlbridge/dtype.hpp"
    #ifndef DLBRIDGE_CYTHON_DTYPE_OF
    #define DLBRIDGE_CYTHON_DTYPE_OF
    namespace dlb::cython {
    // dlb::dtype_of<T> for Cython, which has no variable templates.
    template <class T>
    constexpr dlb::dtype dtype_of() { return dlb::dtype_of<T>; }
    }  // namespace dlb::cython
    #endif
    """
    # The dtype of a C element type: cpp.dtype_of[float]() is float32.
    dtype dtype_of "dlb::cython::dtype_of"[T]()


cdef extern from "dlbridge/device.hpp" namespace "dlb" nogil:
    cdef cppclass device:
        DLDeviceType type
        int32_t id
        device()
        device(DLDeviceType, int32_t)
        cbool is_host_accessible()
        cbool is_cuda_memory()
        cbool is_stream_ordered()
        cbool operator==(device)

    cdef cppclass device_type_info:
        DLDeviceType type
        string_view name
    cdef cppclass device_type_table_t "std::remove_cvref_t<decltype(dlb::device_type_table)>":
        size_t size()
        const device_type_info& operator[](size_t)
    const device_type_table_t device_type_table
    cbool is_dlpack_device_type(int64_t)
    string_view name(DLDeviceType)


cdef extern from "dlbridge/layout.hpp" namespace "dlb" nogil:
    const int32_t max_ndim
    cdef cppclass extents_t "dlb::extents_t":
        extents_t()
        extents_t(const int64_t*, size_t)
        const int64_t* data()
        size_t size()
        int64_t operator[](size_t)
    cbool is_c_contiguous(extents_t, extents_t)
    cbool is_f_contiguous(extents_t, extents_t)


cdef extern from "dlbridge/shape.hpp" namespace "dlb" nogil:
    cdef enum class shape_defect "dlb::shape_defect":
        too_many_axes
        negative_extent
        size_overflow
        strides_overflow
    cdef cppclass shape_error "dlb::shape_error":
        shape_defect defect
        int32_t axis
    optional[shape_error] check_shape(extents_t, dtype)


cdef extern from "dlbridge/stream.hpp" namespace "dlb" nogil:
    # A cudaStream_t's value: 1 and 2 the default streams, never 0.
    ctypedef uintptr_t cuda_stream
    const cuda_stream legacy_default_stream
    optional[cuda_stream] consumer_stream(int64_t) except +raise_python_error
    cuda_stream producer_stream(int64_t) except +raise_python_error
    cuda_stream work_stream(int64_t) except +raise_python_error


cdef extern from "dlbridge/validate.hpp" namespace "dlb" nogil:
    # What was wrong with a tensor: field ("dtype", "shape", ...), axis (-1
    # for none), what was expected and what was received. message() is
    # "shape: axis 1: expected extent 3, got 4".
    cdef cppclass import_error:
        string_view field
        int32_t axis
        string expected
        string received
        string message()

    # Thrown by tensor.as_ and tensor.adopt; an `except +raise_python_error`
    # declaration turns it into BufferError("invalid tensor: <message>").
    cdef cppclass import_failure:
        const import_error& error()

    # validate() (is it a well-formed tensor?): an empty optional means the
    # tensor passed. It passes PyTorch's float4 pairs (is_float4_pairs),
    # which dlb::tensor holds as float4_e2m1fn.
    optional[import_error] validate(const DLTensor&)
    cbool is_float4_pairs(dtype)


cdef extern from "dlbridge/demands.hpp" namespace "dlb" nogil:
    # A wildcard extent in requirements.shape and dlb::shape<...>.
    const int64_t any_extent "dlb::any_extent"

    cdef enum class memory_order "dlb::memory_order":
        none
        c
        f
        any

    # What a consumer demands of a tensor; a view type derives it from its
    # constraints (view.demands()).
    cdef cppclass requirements:
        dtype type
        int32_t ndim            # -1: any number of axes
        extents_t shape         # one extent or any_extent per axis; empty: no demand
        memory_order order
        cbool has_device
        DLDeviceType device_type
        cbool writable

    # The check every tensor passes at a boundary: validate(), then the
    # demands in turn. An empty optional means the tensor passed.
    optional[import_error] check(const DLTensor&, cbool readonly, const requirements&)
    # check() of a tensor already validated: the demands alone.
    optional[import_error] check_demands(const DLTensor&, cbool readonly, const requirements&)


cdef extern from "dlbridge/describe.hpp" namespace "dlb" nogil:
    # What demands read as, for signatures and docstrings (bytes in Python):
    # describe(V.demands()) is "float32[*, *] C-contiguous cpu read-only";
    # with the views of a multi-dtype argument, "(float32 | float64)[*, *] ...".
    string describe(const requirements&) except +
    string describe(const requirements&, const requirements&) except +
    string describe(const requirements&, const requirements&, const requirements&) except +
    string describe(const requirements&, const requirements&, const requirements&, const requirements&) except +


cdef extern from "dlbridge/view.hpp" namespace "dlb" nogil:
    # Constraint tags for view[...]: memory order, read-only, device.
    cdef cppclass c_contig "dlb::c_contig":
        pass
    cdef cppclass f_contig "dlb::f_contig":
        pass
    cdef cppclass any_contig "dlb::any_contig":
        pass
    cdef cppclass ro "dlb::ro":
        pass
    cdef cppclass cpu "dlb::cpu":
        pass
    cdef cppclass cuda "dlb::cuda":
        pass
    cdef cppclass cuda_host "dlb::cuda_host":
        pass
    cdef cppclass cuda_managed "dlb::cuda_managed":
        pass
    # dlb::ndim<N> for the usual N. Other counts are declared the same way:
    # cdef cppclass ndim5 "dlb::ndim<5>"
    cdef cppclass ndim0 "dlb::ndim<0>":
        pass
    cdef cppclass ndim1 "dlb::ndim<1>":
        pass
    cdef cppclass ndim2 "dlb::ndim<2>":
        pass
    cdef cppclass ndim3 "dlb::ndim<3>":
        pass
    cdef cppclass ndim4 "dlb::ndim<4>":
        pass


# dlb::shape<...> spelled with types, as Cython passes no integers as template
# arguments: cpp.shape[cpp.any, cpp.any, cpp.extent3] is
# dlb::shape<dlb::any_extent, dlb::any_extent, 3> (H x W x 3). Up to four
# axes, each cpp.any or an extent of 1 to 4; others are declared the same
# way: cdef cppclass extent8 "dlb::cython::extent<8>"
cdef extern from * nogil:
    """
    #include "dlbridge/view.hpp"
    #ifndef DLBRIDGE_CYTHON_SHAPE
    #define DLBRIDGE_CYTHON_SHAPE
    namespace dlb::cython {
    template <std::int64_t N>
    struct extent { static constexpr std::int64_t value = N; };
    template <class... Extents>
    using shape = dlb::shape<Extents::value...>;
    }  // namespace dlb::cython
    #endif
    """
    cdef cppclass any "dlb::cython::extent<dlb::any_extent>":
        pass
    cdef cppclass extent1 "dlb::cython::extent<1>":
        pass
    cdef cppclass extent2 "dlb::cython::extent<2>":
        pass
    cdef cppclass extent3 "dlb::cython::extent<3>":
        pass
    cdef cppclass extent4 "dlb::cython::extent<4>":
        pass
    cdef cppclass shape "dlb::cython::shape"[E1, E2=*, E3=*, E4=*]:
        pass


cdef extern from "dlbridge/view.hpp" namespace "dlb" nogil:
    # dlb::view<T, Constraints...> with up to five constraints, e.g.
    #   ctypedef cpp.view[float, cpp.ndim2, cpp.c_contig] matrix_f32
    # is dlb::view<float, dlb::ndim<2>, dlb::c_contig>. Get one from an Array
    # with `arr.t.as_[matrix_f32]()`, which checks the constraints.
    cdef cppclass view "dlb::view"[T, C1=*, C2=*, C3=*, C4=*, C5=*]:
        view()
        # data() is const T* for read-only views (dlb::ro): use const_data().
        T* data()
        const T* const_data "data"()
        int64_t shape(int32_t)
        int64_t stride(int32_t)
        int64_t size()
        device get_device "device"()
        cbool is_c_contiguous()
        cbool is_f_contiguous()
        # v(i), v(i, j), ...: the element at an index (the arity must be the rank).
        T& operator()(int64_t)
        T& operator()(int64_t, int64_t)
        T& operator()(int64_t, int64_t, int64_t)
        T& operator()(int64_t, int64_t, int64_t, int64_t)
        # What the view type demands, for check().
        @staticmethod
        requirements demands()


cdef extern from "dlbridge/tensor.hpp" namespace "dlb" nogil:
    ctypedef void (*release_fn "dlb::keeper::release_fn")(void*) noexcept nogil

    cdef cppclass tensor:
        tensor()
        tensor(const tensor&)
        tensor& operator=(const tensor&)
        void swap(tensor&)
        @staticmethod
        tensor empty(extents_t, dtype) except +raise_python_error
        # New C-contiguous host memory of zero bits, or with every element
        # `value` (ValueError where it does not fit the dtype).
        @staticmethod
        tensor zeros(extents_t, dtype) except +raise_python_error
        @staticmethod
        tensor full(extents_t, dtype, const scalar& value) except +raise_python_error
        @staticmethod
        tensor adopt(void*, dtype, device, extents_t, extents_t, cbool, release_fn, void*) except +raise_python_error
        @staticmethod
        tensor import_ "import"(DLManagedTensorVersioned*, release_fn) except +raise_python_error
        @staticmethod
        tensor import_ "import"(DLManagedTensor*, cbool, release_fn) except +raise_python_error
        tensor restrided(void*, extents_t, extents_t) except +raise_python_error
        tensor kept_by(release_fn, void*) except +raise_python_error
        DLManagedTensorVersioned* export_versioned(uint64_t) except +raise_python_error
        DLManagedTensor* export_legacy() except +raise_python_error
        cbool has_value()
        void* data()
        dtype type()
        device get_device "device"()
        int32_t ndim()
        extents_t shape()
        extents_t strides()
        int64_t shape(int32_t)
        int64_t stride(int32_t)
        cbool readonly()
        void make_readonly()
        int64_t size()
        int64_t nbytes()
        cbool is_c_contiguous()
        cbool is_f_contiguous()
        int64_t use_count()
        # A DLTensor describing the tensor; it points into the tensor, so it
        # is valid while the tensor lives, and keeps nothing alive.
        DLTensor dltensor()
        # A checked typed view, `t.as_[V]()`: BufferError naming the unmet
        # constraint when the tensor does not fit V.
        V as_ "as"[V]() except +raise_python_error


cdef extern from * nogil:
    """
    #include "dlbridge/tensor.hpp"
    #ifndef DLBRIDGE_CYTHON_ADOPT_VIEW
    #define DLBRIDGE_CYTHON_ADOPT_VIEW
    namespace dlb::cython {
    // dlb::tensor::adopt(view, release, ctx) for Cython, which spells out
    // template arguments (adopt<View>) where that overload deduces them.
    template <class View>
    inline dlb::tensor adopt_view(const View& v, dlb::keeper::release_fn release, void* ctx) {
      return dlb::tensor::adopt(v, release, ctx);
    }
    }  // namespace dlb::cython
    #endif
    """
    # A tensor on the memory a view describes, labelled with the view's
    # device (a dlb::cuda view gives a CUDA tensor, never a CPU one);
    # release(ctx) runs once, when the last tensor sharing the memory goes
    # (and at once if the view fails validation: then BufferError).
    tensor adopt_view "dlb::cython::adopt_view"[V](const V&, release_fn, void*) except +raise_python_error


cdef extern from "dlbridge/element.hpp" namespace "dlb" nogil:
    cdef enum class scalar_kind "dlb::scalar::kind":
        boolean
        signed_int
        unsigned_int
        real
        complex

    cdef cppclass scalar:
        scalar_kind k
        int64_t i
        uint64_t u
        double re
        double im
        @staticmethod
        scalar from_bool(cbool)
        @staticmethod
        scalar from_int(int64_t)
        @staticmethod
        scalar from_uint(uint64_t)
        @staticmethod
        scalar from_real(double)
        @staticmethod
        scalar from_complex(double, double)

    scalar load(dtype, const void*, int64_t)
    void store(dtype, void*, const scalar&, int64_t)
    cbool fits(dtype, const scalar&)
    # Writes a value into `count` elements of C-contiguous host memory.
    void fill(dtype, void*, int64_t count, const scalar&)


cdef extern from "dlbridge/python/copy.hpp" namespace "dlb::python::copies" nogil:
    # host_copy.hpp's calls, each making this module's copies use dlbridge's
    # copy state first, so that dlbridge.set_copy_threads() reaches them.
    tensor astype(const tensor&, dtype) except +raise_python_error
    unsigned copy_threads() noexcept
    void set_copy_threads(unsigned) noexcept
    tensor copy(const tensor&) except +raise_python_error


cdef extern from "dlbridge/copy/threads.hpp" namespace "dlb" nogil:
    # The state behind copy_threads(): dlbridge._backend's, which the other
    # modules use (use_copy_state) and the argument API publishes.
    cppclass copy_state:
        pass
    copy_state& copy_state_in_use() noexcept
    void use_copy_state(copy_state&) noexcept


cdef extern from "dlbridge/python/core.hpp" namespace "dlb::python" nogil:
    # Release functions for tensors whose memory Python-side owners keep alive:
    # safe from any thread, and they leave a pending Python exception intact.
    void release_versioned(void*) noexcept
    void release_legacy(void*) noexcept
    void release_object(void*) noexcept
    void release_buffer(void*) noexcept
    # The Python object that holds a tensor's memory (through release_object or
    # release_buffer) where the collector can follow it, or NULL;
    # sole_collectable_owner: only where no other tensor or export shares it.
    PyObject* collectable_owner(const tensor&) noexcept
    PyObject* sole_collectable_owner(const tensor&) noexcept


cdef extern from "dlbridge/python/argument.hpp" namespace "dlb::python":
    # An array argument as a checked view for the length of a call, from any
    # producer, without a copy: `cdef rows_arg rows = rows_arg(x, "row_sums", "x")`
    # with `ctypedef cpp.array_argument[rows_view] rows_arg`; then rows.view().
    # TypeError names the function and argument where a valid array does not
    # fit the view; BufferError where the producer's tensor is malformed.
    # Either name may be NULL: it is left out of the message.
    #
    # With up to four view types of distinct element types,
    # `cpp.array_argument[image32, image64]`, the array's dtype picks the
    # view: index(), holds[W](), get[W]() (RuntimeError unless holds[W]())
    # and dtype() say which; a dtype none takes is TypeError naming the set
    # ("expected float32 or float64, got int32").
    #
    # The 4-argument constructor, `(x, "f", "x", cpp.copy_if_needed)`, takes
    # read-only views only, and copies an input of another dtype (converting
    # without loss: can_cast_safely) or memory order, or a list, into a
    # fresh array that the argument keeps; never to another device.
    cdef cppclass copy_if_needed_t:
        pass
    const copy_if_needed_t copy_if_needed

    cdef cppclass array_argument[V, V2=*, V3=*, V4=*]:
        array_argument()
        array_argument(object, const char*, const char*) except +raise_python_error
        array_argument(object, const char*, const char*, copy_if_needed_t) except +raise_python_error
        # Usable without the GIL while the argument lives:
        const V& view() noexcept nogil  # one view type only
        size_t index() noexcept nogil
        cbool holds[W]() noexcept nogil
        const W& get[W]() except +raise_python_error nogil
        dtype dtype() noexcept nogil
        # What the argument demands, for dlbridge.annotate:
        # b"(float32 | float64)[*, *] C-contiguous cpu read-only".
        @staticmethod
        string describe() except +raise_python_error
    # How the argument's errors begin: "row_sums(): argument 'x'".
    string argument_label(const char* function, const char* name) except +raise_python_error


cdef extern from "dlbridge/python/returns.hpp" namespace "dlb::python":
    # A new C-contiguous tensor of zero bits with a view's shape, dtype and
    # device, or those of the view an array_argument holds (other devices
    # than the CPU through dlbridge's backend; BufferError for a device it
    # cannot allocate on). Return tensors with
    # `wrap` or `wrap_like` (dlbridge/_array.pxd).
    tensor zeros_like "dlb::python::zeros_like"[V](const V&) except +raise_python_error


cdef extern from "dlbridge/python/argument_api.hpp" namespace "dlb::python":
    # The converter's C interface, for dlbridge itself (argument.hpp uses it).
    struct borrowed_array:
        DLTensor tensor
        cbool readonly
        PyObject* owner
        int64_t strides[64]
    struct argument_api:
        uint32_t abi_version
        uint32_t size
        PyTypeObject* array_type
        Py_ssize_t tensor_offset
        int (*borrow)(PyObject*, borrowed_array*, const char*, const char*) noexcept
        PyObject* (*wrap)(tensor*) noexcept
        PyObject* (*wrap_like)(tensor*, PyObject*) noexcept
        int (*zeros)(device, const int64_t*, int32_t, dtype, tensor*) noexcept
        int (*convert)(PyObject*, borrowed_array*, const requirements*, size_t, const char*, const char*) noexcept
        copy_state* copy_state
    const uint32_t argument_api_version
    const char* argument_api_capsule


cdef extern from "dlbridge/python/visit.hpp" namespace "dlb::cython":
    # One call from an array argument to the kernel of its dtype, the
    # kernels being cdef functions (one specialization of a fused function
    # per dtype) whose first parameter is a cpp.view:
    #
    #   cpp.visit(x, "brighten_", "image", kernel[float], kernel[double], extra, ...)
    #
    # converts x to the views of the kernels' first parameters (an
    # array_argument: TypeError naming the function and argument where it
    # does not fit) and calls the kernel of its dtype with its view, then
    # what follows the kernels. visit_new's kernels take a second view, the
    # output, of a new array of x's shape and device (zero bits, the output
    # view's dtype), which it returns in the currency of x (wrap_like's
    # rules). cpp.copy_if_needed right after the names converts what does not
    # fit, as array_argument does. The kernels run without the GIL (declare
    # them nogil) and return void (noexcept) or int (except -1: raised).
    # Up to eight arguments after the names.
    void visit[T1](object, const char*, const char*, T1) except +raise_python_error
    void visit[T1, T2](object, const char*, const char*, T1, T2) except +raise_python_error
    void visit[T1, T2, T3](object, const char*, const char*, T1, T2, T3) except +raise_python_error
    void visit[T1, T2, T3, T4](object, const char*, const char*, T1, T2, T3, T4) except +raise_python_error
    void visit[T1, T2, T3, T4, T5](object, const char*, const char*, T1, T2, T3, T4, T5) except +raise_python_error
    void visit[T1, T2, T3, T4, T5, T6](object, const char*, const char*, T1, T2, T3, T4, T5, T6) except +raise_python_error
    void visit[T1, T2, T3, T4, T5, T6, T7](object, const char*, const char*,
                                           T1, T2, T3, T4, T5, T6, T7) except +raise_python_error
    void visit[T1, T2, T3, T4, T5, T6, T7, T8](object, const char*, const char*,
                                               T1, T2, T3, T4, T5, T6, T7, T8) except +raise_python_error
    object visit_new[T1](object, const char*, const char*, T1) except +raise_python_error
    object visit_new[T1, T2](object, const char*, const char*, T1, T2) except +raise_python_error
    object visit_new[T1, T2, T3](object, const char*, const char*, T1, T2, T3) except +raise_python_error
    object visit_new[T1, T2, T3, T4](object, const char*, const char*, T1, T2, T3, T4) except +raise_python_error
    object visit_new[T1, T2, T3, T4, T5](object, const char*, const char*, T1, T2, T3, T4, T5) except +raise_python_error
    object visit_new[T1, T2, T3, T4, T5, T6](object, const char*, const char*,
                                             T1, T2, T3, T4, T5, T6) except +raise_python_error
    object visit_new[T1, T2, T3, T4, T5, T6, T7](object, const char*, const char*,
                                                 T1, T2, T3, T4, T5, T6, T7) except +raise_python_error
    object visit_new[T1, T2, T3, T4, T5, T6, T7, T8](object, const char*, const char*,
                                                     T1, T2, T3, T4, T5, T6, T7, T8) except +raise_python_error
    # What cpp.visit's argument with these kernels demands, for
    # dlbridge.annotate: b"(float32 | float64)[*, *] C-contiguous cpu read-only".
    string describe_kernels[T1](T1) except +raise_python_error
    string describe_kernels[T1, T2](T1, T2) except +raise_python_error
    string describe_kernels[T1, T2, T3](T1, T2, T3) except +raise_python_error
    string describe_kernels[T1, T2, T3, T4](T1, T2, T3, T4) except +raise_python_error
