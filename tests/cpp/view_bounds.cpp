// dlb::view's bounds checks, with assertions on whatever the build type:
// `dlbridge_view_bounds CASE` indexes a view; "inside" must exit 0, every
// other case must abort with "dlb::view: index out of bounds" (expect_abort.py).
#undef NDEBUG
#include <cstdio>
#include <cstring>

#include "dlbridge/view.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const char* what = argv[1];
  int buf[12] = {};
  const dlb::view<int, dlb::shape<3, 4>> fixed(buf, {3, 4});
  const dlb::view<int, dlb::ndim<2>> open(buf, {3, 4});
  const dlb::view<const int, dlb::ndim<1>> reversed(buf + 11, {12}, {-1});
  int sum = 0;
  if (std::strcmp(what, "inside") == 0) {
    sum += fixed(2, 3) + fixed(0, 0) + open(2, 3) + reversed(11) + reversed(0);
    std::printf("in bounds: %d\n", sum);
    return 0;
  }
  if (std::strcmp(what, "past_static") == 0) sum += fixed(3, 0);
  else if (std::strcmp(what, "past_dynamic") == 0) sum += open(0, 4);
  else if (std::strcmp(what, "negative") == 0) sum += open(-1, 0);
  else if (std::strcmp(what, "past_reversed") == 0) sum += reversed(12);
  else return 2;
  std::printf("not caught: %d\n", sum);
  return 0;
}
