// libFuzzer harness over the foreign-tensor path: dlb::validate, dlb::check,
// tensor::import (versioned and legacy), tensor::adopt, export round trips and
// the CPU copy and cast engine on the tensors that pass.
//
// Each input decodes to one producer's tensor (layout below; seeds.py writes
// the seed corpus in it). The harness aborts, which libFuzzer reports as a
// crash, when
// - the deleter (or adopt's release) does not run exactly once;
// - an accepted tensor is unsound by the exact arithmetic of expect_sound():
//   sizes and byte offsets past int64, elements outside the address space;
// - a refusal is malformed, or check() and validate() disagree;
// - an export of an accepted tensor does not import back to the same tensor;
// - a copy of an accepted tensor differs from reading it element by element,
//   or the copy plan of any accepted tensor loses elements.
// Under ASan, the data of small accepted tensors lies in a heap block of
// exactly their byte span, and shape and strides arrays are exactly ndim
// long, so a read one byte too far is reported too.
//
// Input layout, little-endian, zeros once the bytes run out:
//   u8  route        % 3: 0 import versioned, 1 import legacy, 2 tensor::adopt
//   u8  options      bit 0 shape NULL (not for adopt), bit 1 strides NULL, bit 2 read-only,
//                    bit 3 (adopt) one stride more than axes
//   u32 version major, u32 version minor, u64 flags
//   i32 device type, i32 device id
//   u8 dtype code, u8 bits, u16 lanes
//   u64 data address, u64 byte_offset
//   i32 ndim, then i64 shape[n], i64 strides[n]: n = ndim when 0 <= ndim <= 64
//                    (adopt: ndim clamped to [0, 66]), else 0
//   u8  dtype_table index to cast to
//   requirements for check(): u8 options (bit 0 has device, bit 1 writable,
//   bits 2-3 memory order), i32 device type, u8 dtype_table index, i32 ndim,
//   u8 count (% 66), i64 shape[count]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dlbridge/demands.hpp"
#include "dlbridge/host_copy.hpp"
#include "dlbridge/tensor.hpp"
#include "dlbridge/validate.hpp"

namespace {

using i128 = __int128;
using dims_t = std::unique_ptr<std::int64_t[]>;
using dlb::DLDeviceType, dlb::DLManagedTensor, dlb::DLManagedTensorVersioned, dlb::DLPackVersion, dlb::DLTensor;

// Fixed-width fields from the fuzzer's bytes; zeros past the end, so that
// every input is some tensor.
class reader {
 public:
  reader(const std::uint8_t* data, std::size_t size) : next_(data), left_(size) {}
  template <class T>
  T take() {
    unsigned char bytes[sizeof(T)] = {};
    const std::size_t n = std::min(left_, sizeof(T));
    if (n) std::memcpy(bytes, next_, n);
    next_ += n;
    left_ -= n;
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }

