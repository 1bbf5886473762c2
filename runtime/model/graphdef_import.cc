// TensorFlow GraphDef import: not written yet (issue 14).
#include "base/status.h"
#include "model/model.h"

namespace weft {

weft_status* ImportGraphDef(const std::string&, const std::string& path,
                            const std::vector<std::string>&, weft_graph*,
                            LoadedGraph*) {
  return Error(WEFT_UNIMPLEMENTED,
               "cannot load '" + path +
                   "': TensorFlow GraphDef import is not built yet");
}

}  // namespace weft
