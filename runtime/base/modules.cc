#include "base/modules.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

#include "base/status.h"

namespace weft {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> Candidates(const char* env, const std::string& file) {
  std::vector<std::string> out;
  if (const char* value = std::getenv(env)) {
    out.push_back(value);
    return out;
  }
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&Candidates), &self) != 0 &&
      self.dli_fname != nullptr) {
    std::string lib = self.dli_fname;
    size_t slash = lib.rfind('/');
    if (slash != std::string::npos) {
      std::string dir = lib.substr(0, slash + 1);
      out.push_back(dir + file);
      out.push_back(dir + "weft/" + file);
    }
  }
  if (*WEFT_MODULE_DIR) out.push_back(std::string(WEFT_MODULE_DIR) + "/" + file);
  return out;
}

}  // namespace

weft_status* OpenModule(const char* env, const std::string& file,
                        void** handle, std::string* path) {
  std::string tried;
  for (const std::string& c : Candidates(env, file)) {
    tried += (tried.empty() ? "" : ", ") + c;
    if (!IsFile(c)) continue;
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = dlerror();
      return Errorf(WEFT_UNAVAILABLE, "the module %s does not load: %s",
                    c.c_str(), why != nullptr ? why : "(no reason given)");
    }
    *handle = h;
    *path = c;
    return nullptr;
  }
  return Errorf(WEFT_NOT_FOUND, "no %s (looked for %s)", file.c_str(),
                tried.c_str());
}

}  // namespace weft
