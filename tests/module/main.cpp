// The C++20 module: this program sees dlbridge only through `import dlbridge;`
// (no dlbridge header is included) and exercises the main paths: tensors,
// views and their constraints, DLPack export and import, devices, dtypes.
// Prints one line per check; exits 1 if any failed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

import dlbridge;

namespace {
int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

int released = 0;
}  // namespace

int main() {
  // A tensor, filled through a checked view.
  std::int64_t shape[] = {2, 3};
  dlb::tensor t = dlb::tensor::empty(shape, dlb::dtype_of<float>);
  expect(t.size() == 6 && t.is_c_contiguous() && t.device() == dlb::device{dlb::kDLCPU},
         "tensor::empty(2x3 float32)");
  auto v = t.as<dlb::view<float, dlb::shape<2, dlb::any_extent>, dlb::c_contig, dlb::cpu>>();
  for (std::int32_t i = 0; i < 2; ++i)
    for (std::int32_t j = 0; j < 3; ++j) v(i, j) = float(10 * i + j);
  expect(v.shape(1) == 3 && v.stride(0) == 3 && static_cast<float*>(t.data())[4] == 11.0f, "view writes");

  // A view whose constraints the tensor does not meet names what is wrong.
  try {
    (void)t.as<dlb::view<float, dlb::shape<2, 4>>>();
    expect(false, "shape<2, 4> refuses a 2x3 tensor");
  } catch (const dlb::import_failure& e) {
    expect(std::string_view(e.what()) == "invalid tensor: shape: axis 1: expected extent 4, got 3",
           "shape<2, 4> refuses a 2x3 tensor");
    expect(e.error().field == "shape" && e.error().axis == 1, "import_error fields");
  }
  try {
    (void)t.as<dlb::view<double, dlb::ndim<2>>>();
    expect(false, "view<double> refuses float32 data");
  } catch (const dlb::import_failure& e) {
    expect(e.error().field == "dtype", "view<double> refuses float32 data");
  }

  // DLPack: export versioned, import it back (same memory, deleter runs once).
  dlb::DLManagedTensorVersioned* exported = t.export_versioned();
  expect(exported->version.major == dlb::dlpack_major_version && exported->dl_tensor.ndim == 2 &&
             exported->dl_tensor.dtype.code == dlb::kDLFloat,
         "export_versioned");
  {
    dlb::tensor back = dlb::tensor::import(exported);
    expect(back.data() == t.data() && t.use_count() == 2, "import shares the memory");
    auto ro = back.as<dlb::view<const float, dlb::ndim<2>>>();
    expect(ro(1, 2) == 12.0f, "read-only view of the import");
  }
  expect(t.use_count() == 1, "the import's deleter ran");

  // Legacy DLPack, and adopting memory with a release callback.
  dlb::DLManagedTensor* legacy = t.export_legacy();
  dlb::tensor old = dlb::tensor::import(legacy, /*readonly=*/true);
  expect(old.readonly() && old.shape(1) == 3, "legacy export and import");

  static std::int32_t numbers[4] = {1, 2, 3, 4};
  std::int64_t four[] = {4};
  {
    dlb::tensor adopted = dlb::tensor::adopt(numbers, dlb::dtype_of<std::int32_t>, dlb::kDLCPU, four, {}, false,
                                             [](void*) { ++released; }, nullptr);
    dlb::tensor f = dlb::astype(adopted, dlb::dtype_of<double>);
    expect(static_cast<double*>(f.data())[3] == 4.0, "adopt and astype");
  }
  expect(released == 1, "adopt's release ran once");

  // Devices and dtypes.
  auto gpu = dlb::device_from_string("cuda:1");
  expect(gpu && gpu->type == dlb::kDLCUDA && gpu->id == 1 && dlb::name(gpu->type) == "cuda", "device_from_string");
  expect(dlb::name(dlb::dtype_of<float>) == "float32" && dlb::dtype_from_typestr("<f8") == dlb::dtype_of<double>,
         "dtype names");
  expect(dlb::decode(dlb::formats::bfloat16, 0x3f80) == 1.0, "small float formats");
  auto error = dlb::validate(dlb::DLTensor{nullptr, {dlb::kDLCPU, 0}, 70, dlb::dtype_of<float>, nullptr, nullptr, 0});
  expect(error && error->message() == "ndim: expected ndim <= 64, got 70", "validate");

  std::printf("dlbridge %s via import dlbridge: %s\n", dlb::version, failures ? "FAILED" : "ok");
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
