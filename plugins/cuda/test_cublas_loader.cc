// The cuBLAS loader (cublas_loader.h), without a GPU: the library opens by
// its soname through the run path and every function the plugin calls
// resolves; and the plugin given as argv[1] has no DT_NEEDED entry for
// cuBLAS (read from its dynamic section), so loading it maps no cuBLAS.
// Prints TAP.
#include <elf.h>
#include <link.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cublas_loader.h"

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

}  // namespace

int main(int argc, char** argv) {
  std::printf("1..3\n");
  std::string why;
  const weft_cuda::BlasApi* blas = weft_cuda::Blas(&why);
  Check(blas != nullptr, "cuBLAS loads: " + (blas ? std::string("yes") : why));
  Check(blas != nullptr && blas->create && blas->destroy &&
            blas->set_stream && blas->sgemm && blas->dgemm &&
            blas->sgemm_batched && blas->dgemm_batched &&
            blas->status_string,
        "every cuBLAS function the plugin calls resolves");
  std::string needed = "no plugin named";
  bool opened = false;
  if (argc > 1) {
    // RTLD_LAZY: the plugin's CUDA calls stay unresolved until used.
    void* plugin = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    opened = plugin != nullptr;
    needed = opened ? Needed(plugin) : std::string(dlerror());
  }
  // libc is always among them: an empty or unreadable list fails too.
  Check(opened && needed.find("libc.so") != std::string::npos &&
            needed.find("cublas") == std::string::npos,
        "the plugin links no cuBLAS (DT_NEEDED: " + needed + ")");
  return failures == 0 ? 0 : 1;
}
