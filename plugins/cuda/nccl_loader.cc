#include "nccl_loader.h"

#include <dlfcn.h>

#include <string>

namespace weft_cuda {
namespace {

#define WEFT_CUDA_NCCL_QUOTE(x) #x
#define WEFT_CUDA_NCCL_SONAME_OF(major) \
  "libnccl.so." WEFT_CUDA_NCCL_QUOTE(major)
#define WEFT_CUDA_NCCL_SONAME WEFT_CUDA_NCCL_SONAME_OF(NCCL_MAJOR)

struct Loaded {
  NcclApi api{};
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool Bind(void* lib, const char* name, Fn* out, std::string* why) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    *why = std::string(WEFT_CUDA_NCCL_SONAME) + " has no " + name;
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

// The major version in ncclGetVersion's encoding: major * 1000 + minor *
// 100 + patch up to 2.8, major * 10000 + minor * 100 + patch from 2.9.
int MajorOf(int code) { return code >= 20900 ? code / 10000 : code / 1000; }

Loaded Load() {
  Loaded l;
  // RTLD_LOCAL: nothing else in the process sees NCCL's symbols.
  void* lib = dlopen(WEFT_CUDA_NCCL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    l.why = std::string("cannot load ") + WEFT_CUDA_NCCL_SONAME + ": " +
            (e != nullptr ? e : "unknown error");
    return l;
  }
  NcclApi& a = l.api;
  l.ok = Bind(lib, "ncclGetVersion", &a.get_version, &l.why) &&
         Bind(lib, "ncclGetErrorString", &a.error_string, &l.why) &&
         Bind(lib, "ncclGetUniqueId", &a.get_unique_id, &l.why) &&
         Bind(lib, "ncclCommInitRank", &a.comm_init_rank, &l.why) &&
         Bind(lib, "ncclAllReduce", &a.all_reduce, &l.why) &&
         Bind(lib, "ncclBroadcast", &a.broadcast, &l.why) &&
         Bind(lib, "ncclCommDestroy", &a.comm_destroy, &l.why);
  if (!l.ok) return l;  // the library stays open: a retry would fail again
  // Needs no GPU: the library's own version.
  a.version = 0;
  if (a.get_version(&a.version) != ncclSuccess ||
      MajorOf(a.version) != NCCL_MAJOR) {
    l.ok = false;
    l.why = std::string(WEFT_CUDA_NCCL_SONAME) + " reports version " +
            std::to_string(a.version) + ", not NCCL " +
            std::to_string(NCCL_MAJOR) + ".x";
  }
  return l;
}

}  // namespace

const NcclApi* Nccl(std::string* why) {
  static const Loaded loaded = Load();  // once, thread-safe
  if (loaded.ok) return &loaded.api;
  if (why != nullptr) *why = loaded.why;
  return nullptr;
}

}  // namespace weft_cuda
