// Fuzz target: the ONNX importer (runtime/model/onnx_import.cc and
// onnx_*.cc) on arbitrary bytes.  Every input must end in a status or a
// graph whose signature names its own nodes' outputs: never a crash, a
// sanitizer report, a hang, or an allocation that a few bytes ask for (an
// initializer's dims, a Range's length, a ConstantOfShape's shape).
// Constant inputs are computed while importing, through a session on the
// CPU plugin of the normal build (scripts/fuzz.sh sets WEFT_PLUGIN_PATH).
// Built and run by scripts/fuzz.sh; seeds from make_seeds.py onnx.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/model.h"
#include "weft/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  weft_graph* graph = nullptr;
  if (weft_graph_create(&graph) != nullptr) std::abort();
  weft::LoadedGraph loaded;
  weft_status* st = weft::ImportOnnx(bytes, "fuzz.onnx", graph, &loaded);
  if (st == nullptr) {
    if (loaded.signatures.size() != 1) std::abort();
    for (const weft::Signature& sig : loaded.signatures)
      for (const auto* entries : {&sig.inputs, &sig.outputs})
        for (const weft::SignatureEntry& e : *entries)
          if (e.output.node == nullptr || e.output.index < 0 ||
              e.output.index >= weft_node_num_outputs(e.output.node) ||
              !weft::ValidSignatureKey(e.key))
            std::abort();
  } else if (weft_status_code(st) == WEFT_INTERNAL ||
             weft_status_code(st) == WEFT_UNKNOWN) {
    // Bad input is named as such, never blamed on the runtime.
    std::abort();
  }
  weft_status_destroy(st);
  weft_graph_destroy(graph);
  return 0;
}
