// A tensor value as the runtime passes it around: dtype, shape, and a view
// (offset) into a shared buffer that may live on any device.
#pragma once

#include "tensor/buffer.h"
#include "tensor/dims.h"
#include "weft/dtype.h"
#include "weft/status.h"

namespace weft {

struct TensorValue {
  weft_dtype dtype = WEFT_DTYPE_INVALID;
  Dims dims;
  BufferRef buffer;  // null for empty tensors
  uint64_t offset = 0;

  int64_t elements() const { return dims.elements(); }
  size_t byte_size() const {
    return static_cast<size_t>(elements()) * weft_dtype_size_of(dtype);
  }
  // Where the value is: nullptr means host memory.  Inline: the executor
  // asks for every input of every node.
  Device* device() const {
    return buffer && buffer->kind == Buffer::Kind::kDevice ? buffer->device
                                                           : nullptr;
  }
  // The first element in host memory, or nullptr when the value lives on a
  // device whose memory the host cannot address (or is empty).
  void* host_data() const;
};

// Checks dtype and dims and computes the byte size, refusing overflow.
weft_status* CheckedByteSizeSlow(weft_dtype dtype, const int64_t* dims,
                                 int32_t rank, size_t* out_bytes);
// The same, inline for the shapes kernels allocate nearly always (rank <= 4,
// every dim below 2^14: no product can overflow); the rest, and every
// error, take the full check.
inline weft_status* CheckedByteSize(weft_dtype dtype, const int64_t* dims,
                                    int32_t rank, size_t* out_bytes) {
  const size_t elem = weft_dtype_size_of(dtype);
  if (elem != 0 && static_cast<uint32_t>(rank) <= 4 &&
      (rank == 0 || dims != nullptr)) {
    uint64_t count = 1, all = 0;
    for (int32_t i = 0; i < rank; ++i) {
      const uint64_t d = static_cast<uint64_t>(dims[i]);
      all |= d;
      count *= d;
    }
    if (all < (uint64_t{1} << 14)) {
      *out_bytes = static_cast<size_t>(count) * elem;
      return nullptr;
    }
  }
  return CheckedByteSizeSlow(dtype, dims, rank, out_bytes);
}

// A host copy of `value` (which must be host-addressable).
weft_status* CopyToNewHostValue(const TensorValue& value, TensorValue* out);

}  // namespace weft

// The handle users hold: one reference to a value.
struct weft_tensor {
  weft::TensorValue value;
  // Each thread keeps one freed handle for its next one: a loop that runs,
  // reads and destroys a fetched tensor per step allocates no handles
  // (tensor.cc).
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size);
};