 private:
  const std::uint8_t* next_;
  std::size_t left_;
};

// One decoded input. Shape and strides are heap arrays of exactly their
// length (a zero-length one is still a pointer), so ASan sees a read past them.
struct decoded {
  int route = 0;
  DLPackVersion version{};
  std::uint64_t flags = 0;
  DLTensor tensor{};  // shape and strides point into the arrays below, or are NULL
  std::size_t axes = 0, stride_count = 0;
  dims_t shape, strides;
  bool readonly = false;
  dlb::dtype cast_to;
  dlb::requirements demands;
  std::vector<std::int64_t> demanded_shape;
};

dims_t take_dims(reader& in, std::size_t n) {
  dims_t dims(new std::int64_t[n]);
  for (std::size_t i = 0; i < n; ++i) dims[i] = in.take<std::int64_t>();
  return dims;
}

decoded decode(const std::uint8_t* data, std::size_t size) {
  reader in(data, size);
  decoded d;
  d.route = in.take<std::uint8_t>() % 3;
  const auto options = in.take<std::uint8_t>();
  d.version.major = in.take<std::uint32_t>();
  d.version.minor = in.take<std::uint32_t>();
  d.flags = in.take<std::uint64_t>();
  DLTensor& t = d.tensor;
  t.device.device_type = static_cast<DLDeviceType>(in.take<std::int32_t>());
  t.device.device_id = in.take<std::int32_t>();
  t.dtype.code = in.take<std::uint8_t>();
  t.dtype.bits = in.take<std::uint8_t>();
  t.dtype.lanes = in.take<std::uint16_t>();
  t.data = reinterpret_cast<void*>(std::uintptr_t(in.take<std::uint64_t>()));
  t.byte_offset = in.take<std::uint64_t>();
  t.ndim = in.take<std::int32_t>();
  const bool listed = t.ndim >= 0 && t.ndim <= dlb::max_ndim;
  d.axes = std::size_t(d.route == 2 ? std::clamp(t.ndim, 0, dlb::max_ndim + 2) : listed ? t.ndim : 0);
  d.stride_count = d.axes + (d.route == 2 && (options & 8) ? 1 : 0);
  d.shape = take_dims(in, d.axes);
  d.strides = take_dims(in, d.stride_count);
  t.shape = options & 1 ? nullptr : d.shape.get();
  t.strides = options & 2 ? nullptr : d.strides.get();
  d.readonly = options & 4;
  d.cast_to = dlb::dtype_table[in.take<std::uint8_t>() % dlb::dtype_table.size()].type;

  auto& r = d.demands;
  const auto demand = in.take<std::uint8_t>();
  r.has_device = demand & 1;
  r.writable = demand & 2;
  r.order = static_cast<dlb::memory_order>((demand >> 2) & 3);
  r.device_type = static_cast<DLDeviceType>(in.take<std::int32_t>());
  r.type = dlb::dtype_table[in.take<std::uint8_t>() % dlb::dtype_table.size()].type;
  r.ndim = in.take<std::int32_t>();
  for (int i = in.take<std::uint8_t>() % (dlb::max_ndim + 2); i > 0; --i)
    d.demanded_shape.push_back(in.take<std::int64_t>());
  return d;
}

// The input being tried, for failure reports.
const decoded* current = nullptr;

std::string describe(const decoded& d) {
  const DLTensor& t = d.tensor;
  std::string s = "route " + std::to_string(d.route) + ", version " + std::to_string(d.version.major) + "." +
                  std::to_string(d.version.minor) + ", flags " + std::to_string(d.flags) + ", ndim " +
                  std::to_string(t.ndim) + ", dtype (" + std::to_string(t.dtype.code) + ", " +
                  std::to_string(t.dtype.bits) + ", " + std::to_string(t.dtype.lanes) + "), device (" +
                  std::to_string(t.device.device_type) + ", " + std::to_string(t.device.device_id) +
                  "), data " + std::to_string(reinterpret_cast<std::uintptr_t>(t.data)) + ", byte_offset " +
                  std::to_string(t.byte_offset);
  auto list = [&](const char* name, const std::int64_t* dims, std::size_t n) {
    s += name;
    if (!dims) {
      s += "NULL";
      return;
    }
    s += "(";
    for (std::size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    s += ")";
  };
  list(", shape ", t.shape, d.axes);
  list(", strides ", t.strides, d.stride_count);
  return s;
}

[[noreturn]] void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz_import: %.*s\n  input: %s\n", int(what.size()), what.data(),
               current ? describe(*current).c_str() : "?");
  std::abort();
}

void expect(bool ok, std::string_view what) {
  if (!ok) fail(what);
}

// Counts deleter and release calls.
int released = 0;
void count_release(void*) noexcept { ++released; }

// A producer's managed tensor; its deleter counts and frees it.
template <class Managed>
struct producer {
  Managed m{};
  dims_t shape, strides;
  static void deleter(Managed* self) {
    ++released;
    delete static_cast<producer*>(self->manager_ctx);
  }
};

dims_t copy_dims(const std::int64_t* dims, std::size_t n) {
  if (!dims) return nullptr;
  dims_t out(new std::int64_t[n]);
  std::copy_n(dims, n, out.get());
  return out;
}

template <class Managed>
Managed* make_managed(const DLTensor& t, std::size_t n) {
  auto* p = new producer<Managed>;
  p->m.manager_ctx = p;
  p->m.deleter = &producer<Managed>::deleter;
  p->m.dl_tensor = t;
  p->shape = copy_dims(t.shape, n);
  p->strides = copy_dims(t.strides, n);
  p->m.dl_tensor.shape = p->shape.get();
  p->m.dl_tensor.strides = p->strides.get();
  return &p->m;
}

