// dlb::view in device code: kernels take views by value and read them
// (indexing, shape, stride, size, contiguity, device). Only compiled (no GPU
// is needed): with -Werror=all-warnings, a view member that device code cannot
// call fails the build. Assertions stay on, so the bounds checks are device
// code too.
#undef NDEBUG
#include <cstdint>

#include "dlbridge/dispatch.hpp"
#include "dlbridge/element.hpp"
#include "dlbridge/view.hpp"

namespace {
using dlb::any_extent;
using out_view = dlb::view<float, dlb::shape<any_extent, 3>, dlb::cuda>;
using in_view = dlb::view<const float, dlb::ndim<2>, dlb::c_contig, dlb::cuda>;
using flag_view = dlb::view<std::int32_t, dlb::ndim<0>, dlb::cuda_managed>;
}  // namespace

__global__ void dlb_test_axpy(out_view out, in_view in, float k, flag_view flag) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= out.shape(0) || i >= in.shape(0)) return;
  for (std::int32_t j = 0; j < out.shape(1) && j < in.shape(1); ++j) out(i, j) += k * in(i, j);
  if (i == 0)
    flag() = std::int32_t(out.size() + in.stride(0) + (in.is_c_contiguous() ? 1 : 0) +
                          (out.is_f_contiguous() ? 2 : 0) + out.device().id + (out.data() != nullptr));
}

// Signed strides in device code: reverse each row.
__global__ void dlb_test_reverse(dlb::view<double, dlb::ndim<2>> out, dlb::view<const double, dlb::ndim<2>> in) {
  const std::int64_t i = blockIdx.x;
  const dlb::view<const double, dlb::ndim<2>> copy = in;  // trivially copyable in device code too
  for (std::int64_t j = threadIdx.x; j < out.shape(1); j += blockDim.x) out(i, j) = copy(i, in.shape(1) - 1 - j);
}

// Host side: views cross the launch by value.
void dlb_test_launch(out_view out, in_view in, flag_view flag, dlb::view<double, dlb::ndim<2>> r,
                     dlb::view<const double, dlb::ndim<2>> s) {
  dlb_test_axpy<<<unsigned(out.shape(0) + 127) / 128, 128>>>(out, in, 2.f, flag);
  dlb_test_reverse<<<unsigned(r.shape(0)), 64>>>(r, s);
}

// dispatch.hpp and element.hpp in device code: the dtype visitor behind
// load() and store(), and the width dispatcher, which the CUDA kernels call.
__global__ void dlb_test_dispatch(dlb::dtype from, dlb::dtype to, const unsigned char* src, unsigned char* dst,
                                  std::int64_t* width) {
  dlb::store(to, dst, dlb::load(from, src));
  *width = std::int64_t(dlb::detail::visit_width(std::size_t(to.bits) / 8, [](auto w) { return decltype(w)::value; }));
}

void dlb_test_launch_dispatch(dlb::dtype from, dlb::dtype to, const unsigned char* src, unsigned char* dst,
                              std::int64_t* width) {
  dlb_test_dispatch<<<1, 1>>>(from, to, src, dst, width);
}
