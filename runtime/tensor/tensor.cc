// Host tensors: creation, zero-copy wrapping, accessors, and the shared
// buffer machinery used by the executor.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "base/hot.h"
#include "base/status.h"
#include "device/device.h"
#include "tensor/tensor_value.h"

namespace weft {

std::string ShapeString(const int64_t* dims, int32_t rank) {
  if (rank < 0) return "<unknown>";
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += dims[i] < 0 ? "?" : std::to_string(dims[i]);
  }
  return s + "]";
}

std::string Dims::ToString() const { return ShapeString(data(), rank_); }

WEFT_HOT void BufferUnref(Buffer* b) {
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (b->kind == Buffer::Kind::kDevice) {
    b->device->Recycle(b);  // frees or keeps it, Buffer object included
    return;
  }
  switch (b->kind) {
    case Buffer::Kind::kHostOwned:
      std::free(b->handle);
      break;
    case Buffer::Kind::kHostWrapped:
      if (b->deleter) b->deleter(b->handle, b->bytes, b->deleter_arg);
      break;
    case Buffer::Kind::kDevice:
      break;
  }
  delete b;
}

BufferRef AllocateHostBuffer(size_t bytes, bool zeroed) {
  auto* b = new (std::nothrow) Buffer;
  if (b == nullptr) return {};
  b->kind = Buffer::Kind::kHostOwned;
  b->bytes = bytes;
  if (bytes > 0) {
    size_t rounded = (bytes + 63) & ~size_t{63};
    b->handle = std::aligned_alloc(64, rounded);
    if (b->handle == nullptr) {
      delete b;
      return {};
    }
    if (zeroed) std::memset(b->handle, 0, rounded);
    else std::memset(static_cast<char*>(b->handle) + bytes, 0, rounded - bytes);
  }
  return BufferRef(b);
}

void* TensorValue::host_data() const {
  if (!buffer || buffer->handle == nullptr) return nullptr;
  if (buffer->kind == Buffer::Kind::kDevice && !buffer->device->host_memory())
    return nullptr;
  return static_cast<char*>(buffer->handle) + offset;
}

weft_status* CheckedByteSizeSlow(weft_dtype dtype, const int64_t* dims,
                                 int32_t rank, size_t* out_bytes) {
  size_t elem = weft_dtype_size_of(dtype);
  if (elem == 0)
    return Errorf(WEFT_INVALID_ARGUMENT, "invalid dtype %d",
                  static_cast<int>(dtype));
  if (rank < 0 || rank > WEFT_MAX_RANK)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "rank %d is outside [0, %d]", rank, WEFT_MAX_RANK);
  if (rank > 0 && dims == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "dims is NULL for a non-scalar");
  // The product of the non-zero dims must fit in int64 even when a 0 dim
  // empties the tensor: kernels take partial products of dims (the sizes
  // outside and inside an axis), and [2^63 - 1, 3, 0] would overflow there.
  uint64_t count = 1;
  bool empty = false;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "dimension %d of %s is negative", i,
                    ShapeString(dims, rank).c_str());
    if (dims[i] == 0) {
      empty = true;
      continue;
    }
    uint64_t d = static_cast<uint64_t>(dims[i]);
    if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                    d)
      return Errorf(WEFT_INVALID_ARGUMENT, "shape %s is too large",
                    ShapeString(dims, rank).c_str());
    count *= d;
  }
  if (empty) count = 0;
  if (count > (std::numeric_limits<size_t>::max() >> 1) / elem ||
      count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return Errorf(WEFT_INVALID_ARGUMENT, "shape %s is too large",
                  ShapeString(dims, rank).c_str());
  *out_bytes = static_cast<size_t>(count) * elem;
  return nullptr;
}

weft_status* CopyToNewHostValue(const TensorValue& value, TensorValue* out) {
  size_t bytes = value.byte_size();
  BufferRef buf = AllocateHostBuffer(bytes);
  if (bytes > 0 && !buf) return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  if (bytes > 0) std::memcpy(buf->handle, value.host_data(), bytes);
  out->dtype = value.dtype;
  out->dims = value.dims;
  out->buffer = std::move(buf);
  out->offset = 0;
  return nullptr;
}

}  // namespace weft

namespace {

// A thread's spare handle (weft_tensor's operator new): freed with the
// thread.  Not under AddressSanitizer, whose use-after-free reports on
// handles it would hide.
#if !defined(__SANITIZE_ADDRESS__)
#define WEFT_SPARE_TENSOR 1
// Plain initial-exec variables: reached at a fixed offset from the thread
// pointer.  A thread_local with a destructor is reached through
// __tls_get_addr and its guard instead (two calls per handle made and two
// per handle freed).  Nine bytes of the static TLS space glibc keeps for
// libraries opened with dlopen (a Java or Julia process).
enum SpareState : unsigned char { kUnarmed, kArmed, kThreadEnding };
__attribute__((tls_model("initial-exec"))) thread_local void* spare_tensor =
    nullptr;
__attribute__((tls_model("initial-exec"))) thread_local SpareState
    spare_state = kUnarmed;

// Frees the spare when the thread ends; made by the thread's first spare.
struct SpareRelease {
  ~SpareRelease() {
    spare_state = kThreadEnding;  // handles freed after this are not kept
    ::operator delete(std::exchange(spare_tensor, nullptr));
  }
};

__attribute__((noinline)) bool ArmSpare() {
  if (spare_state == kThreadEnding) return false;
  thread_local SpareRelease release;
  (void)release;
  spare_state = kArmed;
  return true;
}
#endif

}  // namespace