// Exact arithmetic in 128 bits; `overflow` once a result leaves them.
struct wide {
  i128 v = 0;
  bool overflow = false;
  friend wide operator*(wide a, i128 b) {
    wide r{0, a.overflow};
    r.overflow |= __builtin_mul_overflow(a.v, b, &r.v);
    return r;
  }
  friend wide operator+(wide a, wide b) {
    wide r{0, a.overflow || b.overflow};
    r.overflow |= __builtin_add_overflow(a.v, b.v, &r.v);
    return r;
  }
  [[nodiscard]] bool fits_int64() const { return !overflow && v >= INT64_MIN && v <= INT64_MAX; }
};

struct sizes {
  std::int64_t count, bytes;
};

// What validate() promises of a tensor it accepts, recomputed exactly.
sizes expect_sound(const DLTensor& t, std::uint64_t flags) {
  expect(t.ndim >= 0 && t.ndim <= dlb::max_ndim, "accepted: ndim out of range");
  expect((flags & ~(dlb::dlpack_flag_read_only | dlb::dlpack_flag_is_copied)) == 0,
         "accepted: unknown or padded-sub-byte flag bits");
  expect(t.device.device_id >= 0, "accepted: negative device id");
  const dlb::dtype type = t.dtype;
  expect(type.lanes == 1 && dlb::is_supported(type), "accepted: unsupported dtype");
  expect(t.ndim == 0 || t.shape, "accepted: NULL shape");
  bool empty = false;
  for (std::int32_t i = 0; i < t.ndim; ++i) {
    expect(t.shape[i] >= 0, "accepted: negative extent");
    empty = empty || t.shape[i] == 0;
  }
  wide count{empty ? 0 : 1}, volume{i128(type.itemsize())};
  for (std::int32_t i = 0; i < t.ndim; ++i) {
    count = count * t.shape[i];
    volume = volume * std::max<i128>(t.shape[i], 1);
  }
  expect(count.fits_int64(), "accepted: element count past int64");
  // Every tensor gets C-order strides (NULL strides, exports), empty ones too.
  expect(volume.fits_int64(), "accepted: C-order byte strides past int64");
  // Packed sub-byte elements take `bits` bits each, the others whole bytes.
  const wide bits = count * i128(type.is_subbyte() ? type.bits : type.itemsize() * 8);
  const i128 bytes = (bits.v + 7) / 8;
  expect(!bits.overflow && bytes <= INT64_MAX, "accepted: byte size past int64");
  const sizes result{std::int64_t(count.v), std::int64_t(bytes)};
  // The tensor keeps data + byte_offset, empty or not.
  const i128 first = i128(reinterpret_cast<std::uintptr_t>(t.data)) + i128(t.byte_offset);
  expect(first <= i128(UINTPTR_MAX), "accepted: data + byte_offset past the top of the address space");
  if (count.v == 0) return result;

  expect(t.data != nullptr, "accepted: NULL data for a non-empty tensor");
  wide lo{0}, hi{bytes};
  if (t.strides && !type.is_subbyte()) {
    hi = wide{i128(type.itemsize())};
    for (std::int32_t i = 0; i < t.ndim; ++i) {
      const wide reach = wide{t.shape[i] - 1} * t.strides[i] * i128(type.itemsize());
      (reach.v < 0 ? lo : hi) = (reach.v < 0 ? lo : hi) + reach;
    }
  }
  expect(lo.fits_int64() && hi.fits_int64(), "accepted: byte offsets past int64");
  expect(first + lo.v >= 0, "accepted: elements below address 0");
  expect(first + hi.v <= i128(UINTPTR_MAX) + 1, "accepted: elements past the top of the address space");
  return result;
}

void expect_well_formed(const dlb::import_error& e, std::int32_t ndim) {
  expect(!e.field.empty() && !e.expected.empty() && !e.received.empty(), "refusal with an empty part");
  expect(e.axis == -1 || (e.axis >= 0 && e.axis < ndim), "refusal names an axis the tensor lacks");
}

