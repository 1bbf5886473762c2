// ImportOnnx and ExportOnnx (model.h) through weft-onnx.so
// (model/onnx_module.h says why ONNX lives in a module), loaded on first
// use and kept for the life of the process.
#include <dlfcn.h>

#include "base/modules.h"
#include "base/status.h"
#include "model/model.h"
#include "model/onnx_module.h"

namespace weft {
namespace {

#ifdef WEFT_ONNX_LINKED

weft_status* Module(const OnnxModule** out) {
  static const OnnxModule table = {sizeof(OnnxModule), ImportOnnxModel,
                                   ExportOnnxModel};
  *out = &table;
  return nullptr;
}

#else

void* HostData(const TensorValue& value) { return value.host_data(); }

const OnnxHost kHost = {sizeof(OnnxHost), Error, Annotate, FindAttr,
                        HostData};

weft_status* Load(const OnnxModule** out) {
  void* handle = nullptr;
  std::string path;
  if (weft_status* st =
          OpenModule("WEFT_ONNX_MODULE", "weft-onnx.so", &handle, &path)) {
    // Missing or broken, the module is unavailable: NOT_FOUND would read as
    // the model file's.
    std::string why = weft_status_message(st);
    weft_status_destroy(st);
    return Error(WEFT_UNAVAILABLE,
                 "ONNX files are read and written by the module weft-onnx.so: " +
                     why);
  }
  auto fn = reinterpret_cast<weft_onnx_module_fn>(
      dlsym(handle, "weft_onnx_module"));
  const OnnxModule* table = fn != nullptr ? fn(&kHost) : nullptr;
  if (table == nullptr || table->struct_size < sizeof(OnnxModule))
    return Errorf(WEFT_UNAVAILABLE,
                  "the ONNX module %s is not this Weft's (no table, or an "
                  "older one)", path.c_str());
  *out = table;
  return nullptr;
}

// Loads once; a failure is kept and reported to every later call.
weft_status* Module(const OnnxModule** out) {
  static const OnnxModule* table = nullptr;
  static LoadOnce load;
  WEFT_RETURN_IF_ERROR(load.Run([] { return Load(&table); }));
  *out = table;
  return nullptr;
}

#endif

}  // namespace

weft_status* ImportOnnx(const std::string& bytes, const std::string& path,
                        weft_graph* graph, LoadedGraph* out) {
  const OnnxModule* module = nullptr;
  WEFT_RETURN_IF_ERROR(
      Annotate(Module(&module), "cannot load '" + path + "'"));
  return module->import_model(bytes, path, graph, out);
}

weft_status* ExportOnnx(weft_graph* graph, weft_session* session,
                        const Signature& signature, const std::string& path) {
  const OnnxModule* module = nullptr;
  WEFT_RETURN_IF_ERROR(
      Annotate(Module(&module), "exporting to '" + path + "'"));
  std::string bytes;
  WEFT_RETURN_IF_ERROR(module->export_model(graph, session, signature, &bytes));
  return Annotate(WriteFileAtomically(path, bytes),
                  "writing ONNX model '" + path + "'");
}

}  // namespace weft
