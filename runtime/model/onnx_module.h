// The interface between libweft and weft-onnx.so, the module that reads and
// writes ONNX models.  libweft dlopens it on the first ONNX load or export
// (model/onnx_loader.cc), so a program that never touches an ONNX file
// loads neither libonnx nor the full libprotobuf: libweft's own files
// (Weft graph files, GraphDef, TensorBoard events) are protobuf-lite
// messages.  Measured (peak RSS): 2.5 - 3 MiB less for the CNN and MLP
// benchmarks, 3.0 for a program that only loads libweft (README,
// "Performance", stop 36).
//
// Both sides are built from one tree, so the tables carry C++ types and are
// checked by size only.  The module calls libweft's C API directly (it
// links libweft); for the few internals it shares (statuses, attribute
// lookup, a tensor's host bytes) libweft hands it a table of its own
// functions, so statuses made in the module are libweft's.
#pragma once

#include <cstddef>
#include <string>

#include "graph/attr.h"
#include "model/model.h"
#include "weft/status.h"

namespace weft {

struct OnnxHost {
  size_t struct_size;
  weft_status* (*error)(weft_code code, std::string message);
  weft_status* (*annotate)(weft_status* status, const std::string& context);
  const AttrValue* (*find_attr)(const AttrMap& attrs, const char* name);
  void* (*host_data)(const TensorValue& value);
};

struct OnnxModule {
  size_t struct_size;
  // ImportOnnx and ExportOnnx of model.h; the export returns the model's
  // bytes, which libweft writes.
  weft_status* (*import_model)(const std::string& bytes,
                               const std::string& path, weft_graph* graph,
                               LoadedGraph* out);
  weft_status* (*export_model)(weft_graph* graph, weft_session* session,
                               const Signature& signature, std::string* bytes);
};

// The module's implementations (onnx_import.cc, onnx_export.cc).  Builds
// that link the ONNX sources into the program (the fuzzers, WEFT_ONNX_LINKED)
// call them directly.
weft_status* ImportOnnxModel(const std::string& bytes, const std::string& path,
                             weft_graph* graph, LoadedGraph* out);
weft_status* ExportOnnxModel(weft_graph* graph, weft_session* session,
                             const Signature& signature, std::string* bytes);

}  // namespace weft

// The module's one exported function: records `host` and returns the table
// (NULL when `host` is older than the module's).
extern "C" typedef const weft::OnnxModule* (*weft_onnx_module_fn)(
    const weft::OnnxHost* host);
