// Must not compile: see meson.build for the expected diagnostic.
#include "dlbridge/view.hpp"

dlb::view<float, dlb::c_contig, dlb::cpu> v;
