#include "error_slot.h"

#include <cstdio>

namespace weft_opencl {
namespace {

// The buffer: int32 id, int32 padding, int64 value, int64 row (the layout
// weft_report in the kernels' prelude writes).
struct SlotWords {
  int32_t id;
  int32_t padding;
  int64_t value;
  int64_t row;
};
static_assert(sizeof(SlotWords) == 24, "the kernels write this layout");

const SlotWords kCleared = {};

}  // namespace

weft_status* ErrorSlot::Create(weft_plugin_device* device,
                               cl_command_queue queue,
                               std::shared_ptr<ErrorSlot>* out) {
  std::shared_ptr<ErrorSlot> slot(new ErrorSlot());
  slot->device_ = device;
  slot->queue_ = queue;
  cl_int error = CL_SUCCESS;
  slot->buffer_ = g_cl->CreateBuffer(device->context, CL_MEM_READ_WRITE,
                                     sizeof(SlotWords), nullptr, &error);
  if (error != CL_SUCCESS) {
    slot->buffer_ = nullptr;
    return ClStatus(error, "creating a stream's error buffer");
  }
  error = g_cl->EnqueueWriteBuffer(queue, slot->buffer_, CL_TRUE, 0,
                                   sizeof(SlotWords), &kCleared, 0, nullptr,
                                   nullptr);
  if (error != CL_SUCCESS) {
    return ClStatus(error, "clearing a stream's error buffer");
  }
  *out = std::move(slot);
  return nullptr;
}

ErrorSlot::~ErrorSlot() {
  if (buffer_ != nullptr) g_cl->ReleaseMemObject(buffer_);
}

uint32_t ErrorSlot::RegisterLaunch(const char* node, const char* op,
                                   DeviceError kind, const char* dtype,
                                   int64_t classes) {
  std::lock_guard<std::mutex> lock(mutex_);
  // 0 means "no failure"; ids stay positive as int32 for the kernels.
  if (++last_id_ > 0x7fffffffu) last_id_ = reported_ = 1;
  Launch& launch = recent_[last_id_ % kRecentLaunches];
  launch.id = last_id_;
  launch.kind = kind;
  launch.classes = classes;
  launch.node = node != nullptr ? node : "?";
  launch.op = op != nullptr ? op : "?";
  launch.dtype = dtype != nullptr ? dtype : "?";
  return last_id_;
}

weft_status* ErrorSlot::AfterLaunch() {
  return ClStatus(
      g_cl->EnqueueReadBuffer(queue_, buffer_, CL_FALSE, 0, sizeof(int32_t),
                              &host_word_, 0, nullptr, nullptr),
      "enqueueing the read of a kernel's error word");
}

uint32_t ErrorSlot::last_launch() {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_id_;
}

weft_status* ErrorSlot::TakeError(uint32_t up_to) {
  const int32_t word = __atomic_load_n(&host_word_, __ATOMIC_ACQUIRE);
  if (word <= 0) return nullptr;
  const uint32_t id = static_cast<uint32_t>(word);
  Launch launch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (id <= reported_ || id > up_to) return nullptr;
    reported_ = id;
    const Launch& recent = recent_[id % kRecentLaunches];
    if (recent.id == id) launch = recent;
  }
  // The failing launch has completed (its word was read back after it), so
  // its details are in the buffer; read them on the device's own queue,
  // which does not wait for the stream's later work.
  SlotWords words = {};
  cl_int error = g_cl->EnqueueReadBuffer(device_->queue, buffer_, CL_TRUE, 0,
                                         sizeof(words), &words, 0, nullptr,
                                         nullptr);
  // Later launches on the stream may fail anew; launches between the failure
  // and this point found the word taken and are not reported (they ran after
  // a failure, on values that failure left undefined).
  cl_int clear = g_cl->EnqueueWriteBuffer(queue_, buffer_, CL_FALSE, 0,
                                          sizeof(kCleared), &kCleared, 0,
                                          nullptr, nullptr);
  if (clear == CL_SUCCESS) g_cl->Flush(queue_);
  char detail[256];
  if (error != CL_SUCCESS) {
    std::snprintf(detail, sizeof detail,
                  "a kernel failed (its details could not be read: %s)",
                  ClErrorName(error));
  } else {
    switch (launch.id == id ? launch.kind : DeviceError(0)) {
      case DeviceError::kDivisionByZero:
        std::snprintf(detail, sizeof detail, "integer division by zero (%s)",
                      launch.dtype.c_str());
        break;
      case DeviceError::kNegativeExponent:
        std::snprintf(detail, sizeof detail,
                      "integer Pow with a negative exponent (%lld, %s)",
                      static_cast<long long>(words.value),
                      launch.dtype.c_str());
        break;
      case DeviceError::kLabelOutOfRange:
        std::snprintf(detail, sizeof detail,
                      "label %lld in batch row %lld is outside the valid "
                      "range [0, %lld)",
                      static_cast<long long>(words.value),
                      static_cast<long long>(words.row),
                      static_cast<long long>(launch.classes));
        break;
      case DeviceError::kIndexOutOfRange:
        std::snprintf(detail, sizeof detail,
                      "indices[%lld] = %lld is out of range [0, %lld)",
                      static_cast<long long>(words.row),
                      static_cast<long long>(words.value),
                      static_cast<long long>(launch.classes));
        break;
      case DeviceError::kBadWindowIndex:
        std::snprintf(detail, sizeof detail,
                      "window_index[%lld] = %lld names a position outside "
                      "its window (of %lld): it must come from "
                      "MaxPoolWithWindowIndex with the same ksize, strides "
                      "and padding",
                      static_cast<long long>(words.row),
                      static_cast<long long>(words.value),
                      static_cast<long long>(launch.classes));
        break;
      default:
        return MakeStatus(WEFT_INVALID_ARGUMENT,
                          "a kernel on OpenCL device %d failed (launch %u, "
                          "too long ago to name its node)",
                          device_->index, id);
    }
  }
  return MakeStatus(WEFT_INVALID_ARGUMENT, "node '%s' (%s on OPENCL): %s",
                    launch.node.c_str(), launch.op.c_str(), detail);
}

}  // namespace weft_opencl
