// Every small float format of element.hpp with its name and DLPack dtype, for
// the tests that walk all of them.
#pragma once

#include <vector>

#include "dlbridge/element.hpp"

namespace dlb_test {

struct named_format {
  const char* name;
  const dlb::float_format* f;
  dlb::dtype type;
};

inline const std::vector<named_format>& small_formats() {
  namespace fmt = dlb::formats;
  static const std::vector<named_format> v = {
      {"float16", &fmt::float16, {dlb::kDLFloat, 16}},
      {"bfloat16", &fmt::bfloat16, {dlb::kDLBfloat, 16}},
      {"float8_e3m4", &fmt::float8_e3m4, {dlb::kDLFloat8_e3m4, 8}},
      {"float8_e4m3", &fmt::float8_e4m3, {dlb::kDLFloat8_e4m3, 8}},
      {"float8_e4m3b11fnuz", &fmt::float8_e4m3b11fnuz, {dlb::kDLFloat8_e4m3b11fnuz, 8}},
      {"float8_e4m3fn", &fmt::float8_e4m3fn, {dlb::kDLFloat8_e4m3fn, 8}},
      {"float8_e4m3fnuz", &fmt::float8_e4m3fnuz, {dlb::kDLFloat8_e4m3fnuz, 8}},
      {"float8_e5m2", &fmt::float8_e5m2, {dlb::kDLFloat8_e5m2, 8}},
      {"float8_e5m2fnuz", &fmt::float8_e5m2fnuz, {dlb::kDLFloat8_e5m2fnuz, 8}},
      {"float8_e8m0fnu", &fmt::float8_e8m0fnu, {dlb::kDLFloat8_e8m0fnu, 8}},
      {"float6_e2m3fn", &fmt::float6_e2m3fn, {dlb::kDLFloat6_e2m3fn, 6}},
      {"float6_e3m2fn", &fmt::float6_e3m2fn, {dlb::kDLFloat6_e3m2fn, 6}},
      {"float4_e2m1fn", &fmt::float4_e2m1fn, {dlb::kDLFloat4_e2m1fn, 4}},
  };
  return v;
}

}  // namespace dlb_test
