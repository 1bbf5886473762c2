// Datasets: composable input pipelines (sources, transformations) whose
// iterator's get_next is an op in a training graph (tf.data's design).  A
// Dataset is an immutable description shared by the C API handle and the
// graphs that read it; each MakeIterator starts an independent pass.
// Elements are tuples of host tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/registry.h"
#include "tensor/tensor_value.h"
#include "weft/status.h"

namespace weft {
namespace data {

using Element = std::vector<TensorValue>;

class Iterator {
 public:
  virtual ~Iterator() = default;
  // The next element, or *end at the end of the pass (then again *end).
  // One caller at a time.
  virtual weft_status* Next(Element* out, bool* end) = 0;
  // An element that is ready now (a prefetch buffer's), without waiting
  // or working for it: true with *out set, else false and nothing changed
  // (the caller then calls Next).  Same caller rule as Next.
  virtual bool TryNext(Element* out) {
    (void)out;
    return false;
  }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual weft_status* MakeIterator(std::unique_ptr<Iterator>* out) const = 0;
  // "TFRecord", "Batch(Map(TFRecord))": for messages.
  virtual std::string Name() const = 0;

  // The element's signature: dtypes, and shapes (dims -1 where they vary).
  std::vector<weft_dtype> types;
  std::vector<ShapeInfo> shapes;
};
using DatasetPtr = std::shared_ptr<const Dataset>;

// A host value of `dtype` and `dims`, uninitialized.
weft_status* HostTensor(weft_dtype dtype, const Dims& dims, TensorValue* out);

// Stacks `elements` (each a tuple of `types`) along a new dimension 0.
// Differing dims are padded with zeros to the largest when `pad`, else
// refused naming `what`.
weft_status* Stack(const std::vector<weft_dtype>& types,
                   const std::vector<Element>& elements, bool pad,
                   const std::string& what, Element* out);

void RegisterDatasetOps(OpRegistry* r);  // IteratorGetNext, IteratorInit

}  // namespace data
}  // namespace weft
