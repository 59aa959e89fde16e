// dlbridge/dtype.hpp: the dtype triple, its table of names and typestrs.
#include <doctest/doctest.h>

#include <complex>
#include <cstdint>
#include <set>
#include <string>

#include "dlbridge/dtype.hpp"

using dlb::dtype;

TEST_CASE("dtype: defaults, conversions and equality") {
  constexpr dtype d;
  static_assert(d.code == dlb::kDLFloat && d.bits == 32 && d.lanes == 1);
  const dtype t{dlb::kDLInt, 16, 2};
  const dlb::DLDataType raw = t;
  CHECK(raw.code == dlb::kDLInt);
  CHECK(raw.bits == 16);
  CHECK(raw.lanes == 2);
  CHECK(dtype(raw) == t);
  CHECK(dtype{dlb::kDLInt, 16} != t);
  CHECK(dtype{dlb::kDLUInt, 16, 2} != t);
  CHECK(dtype{dlb::kDLInt, 8, 2} != t);
}

TEST_CASE("dtype: the table") {
  CHECK(dlb::dtype_table.size() == 27);
  std::set<std::string> names;
  std::set<std::uint32_t> keys;
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    CHECK(info.type.lanes == 1);
    CHECK(names.insert(std::string(info.name)).second);
    CHECK(keys.insert(std::uint32_t(info.type.code) << 8 | info.type.bits).second);
    CHECK(dlb::is_supported(info.type));
    CHECK(dlb::is_dlpack_code(info.type.code));
    CHECK(dlb::find_dtype(info.type) == &info);
    CHECK(dlb::name(info.type) == info.name);
    CHECK(dlb::dtype_from_name(info.name) == info.type);
    CHECK(dlb::typestr(info.type) == info.typestr);
  }
  // Every DLPack code but the opaque handle has at least one entry.
  for (std::uint8_t code = 0; code <= dlb::kDLBcomplex; ++code) {
    bool found = false;
    for (const auto& info : dlb::dtype_table) found = found || info.type.code == code;
    CHECK(found == (code != dlb::kDLOpaqueHandle));
  }
}

TEST_CASE("dtype: names") {
  CHECK(dlb::name(dtype{dlb::kDLBool, 8}) == "bool");
  CHECK(dlb::name(dtype{dlb::kDLInt, 64}) == "int64");
  CHECK(dlb::name(dtype{dlb::kDLUInt, 8}) == "uint8");
  CHECK(dlb::name(dtype{dlb::kDLFloat, 16}) == "float16");
  CHECK(dlb::name(dtype{dlb::kDLBfloat, 16}) == "bfloat16");
  CHECK(dlb::name(dtype{dlb::kDLComplex, 128}) == "complex128");
  CHECK(dlb::name(dtype{dlb::kDLFloat8_e4m3fn, 8}) == "float8_e4m3fn");
  CHECK(dlb::name(dtype{dlb::kDLFloat8_e8m0fnu, 8}) == "float8_e8m0fnu");
  CHECK(dlb::name(dtype{dlb::kDLFloat6_e3m2fn, 6}) == "float6_e3m2fn");
  CHECK(dlb::name(dtype{dlb::kDLFloat4_e2m1fn, 4}) == "float4_e2m1fn");
  CHECK(dlb::name(dtype{dlb::kDLBcomplex, 32}) == "bcomplex32");  // ml_dtypes' name
  // Unsupported triples have no name.
  CHECK(dlb::name(dtype{dlb::kDLFloat4_e2m1fn, 4, 2}).empty());  // PyTorch's float4_e2m1fn_x2
  CHECK(dlb::name(dtype{dlb::kDLBcomplex, 64}).empty());
  CHECK(dlb::name(dtype{dlb::kDLFloat, 8}).empty());
  CHECK(dlb::name(dtype{dlb::kDLFloat, 32, 4}).empty());
  CHECK(dlb::name(dtype{dlb::kDLBool, 1}).empty());
  CHECK(dlb::name(dtype{dlb::kDLOpaqueHandle, 64}).empty());
  CHECK(dlb::name(dtype{dlb::kDLFloat4_e2m1fn, 8}).empty());
  CHECK(dlb::name(dtype{99, 32}).empty());
  CHECK_FALSE(dlb::dtype_from_name("float128"));
  CHECK_FALSE(dlb::dtype_from_name("Float32"));
  CHECK_FALSE(dlb::dtype_from_name(""));
  CHECK_FALSE(dlb::dtype_from_name("float32 "));
}

