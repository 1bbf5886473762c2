// AllReduce and Broadcast on the GPU (plugin interface 1.7): the
// collective_* slots over NCCL, opened at run time (nccl_loader.h).  The
// runtime bootstraps one communicator per device (rank 0's
// ncclGetUniqueId, gathered over MPI; README "Across processes (MPI)"),
// then enqueues each collective on the node's stream, in the same order on
// every rank.
//
// Without NCCL the slots stay in the table and answer UNAVAILABLE, saying
// why: the runtime asks every rank before any joins, so when no rank has
// NCCL every rank runs its collectives through MPI in host memory (as
// before 1.7), and when only some have it every rank refuses them with the
// reason rather than some waiting in ncclCommInitRank for the others.
//
// A mean is NCCL's sum followed by a kernel computing each element as
// (T)((double)sum * (1.0 / size)): the formula, and so the rounding, of
// the runtime's MPI path (ncclAvg scales before summing, which rounds
// differently).
//
// NCCL's asynchronous errors (a peer that fails mid-operation) are not
// polled: a peer that never comes holds the stream, as the interface says.
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "cuda_plugin.h"
#include "kernel_call.h"
#include "nccl_loader.h"

struct weft_plugin_comm {
  int ordinal = 0;
  int rank = 0;
  int size = 1;
  ncclComm_t comm = nullptr;
  // The runtime never overlaps calls on one communicator; NCCL needs
  // that, so it is enforced here too.
  std::mutex mutex;
};

namespace weft_cuda {
namespace {

int32_t CodeFor(ncclResult_t result) {
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return WEFT_INVALID_ARGUMENT;
    case ncclSystemError:
    case ncclRemoteError:
      return WEFT_UNAVAILABLE;
    default:
      return WEFT_INTERNAL;
  }
}

weft_status* NcclStatus(const NcclApi& nccl, ncclResult_t result,
                        const char* what, int ordinal) {
  if (result == ncclSuccess) return nullptr;
  return MakeStatus(CodeFor(result), "%s on CUDA device %d failed: %s", what,
                    ordinal, nccl.error_string(result));
}

// NCCL itself, or UNAVAILABLE saying why not.
weft_status* Need(const NcclApi** out) {
  std::string why;
  *out = Nccl(&why);
  if (*out != nullptr) return nullptr;
  return MakeStatus(WEFT_UNAVAILABLE,
                    "weft-cuda: collectives on the GPU need NCCL: %s",
                    why.c_str());
}

bool NcclType(int32_t dtype, ncclDataType_t* out) {
  switch (dtype) {
    case WEFT_FLOAT32:
      *out = ncclFloat32;
      return true;
    case WEFT_FLOAT64:
      *out = ncclFloat64;
      return true;
    case WEFT_INT32:
      *out = ncclInt32;
      return true;
    case WEFT_INT64:
      *out = ncclInt64;
      return true;
    default:
      return false;
  }
}

// The runtime's mean: one double product per element, rounded once to T.
// A lone multiply: nothing for the compiler to contract into an FMA.
template <typename T>
__global__ void MeanOfSumKernel(T* data, int64_t count, double scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) +
                   threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    data[i] = static_cast<T>(static_cast<double>(data[i]) * scale);
  }
}

// The stream to enqueue on: the host's, or (none given) the per-thread
// default stream, synchronized before returning.
cudaStream_t StreamOf(weft_plugin_stream* stream) {
  return stream != nullptr ? stream->stream : cudaStreamPerThread;
}

weft_status* Settle(weft_plugin_stream* stream, const char* what) {
  if (stream != nullptr) return nullptr;
  return CudaStatus(cudaStreamSynchronize(cudaStreamPerThread), what);
}

}  // namespace

weft_status* CollectiveUniqueId(weft_plugin_device* device, void* out,
                                uint64_t capacity, uint64_t* out_size) {
  return Guarded([&]() -> weft_status* {
    const NcclApi* nccl = nullptr;
    if (weft_status* status = Need(&nccl)) return status;
    // What a rank can check alone before any rank waits for the others:
    // NCCL loads, and the device can be made current.
    if (weft_status* status =
            CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice")) {
      return status;
    }
    if (out == nullptr) return nullptr;
    if (capacity < sizeof(ncclUniqueId)) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "collective_unique_id: %llu bytes of room, NCCL's id "
                        "takes %zu",
                        static_cast<unsigned long long>(capacity),
                        sizeof(ncclUniqueId));
    }
    ncclUniqueId id;
    if (weft_status* status = NcclStatus(*nccl, nccl->get_unique_id(&id),
                                         "ncclGetUniqueId",
                                         device->ordinal)) {
      return status;
    }
    std::memcpy(out, &id, sizeof id);
    *out_size = sizeof id;
    return nullptr;
  });
}