// check() runs validate() first: both must report the same first failure.
void check_agrees(const decoded& d) {
  dlb::requirements r = d.demands;
  r.shape = d.demanded_shape;
  const auto invalid = dlb::validate(d.tensor);
  const auto refused = dlb::check(d.tensor, d.readonly, r);
  if (invalid) {
    expect(refused && refused->message() == invalid->message(), "check() and validate() disagree");
    expect_well_formed(*invalid, d.tensor.ndim);
  } else if (refused) {
    expect_well_formed(*refused, d.tensor.ndim);
  }
}

void expect_same(const dlb::tensor& a, const dlb::tensor& b) {
  const bool empty = a.size() == 0;
  expect(a.type() == b.type() && a.device() == b.device() && a.readonly() == b.readonly() &&
             std::ranges::equal(a.shape(), b.shape()),
         "an export round trip changed the tensor");
  // Empty exports have NULL data, and strides of axes of extent <= 1 are free.
  expect(empty ? b.data() == nullptr : a.data() == b.data(), "an export round trip moved the data");
  for (std::int32_t i = 0; i < a.ndim() && !empty; ++i)
    if (a.shape(i) > 1) expect(a.stride(i) == b.stride(i), "an export round trip changed a stride");
}

// An accepted tensor, exported either way, must import back unchanged.
void round_trip(const dlb::tensor& t) {
  expect_same(t, dlb::tensor::import(t.export_versioned()));
  expect_same(t, dlb::tensor::import(t.export_legacy(), t.readonly()));
}

// The copy engine's plan of any accepted tensor into a C-order copy, spans
// wider than int64 included (no memory is read): coalescing and choosing the
// tiled axis form no overflow, and the plan keeps every element.
void plan_copy(const DLTensor& t, std::int64_t count) {
  const auto ndim = std::size_t(t.ndim);
  const dlb::extents_t shape(t.shape, ndim);
  std::int64_t c_order[dlb::max_ndim];
  dlb::c_strides(shape, {c_order, ndim});
  const dlb::extents_t strides(t.strides ? t.strides : c_order, ndim);
  const auto plan = dlb::detail::make_strided_plan(shape, {c_order, ndim}, strides);
  wide planned{1};
  for (std::int32_t i = 0; i < plan.ndim; ++i) planned = planned * plan.extent[std::size_t(i)];
  expect(planned.fits_int64() && planned.v == count, "the copy plan changed the element count");
  if (plan.ndim > 0) (void)dlb::detail::tile_axis(plan);
}

// Small accepted tensors, again, on a heap block of exactly their byte span:
// a copy must read what indexing reads, and a cast of the strided tensor must
// equal the cast of its contiguous copy.
void copy_on_real_memory(const DLTensor& fuzzed, std::int64_t count, dlb::dtype cast_to) {
  if (count > 4096) return;
  const dlb::dtype type = fuzzed.dtype;
  const auto ndim = std::size_t(fuzzed.ndim);
  std::int64_t c_order[dlb::max_ndim];
  const dlb::extents_t shape(fuzzed.shape, ndim);
  dlb::c_strides(shape, {c_order, ndim});
  const dlb::extents_t strides(fuzzed.strides ? fuzzed.strides : c_order, ndim);
  const auto span = type.is_subbyte() ? dlb::byte_extent{0, std::int64_t(type.storage_bytes(count))}
                                      : *dlb::byte_span(shape, strides, type);
  // The width in unsigned arithmetic: an accepted span may be wider than
  // int64 (lo near INT64_MIN and hi near INT64_MAX), never wider than 2^64 - 1.
  const std::uint64_t width = std::uint64_t(span.hi) - std::uint64_t(span.lo);
  if (width > 65536) return;
  // From here every offset is inside the span (strides of extent-1 axes are
  // only ever multiplied by index 0), so the arithmetic below cannot overflow.

  const auto bytes = std::size_t(width);
  auto* block = static_cast<unsigned char*>(std::malloc(bytes));
  for (std::size_t i = 0; i < bytes; ++i) block[i] = static_cast<unsigned char>(i * 131 + 7);
  const unsigned char* first = block - span.lo;
  // Keep a little of the fuzzed byte_offset: data lies that far below the first element.
  const std::uint64_t offset = fuzzed.byte_offset % 64;
  DLTensor real = fuzzed;
  real.device = {dlb::kDLCPU, 0};
  real.byte_offset = offset;
  real.data = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(first) - offset);
  auto* m = make_managed<DLManagedTensorVersioned>(real, ndim);
  m->version = {dlb::dlpack_major_version, 0};
  const int before = released;
  try {
    const dlb::tensor t = dlb::tensor::import(m);
    const dlb::tensor c = dlb::copy(t);
    const auto* out = static_cast<const unsigned char*>(c.data());
    if (type.is_subbyte()) {
      expect(std::memcmp(out, first, bytes) == 0, "a packed copy differs from the source");
    } else {
      // Every index in C order, as the copy writes them.
      const auto itemsize = std::int64_t(type.itemsize());
      std::int64_t index[dlb::max_ndim] = {};
      for (std::int64_t k = 0; k < count; ++k) {
        std::int64_t at = 0;
        for (std::size_t i = 0; i < ndim; ++i) at += index[i] * strides[i];
        expect(std::memcmp(out + k * itemsize, first + at * itemsize, std::size_t(itemsize)) == 0,
               "a copy differs from indexing");
        for (std::size_t i = ndim; i-- > 0;) {
          if (++index[i] < shape[i]) break;
          index[i] = 0;
        }
      }
    }
    const dlb::tensor strided = dlb::astype(t, cast_to), contiguous = dlb::astype(c, cast_to);
    expect(std::memcmp(strided.data(), contiguous.data(), std::size_t(strided.nbytes())) == 0,
           "a strided cast differs from the cast of its contiguous copy");
  } catch (const dlb::import_failure& e) {
    fail("refused on real memory: " + e.error().message());
  }
  expect(released == before + 1, "the deleter on real memory did not run exactly once");
  released = before;
  std::free(block);
}

