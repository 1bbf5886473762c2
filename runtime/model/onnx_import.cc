// ONNX import: not written yet (issue 14); weft_model_load refuses ONNX.
#include "base/status.h"
#include "model/model.h"

namespace weft {

weft_status* ImportOnnx(const std::string&, const std::string& path,
                        weft_graph*, LoadedGraph*) {
  return Error(WEFT_UNIMPLEMENTED,
               "cannot load '" + path + "': ONNX import is not built yet");
}

}  // namespace weft
