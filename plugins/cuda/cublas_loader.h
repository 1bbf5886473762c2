// cuBLAS, opened when the first MatMul needs a handle rather than linked:
// a process whose plugin path holds this plugin but that never runs a
// MatMul on a GPU (every CPU-only user, and every machine without one)
// does not map cuBLAS and cuBLASLt, some 200 MiB of resident memory and
// a tenth of a second of relocations at start-up.
#ifndef WEFT_PLUGINS_CUDA_CUBLAS_LOADER_H_
#define WEFT_PLUGINS_CUDA_CUBLAS_LOADER_H_

#include <cublas_v2.h>

#include <string>

namespace weft_cuda {

// The cuBLAS functions the plugin calls, under the names cublas_v2.h maps
// them to.
struct BlasApi {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSgemm_64) sgemm;
  decltype(&cublasDgemm_64) dgemm;
  decltype(&cublasSgemmStridedBatched_64) sgemm_batched;
  decltype(&cublasDgemmStridedBatched_64) dgemm_batched;
  decltype(&cublasGetStatusString) status_string;
};

// The table, loading libcublas.so.<CUBLAS_VER_MAJOR> (through the plugin's
// run path) the first time; nullptr, with *why saying what failed (the
// library or a symbol missing), when it cannot.  Thread-safe; the library
// stays loaded for the life of the process.
const BlasApi* Blas(std::string* why);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_CUBLAS_LOADER_H_
