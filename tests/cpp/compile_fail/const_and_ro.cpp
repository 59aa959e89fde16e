// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

dlb::view<const float, dlb::ndim<1>, dlb::ro> v;
