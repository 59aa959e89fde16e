// The doctest runner of tests/cpp's executables (the static library
// doctest_main); the test cases live in test_*.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
