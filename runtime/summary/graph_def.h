// A Weft graph as TensorFlow's GraphDef, for TensorBoard's graph dashboard.
#pragma once

#include <functional>
#include <string>

#include "weft/status.h"

struct weft_node;

namespace weft {

class Graph;

namespace summary {

// The serialized GraphDef of `g`: every node with its op, inputs (control
// inputs as "^name"), declared attributes, output shapes and device:
// `device_of(node)` when it gives one (where a run placed it), else the
// node's constraint.
weft_status* GraphDefBytes(
    const Graph& g,
    const std::function<const char*(const weft_node*)>& device_of,
    std::string* out);

}  // namespace summary
}  // namespace weft
