// The cuDNN loader (cudnn_loader.h), without a GPU: the library opens by
// its soname through the run path, every function the plugin calls
// resolves, its version is 9.x and its ops and cnn sub-libraries load; the
// descriptors the plugin sets for a convolution (DescribeConv over
// conv_plan.h's plan) are accepted, in float32 and float64, and cuDNN's own
// output size for them (cudnnGetConvolution2dForwardOutputDim, which needs
// no device) is the window's, for asymmetric SAME padding, strides larger
// than the window, dilations and chunked batches; and the plugin given as
// argv[1] has no DT_NEEDED entry for cuDNN.  Prints TAP.
#include <elf.h>
#include <link.h>
#include <dlfcn.h>

#include <cstdio>
#include <random>
#include <string>

#include "conv_plan.h"
#include "cudnn_loader.h"
#include "window2d.h"

namespace {

int failures = 0;
int number = 0;

void Check(bool ok, const std::string& what) {
  ++number;
  std::printf("%s %d - %s\n", ok ? "ok" : "not ok", number, what.c_str());
  if (!ok) ++failures;
}

// The DT_NEEDED names of the loaded object `handle`.
std::string Needed(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return "?";
  const char* strtab = nullptr;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d)
    if (d->d_tag == DT_STRTAB)
      strtab = reinterpret_cast<const char*>(d->d_un.d_ptr);
  if (strtab == nullptr) return "?";
  std::string names;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d)
    if (d->d_tag == DT_NEEDED) names += std::string(strtab + d->d_un.d_val) + " ";
  return names;
}

struct Shape {
  int64_t n, h, w, c, k, kh, kw, sh, sw, dh, dw;
  bool same;
};

