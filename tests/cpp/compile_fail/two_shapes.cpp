// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

using bad = dlb::view<float, dlb::shape<2, 3>, dlb::shape<2, 3>>;
bad v;
