// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

dlb::view<float, dlb::shape<3, -2>> v;
