// What a kernel call sees through the host's service table.
#pragma once

#include "graph/graph.h"
#include "tensor/tensor_value.h"
#include "weft/plugin.h"

namespace weft {
class Device;

// A value as a kernel sees it, into a weft_kernel_tensor of the host's own
// size (every input and output of every kernel call goes through here).
inline __attribute__((always_inline)) void DescribeValue(
    const TensorValue& v, weft_kernel_tensor* out) {
  const int32_t rank = v.dims.rank();
  const int64_t* dims = v.dims.data();
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) count *= dims[i];
  out->dtype = v.dtype;
  out->rank = rank;
  out->dims = dims;
  out->element_count = count;
  out->byte_size = static_cast<size_t>(count) * weft_dtype_size_of(v.dtype);
  out->data = v.buffer ? v.buffer->handle : nullptr;
  out->offset = v.offset;
}

// The executor's side of an asynchronous kernel's call (compute_async):
// what the host's kernel_defer and kernel_done do.
class AsyncKernelCall {
 public:
  virtual ~AsyncKernelCall() = default;
  virtual weft_status* Defer(void (*cancel)(void*), void* cancel_arg) = 0;
  virtual void Done(weft_status* status) = 0;
};
}

struct weft_kernel_context {
  const weft_node* node = nullptr;
  weft::Device* device = nullptr;
  weft_plugin_stream* stream = nullptr;
  int32_t intra_op_threads = 1;
  const weft::TensorValue* const* inputs = nullptr;
  int32_t num_inputs = 0;
  weft::TensorValue* outputs = nullptr;
  int32_t num_outputs = 0;
  uint64_t run_counter = 0;  // stateful ops: earlier runs of this node
  // Bit i: the kernel may write over input i (kernel_forward_input_or_
  // allocate).  Set by the executor for an update op's variables whose
  // buffer nothing else references, while the update holds their locks,
  // and for a value whose last reader this node is and whose buffer
  // nothing but its slot holds (Run::Forwardable).
  uint32_t writable_inputs = 0;
  // A compute_described call: the outputs exist, and the allocating and
  // forwarding calls are refused.
  bool described = false;
  // Set for a call of compute_async (and kept until kernel_done).
  weft::AsyncKernelCall* async = nullptr;
};
