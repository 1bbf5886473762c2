// Fuzz target: the Weft graph file loader (runtime/model/graph_file.cc) on
// arbitrary bytes.  The first byte chooses how the rest is used: even, as
// a whole file (the framing, checksums and version are what is checked);
// odd, as the protobuf payload, framed here with correct checksums so that
// the parser and the graph builder see it.  Every input must end in a
// status and a graph that is destroyed cleanly, never a crash or a
// sanitizer report.  Seeds: real bundles' graph.weft files (scripts/fuzz.sh).
#include <cstdint>
#include <cstring>
#include <string>

#include "checkpoint/checkpoint_format.h"
#include "model/model.h"
#include "weft/weft.h"

namespace {

std::string Framed(const uint8_t* payload, size_t n) {
  weft::LeBytes preamble;
  preamble.Put("WEFTGRPH", 8);
  preamble.Put(uint32_t{1});
  preamble.Put(preamble.Crc());
  weft::LeBytes header;
  header.Put(static_cast<uint64_t>(n));
  header.Put(weft::Crc32c(0, payload, n));
  header.Put(header.Crc());
  std::string bytes(preamble.b.begin(), preamble.b.end());
  bytes.append(header.b.begin(), header.b.end());
  bytes.append(reinterpret_cast<const char*>(payload), n);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string bytes = (data[0] & 1)
                          ? Framed(data + 1, size - 1)
                          : std::string(reinterpret_cast<const char*>(data + 1),
                                        size - 1);
  weft_graph* graph = nullptr;
  if (weft_graph_create(&graph) != nullptr) return 0;
  weft::LoadedGraph loaded;
  weft_status* st = weft::ReadGraphFile(bytes, "fuzz.weft", graph, &loaded);
  weft_status_destroy(st);
  weft_graph_destroy(graph);
  return 0;
}