weft_status* CollectiveCommCreate(weft_plugin_device* device, int32_t rank,
                                  int32_t size, const void* id,
                                  uint64_t id_size, weft_plugin_comm** out) {
  return Guarded([&]() -> weft_status* {
    *out = nullptr;
    const NcclApi* nccl = nullptr;
    if (weft_status* status = Need(&nccl)) return status;
    if (id_size != sizeof(ncclUniqueId)) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "collective_comm_create: an id of %llu bytes, not "
                        "NCCL's %zu",
                        static_cast<unsigned long long>(id_size),
                        sizeof(ncclUniqueId));
    }
    if (weft_status* status =
            CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice")) {
      return status;
    }
    std::unique_ptr<weft_plugin_comm> comm(new weft_plugin_comm());
    comm->ordinal = device->ordinal;
    comm->rank = rank;
    comm->size = size;
    ncclUniqueId unique;
    std::memcpy(&unique, id, sizeof unique);
    // Waits until every rank has joined.
    if (weft_status* status = NcclStatus(
            *nccl, nccl->comm_init_rank(&comm->comm, size, unique, rank),
            "ncclCommInitRank", device->ordinal)) {
      return status;
    }
    *out = comm.release();
    return nullptr;
  });
}

weft_status* CollectiveAllReduce(weft_plugin_device* device,
                                 weft_plugin_comm* comm,
                                 weft_plugin_stream* stream, const void* src,
                                 uint64_t src_offset, void* dst,
                                 uint64_t dst_offset, uint64_t count,
                                 int32_t dtype, int32_t reduction) {
  return Guarded([&]() -> weft_status* {
    const NcclApi* nccl = nullptr;
    if (weft_status* status = Need(&nccl)) return status;
    ncclDataType_t type;
    const bool mean = reduction == WEFT_COLLECTIVE_MEAN;
    if (!NcclType(dtype, &type) ||
        (reduction != WEFT_COLLECTIVE_SUM && !mean) ||
        (mean && dtype != WEFT_FLOAT32 && dtype != WEFT_FLOAT64)) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "collective_all_reduce: reduction %d of %s is not "
                        "one the CUDA plugin runs",
                        static_cast<int>(reduction),
                        weft_plugin_kit::DtypeName(dtype)
                            ? weft_plugin_kit::DtypeName(dtype)
                            : "an unknown dtype");
    }
    if (count > static_cast<uint64_t>(INT64_MAX)) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "collective_all_reduce: %llu elements",
                        static_cast<unsigned long long>(count));
    }
    if (weft_status* status =
            CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice")) {
      return status;
    }
    const cudaStream_t cuda_stream = StreamOf(stream);
    void* out = static_cast<char*>(dst) + dst_offset;
    {
      std::lock_guard<std::mutex> lock(comm->mutex);
      if (weft_status* status = NcclStatus(
              *nccl,
              nccl->all_reduce(static_cast<const char*>(src) + src_offset,
                               out, static_cast<size_t>(count), type,
                               ncclSum, comm->comm, cuda_stream),
              "ncclAllReduce", device->ordinal)) {
        return status;
      }
    }
    if (mean && count != 0) {
      const double scale = 1.0 / comm->size;
      const int64_t n = static_cast<int64_t>(count);
      if (dtype == WEFT_FLOAT32) {
        MeanOfSumKernel<float><<<BlocksFor(n), kBlockThreads, 0,
                                 cuda_stream>>>(static_cast<float*>(out), n,
                                                scale);
      } else {
        MeanOfSumKernel<double><<<BlocksFor(n), kBlockThreads, 0,
                                  cuda_stream>>>(static_cast<double*>(out),
                                                 n, scale);
      }
      if (weft_status* status =
              CudaStatus(cudaGetLastError(), "launching the mean's scale")) {
        return status;
      }
    }
    return Settle(stream, "ncclAllReduce");
  });
}

weft_status* CollectiveBroadcast(weft_plugin_device* device,
                                 weft_plugin_comm* comm,
                                 weft_plugin_stream* stream, const void* src,
                                 uint64_t src_offset, void* dst,
                                 uint64_t dst_offset, uint64_t bytes,
                                 int32_t root) {
  return Guarded([&]() -> weft_status* {
    const NcclApi* nccl = nullptr;
    if (weft_status* status = Need(&nccl)) return status;
    if (root < 0 || root >= comm->size) {
      return MakeStatus(WEFT_INVALID_ARGUMENT,
                        "collective_broadcast: root %d of %d ranks",
                        static_cast<int>(root), comm->size);
    }
    if (weft_status* status =
            CudaStatus(cudaSetDevice(device->ordinal), "cudaSetDevice")) {
      return status;
    }
    const cudaStream_t cuda_stream = StreamOf(stream);
    {
      std::lock_guard<std::mutex> lock(comm->mutex);
      // Bytes as ncclUint8: any dtype.  `src` is read on the root only.
      if (weft_status* status = NcclStatus(
              *nccl,
              nccl->broadcast(static_cast<const char*>(src) + src_offset,
                              static_cast<char*>(dst) + dst_offset,
                              static_cast<size_t>(bytes), ncclUint8, root,
                              comm->comm, cuda_stream),
              "ncclBroadcast", device->ordinal)) {
        return status;
      }
    }
    return Settle(stream, "ncclBroadcast");
  });
}

void CollectiveCommDestroy(weft_plugin_device* device,
                           weft_plugin_comm* comm) {
  if (comm == nullptr) return;
  const NcclApi* nccl = Nccl(nullptr);
  if (nccl != nullptr && comm->comm != nullptr) {
    cudaSetDevice(device->ordinal);
    // Frees this rank's resources; the runtime has waited for the work
    // that used the communicator.
    nccl->comm_destroy(comm->comm);
    cudaGetLastError();
  }
  delete comm;
}

}  // namespace weft_cuda
