// A complete C++ program using dlbridge, built against the installed Python
// package with no libpython: docs/cpp-guide.md walks through it, and
// tests/python/consumers/test_cpp_consumers.py builds it (Meson, pkg-config, and the
// C++20 module) and compares its output with expected_output.txt.
//
// Build it (meson.build and import/meson.build do it with Meson):
//   c++ -std=c++20 $(pkg-config --cflags dlbridge) main.cpp -o example
// or, with clang >= 17 and a BMI built from the shipped dlbridge.cppm, with
// -DUSE_DLBRIDGE_MODULE to `import dlbridge;` instead of including it.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#ifdef USE_DLBRIDGE_MODULE
import dlbridge;
#else
#include <dlbridge/dlbridge.hpp>
#endif

// Code that takes a view states what it accepts in the view's type: here a
// read-only 2-D float32 array in CPU memory, any strides.
float sum(dlb::view<const float, dlb::ndim<2>, dlb::cpu> v) {
  float total = 0;
  for (std::int64_t i = 0; i < v.shape(0); ++i)
    for (std::int64_t j = 0; j < v.shape(1); ++j) total += v(i, j);
  return total;
}

// What a DLPack consumer on the other side of a C boundary does: read the
// tensor, then call its deleter exactly once.
void consume(dlb::DLManagedTensorVersioned* m) {
  const dlb::DLTensor& t = m->dl_tensor;
  std::printf("consumer got DLPack %u.%u, ndim %d, shape (%lld, %lld), %s, %s\n", m->version.major,
              m->version.minor, t.ndim, (long long)t.shape[0], (long long)t.shape[1],
              std::string(dlb::name(dlb::dtype(t.dtype))).c_str(),
              std::string(dlb::name(t.device.device_type)).c_str());
  m->deleter(m);
}

// Tries to see `t` through the view type View and prints why not.
template <class View>
void try_view(const char* what, const dlb::tensor& t) {
  try {
    (void)t.as<View>();
    std::printf("%s: ok\n", what);
  } catch (const dlb::import_failure& e) {
    std::printf("%s: %s\n", what, e.what());
  }
}

int main() {
  std::printf("dlbridge %s, DLPack %u.%u\n", dlb::version, dlb::dlpack_major_version, dlb::dlpack_minor_version);

  // 1. Allocate a C-contiguous 2x3 float32 tensor and fill it through a view
  //    whose type demands exactly that.
  const std::int64_t shape[] = {2, 3};
  dlb::tensor a = dlb::tensor::empty(shape, dlb::dtype_of<float>);
  auto w = a.as<dlb::view<float, dlb::shape<2, 3>, dlb::c_contig>>();
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) w(i, j) = float(3 * i + j);
  std::printf("a: ndim %d, size %lld, strides (%lld, %lld), sum %g\n", a.ndim(), (long long)a.size(),
              (long long)a.stride(0), (long long)a.stride(1), sum(a.as<dlb::view<const float, dlb::ndim<2>, dlb::cpu>>()));

  // 2. Adopt memory someone else owns: the release callback runs once, when
  //    the last tensor (or DLPack export) sharing the memory goes.
  auto* owned = new std::vector<double>{0.5, 1.5, 2.5, 3.5};
  const std::int64_t four[] = {4};
  {
    dlb::tensor b = dlb::tensor::adopt(
        owned->data(), dlb::dtype_of<double>, dlb::kDLCPU, four, /*strides: C order*/ {}, /*readonly=*/false,
        [](void* ctx) {
          std::printf("release: vector freed\n");
          delete static_cast<std::vector<double>*>(ctx);
        },
        owned);
    dlb::tensor b32 = dlb::astype(b, dlb::dtype_of<float>);  // a converted copy
    std::printf("b: %lld elements, use_count %lld; as float32: %g\n", (long long)b.size(),
                (long long)b.use_count(), static_cast<float*>(b32.data())[3]);
  }  // b goes: release runs here

  // 3. Export as a versioned DLPack tensor (DLPack 1.3): the export keeps the
  //    memory alive until the consumer calls its deleter.
  consume(a.export_versioned());
  std::printf("a.use_count after the consumer: %lld\n", (long long)a.use_count());

  // 4. Import a DLPack tensor (here our own export): the new tensor shares
  //    the memory; the producer's deleter runs when it goes.
  dlb::DLManagedTensorVersioned* m = a.export_versioned(dlb::dlpack_flag_read_only);
  dlb::tensor c = dlb::tensor::import(m);
  std::printf("c: same memory %s, read-only %s\n", c.data() == a.data() ? "yes" : "no", c.readonly() ? "yes" : "no");

  // 5. Legacy (pre-1.0) DLPack: the struct cannot say whether data is
  //    read-only, so the importer decides.
  dlb::tensor d = dlb::tensor::import(a.export_legacy(), /*readonly=*/true);
  std::printf("d: legacy import, read-only %s\n", d.readonly() ? "yes" : "no");

  // 6. Views check their constraints once, at the boundary, and say which
  //    one failed.
  try_view<dlb::view<float, dlb::shape<2, dlb::any_extent>, dlb::c_contig, dlb::cpu>>("view<float, shape<2, any>, c_contig, cpu>", a);
  try_view<dlb::view<float, dlb::shape<3, 2>>>("view<float, shape<3, 2>>", a);
  try_view<dlb::view<double, dlb::ndim<2>>>("view<double, ndim<2>>", a);
  try_view<dlb::view<float, dlb::ndim<1>>>("view<float, ndim<1>>", a);
  try_view<dlb::view<float, dlb::ndim<2>, dlb::f_contig>>("view<float, ndim<2>, f_contig>", a);
  try_view<dlb::view<float, dlb::ndim<2>, dlb::cuda>>("view<float, ndim<2>, cuda>", a);
  try_view<dlb::view<float, dlb::ndim<2>>>("view<float, ndim<2>> of read-only c", c);
  try_view<dlb::view<const float, dlb::ndim<2>>>("view<const float, ndim<2>> of read-only c", c);

  // 7. Devices: (type, id) pairs with names.
  for (const char* text : {"cpu", "cuda:1", "cuda_managed", "npu"}) {
    if (std::optional<dlb::device> dev = dlb::device_from_string(text))
      std::printf("device \"%s\": %s id %d, host-accessible %s\n", text, std::string(dlb::name(dev->type)).c_str(),
                  dev->id, dev->is_host_accessible() ? "yes" : "no");
    else
      std::printf("device \"%s\": unknown\n", text);
  }
  return 0;
}
