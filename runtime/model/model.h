// weft_model: a graph, a session and named signatures (abi/weft/model.h).
// The importers (ONNX, TensorFlow GraphDef) and the Weft graph file build a
// graph and describe its signatures with the types here; model.cc makes the
// session and answers the C API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/model.h"

namespace weft {

struct SignatureEntry {
  std::string key;
  weft_output output;
};

struct Signature {
  std::string name;
  std::vector<SignatureEntry> inputs;
  std::vector<SignatureEntry> outputs;
};

// What a loader hands back besides the graph it filled.
struct LoadedGraph {
  std::vector<Signature> signatures;
};

// Checks a signature key: letters, digits and `_ . / -`, 1 to 256 bytes.
bool ValidSignatureKey(const std::string& key);

// The importers.  Each fills `graph` (empty on entry) from the bytes of a
// file and describes its serving_default signature; `path` is for messages
// only.  Errors as weft_model_load documents them (UNIMPLEMENTED naming the
// node and the reason for what Weft cannot run, DATA_LOSS for bytes that do
// not parse).  On error the graph may hold some nodes: the caller discards
// it.
weft_status* ImportOnnx(const std::string& bytes, const std::string& path,
                        weft_graph* graph, LoadedGraph* out);
weft_status* ImportGraphDef(const std::string& bytes, const std::string& path,
                            const std::vector<std::string>& outputs,
                            weft_graph* graph, LoadedGraph* out);
// Writes `signature` of `graph` as an ONNX model (runtime/model/onnx_export.cc).
weft_status* ExportOnnx(weft_graph* graph, weft_session* session,
                        const Signature& signature, const std::string& path);

// Writes `bytes` to a temporary beside `path`, flushes it and renames it
// into place (FAILED_PRECONDITION when `path` exists and is not a regular
// file).
weft_status* WriteFileAtomically(const std::string& path,
                                 const std::string& bytes);

// Reads a whole regular file (FAILED_PRECONDITION for anything else,
// NOT_FOUND for a missing path, RESOURCE_EXHAUSTED over `limit` bytes).
weft_status* ReadWholeFile(const std::string& path, size_t limit,
                           std::string* out);

}  // namespace weft

namespace weft {

// The Weft graph file (runtime/model/FORMAT.md, graph_file.cc): writes the
// graph and `signatures` to `path` (atomically, as checkpoints are), and
// rebuilds a graph from a file's bytes.
weft_status* WriteGraphFile(weft_graph* graph,
                            const std::vector<Signature>& signatures,
                            const std::string& path);
weft_status* ReadGraphFile(const std::string& bytes, const std::string& path,
                           weft_graph* graph, LoadedGraph* out);

}  // namespace weft
