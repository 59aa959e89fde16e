// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

float read(dlb::view<const float, dlb::ndim<2>> v) { return v(0, 1, 2); }
