// Compiled with -include <a dlbridge header> by the C++17 compile-fail tests.
