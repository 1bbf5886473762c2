#include "error_slot.h"

#include <algorithm>
#include <utility>

namespace weft_cuda {

weft_status* ErrorSlot::Create(std::shared_ptr<ErrorSlot>* out) {
  std::shared_ptr<ErrorSlot> slot(new ErrorSlot());
  void* host = nullptr;
  // Portable: the memory stays valid whichever device is current when it is
  // freed.  Mapped: kernels write it directly, so reading it after a
  // synchronization costs no copy.
  weft_status* status = CudaStatus(
      cudaHostAlloc(&host, sizeof(unsigned int),
                    cudaHostAllocMapped | cudaHostAllocPortable),
      "allocating the stream's error word");
  if (status != nullptr) return status;
  slot->host_word_ = static_cast<unsigned int*>(host);
  *slot->host_word_ = 0;
  void* device = nullptr;
  status = CudaStatus(cudaHostGetDevicePointer(&device, host, 0),
                      "mapping the stream's error word");
  if (status != nullptr) return status;  // the destructor frees host_word_
  slot->device_word_ = static_cast<unsigned int*>(device);
  *out = std::move(slot);
  return nullptr;
}

ErrorSlot::~ErrorSlot() {
  if (host_word_ != nullptr) cudaFreeHost(host_word_);
}

unsigned int ErrorSlot::RegisterLaunch(std::string description) {
  std::lock_guard<std::mutex> lock(mutex_);
  // 0 means "no error" in the word, so ids skip it when they wrap.
  if (++last_id_ == 0) last_id_ = 1;
  Launch& launch = recent_[last_id_ % kRecentLaunches];
  launch.id = last_id_;
  launch.description = std::move(description);
  return last_id_;
}

void ErrorSlot::LinkUpstream(const std::shared_ptr<ErrorSlot>& upstream) {
  if (upstream.get() == this) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // Slots of destroyed streams can go; the list stays as short as the set
  // of streams this one ever waited on.
  upstream_.erase(std::remove_if(upstream_.begin(), upstream_.end(),
                                 [](const std::weak_ptr<ErrorSlot>& weak) {
                                   return weak.expired();
                                 }),
                  upstream_.end());
  for (const auto& weak : upstream_) {
    if (weak.lock() == upstream) return;
  }
  upstream_.push_back(upstream);
}

weft_status* ErrorSlot::TakeOwnError() {
  unsigned int id = __atomic_exchange_n(host_word_, 0u, __ATOMIC_ACQ_REL);
  if (id == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  const Launch& launch = recent_[id % kRecentLaunches];
  if (launch.id == id) {
    return MakeStatus(WEFT_INVALID_ARGUMENT, "%s",
                      launch.description.c_str());
  }
  return MakeStatus(WEFT_INVALID_ARGUMENT,
                    "integer division by zero in an earlier kernel on this "
                    "CUDA stream (launch %u; its node is no longer recorded)",
                    id);
}

weft_status* ErrorSlot::TakeError() {
  weft_status* status = TakeOwnError();
  if (status != nullptr) return status;
  std::vector<std::shared_ptr<ErrorSlot>> upstream;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& weak : upstream_) {
      if (auto slot = weak.lock()) upstream.push_back(std::move(slot));
    }
  }
  // Each upstream slot is asked on its own lock, never under ours: two
  // streams that waited on each other cannot deadlock.
  for (const auto& slot : upstream) {
    status = slot->TakeOwnError();
    if (status != nullptr) return status;
  }
  return nullptr;
}

}  // namespace weft_cuda
