// The doctest runner of dlbridge_cpp_tests; the test cases live in test_*.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