TEST_CASE("dtype: DLPack codes") {
  CHECK(dlb::is_dlpack_code(0));
  CHECK(dlb::is_dlpack_code(dlb::kDLOpaqueHandle));
  CHECK(dlb::is_dlpack_code(17));
  CHECK(dlb::is_dlpack_code(18));  // kDLBcomplex, on DLPack's main branch after 1.3
  static_assert(dlb::kDLBcomplex == 18);
  CHECK_FALSE(dlb::is_dlpack_code(19));
  CHECK_FALSE(dlb::is_dlpack_code(99));
  CHECK_FALSE(dlb::is_dlpack_code(255));
  CHECK_FALSE(dlb::is_supported(dtype{dlb::kDLInt, 32, 2}));
  CHECK_FALSE(dlb::is_supported(dtype{dlb::kDLComplex, 32}));
  CHECK(dlb::is_supported(dtype{dlb::kDLComplex, 64}));
  CHECK(dlb::is_supported(dtype{dlb::kDLBcomplex, 32}));
  CHECK_FALSE(dlb::is_supported(dtype{dlb::kDLBcomplex, 16}));
  CHECK_FALSE(dlb::is_supported(dtype{dlb::kDLFloat4_e2m1fn, 4, 2}));  // a spelling validate() takes, not a dtype
}

TEST_CASE("dtype: is_complex") {
  static_assert(dlb::is_complex(dtype{dlb::kDLComplex, 64}) && dlb::is_complex(dtype{dlb::kDLComplex, 128}));
  static_assert(dlb::is_complex(dtype{dlb::kDLBcomplex, 32}));
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    CHECK(dlb::is_complex(info.type) == (info.name.find("complex") != std::string_view::npos));
  }
}

TEST_CASE("dtype: typestr round trips") {
  int with_typestr = 0;
  for (const auto& info : dlb::dtype_table) {
    if (info.typestr.empty()) continue;
    ++with_typestr;
    CAPTURE(info.name);
    CHECK(dlb::dtype_from_typestr(info.typestr) == info.type);
    CHECK(dlb::typestr(*dlb::dtype_from_typestr(info.typestr)) == info.typestr);
    // '=' (native) is accepted wherever '<' or '|' is.
    std::string native(info.typestr);
    native[0] = '=';
    CHECK(dlb::dtype_from_typestr(native) == info.type);
  }
  CHECK(with_typestr == 14);  // bool, 8 ints, 3 floats, 2 complex
  CHECK(dlb::typestr(dtype{dlb::kDLFloat, 32}) == "<f4");
  CHECK(dlb::typestr(dtype{dlb::kDLComplex, 128}) == "<c16");
  CHECK(dlb::typestr(dtype{dlb::kDLBool, 8}) == "|b1");
  CHECK(dlb::typestr(dtype{dlb::kDLUInt, 8}) == "|u1");
  // No native NumPy spelling: empty.
  CHECK(dlb::typestr(dtype{dlb::kDLBfloat, 16}).empty());
  CHECK(dlb::typestr(dtype{dlb::kDLFloat8_e5m2, 8}).empty());
  CHECK(dlb::typestr(dtype{dlb::kDLFloat4_e2m1fn, 4}).empty());
  CHECK(dlb::typestr(dtype{dlb::kDLBcomplex, 32}).empty());  // ml_dtypes' "<W4" is no NumPy typestr
  CHECK(dlb::typestr(dtype{dlb::kDLFloat, 32, 2}).empty());
  CHECK(dlb::dtype_from_typestr("<i8") == dtype{dlb::kDLInt, 64});
}

