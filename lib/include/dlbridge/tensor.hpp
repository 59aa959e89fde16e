// dlb::tensor: an owning, reference-counted handle on strided memory, and the
// import/export of DLPack managed tensors (versioned and legacy).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "dlbridge/device.hpp"
#include "dlbridge/dlpack.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/layout.hpp"
#include "dlbridge/shape.hpp"
#include "dlbridge/validate.hpp"
#include "dlbridge/view.hpp"

namespace dlb {

// Releases memory exactly once, when the last tensor referring to it goes, on
// whichever thread that happens. `release` must be callable from any thread.
class keeper {
 public:
  // Must not throw (Cython cannot mark its callbacks C++ noexcept).
  using release_fn = void (*)(void* ctx);

  [[nodiscard]] static keeper* make(release_fn release, void* ctx) { return new keeper(release, ctx); }
  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void drop() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (release_) release_(ctx_);
    delete this;
  }
  [[nodiscard]] std::int64_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }
  // What runs when the last reference goes, and its argument: the Python
  // layer reads them to show its garbage collector which object holds the memory.
  [[nodiscard]] release_fn release_function() const noexcept { return release_; }
  [[nodiscard]] void* context() const noexcept { return ctx_; }

 private:
  keeper(release_fn r, void* c) : release_(r), ctx_(c) {}
  std::atomic<std::int64_t> refs_{1};
  release_fn release_;
  void* ctx_;
};

// Alignment of memory dlbridge allocates (a cache line; enough for AVX-512).
inline constexpr std::size_t allocation_alignment = 64;

namespace detail {
// New memory is mapped in on first write, one page fault per 4 KiB page: a
// 128 MiB copy into a new array would spend more time in faults than copying.
// Transparent huge pages (which Linux leaves to madvise by default) take 512
// times fewer faults; NumPy asks for them for its arrays of 4 MiB and more.
inline void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < (std::size_t(4) << 20)) return;
  const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const auto first = (start + page - 1) / page * page;  // madvise needs a page boundary
  (void)madvise(reinterpret_cast<void*>(first), start + bytes - first, MADV_HUGEPAGE);  // advice: failures are harmless
#else
  (void)data;
  (void)bytes;
#endif
}
}  // namespace detail

class tensor {
 public:
  // User-provided, not defaulted: `tensor()` would otherwise zero the whole
  // object, inline extents included, on every exchange's path.
  tensor() noexcept {}
  tensor(const tensor& o) : tensor() { *this = o; }
  tensor(tensor&& o) noexcept { take(o); }
  tensor& operator=(const tensor& o) {
    if (this == &o) return *this;
    tensor t = o.restrided(o.data_, o.shape(), o.strides());
    swap(t);
    return *this;
  }
  tensor& operator=(tensor&& o) noexcept {
    if (this == &o) return *this;
    keeper* held = std::exchange(keeper_, nullptr);
    take(o);
    if (held) held->drop();  // last: a release may run Python code, which sees *this complete
    return *this;
  }
  ~tensor() {
    if (keeper_) keeper_->drop();
  }
  void swap(tensor& o) noexcept {
    tensor t(std::move(o));
    o.take(*this);
    take(t);
  }

  // New C-contiguous host memory, uninitialised. Throws std::length_error when
  // the size overflows, std::invalid_argument for a negative extent and
  // std::bad_alloc when memory is short.
  [[nodiscard]] static tensor empty(extents_t shape, dtype type) {
    require_shape(shape, type);
    const std::uint64_t bytes = type.storage_bytes(std::uint64_t(*element_count(shape)));
    const std::size_t rounded = (std::max<std::uint64_t>(bytes, 1) + allocation_alignment - 1) /
                                allocation_alignment * allocation_alignment;
    void* memory = std::aligned_alloc(allocation_alignment, rounded);
    if (!memory) throw std::bad_alloc();
    detail::advise_huge_pages(memory, rounded);
    if (type.is_subbyte()) std::memset(memory, 0, rounded);  // no stray bits between packed elements
    tensor t;
    t.keeper_ = keeper::make([](void* p) noexcept { std::free(p); }, memory);
    t.data_ = memory;
    t.dtype_ = type;
    t.set_dims(shape, {});
    return t;
  }

  // New C-contiguous host memory of zero bits (for float8_e8m0fnu, which has
  // no zero, that is its smallest value 2**-127, as in ml_dtypes). Throws as empty().
  [[nodiscard]] static tensor zeros(extents_t shape, dtype type) {
    tensor t = empty(shape, type);
    std::memset(t.data_, 0, std::size_t(t.nbytes()));
    return t;
  }

