// The NCCL loader (nccl_loader.h), without a GPU: the library opens by its
// soname (through the run path, then the usual search), every function the
// plugin calls resolves and its major version is the headers' (what
// ncclGetVersion reports needs no device); and the plugin given as argv[1]
// has no DT_NEEDED entry for NCCL, so loading it maps no NCCL.  Where
// libnccl.so.2 cannot be loaded the NCCL cases are skipped, saying why.
// Prints TAP.
#include <elf.h>
#include <link.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "nccl_loader.h"

namespace {

int failures = 0;
int number = 0;

void Check(bool ok, const std::string& what) {
  ++number;
  std::printf("%s %d - %s\n", ok ? "ok" : "not ok", number, what.c_str());
  if (!ok) ++failures;
}

void Skip(const std::string& what, const std::string& why) {
  ++number;
  std::printf("ok %d - %s # SKIP skipped: %s\n", number, what.c_str(),
              why.c_str());
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

// Whether the library itself is there: a missing library skips the NCCL
// cases, but a library that loads and then fails the loader's checks (a
// missing symbol, another major version) fails them.
bool Installed(std::string* why) {
  const std::string soname =
      std::string("libnccl.so.") + std::to_string(NCCL_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    *why = soname + " is not installed (" + (e ? e : "?") + ")";
    return false;
  }
  dlclose(lib);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("1..3\n");
  std::string absent;
  if (!Installed(&absent)) {
    Skip("NCCL loads", absent);
    Skip("every NCCL function the plugin calls resolves", absent);
  } else {
    std::string why;
    const weft_cuda::NcclApi* nccl = weft_cuda::Nccl(&why);
    Check(nccl != nullptr,
          "NCCL loads: " +
              (nccl ? "version code " + std::to_string(nccl->version)
                    : why));
    Check(nccl != nullptr && nccl->get_version && nccl->error_string &&
              nccl->get_unique_id && nccl->comm_init_rank &&
              nccl->all_reduce && nccl->broadcast && nccl->comm_destroy &&
              std::strlen(nccl->error_string(ncclInvalidArgument)) > 0,
          "every NCCL function the plugin calls resolves");
  }
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
            needed.find("nccl") == std::string::npos,
        "the plugin links no NCCL (DT_NEEDED: " + needed + ")");
  return failures == 0 ? 0 : 1;
}