TEST_CASE("dtype: dtype_from_typestr accepts the lenient spellings") {
  CHECK(dlb::dtype_from_typestr("|i1") == dtype{dlb::kDLInt, 8});
  CHECK(dlb::dtype_from_typestr("<u1") == dtype{dlb::kDLUInt, 8});
  CHECK(dlb::dtype_from_typestr("<b1") == dtype{dlb::kDLBool, 8});
  // Byte order is meaningless for one byte, so '>' is fine there.
  CHECK(dlb::dtype_from_typestr(">i1") == dtype{dlb::kDLInt, 8});
  CHECK(dlb::dtype_from_typestr(">b1") == dtype{dlb::kDLBool, 8});
  CHECK(dlb::dtype_from_typestr("=c8") == dtype{dlb::kDLComplex, 64});
  // As np.dtype reads them: no byte order, or '|' on a wider type.
  CHECK(dlb::dtype_from_typestr("f4") == dtype{dlb::kDLFloat, 32});
  CHECK(dlb::dtype_from_typestr("b1") == dtype{dlb::kDLBool, 8});
  CHECK(dlb::dtype_from_typestr("|f8") == dtype{dlb::kDLFloat, 64});
  CHECK(dlb::dtype_from_typestr("c16") == dtype{dlb::kDLComplex, 128});
}

TEST_CASE("dtype: the buffer format of every dtype the buffer protocol can spell") {
  int with_format = 0;
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    CHECK(dlb::buffer_format(info.type) == info.buffer_format);
    // Exactly the types NumPy spells natively have a format.
    CHECK(info.buffer_format.empty() == info.typestr.empty());
    with_format += !info.buffer_format.empty();
  }
  CHECK(with_format == 14);
  CHECK(dlb::buffer_format(dtype{dlb::kDLFloat, 32}) == "f");
  CHECK(dlb::buffer_format(dtype{dlb::kDLComplex, 128}) == "Zd");
  CHECK(dlb::buffer_format(dtype{dlb::kDLBool, 8}) == "?");
  CHECK(dlb::buffer_format(dtype{dlb::kDLBfloat, 16}).empty());
  CHECK(dlb::buffer_format(dtype{dlb::kDLBcomplex, 32}).empty());
  CHECK(dlb::buffer_format(dtype{dlb::kDLFloat, 32, 2}).empty());
}

