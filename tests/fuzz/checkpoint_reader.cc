// Fuzz target: the checkpoint reader (runtime/checkpoint/checkpoint_format)
// on arbitrary bytes.  Every input must end in a status, never a crash, a
// sanitizer report or an allocation the size field asks for before the
// file has proved it holds that much.  Built and run by scripts/fuzz.sh.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_format.h"

namespace {

const std::string& InputPath() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/weft-fuzz-ckpt-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) std::abort();
    close(fd);
    return std::string(tmpl);
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = InputPath();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);

  weft::CheckpointReader reader;
  weft_status* st = reader.Open(path);
  std::vector<unsigned char> buffer;
  for (uint64_t i = 0; st == nullptr && i < reader.num_records(); ++i) {
    weft::CheckpointEntry entry;
    st = reader.Next(&entry);
    if (st != nullptr) break;
    // Read every other record's data, skip the rest: both paths check.
    if (i % 2 == 0 && entry.bytes <= (1u << 20)) {
      buffer.resize(entry.bytes);
      st = reader.ReadData(buffer.data());
    } else {
      st = reader.ReadData(nullptr);
    }
  }
  if (st == nullptr) st = reader.Finish();
  weft_status_destroy(st);
  return 0;
}
