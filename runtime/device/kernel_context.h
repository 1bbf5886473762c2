// What a kernel call sees through the host's service table.
#pragma once

#include "graph/graph.h"
#include "tensor/tensor_value.h"
#include "weft/plugin.h"

namespace weft {
class Device;

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
  // Set for a call of compute_async (and kept until kernel_done).
  weft::AsyncKernelCall* async = nullptr;
};