// Plans `s` with chunks of at most `chunk_elements`, describes a full
// chunk and the last one to cuDNN in `type`, and compares cuDNN's output
// size with the plan's.  Returns "" or what went wrong.
std::string Agrees(const weft_cuda::DnnApi& api, const Shape& s,
                   int64_t chunk_elements, cudnnDataType_t type) {
  weft_window::Window2D w;
  w.batch = s.n;
  w.in_h = s.h;
  w.in_w = s.w;
  w.channels = s.c;
  w.k_h = s.kh;
  w.k_w = s.kw;
  w.stride_h = s.sh;
  w.stride_w = s.sw;
  w.dilation_h = s.dh;
  w.dilation_w = s.dw;
  if (weft_window::ComputeWindow2D(s.same, &w) != nullptr) return "";
  if (w.out_h == 0 || w.out_w == 0) return "";
  weft_cuda::ConvPlan p;
  if (const char* why = weft_cuda::PlanConv(w, s.k, chunk_elements, &p)) {
    return std::string("no plan: ") + why;
  }
  weft_cuda::ConvDescriptors d;
  std::string error;
  for (int64_t images : {p.chunk, p.ChunkImages(p.calls - 1)}) {
    const char* what = "";
    const cudnnStatus_t status =
        weft_cuda::DescribeConv(api, p, type, images, &d, &what);
    if (status != CUDNN_STATUS_SUCCESS) {
      error = std::string(what) + ": " + api.error_string(status);
      break;
    }
    int n = 0, c = 0, h = 0, wd = 0;
    const cudnnStatus_t dims =
        api.conv_output_dim(d.conv, d.x, d.w, &n, &c, &h, &wd);
    if (dims != CUDNN_STATUS_SUCCESS) {
      error = std::string("output dims: ") + api.error_string(dims);
      break;
    }
    if (n != images || c != p.out_c || h != p.out_h || wd != p.out_w) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "cuDNN says [%d, %d, %d, %d], the plan [%lld, %d, %d, %d]",
                    n, c, h, wd, static_cast<long long>(images), p.out_c,
                    p.out_h, p.out_w);
      error = text;
      break;
    }
  }
  weft_cuda::DestroyConvDescriptors(api, &d);
  if (error.empty()) return "";
  char text[200];
  std::snprintf(text, sizeof text,
                "[%lld,%lld,%lld,%lld] * %lldx%lldx%lld s%lld,%lld d%lld,%lld "
                "%s: ",
                (long long)s.n, (long long)s.h, (long long)s.w, (long long)s.c,
                (long long)s.kh, (long long)s.kw, (long long)s.k,
                (long long)s.sh, (long long)s.sw, (long long)s.dh,
                (long long)s.dw, s.same ? "SAME" : "VALID");
  return text + error;
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("1..7\n");
  std::string why;
  const weft_cuda::DnnApi* dnn = weft_cuda::Dnn(&why);
  Check(dnn != nullptr,
        "cuDNN loads, 9.x, with its ops and cnn sub-libraries: " +
            (dnn ? std::to_string(dnn->get_version()) : why));
  bool all = dnn != nullptr;
  if (dnn != nullptr) {
    const void* const* slot = reinterpret_cast<const void* const*>(dnn);
    for (size_t i = 0; i < sizeof(*dnn) / sizeof(void*); ++i)
      all = all && slot[i] != nullptr;
  }
  Check(all, "every cuDNN function the plugin calls resolves");

  const Shape named[] = {
      {2, 5, 5, 3, 4, 2, 2, 1, 1, 1, 1, true},    // asymmetric SAME
      {2, 6, 6, 2, 3, 3, 3, 2, 2, 1, 1, true},    // asymmetric, stride 2
      {2, 7, 6, 2, 3, 1, 1, 3, 3, 1, 1, true},    // stride > window, SAME
      {1, 7, 8, 2, 2, 2, 2, 3, 3, 1, 1, false},   // stride > window, VALID
      {1, 7, 7, 2, 4, 2, 2, 1, 1, 2, 2, true},    // dilated
      {1, 6, 6, 2, 2, 3, 3, 2, 2, 2, 2, true},    // dilated, asymmetric
      {50, 28, 28, 1, 32, 5, 5, 1, 1, 1, 1, true},  // the CNN's layers
      {50, 14, 14, 32, 64, 5, 5, 1, 1, 1, 1, true},
  };
  std::string error;
  for (const Shape& s : named) {
    for (cudnnDataType_t type : {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE}) {
      if (error.empty() && dnn != nullptr) {
        error = Agrees(*dnn, s, weft_cuda::kConvChunkElements, type);
      }
    }
  }
  Check(dnn != nullptr && error.empty(),
        "cuDNN takes the plugin's descriptors and computes the plan's output "
        "size: asymmetric SAME, strides past the window, dilations, "
        "float32 and float64" +
            (error.empty() ? "" : " (" + error + ")"));
  std::mt19937 rng(3);
  int checked = 0;
  error.clear();
  auto r = [&](int m) { return 1 + static_cast<int64_t>(rng() % m); };
  for (int t = 0; t < 500 && error.empty() && dnn != nullptr; ++t) {
    const Shape s = {r(9), r(20), r(20), r(4), r(4), r(6),
                     r(6), r(5),  r(5),  r(3), r(3), rng() % 2 == 0};
    // Chunk limits from one image to the whole batch.
    error = Agrees(*dnn, s, 1 + rng() % 4000,
                   rng() % 2 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE);
    ++checked;
  }
  Check(dnn != nullptr && error.empty(),
        "the same for " + std::to_string(checked) +
            " random windows and chunkings" +
            (error.empty() ? "" : " (" + error + ")"));
  // A plan at the int limits is still accepted: one image of 2^31 - 2^16
  // elements.
  error = dnn == nullptr
              ? "no cuDNN"
              : Agrees(*dnn, {1, 32768, 32767, 2, 1, 2, 2, 1, 1, 1, 1, false},
                       weft_cuda::kConvChunkElements, CUDNN_DATA_FLOAT);
  Check(error.empty(), "an image of 2^31 - 2^16 elements is described" +
                           (error.empty() ? "" : " (" + error + ")"));

  std::string needed = "no plugin named";
  bool opened = false;
  if (argc > 1) {
    // RTLD_LAZY: the plugin's CUDA calls stay unresolved until used.
    void* plugin = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    opened = plugin != nullptr;
    needed = opened ? Needed(plugin) : std::string(dlerror());
  }
  Check(opened && needed.find("libc.so") != std::string::npos &&
            needed.find("cudnn") == std::string::npos,
        "the plugin links no cuDNN (DT_NEEDED: " + needed + ")");
  Check(opened && needed.find("cublas") == std::string::npos,
        "nor cuBLAS");
  return failures == 0 ? 0 : 1;
}
