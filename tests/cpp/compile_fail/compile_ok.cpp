// The control for the compile-fail cases: the same command compiles this,
// so each refusal comes from the view, not from the command line.
#include <cstdint>

#include "dlbridge/tensor.hpp"
#include "dlbridge/view.hpp"

dlb::view<float, dlb::shape<2, 3>, dlb::ndim<2>, dlb::c_contig, dlb::cuda> a;
dlb::view<const double, dlb::ndim<1>, dlb::f_contig, dlb::cpu> b;
dlb::view<std::int8_t, dlb::shape<dlb::any_extent>, dlb::any_contig, dlb::ro, dlb::cuda_host> c;
dlb::view<bool, dlb::ndim<0>, dlb::cuda_managed> d;
float read(dlb::view<const float, dlb::ndim<2>> v) { return v(0, 1); }
