// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

#include <string>

dlb::view<std::string, dlb::ndim<1>> v;
