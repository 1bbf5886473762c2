// weft-onnx.so's boundary (model/onnx_module.h): the table it exports, and
// the internals the ONNX sources call, forwarded to libweft's own through
// the host table.  Not part of libweft, nor of builds that link the ONNX
// sources into the program (WEFT_ONNX_LINKED: there the real ones are).
#include "model/onnx_module.h"

#include "base/status.h"

namespace {

const weft::OnnxHost* g_host = nullptr;

}  // namespace

namespace weft {

weft_status* Error(weft_code code, std::string message) {
  return g_host->error(code, std::move(message));
}

weft_status* Annotate(weft_status* status, const std::string& context) {
  return g_host->annotate(status, context);
}

const AttrValue* FindAttr(const AttrMap& attrs, const char* name) {
  return g_host->find_attr(attrs, name);
}

void* TensorValue::host_data() const { return g_host->host_data(*this); }

}  // namespace weft

extern "C" __attribute__((visibility("default"))) const weft::OnnxModule*
weft_onnx_module(const weft::OnnxHost* host) {
  static const weft::OnnxModule table = {
      sizeof(weft::OnnxModule),
      weft::ImportOnnxModel,
      weft::ExportOnnxModel,
  };
  if (host == nullptr || host->struct_size < sizeof(weft::OnnxHost))
    return nullptr;
  g_host = host;
  return &table;
}
