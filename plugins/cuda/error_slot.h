// Errors that device code finds — integer division by zero — cannot be
// returned by the kernel call that enqueued the work: that call returned long
// before the GPU ran it.  So each stream owns an ErrorSlot: one word of
// mapped, pinned host memory that a failing kernel writes its launch id into,
// plus the host-side descriptions of the recent launches that could fail.
// stream_synchronize and event_synchronize, once the work has completed, turn
// a written word into an INVALID_ARGUMENT status naming the node and clear
// it, so each error is reported once.  The failing kernel itself writes 0 to
// the offending elements: defined results, never undefined behaviour.
//
// Launches on one stream run in order, so the first failing launch writes the
// word and later ones see it set and leave it: no device atomics on host
// memory are needed.
//
// A stream that waits on an event of another stream links to that stream's
// slot, and its synchronizations also report errors of the work it waited
// for (a copy stream reading a Div's output, for instance).  Only direct
// links are followed.  When several runs share one stream, an error is
// reported by whichever synchronization sees it first.
#ifndef WEFT_PLUGINS_CUDA_ERROR_SLOT_H_
#define WEFT_PLUGINS_CUDA_ERROR_SLOT_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_plugin.h"

namespace weft_cuda {

class ErrorSlot {
 public:
  // Needs the stream's device to be current.
  static weft_status* Create(std::shared_ptr<ErrorSlot>* out);
  ~ErrorSlot();
  ErrorSlot(const ErrorSlot&) = delete;
  ErrorSlot& operator=(const ErrorSlot&) = delete;

  // The word as device code addresses it.
  unsigned int* device_word() const { return device_word_; }

  // Records a launch that may fail; returns the id its kernel writes.
  unsigned int RegisterLaunch(std::string description);

  // Makes TakeError() also report `upstream`'s errors.
  void LinkUpstream(const std::shared_ptr<ErrorSlot>& upstream);

  // Call after synchronizing: the pending error of this slot or of a linked
  // one, cleared; NULL when there is none.
  weft_status* TakeError();

 private:
  ErrorSlot() = default;
  weft_status* TakeOwnError();

  unsigned int* host_word_ = nullptr;
  unsigned int* device_word_ = nullptr;

  std::mutex mutex_;
  unsigned int last_id_ = 0;
  struct Launch {
    unsigned int id = 0;
    std::string description;
  };
  // Descriptions of the last launches that could fail, indexed by id; older
  // ones are forgotten and reported without the node's name.
  static constexpr unsigned int kRecentLaunches = 64;
  Launch recent_[kRecentLaunches];
  std::vector<std::weak_ptr<ErrorSlot>> upstream_;
};

}  // namespace weft_cuda

#endif  // WEFT_PLUGINS_CUDA_ERROR_SLOT_H_
