#include "clblast.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace weft_opencl {

GemmChoice GemmChoiceFromEnvironment() {
  static const GemmChoice choice = [] {
    const char* v = std::getenv("WEFT_OPENCL_GEMM");
    if (v == nullptr) return GemmChoice::kAuto;
    if (std::strcmp(v, "clblast") == 0) return GemmChoice::kClBlast;
    if (std::strcmp(v, "builtin") == 0) return GemmChoice::kBuiltin;
    return GemmChoice::kAuto;
  }();
  return choice;
}

const ClBlastApi* LoadClBlast() {
  static const ClBlastApi* const api = []() -> const ClBlastApi* {
    if (GemmChoiceFromEnvironment() == GemmChoice::kBuiltin) return nullptr;
    void* lib = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return nullptr;
    static ClBlastApi loaded;
    loaded.sgemm = reinterpret_cast<ClBlastGemmFn<float>>(
        dlsym(lib, "CLBlastSgemm"));
    loaded.dgemm = reinterpret_cast<ClBlastGemmFn<double>>(
        dlsym(lib, "CLBlastDgemm"));
    if (loaded.sgemm == nullptr || loaded.dgemm == nullptr) return nullptr;
    return &loaded;
  }();
  return api;
}

}  // namespace weft_opencl
