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

#include "checkpoint/crc32c.h"
#include "model/model.h"
#include "weft/weft.h"

namespace {

void PutU32(std::string* b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->push_back(static_cast<char>(v >> (8 * i)));
}

std::string Framed(const uint8_t* payload, size_t n) {
  std::string bytes("WEFTGRPH", 8);
  PutU32(&bytes, 1);
  PutU32(&bytes, weft::Crc32c(0, bytes.data(), bytes.size()));
  std::string header;
  for (int i = 0; i < 8; ++i)
    header.push_back(static_cast<char>(static_cast<uint64_t>(n) >> (8 * i)));
  PutU32(&header, weft::Crc32c(0, payload, n));
  PutU32(&header, weft::Crc32c(0, header.data(), header.size()));
  bytes += header;
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
