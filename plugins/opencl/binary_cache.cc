#include "binary_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft_opencl {
namespace {

// A file: "WEFTCLB1", the 8-byte key, the 8-byte binary size, the binary.
constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'C', 'L', 'B', '1'};
constexpr size_t kHeader = 24;
// A program binary larger than this is not cached (nor read back).
constexpr uint64_t kMaxBinary = uint64_t{256} << 20;

uint64_t Fnv(uint64_t h, const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

uint64_t FnvString(uint64_t h, const std::string& s) {
  // The length first, so that ("ab", "c") and ("a", "bc") differ.
  const uint64_t n = s.size();
  return Fnv(Fnv(h, &n, sizeof n), s.data(), s.size());
}

std::string DeviceText(cl_device_id id, cl_device_info what) {
  size_t size = 0;
  if (g_cl->GetDeviceInfo(id, what, 0, nullptr, &size) != CL_SUCCESS) {
    return "";
  }
  std::string text(size, '\0');
  if (size > 0 &&
      g_cl->GetDeviceInfo(id, what, size, &text[0], nullptr) != CL_SUCCESS) {
    return "";
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

// mkdir -p with mode 0700 for what it makes.
bool MakeDirectories(const std::string& path) {
  if (path.empty()) return false;
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string part = path.substr(0, at);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ReadAll(int fd, void* data, size_t size) {
  unsigned char* p = static_cast<unsigned char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Whether the device's platform keeps compiled kernels itself.  PoCL
// does (~/.cache/pocl/kcache, kernel by kernel as they are first used);
// asking it for a whole program's binary instead compiles every kernel of
// the program: 8.3 s for the convolution program against 3.5 s for the
// kernels a run used, and 0.08 s against PoCL's 0.13 s from cache after.
bool PlatformCaches(const weft_plugin_device* device) {
  cl_platform_id platform = nullptr;
  if (g_cl->GetDeviceInfo(device->id, CL_DEVICE_PLATFORM, sizeof platform,
                          &platform, nullptr) != CL_SUCCESS) {
    return false;
  }
  char name[256] = {};
  if (g_cl->GetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name - 1,
                            name, nullptr) != CL_SUCCESS) {
    return false;
  }
  return std::strstr(name, "Portable Computing Language") != nullptr;
}

}  // namespace

std::string BinaryCacheDirectory(const weft_plugin_device* device) {
  std::string dir;
  if (const char* set = std::getenv("WEFT_OPENCL_CACHE")) {
    dir = set;  // "" turns the cache off
  } else if (PlatformCaches(device)) {
    return "";
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME");
             xdg != nullptr && xdg[0] == '/') {
    dir = std::string(xdg) + "/weft/opencl";
  } else if (const char* home = std::getenv("HOME");
             home != nullptr && home[0] == '/') {
    dir = std::string(home) + "/.cache/weft/opencl";
  }
  return MakeDirectories(dir) ? dir : "";
}

BinaryCache::BinaryCache(const weft_plugin_device* device,
                         const std::string& options,
                         const char* const* sources, int num_sources)
    : options_(options) {
  const std::string dir = BinaryCacheDirectory(device);
  if (dir.empty()) return;
  uint64_t h = FnvString(1469598103934665603u, "weft-opencl-binary-1");
  for (cl_device_info what :
       {cl_device_info{CL_DEVICE_NAME}, cl_device_info{CL_DEVICE_VENDOR},
        cl_device_info{CL_DEVICE_VERSION}, cl_device_info{CL_DRIVER_VERSION}}) {
    h = FnvString(h, DeviceText(device->id, what));
  }
  h = FnvString(h, options);
  for (int i = 0; i < num_sources; ++i) h = FnvString(h, sources[i]);
  key_ = h;
  char name[32];
  std::snprintf(name, sizeof name, "/%016llx.bin",
                static_cast<unsigned long long>(key_));
  path_ = dir + name;
}

cl_program BinaryCache::Load(const weft_plugin_device* device) const {
  if (path_.empty()) return nullptr;
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  unsigned char header[kHeader];
  uint64_t key = 0, size = 0;
  std::vector<unsigned char> binary;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            ReadAll(fd, header, kHeader) &&
            std::memcmp(header, kMagic, sizeof kMagic) == 0;
  if (ok) {
    std::memcpy(&key, header + 8, 8);
    std::memcpy(&size, header + 16, 8);
    ok = key == key_ && size > 0 && size <= kMaxBinary &&
         static_cast<uint64_t>(st.st_size) == kHeader + size;
  }
  if (ok) {
    binary.resize(static_cast<size_t>(size));
    ok = ReadAll(fd, binary.data(), binary.size());
  }
  close(fd);
  if (!ok) return nullptr;
  const unsigned char* data = binary.data();
  const size_t length = binary.size();
  cl_int binary_status = CL_SUCCESS, error = CL_SUCCESS;
  cl_program program = g_cl->CreateProgramWithBinary(
      device->context, 1, &device->id, &length, &data, &binary_status,
      &error);
  if (error != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program != nullptr) g_cl->ReleaseProgram(program);
    return nullptr;
  }
  if (g_cl->BuildProgram(program, 1, &device->id, options_.c_str(), nullptr,
                         nullptr) != CL_SUCCESS) {
    g_cl->ReleaseProgram(program);
    return nullptr;
  }
  return program;
}

void BinaryCache::Store(cl_program program) const {
  if (path_.empty()) return;
  size_t size = 0;
  if (g_cl->GetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size,
                           &size, nullptr) != CL_SUCCESS ||
      size == 0 || size > kMaxBinary) {
    return;
  }
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  if (g_cl->GetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data,
                           nullptr) != CL_SUCCESS) {
    return;
  }
  unsigned char header[kHeader];
  std::memcpy(header, kMagic, sizeof kMagic);
  const uint64_t size64 = size;
  std::memcpy(header + 8, &key_, 8);
  std::memcpy(header + 16, &size64, 8);
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%ld.tmp",
                static_cast<long>(getpid()));
  const std::string temp = path_ + suffix;
  const int fd =
      open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool ok = WriteAll(fd, header, kHeader) &&
                  WriteAll(fd, binary.data(), binary.size());
  const bool closed = close(fd) == 0;
  if (!ok || !closed || rename(temp.c_str(), path_.c_str()) != 0) {
    unlink(temp.c_str());
  }
}

}  // namespace weft_opencl
