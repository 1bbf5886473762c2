// Errors that device code finds (integer division by zero, a label out of
// range) cannot be returned by the kernel call that enqueued the work: that
// call returned before the device ran it.  So each stream owns an ErrorSlot:
// a small device buffer that the first failing work item claims with an
// atomic compare-and-swap, writing the launch's id and two details (a value,
// a row), plus the host-side descriptions of the recent launches that could
// fail.
//
// After each such launch the stream also enqueues a non-blocking read of the
// id word into host memory.  The word is sticky (only the first failure
// writes it), and reads run in queue order, so once the stream has passed a
// point, the host copy says whether any checked launch before it failed,
// without a blocking read on every synchronization.
//
// stream_synchronize and event_synchronize, once the work has completed,
// turn a set word into an INVALID_ARGUMENT status naming the node, and
// reset the word, so each error is reported once.  An event reports only
// failures of launches before it.  Failing work items write defined values
// (0) to the offending elements, never undefined behaviour.
#ifndef WEFT_PLUGINS_OPENCL_ERROR_SLOT_H_
#define WEFT_PLUGINS_OPENCL_ERROR_SLOT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "opencl_plugin.h"

namespace weft_opencl {

// What a failing kernel found; says how the details read.
enum class DeviceError : int32_t {
  kDivisionByZero = 1,    // no details
  kNegativeExponent = 2,  // value: the exponent
  kLabelOutOfRange = 3,   // value: the label, row: its batch row
  kIndexOutOfRange = 4,   // value: the index, row: its position
  kBadWindowIndex = 5,    // value: the position, row: its element
};

class ErrorSlot {
 public:
  static weft_status* Create(weft_plugin_device* device,
                             cl_command_queue queue,
                             std::shared_ptr<ErrorSlot>* out);
  ~ErrorSlot();
  ErrorSlot(const ErrorSlot&) = delete;
  ErrorSlot& operator=(const ErrorSlot&) = delete;

  // The buffer kernels that may fail receive.
  cl_mem buffer() const { return buffer_; }

  // Records a launch that may fail; returns the id its kernel writes.
  // `classes` is the exclusive bound of labels, for the message.
  uint32_t RegisterLaunch(const char* node, const char* op, DeviceError kind,
                          const char* dtype, int64_t classes);
  // Enqueues the read of the id word; call right after the launch.
  weft_status* AfterLaunch();

  // The id of the last launch registered (0 before the first).
  uint32_t last_launch();

  // Call after the stream passed the point of interest: the first failure of
  // a launch with id <= up_to that was not reported yet, or NULL.
  weft_status* TakeError(uint32_t up_to);

 private:
  ErrorSlot() = default;

  weft_plugin_device* device_ = nullptr;
  cl_command_queue queue_ = nullptr;  // the stream's, borrowed
  cl_mem buffer_ = nullptr;
  // Written by the OpenCL runtime's reads, read by the host.
  alignas(64) int32_t host_word_ = 0;

  std::mutex mutex_;
  uint32_t last_id_ = 0;
  uint32_t reported_ = 0;  // ids up to here are reported or forgotten
  struct Launch {
    uint32_t id = 0;
    DeviceError kind = DeviceError::kDivisionByZero;
    int64_t classes = 0;
    std::string node, op, dtype;
  };
  // The last launches that could fail, indexed by id; older ones are
  // reported without the node's name.
  static constexpr uint32_t kRecentLaunches = 64;
  Launch recent_[kRecentLaunches];
};

}  // namespace weft_opencl

#endif  // WEFT_PLUGINS_OPENCL_ERROR_SLOT_H_