  // New C-contiguous host memory with every element `value`, converted as
  // store() converts. Throws as empty(), and std::invalid_argument where
  // `value` does not fit `type`: an integer out of its range, a complex
  // value for a real type.
  [[nodiscard]] static tensor full(extents_t shape, dtype type, const scalar& value) {
    if (value.k == scalar::kind::complex && !is_complex(type))
      throw std::invalid_argument("tensor::full: a complex value does not fit in " + std::string(name(type)));
    if (!fits(type, value))
      throw std::invalid_argument("tensor::full: " +
                                  (value.k == scalar::kind::signed_int ? std::to_string(value.i)
                                                                       : std::to_string(value.u)) +
                                  " is out of bounds for " + std::string(name(type)));
    tensor t = empty(shape, type);
    fill(type, t.data_, t.size(), value);
    return t;
  }

  // Adopts memory someone else owns: `release(ctx)` runs exactly once when the
  // last tensor sharing it goes. Empty `strides` means C order. The layout is
  // checked by validate(); on failure `release` runs and import_failure is thrown.
  [[nodiscard]] static tensor adopt(void* data, dtype type, device dev, extents_t shape,
                                    extents_t strides, bool readonly, keeper::release_fn release,
                                    void* ctx) {
    // More axes than int32 counts are still more than max_ndim: validate says so.
    const auto ndim = std::int32_t(std::min<std::size_t>(shape.size(), INT32_MAX));
    DLTensor described{data, dev, ndim, type, const_cast<std::int64_t*>(shape.data()),
                       strides.empty() ? nullptr : const_cast<std::int64_t*>(strides.data()), 0};
    if (!strides.empty() && strides.size() != shape.size()) {
      if (release) release(ctx);
      throw std::invalid_argument("expected as many strides as axes (" + std::to_string(shape.size()) + "), got " +
                                  std::to_string(strides.size()));
    }
    if (auto error = validate(described)) {
      if (release) release(ctx);
      throw import_failure(std::move(*error));
    }
    return from_dltensor(described, readonly, release, ctx);
  }

  // Runs a managed tensor's deleter, if it has one.
  template <class Managed>
  static void call_deleter(void* m) {
    auto* self = static_cast<Managed*>(m);
    if (self->deleter) self->deleter(self);
  }

  // Adopts the memory a view describes, with the view's device: memory
  // wrapped through a dlb::cuda view is labelled CUDA, never CPU.
  template <class T, class... Constraints>
  [[nodiscard]] static tensor adopt(const view<T, Constraints...>& v, keeper::release_fn release, void* ctx) {
    std::array<std::int64_t, std::size_t(view<T, Constraints...>::rank)> shape{}, strides{};
    for (std::int32_t i = 0; i < v.rank; ++i) {
      shape[std::size_t(i)] = v.shape(i);
      strides[std::size_t(i)] = v.stride(i);
    }
    return adopt(const_cast<std::remove_const_t<T>*>(v.data()), v.dtype, v.device(), shape, strides, v.readonly,
                 release, ctx);
  }

  // Takes ownership of a producer's tensor. Its deleter runs exactly once,
  // through `release`: when the last dlb::tensor goes or, if validation fails,
  // before import_failure. (The Python layer passes a `release` that keeps a
  // pending Python exception intact around the deleter.) A NULL `m` (a
  // producer that returned nothing) is std::invalid_argument.
  [[nodiscard]] static tensor import(DLManagedTensorVersioned* m,
                                     keeper::release_fn release = call_deleter<DLManagedTensorVersioned>) {
    if (!m) throw std::invalid_argument("tensor::import: expected a DLManagedTensorVersioned, got NULL");
    auto error = validate_version(m->version);
    if (!error) error = validate(m->dl_tensor, m->flags);
    if (error) {
      if (release) release(m);
      throw import_failure(std::move(*error));
    }
    return from_dltensor(m->dl_tensor, m->flags & dlpack_flag_read_only, release, m);
  }

  // The legacy struct cannot say whether the data may be written; the caller
  // decides (dlbridge's Python layer treats it as read-only, as NumPy does).
  [[nodiscard]] static tensor import(DLManagedTensor* m, bool readonly,
                                     keeper::release_fn release = call_deleter<DLManagedTensor>) {
    if (!m) throw std::invalid_argument("tensor::import: expected a DLManagedTensor, got NULL");
    if (auto error = validate(m->dl_tensor)) {
      if (release) release(m);
      throw import_failure(std::move(*error));
    }
    return from_dltensor(m->dl_tensor, readonly, release, m);
  }

  // A tensor on the same memory with another layout (views: slices, transposes).
  // The caller guarantees the new layout stays inside the memory.
  [[nodiscard]] tensor restrided(void* data, extents_t shape, extents_t strides) const {
    tensor t;
    if (keeper_) keeper_->retain();
    t.keeper_ = keeper_;
    t.data_ = data;
    t.dtype_ = dtype_;
    t.device_ = device_;
    t.readonly_ = readonly_;
    t.set_dims(shape, strides);
    return t;
  }