void* weft_tensor::operator new(size_t size) {
#ifdef WEFT_SPARE_TENSOR
  if (size == sizeof(weft_tensor) && spare_tensor != nullptr)
    return std::exchange(spare_tensor, nullptr);
#endif
  return ::operator new(size);
}

void weft_tensor::operator delete(void* p, size_t size) {
#ifdef WEFT_SPARE_TENSOR
  if (p != nullptr && size == sizeof(weft_tensor) && spare_tensor == nullptr &&
      (spare_state == kArmed || ArmSpare())) {
    spare_tensor = p;
    return;
  }
#endif
  ::operator delete(p);
}

using weft::Error;
using weft::Errorf;

namespace {

// What creating a tensor over caller data checks first: the shape, that the
// caller's byte count matches it, and the pointers.
weft_status* CheckCallerData(weft_dtype dtype, const int64_t* dims,
                             int32_t rank, const void* data, size_t byte_size,
                             weft_tensor** out_tensor, size_t* bytes) {
  if (out_tensor == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "out_tensor is NULL");
  *out_tensor = nullptr;
  WEFT_RETURN_IF_ERROR(weft::CheckedByteSize(dtype, dims, rank, bytes));
  if (*bytes != byte_size)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "byte_size %zu does not match %s %s (%zu bytes)", byte_size,
                  weft_dtype_name(dtype), weft::ShapeString(dims, rank).c_str(),
                  *bytes);
  if (*bytes > 0 && data == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "data is NULL");
  return nullptr;
}

}  // namespace

extern "C" {

weft_status* weft_tensor_create(weft_dtype dtype, const int64_t* dims,
                                int32_t rank, weft_tensor** out_tensor) {
  if (out_tensor == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "out_tensor is NULL");
  *out_tensor = nullptr;
  return weft::Guard([&]() -> weft_status* {
    size_t bytes = 0;
    WEFT_RETURN_IF_ERROR(weft::CheckedByteSize(dtype, dims, rank, &bytes));
    weft::BufferRef buf = weft::AllocateHostBuffer(bytes);
    if (bytes > 0 && !buf)
      return Errorf(WEFT_RESOURCE_EXHAUSTED,
                    "cannot allocate %zu bytes for a tensor", bytes);
    auto* t = new weft_tensor;
    t->value.dtype = dtype;
    t->value.dims.assign(dims, rank);
    t->value.buffer = std::move(buf);
    *out_tensor = t;
    return nullptr;
  });
}

weft_status* weft_tensor_create_copy(weft_dtype dtype, const int64_t* dims,
                                     int32_t rank, const void* data,
                                     size_t byte_size,
                                     weft_tensor** out_tensor) {
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(
      CheckCallerData(dtype, dims, rank, data, byte_size, out_tensor, &bytes));
  WEFT_RETURN_IF_ERROR(weft_tensor_create(dtype, dims, rank, out_tensor));
  if (bytes > 0) std::memcpy(weft_tensor_data(*out_tensor), data, bytes);
  return nullptr;
}

weft_status* weft_tensor_create_from_data(weft_dtype dtype,
                                          const int64_t* dims, int32_t rank,
                                          void* data, size_t byte_size,
                                          weft_deleter deleter,
                                          void* deleter_arg,
                                          weft_tensor** out_tensor) {
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(
      CheckCallerData(dtype, dims, rank, data, byte_size, out_tensor, &bytes));
  // Kernels read wrapped memory through typed pointers, which must be
  // aligned; every Weft dtype's alignment is its size.
  size_t elem = weft_dtype_size(dtype);
  if (bytes > 0 && reinterpret_cast<uintptr_t>(data) % elem != 0)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "data at %p is not aligned to the %zu bytes of a %s element",
                  data, elem, weft_dtype_name(dtype));
  return weft::Guard([&]() -> weft_status* {
    auto* b = new weft::Buffer;
    b->kind = weft::Buffer::Kind::kHostWrapped;
    b->handle = data;
    b->bytes = byte_size;
    b->deleter = deleter;
    b->deleter_arg = deleter_arg;
    weft::BufferRef ref(b);
    auto* t = new weft_tensor;
    t->value.dtype = dtype;
    t->value.dims.assign(dims, rank);
    t->value.buffer = std::move(ref);
    *out_tensor = t;
    return nullptr;
  });
}

void weft_tensor_destroy(weft_tensor* tensor) { delete tensor; }

weft_dtype weft_tensor_dtype(const weft_tensor* t) {
  return t ? t->value.dtype : WEFT_DTYPE_INVALID;
}
int32_t weft_tensor_rank(const weft_tensor* t) {
  return t ? t->value.dims.rank() : 0;
}
int64_t weft_tensor_dim(const weft_tensor* t, int32_t axis) {
  if (t == nullptr || axis < 0 || axis >= t->value.dims.rank()) return -1;
  return t->value.dims[axis];
}
const int64_t* weft_tensor_dims(const weft_tensor* t) {
  return t && t->value.dims.rank() > 0 ? t->value.dims.data() : nullptr;
}
int64_t weft_tensor_element_count(const weft_tensor* t) {
  return t ? t->value.elements() : 0;
}
size_t weft_tensor_byte_size(const weft_tensor* t) {
  return t ? t->value.byte_size() : 0;
}
void* weft_tensor_data(const weft_tensor* t) {
  return t ? t->value.host_data() : nullptr;
}

}  // extern "C"
