// NCCL, opened when the first collective on a GPU needs it rather than
// linked, as cuBLAS and cuDNN are (cublas_loader.h, cudnn_loader.h): the
// plugin loads, and every kernel runs, on a machine without NCCL (its
// collectives then answer UNAVAILABLE, saying why, and the runtime runs
// AllReduce and Broadcast through MPI in host memory if no rank has it:
// collectives.cu), and a process that never runs a collective on a GPU
// does not map libnccl.so.2 (some 250 MiB).
#ifndef WEFT_PLUGINS_CUDA_NCCL_LOADER_H_
#define WEFT_PLUGINS_CUDA_NCCL_LOADER_H_

#include <nccl.h>

#include <string>

namespace weft_cuda {

// The NCCL functions the plugin calls.
struct NcclApi {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetErrorString) error_string;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclCommDestroy) comm_destroy;
  // The version ncclGetVersion reported (NCCL_VERSION_CODE's encoding).
  int version;
};

// The table, loading libnccl.so.<NCCL_MAJOR> (through the plugin's run
// path, then the usual search) the first time and checking that its
// major version is the headers'; nullptr, with *why saying what failed
// (the library, a symbol, the version), when it cannot.  Thread-safe; the
// library stays loaded for the life of the process.
const NcclApi* Nccl(std::string* why);

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_NCCL_LOADER_H_