  // The same view whose memory `release(ctx)` lets go of instead: a new
  // keeper, shared with nothing, so its holder is the memory's only owner
  // (the Python layer gives each Array its own). If that fails, release(ctx)
  // runs before std::bad_alloc.
  [[nodiscard]] tensor kept_by(keeper::release_fn release, void* ctx) const {
    tensor t;
    try {
      t.keeper_ = keeper::make(release, ctx);
      t.set_dims(shape(), strides());
    } catch (...) {
      if (!t.keeper_ && release) release(ctx);  // else ~tensor releases it
      throw;
    }
    t.data_ = data_;
    t.dtype_ = dtype_;
    t.device_ = device_;
    t.readonly_ = readonly_;
    return t;
  }

  // Exports as a DLPack 1.3 versioned managed tensor: one allocation for the
  // struct, shape and strides; byte_offset 0; data NULL when empty; strides
  // always filled. `flags` adds to READ_ONLY, which is set when read-only.
  [[nodiscard]] DLManagedTensorVersioned* export_versioned(std::uint64_t flags = 0) const {
    auto* m = allocate_export<DLManagedTensorVersioned>();
    m->version = {dlpack_major_version, dlpack_minor_version};
    m->deleter = [](DLManagedTensorVersioned* self) { release_export(self); };
    m->flags = flags | (readonly_ ? dlpack_flag_read_only : 0);
    return m;
  }

  // Exports as a legacy managed tensor. It cannot carry READ_ONLY: callers
  // must refuse read-only data (the DLPack Python spec says BufferError).
  [[nodiscard]] DLManagedTensor* export_legacy() const {
    auto* m = allocate_export<DLManagedTensor>();
    m->deleter = [](DLManagedTensor* self) { release_export(self); };
    return m;
  }

  // A DLTensor describing this tensor; it points into the tensor, so it is
  // valid while the tensor lives and keeps nothing alive.
  [[nodiscard]] DLTensor dltensor() const noexcept {
    auto* d = const_cast<std::int64_t*>(dims());  // DLTensor has no const shape; consumers must not write it
    return {data_, device_, ndim_, dtype_, ndim_ ? d : nullptr, ndim_ ? d + ndim_ : nullptr, 0};
  }

  // A checked typed view, import_failure naming the unmet constraint. Only
  // the view's demands are checked: every tensor's layout passed validate()
  // when it was made or imported.
  template <class View>
  [[nodiscard]] View as() const {
    return View::from_validated(dltensor(), readonly_);
  }

