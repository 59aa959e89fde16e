// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

dlb::view<float, dlb::ndim<1>, dlb::cpu, dlb::cuda> v;