TEST_CASE("dtype: dtype_from_typestr rejects big-endian and unknown typestrs") {
  for (const char* s : {">i2", ">i4", ">i8", ">u2", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16"}) {
    const std::string text = s;
    CAPTURE(text);
    CHECK_FALSE(dlb::dtype_from_typestr(s));
  }
  for (const char* s : {"", "<", "<f", "f", "f0", "<f0", "<f3", "<f16", "<f32", "<i16", "<c4", "<c32", "<b2",
                        "<V2", "|V16", "<S4", "<U4", "<M8", "<m8", "|O8", "<F4", "xf4", "!f4", " <f4",
                        "<f4 ", "<f-4", "<fa", "<f99999999999999999999"}) {
    const std::string text = s;
    CAPTURE(text);
    CHECK_FALSE(dlb::dtype_from_typestr(s));
  }
  CHECK_FALSE(dlb::dtype_from_typestr(std::string_view("<i4\0", 4)));
}

TEST_CASE("dtype: itemsize, sub-byte packing and storage_bytes") {
  constexpr dtype f4{dlb::kDLFloat4_e2m1fn, 4}, f6{dlb::kDLFloat6_e2m3fn, 6}, f8{dlb::kDLFloat8_e4m3fn, 8};
  static_assert(f4.is_subbyte() && f6.is_subbyte() && !f8.is_subbyte());
  CHECK(f4.itemsize() == 1);
  CHECK(f6.itemsize() == 1);
  CHECK(f8.itemsize() == 1);
  // Packed: ceil(count * bits / 8).
  CHECK(f4.storage_bytes(0) == 0);
  CHECK(f4.storage_bytes(1) == 1);
  CHECK(f4.storage_bytes(2) == 1);
  CHECK(f4.storage_bytes(3) == 2);
  CHECK(f4.storage_bytes(7) == 4);
  CHECK(f6.storage_bytes(1) == 1);
  CHECK(f6.storage_bytes(2) == 2);
  CHECK(f6.storage_bytes(4) == 3);
  CHECK(f6.storage_bytes(5) == 4);
  CHECK(f6.storage_bytes(1000) == 750);
  CHECK(f8.storage_bytes(5) == 5);
  // Two float4 lanes make a whole byte: no longer sub-byte.
  constexpr dtype f4x2{dlb::kDLFloat4_e2m1fn, 4, 2};
  CHECK_FALSE(f4x2.is_subbyte());
  CHECK(f4x2.itemsize() == 1);
  CHECK(f4x2.storage_bytes(3) == 3);
  // Whole-byte types.
  CHECK(dtype{dlb::kDLBool, 8}.itemsize() == 1);
  CHECK(dtype{dlb::kDLInt, 16}.itemsize() == 2);
  CHECK(dtype{dlb::kDLFloat, 64}.itemsize() == 8);
  CHECK(dtype{dlb::kDLComplex, 128}.itemsize() == 16);
  CHECK(dtype{dlb::kDLComplex, 128}.storage_bytes(3) == 48);
  CHECK(dtype{dlb::kDLBcomplex, 32}.itemsize() == 4);
  CHECK(dtype{dlb::kDLFloat, 32, 4}.itemsize() == 16);
  CHECK(dtype{dlb::kDLInt, 32}.storage_bytes(5) == 20);
}

TEST_CASE("dtype: dtype_of") {
  static_assert(dlb::dtype_of<bool> == dtype{dlb::kDLBool, 8});
  static_assert(dlb::dtype_of<std::int8_t> == dtype{dlb::kDLInt, 8});
  static_assert(dlb::dtype_of<std::int16_t> == dtype{dlb::kDLInt, 16});
  static_assert(dlb::dtype_of<std::int32_t> == dtype{dlb::kDLInt, 32});
  static_assert(dlb::dtype_of<std::int64_t> == dtype{dlb::kDLInt, 64});
  static_assert(dlb::dtype_of<std::uint8_t> == dtype{dlb::kDLUInt, 8});
  static_assert(dlb::dtype_of<std::uint16_t> == dtype{dlb::kDLUInt, 16});
  static_assert(dlb::dtype_of<std::uint32_t> == dtype{dlb::kDLUInt, 32});
  static_assert(dlb::dtype_of<std::uint64_t> == dtype{dlb::kDLUInt, 64});
  static_assert(dlb::dtype_of<float> == dtype{dlb::kDLFloat, 32});
  static_assert(dlb::dtype_of<double> == dtype{dlb::kDLFloat, 64});
  static_assert(dlb::dtype_of<std::complex<float>> == dtype{dlb::kDLComplex, 64});
  static_assert(dlb::dtype_of<std::complex<double>> == dtype{dlb::kDLComplex, 128});
  // Each one has the size of its C++ type and a table entry.
  CHECK(dlb::dtype_of<std::complex<double>>.itemsize() == sizeof(std::complex<double>));
  CHECK(dlb::dtype_of<bool>.itemsize() == sizeof(bool));
  CHECK(dlb::name(dlb::dtype_of<std::uint16_t>) == "uint16");
  CHECK(dlb::name(dlb::dtype_of<std::complex<float>>) == "complex64");
}

TEST_CASE("dtype: is_supported is exactly the table") {
  // is_supported reads a bit set built from dtype_table; find_dtype scans the table.
  for (int code = 0; code < 256; ++code)
    for (int bits = 0; bits < 256; ++bits)
      for (int lanes : {0, 1, 2, 4}) {
        const dlb::dtype t{std::uint8_t(code), std::uint8_t(bits), std::uint16_t(lanes)};
        CHECK(dlb::is_supported(t) == (dlb::find_dtype(t) != nullptr));
      }
  static_assert(dlb::is_supported(dlb::dtype(dlb::kDLFloat, 64)) && !dlb::is_supported(dlb::dtype(dlb::kDLFloat, 64, 2)));
}

TEST_CASE("dtype: can_cast_safely is NumPy's safe casting, exact for integers to floats") {
  // Rows convert to columns: NumPy 2's np.can_cast(row, column, "safe") for
  // its standard types, but for int64 and uint64 to float64 and complex128,
  // which NumPy calls safe and which lose integers above 2**53.
  const char* names[] = {"bool",   "int8",   "int16",   "int32",   "int64",   "uint8",     "uint16",
                         "uint32", "uint64", "float16", "float32", "float64", "complex64", "complex128"};
  const char* table[] = {
      "11111111111111",  // bool
      ".1111....11111",  // int8
      "..111.....1111",  // int16
      "...11......1.1",  // int32
      "....1.........",  // int64 (NumPy: ....1......1.1)
      "..111111111111",  // uint8
      "...11.111.1111",  // uint16
      "....1..11..1.1",  // uint32
      "........1.....",  // uint64 (NumPy: ........1..1.1)
      ".........11111",  // float16
      "..........1111",  // float32
      "...........1.1",  // float64
      "............11",  // complex64
      ".............1",  // complex128
  };
  for (std::size_t i = 0; i < std::size(names); ++i)
    for (std::size_t j = 0; j < std::size(names); ++j) {
      CAPTURE(names[i]);
      CAPTURE(names[j]);
      CHECK(dlb::can_cast_safely(*dlb::dtype_from_name(names[i]), *dlb::dtype_from_name(names[j])) ==
            (table[i][j] == '1'));
    }
  // bfloat16 holds 8 significant bits and float32's exponent range.
  const dtype bf16{dlb::kDLBfloat, 16}, f16{dlb::kDLFloat, 16}, f32{dlb::kDLFloat, 32}, e4m3{dlb::kDLFloat8_e4m3fn, 8};
  CHECK(dlb::can_cast_safely(bf16, f32));
  CHECK(dlb::can_cast_safely(bf16, dtype{dlb::kDLComplex, 64}));
  CHECK(dlb::can_cast_safely(dtype{dlb::kDLUInt, 8}, bf16));
  CHECK(dlb::can_cast_safely(dtype{dlb::kDLBool, 8}, bf16));
  CHECK_FALSE(dlb::can_cast_safely(dtype{dlb::kDLInt, 16}, bf16));
  CHECK_FALSE(dlb::can_cast_safely(bf16, f16));  // float16's exponents stop at 2**15
  CHECK_FALSE(dlb::can_cast_safely(f16, bf16));  // and bfloat16 has 3 fewer bits
  // bcomplex32's parts are bfloat16: what goes to bfloat16 goes to it, and it
  // goes where its parts do, but never to a real.
  const dtype bc32{dlb::kDLBcomplex, 32}, c64{dlb::kDLComplex, 64};
  for (const auto& info : dlb::dtype_table) {
    CAPTURE(info.name);
    if (!dlb::is_complex(info.type))
      CHECK(dlb::can_cast_safely(info.type, bc32) == dlb::can_cast_safely(info.type, bf16));
  }
  CHECK(dlb::can_cast_safely(bc32, bc32));
  CHECK(dlb::can_cast_safely(bc32, c64));
  CHECK(dlb::can_cast_safely(bc32, dtype{dlb::kDLComplex, 128}));
  CHECK_FALSE(dlb::can_cast_safely(c64, bc32));
  CHECK_FALSE(dlb::can_cast_safely(bc32, f32));
  CHECK_FALSE(dlb::can_cast_safely(bc32, bf16));
  // The small float formats convert only to themselves; unsupported dtypes not even that far.
  CHECK(dlb::can_cast_safely(e4m3, e4m3));
  CHECK_FALSE(dlb::can_cast_safely(e4m3, f32));
  CHECK_FALSE(dlb::can_cast_safely(dtype{dlb::kDLBool, 8}, e4m3));
  CHECK_FALSE(dlb::can_cast_safely(dtype{dlb::kDLFloat, 32, 4}, dtype{dlb::kDLFloat, 64, 4}));
  static_assert(dlb::can_cast_safely(dtype{dlb::kDLInt, 32}, dtype{dlb::kDLFloat, 64}));
}

TEST_CASE("dtype: dtype_choices") {
  const dtype f32{dlb::kDLFloat, 32}, f64{dlb::kDLFloat, 64}, i8{dlb::kDLInt, 8};
  CHECK(dlb::dtype_choices({}) == "");
  const dtype one[] = {f32};
  CHECK(dlb::dtype_choices(one) == "float32");
  const dtype two[] = {f32, f64};
  CHECK(dlb::dtype_choices(two) == "float32 or float64");
  const dtype three[] = {i8, dtype{dlb::kDLInt, 16}, dtype{dlb::kDLInt, 32}};
  CHECK(dlb::dtype_choices(three) == "int8, int16 or int32");
  const dtype odd[] = {f32, dtype{dlb::kDLFloat, 32, 2}};
  CHECK(dlb::dtype_choices(odd) == "float32 or an unsupported dtype");
}
