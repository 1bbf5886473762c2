// ONNX export: not written yet (issue 14).
#include "base/status.h"
#include "model/model.h"

namespace weft {

weft_status* ExportOnnx(weft_graph*, weft_session*, const Signature&,
                        const std::string& path) {
  return Error(WEFT_UNIMPLEMENTED,
               "cannot write '" + path + "': ONNX export is not built yet");
}

}  // namespace weft