  [[nodiscard]] bool has_value() const noexcept { return keeper_ != nullptr; }
  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] dtype type() const noexcept { return dtype_; }
  [[nodiscard]] dlb::device device() const noexcept { return device_; }
  [[nodiscard]] std::int32_t ndim() const noexcept { return ndim_; }
  [[nodiscard]] extents_t shape() const noexcept { return {dims(), std::size_t(ndim_)}; }
  [[nodiscard]] extents_t strides() const noexcept {
    return {dims() + ndim_, std::size_t(ndim_)};
  }
  [[nodiscard]] std::int64_t shape(std::int32_t i) const noexcept { return dims()[i]; }
  [[nodiscard]] std::int64_t stride(std::int32_t i) const noexcept { return dims()[ndim_ + i]; }
  [[nodiscard]] bool readonly() const noexcept { return readonly_; }
  // One-way: memory a producer lent read-only must never become writable.
  void make_readonly() noexcept { readonly_ = true; }
  // Sizes were checked when the tensor was made, so these cannot overflow.
  [[nodiscard]] std::int64_t size() const noexcept { return *element_count(shape()); }
  [[nodiscard]] std::int64_t nbytes() const noexcept {
    return std::int64_t(dtype_.storage_bytes(std::uint64_t(size())));
  }
  [[nodiscard]] bool is_c_contiguous() const noexcept { return dlb::is_c_contiguous(shape(), strides()); }
  [[nodiscard]] bool is_f_contiguous() const noexcept { return dlb::is_f_contiguous(shape(), strides()); }
  // References to the memory (this tensor, its views and exports).
  [[nodiscard]] std::int64_t use_count() const noexcept { return keeper_ ? keeper_->use_count() : 0; }
  // What keeps the memory alive; nullptr for a default-constructed tensor.
  [[nodiscard]] const keeper* memory_keeper() const noexcept { return keeper_; }

 private:
  // The tensor of a DLTensor that passed validate(): float4 pairs become
  // DLPack's float4 on the same bytes (unpair_float4).
  [[nodiscard]] static tensor from_dltensor(const DLTensor& t, bool readonly, keeper::release_fn release,
                                            void* ctx) {
    if (is_float4_pairs(t.dtype)) [[unlikely]]
      return from_float4_pairs(t, readonly, release, ctx);
    tensor out;
    const extents_t shape(t.shape, std::size_t(t.ndim));
    const extents_t strides(t.strides, t.strides ? std::size_t(t.ndim) : 0);
    try {
      out.set_dims(shape, strides);
      out.keeper_ = keeper::make(release, ctx);
    } catch (...) {
      if (release) release(ctx);
      throw;
    }
    out.data_ = t.data ? static_cast<std::byte*>(t.data) + t.byte_offset : nullptr;
    out.dtype_ = t.dtype;
    out.device_ = t.device;
    out.readonly_ = readonly;
    return out;
  }

  [[nodiscard, gnu::noinline]] static tensor from_float4_pairs(const DLTensor& t, bool readonly,
                                                               keeper::release_fn release, void* ctx) {
    std::int64_t dims[2 * max_ndim];
    return from_dltensor(unpair_float4(t, dims), readonly, release, ctx);
  }

  void set_dims(extents_t shape, extents_t strides) {
    ndim_ = std::int32_t(shape.size());
    heap_dims_ = ndim_ > inline_ndim ? std::make_unique<std::int64_t[]>(2 * std::size_t(ndim_)) : nullptr;
    std::int64_t* out = dims();
    std::copy(shape.begin(), shape.end(), out);
    if (strides.empty())
      c_strides(shape, {out + ndim_, std::size_t(ndim_)});
    else
      std::copy(strides.begin(), strides.end(), out + ndim_);
  }

  // The managed struct, then shape and strides, in one block; manager_ctx
  // holds a reference to the memory.
  template <class Managed>
  [[nodiscard]] Managed* allocate_export() const {
    const std::size_t bytes = sizeof(Managed) + 2 * sizeof(std::int64_t) * std::size_t(ndim_);
    // malloc, not calloc: glibc's calloc bypasses its per-thread cache, which
    // costs an export about a third of its time.
    void* block = std::malloc(bytes);
    if (!block) throw std::bad_alloc();
    auto* m = ::new (block) Managed{};
    auto* dims = reinterpret_cast<std::int64_t*>(m + 1);
    std::copy_n(this->dims(), 2 * std::size_t(ndim_), dims);
    DLTensor& t = m->dl_tensor;
    t.data = size() ? data_ : nullptr;
    t.device = device_;
    t.ndim = ndim_;
    t.dtype = dtype_;
    t.shape = ndim_ ? dims : nullptr;
    t.strides = ndim_ ? dims + ndim_ : nullptr;
    t.byte_offset = 0;
    if (keeper_) keeper_->retain();
    m->manager_ctx = keeper_;
    return m;
  }

  template <class Managed>
  static void release_export(Managed* m) noexcept {
    if (auto* k = static_cast<keeper*>(m->manager_ctx)) k->drop();
    std::free(m);
  }

  // Moves o into *this, which holds no keeper, leaving o empty. Only the
  // 2 * ndim extents in use are copied: moves are on every exchange's path.
  void take(tensor& o) noexcept {
    keeper_ = std::exchange(o.keeper_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    dtype_ = std::exchange(o.dtype_, dtype{});
    device_ = std::exchange(o.device_, dlb::device{});
    ndim_ = std::exchange(o.ndim_, 0);
    readonly_ = std::exchange(o.readonly_, false);
    heap_dims_ = std::move(o.heap_dims_);
    if (!heap_dims_) std::copy_n(o.inline_dims_.data(), 2 * std::size_t(ndim_), inline_dims_.data());
  }

  keeper* keeper_ = nullptr;
  void* data_ = nullptr;
  dtype dtype_{};
  dlb::device device_{};
  std::int32_t ndim_ = 0;
  bool readonly_ = false;
  // Shape, then strides: in the tensor itself up to inline_ndim axes (no
  // allocation for the arrays most exchanges carry), else on the heap.
  [[nodiscard]] std::int64_t* dims() noexcept { return heap_dims_ ? heap_dims_.get() : inline_dims_.data(); }
  [[nodiscard]] const std::int64_t* dims() const noexcept {
    return heap_dims_ ? heap_dims_.get() : inline_dims_.data();
  }
  static constexpr std::int32_t inline_ndim = 4;
  // Not zeroed: only the first 2 * ndim_ are ever read, and zeroing on every
  // construction showed in each exchange's profile.
  std::array<std::int64_t, 2 * inline_ndim> inline_dims_;
  std::unique_ptr<std::int64_t[]> heap_dims_;
};

}  // namespace dlb
