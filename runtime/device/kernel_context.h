// What a kernel call sees through the host's service table.
#pragma once

#include "graph/graph.h"
#include "tensor/tensor_value.h"
#include "weft/plugin.h"

namespace weft {
class Device;
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
};
