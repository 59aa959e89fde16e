// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

struct row_major {};
dlb::view<float, dlb::ndim<2>, row_major> v;
