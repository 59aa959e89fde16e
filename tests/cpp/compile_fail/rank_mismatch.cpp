// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

dlb::view<float, dlb::shape<2, dlb::any_extent>, dlb::ndim<3>> v;