// Imports through the decoded route; the tensor when accepted.
std::optional<dlb::tensor> import(const decoded& d) {
  const DLTensor& t = d.tensor;
  try {
    switch (d.route) {
      case 0: {
        auto* m = make_managed<DLManagedTensorVersioned>(t, d.axes);
        m->version = d.version;
        m->flags = d.flags;
        return dlb::tensor::import(m);
      }
      case 1:
        return dlb::tensor::import(make_managed<DLManagedTensor>(t, d.axes), d.readonly);
      default: {
        const dlb::extents_t shape(d.shape.get(), d.axes);
        const dlb::extents_t strides = t.strides ? dlb::extents_t(t.strides, d.stride_count) : dlb::extents_t{};
        return dlb::tensor::adopt(t.data, t.dtype, t.device, shape, strides, d.readonly, count_release, nullptr);
      }
    }
  } catch (const dlb::import_failure& e) {
    expect(released == 1, "a refused tensor was not released exactly once");
    expect_well_formed(e.error(), t.ndim);
  } catch (const std::invalid_argument&) {
    expect(d.route == 2 && t.strides && d.stride_count != d.axes, "an unexpected std::invalid_argument");
    expect(released == 1, "a refused adopt did not release exactly once");
  }
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const decoded d = decode(data, size);
  current = &d;
  check_agrees(d);
  released = 0;
  {
    const auto t = import(d);
    if (t) {
      expect(released == 0, "an accepted tensor was released while in use");
      // What was accepted: adopt() describes the tensor itself, from its shape
      // entries and with no byte_offset; only versioned tensors carry flags.
      DLTensor accepted = d.tensor;
      if (d.route == 2) {
        accepted.ndim = std::int32_t(d.axes);
        accepted.shape = d.shape.get();
        accepted.byte_offset = 0;
      }
      // Float4 pairs are kept, and so checked, as DLPack's float4 on the same bytes.
      std::int64_t unpaired[2 * dlb::max_ndim];
      if (dlb::is_float4_pairs(accepted.dtype)) accepted = dlb::unpair_float4(accepted, unpaired);
      const auto [count, bytes] = expect_sound(accepted, d.route == 0 ? d.flags : 0);
      expect(t->size() == count && t->nbytes() == bytes, "size or nbytes differ from the exact ones");
      round_trip(*t);
      expect(released == 0, "a round trip released the producer's tensor");
      if (count > 0) {
        plan_copy(accepted, count);
        copy_on_real_memory(accepted, count, d.cast_to);
      }
    }
  }
  expect(released == 1, "the deleter did not run exactly once");
  current = nullptr;
  return 0;
}
