// Compiled OpenCL programs kept on disk between processes: a program's
// binary (clGetProgramInfo CL_PROGRAM_BINARIES) is written after its first
// build, keyed by a hash of the device (name, device and driver versions),
// the build options and the source, and the next process builds from the
// binary instead of compiling the source again.
//
// The directory is WEFT_OPENCL_CACHE when set (empty: no cache), else
// $XDG_CACHE_HOME/weft/opencl, else $HOME/.cache/weft/opencl; by default
// there is none on PoCL, which caches compiled kernels itself, lazily
// (binary_cache.cc says what a whole-program binary costs there).  Everything
// here may fail without consequence but time: a directory that cannot be
// made or written, a missing, truncated or foreign file, or a binary the
// driver refuses all mean the program is built from source, as without a
// cache (and a bad file is replaced).  Files are written to a temporary
// name and renamed, so a reader never sees half a file.
#ifndef WEFT_PLUGINS_OPENCL_BINARY_CACHE_H_
#define WEFT_PLUGINS_OPENCL_BINARY_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "opencl_plugin.h"

namespace weft_opencl {

class BinaryCache {
 public:
  // The cache for programs built for `device` with `options` from the
  // concatenation of `sources`.
  BinaryCache(const weft_plugin_device* device, const std::string& options,
              const char* const* sources, int num_sources);

  // A program built from the cached binary, or NULL (no cache, no file, or
  // a file the driver would not build).
  cl_program Load(const weft_plugin_device* device) const;
  // Writes `program`'s binary (built for the one device); failures are
  // ignored.
  void Store(cl_program program) const;

  // Where the file is ("" without a cache directory).
  const std::string& path() const { return path_; }

 private:
  std::string options_;
  uint64_t key_ = 0;
  std::string path_;
};

// The cache directory for `device` as the environment names it, made if
// missing; "" when there is none or it cannot be made.
std::string BinaryCacheDirectory(const weft_plugin_device* device);

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_BINARY_CACHE_H_
