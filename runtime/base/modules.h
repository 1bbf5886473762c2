// Modules: shared objects built beside libweft that libweft dlopens on
// first use, so that a program which never needs what they link does not
// load it (weft-mpi.so: Open MPI; weft-onnx.so: libonnx and the full
// libprotobuf).  Both sides are built from one tree.
#pragma once

#include <string>

#include "weft/status.h"

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

}  // namespace weft
