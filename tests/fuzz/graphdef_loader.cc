// Fuzz target: the TensorFlow GraphDef importer
// (runtime/model/graphdef_import.cc) on arbitrary bytes.  Every input must
// end in a status or a graph, never a crash, a sanitizer report, a hang or
// an allocation that a few bytes ask for (a constant's shape, a splat
// value, an output index).  Built and run by scripts/fuzz.sh; seeds from
// tests/fuzz/make_seeds.py graphdef.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/model.h"
#include "weft/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte picks the outputs: every unread node (even) or the
  // name the seeds use (odd), so both ways of choosing them are fuzzed.
  std::vector<std::string> outputs;
  if (size > 0 && (data[0] & 1)) outputs = {"probs"};
  std::string bytes(reinterpret_cast<const char*>(data) + (size > 0),
                    size - (size > 0));
  weft_graph* graph = nullptr;
  if (weft_graph_create(&graph) != nullptr) std::abort();
  weft::LoadedGraph loaded;
  weft_status* st =
      weft::ImportGraphDef(bytes, "fuzz.pb", outputs, graph, &loaded);
  if (st == nullptr) {
    // What a signature promises: outputs of this graph's nodes.
    for (const weft::Signature& sig : loaded.signatures)
      for (const auto* entries : {&sig.inputs, &sig.outputs})
        for (const weft::SignatureEntry& e : *entries)
          if (e.output.node == nullptr || e.output.index < 0 ||
              e.output.index >= weft_node_num_outputs(e.output.node) ||
              e.key.empty())
            std::abort();
  }
  weft_status_destroy(st);
  weft_graph_destroy(graph);
  return 0;
}
