#include "distributed/cluster.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/status.h"

// The installation's directory of the module (Meson passes it; builds
// without it, the fuzzers', look beside libweft only).
#ifndef WEFT_MPI_MODULE_DIR
#define WEFT_MPI_MODULE_DIR ""
#endif

namespace weft {
namespace distributed {
namespace {

bool Launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                        "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where weft-mpi.so may be: WEFT_MPI_MODULE; beside this libweft (the
// build tree); in weft/ beside it (an installation, moved or not); the
// configured installation directory.
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("WEFT_MPI_MODULE")) {
    out.push_back(env);
    return out;
  }
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&Candidates), &self) != 0 &&
      self.dli_fname != nullptr) {
    std::string lib = self.dli_fname;
    size_t slash = lib.rfind('/');
    if (slash != std::string::npos) {
      std::string dir = lib.substr(0, slash + 1);
      out.push_back(dir + "weft-mpi.so");
      out.push_back(dir + "weft/weft-mpi.so");
    }
  }
  if (*WEFT_MPI_MODULE_DIR)
    out.push_back(std::string(WEFT_MPI_MODULE_DIR) + "/weft-mpi.so");
  return out;
}

weft_status* Setup(World* world) {
  world->transport = "none (one process)";
  if (!Launched()) return nullptr;
  std::string tried;
  void* handle = nullptr;
  std::string path;
  for (const std::string& c : Candidates()) {
    tried += (tried.empty() ? "" : ", ") + c;
    if (!IsFile(c)) continue;
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
      return Errorf(WEFT_UNAVAILABLE,
                    "started by an MPI launcher, but the MPI module %s does "
                    "not load: %s", c.c_str(), dlerror());
    path = c;
    break;
  }
  if (handle == nullptr)
    return Errorf(WEFT_UNAVAILABLE,
                  "started by an MPI launcher, but this Weft has no MPI "
                  "module (looked for %s; built without Open MPI?)",
                  tried.c_str());
  auto fn = reinterpret_cast<weft_mpi_module_table_fn>(
      dlsym(handle, "weft_mpi_module_table"));
  const weft_mpi_table* table = fn != nullptr ? fn() : nullptr;
  if (table == nullptr || table->struct_size < sizeof(weft_mpi_table))
    return Errorf(WEFT_UNAVAILABLE,
                  "the MPI module %s is not this Weft's (no table, or an "
                  "older one)", path.c_str());
  char error[512] = {};
  int32_t code = table->init(&world->rank, &world->size, error, sizeof error);
  if (code != 0)
    return Errorf(static_cast<weft_code>(code), "MPI: %s", error);
  world->mpi = table;
  world->transport = table->library_version();
  return nullptr;
}

}  // namespace

weft_status* GetWorld(const World** out) {
  static World world;
  static std::string error;
  static weft_code code = WEFT_OK;
  static std::once_flag once;
  std::call_once(once, [] {
    if (weft_status* st = Setup(&world)) {
      code = weft_status_code(st);
      error = weft_status_message(st);
      weft_status_destroy(st);
    }
  });
  if (code != WEFT_OK) return Error(code, error);
  *out = &world;
  return nullptr;
}

}  // namespace distributed
}  // namespace weft
