// Modules: shared objects built beside libweft that libweft dlopens on
// first use, so that a program which never needs what they link does not
// load it (weft-mpi.so: Open MPI; weft-onnx.so: libonnx and the full
// libprotobuf).  Both sides are built from one tree.
#pragma once

#include <mutex>
#include <string>

#include "base/status.h"

// The installation's directory of the modules (Meson passes it; builds
// without it, the fuzzers', look beside libweft only).
#ifndef WEFT_MODULE_DIR
#define WEFT_MODULE_DIR ""
#endif

namespace weft {

// dlopens the module `file` (RTLD_NOW | RTLD_LOCAL): from the path in the
// environment variable `env` when it is set (only there); otherwise beside
// this libweft (the build tree), in weft/ beside it (an installation, moved
// or not) and in WEFT_MODULE_DIR, the first that is a regular file.  On
// success sets *handle and *path.  NOT_FOUND naming every place looked in
// when there is none; UNAVAILABLE with dlerror's reason when the file
// does not load.
weft_status* OpenModule(const char* env, const std::string& file,
                        void** handle, std::string* path);

// A module's one-time set-up with its outcome kept: the first Run calls
// `load` (concurrent callers wait for it), and every Run returns a copy of
// the error it returned, or NULL when it succeeded.
class LoadOnce {
 public:
  template <typename Load>
  weft_status* Run(Load&& load) {
    std::call_once(once_, [&] {
      if (weft_status* st = load()) {
        code_ = weft_status_code(st);
        error_ = weft_status_message(st);
        weft_status_destroy(st);
      }
    });
    return code_ == WEFT_OK ? nullptr : Error(code_, error_);
  }

 private:
  std::once_flag once_;
  weft_code code_ = WEFT_OK;
  std::string error_;
};

}  // namespace weft
