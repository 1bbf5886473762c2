#include "cublas_loader.h"

#include <dlfcn.h>

#include <mutex>

namespace weft_cuda {
namespace {

// The exported name of a function cublas_v2.h renames (cublasCreate is
// cublasCreate_v2): the argument is macro-expanded before it is quoted.
#define WEFT_CUDA_QUOTE(x) #x
#define WEFT_CUDA_SYMBOL(x) WEFT_CUDA_QUOTE(x)
#define WEFT_CUDA_SONAME_OF(major) "libcublas.so." WEFT_CUDA_QUOTE(major)

struct Loaded {
  BlasApi api{};
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool Bind(void* lib, const char* name, Fn* out, std::string* why) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    *why = std::string(WEFT_CUDA_SONAME_OF(CUBLAS_VER_MAJOR)) + " has no " +
           name;
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

Loaded Load() {
  Loaded l;
  // RTLD_LOCAL: nothing else in the process sees cuBLAS's symbols.
  void* lib = dlopen(WEFT_CUDA_SONAME_OF(CUBLAS_VER_MAJOR),
                     RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    l.why = std::string("cannot load ") +
            WEFT_CUDA_SONAME_OF(CUBLAS_VER_MAJOR) + ": " +
            (e != nullptr ? e : "unknown error");
    return l;
  }
  BlasApi& a = l.api;
  l.ok = Bind(lib, WEFT_CUDA_SYMBOL(cublasCreate), &a.create, &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasDestroy), &a.destroy, &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasSetStream), &a.set_stream,
              &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasSgemm_64), &a.sgemm, &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasDgemm_64), &a.dgemm, &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasSgemmStridedBatched_64),
              &a.sgemm_batched, &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasDgemmStridedBatched_64),
              &a.dgemm_batched, &l.why) &&
         Bind(lib, WEFT_CUDA_SYMBOL(cublasGetStatusString), &a.status_string,
              &l.why);
  // On a missing symbol the library stays open: a retry would fail the
  // same way, and closing what cuBLAS may have initialised is not safe.
  return l;
}

}  // namespace

const BlasApi* Blas(std::string* why) {
  static const Loaded loaded = Load();  // once, thread-safe
  if (loaded.ok) return &loaded.api;
  if (why != nullptr) *why = loaded.why;
  return nullptr;
}

}  // namespace weft_cuda
