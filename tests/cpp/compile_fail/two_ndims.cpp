// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

dlb::view<float, dlb::ndim<2>, dlb::ndim<2>> v;
