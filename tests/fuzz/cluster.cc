// Fuzz target: what a cluster session reads from outside its own code —
// the headers of transfers other ranks send (every byte comes from another
// process), and the cluster spec and task constraints the program gives.
// Input: [selector] bytes.
//   selector & 1 == 0: bytes[0..8) is the payload size, the rest a header
//     as the MPI module hands it to the rendezvous.  A header that reads
//     must give a key; one without an error must describe a value whose
//     size is the payload's, and encode back to the same bytes.
//   selector & 3 == 1: "SPEC\nCONSTRAINT" with the job's size from the
//     next byte (1..16; its top bit: as if started as two app contexts):
//     a spec that parses must have as many tasks as
//     ranks, and the ranks a constraint names must be among them; the
//     constraint read as serving jobs must leave a task that runs.
//   selector & 3 == 3: int64 words of a run request, as an asynchronous
//     cluster's server receives them: one that decodes must encode back
//     to the same words.
// Never a crash or a sanitizer report.  Built and run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <vector>

#include "distributed/cluster.h"
#include "distributed/transfer.h"
#include "session/serve.h"

namespace {

void Header(const uint8_t* data, size_t size) {
  if (size < 8) return;
  int64_t payload = 0;
  std::memcpy(&payload, data, 8);
  weft::distributed::ArrivalHeader a;
  if (!weft::distributed::ReadTransferHeader(
          data + 8, static_cast<int64_t>(size - 8), payload, &a))
    return;
  if (!a.error.empty()) return;
  if (static_cast<int64_t>(a.bytes) != payload && !a.dead) std::abort();
  const std::string again =
      weft::distributed::EncodeTransferHeader(a.key, a.dtype, a.dims, a.dead);
  // The dead flag is the last byte: any nonzero byte reads as dead.
  if (again.size() != size - 8 ||
      std::memcmp(again.data(), data + 8, again.size() - 1) != 0 ||
      (again.back() != 0) != (data[size - 1] != 0))
    std::abort();
}

void Spec(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const int32_t ranks = 1 + data[0] % 16;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nl = text.find('\n');
  const std::string spec = text.substr(0, nl);
  const std::string constraint =
      nl == std::string::npos ? std::string() : text.substr(nl + 1);
  weft::distributed::Cluster c;
  // Every other input as if mpirun started two app contexts (the counts
  // of "ps,worker" from them).
  const std::vector<int32_t> apps = {ranks / 2 > 0 ? ranks / 2 : 1,
                                     ranks - (ranks / 2 > 0 ? ranks / 2 : 1)};
  const bool mpmd = (data[0] & 0x80) != 0 && ranks >= 2;
  weft_status* st = weft::distributed::ParseCluster(spec, ranks, 0, &c,
                                                    mpmd ? &apps : nullptr);
  if (st != nullptr) {
    weft_status_destroy(st);
    return;
  }
  if (c.size() != ranks) std::abort();
  for (int32_t r = 0; r < ranks; ++r)
    if (c.TaskName(r).empty()) std::abort();
  std::vector<int32_t> named;
  st = c.RanksOf(constraint, &named);
  if (st != nullptr) {
    weft_status_destroy(st);
    return;
  }
  if (named.empty()) std::abort();
  for (int32_t r : named)
    if (r < 0 || r >= ranks) std::abort();
  st = weft::distributed::ParseServing(constraint, &c);
  if (st != nullptr) {
    weft_status_destroy(st);
    if (c.async()) std::abort();  // refused: the cluster stays synchronous
    return;
  }
  if (c.serving.size() != static_cast<size_t>(ranks)) std::abort();
  bool runs = false;
  for (int32_t r = 0; r < ranks; ++r) runs |= !c.Serves(r);
  if (!runs) std::abort();
}

void Request(const uint8_t* data, size_t size) {
  std::vector<int64_t> words(size / 8);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 8);
  weft::RunRequest r;
  std::string why;
  if (!weft::DecodeRunRequest(words.data(), words.size(), &r, &why)) {
    if (why.empty()) std::abort();
    return;
  }
  if (weft::EncodeRunRequest(r) != words) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if ((data[0] & 3) == 3) Request(data + 1, size - 1);
  else if (data[0] & 1) Spec(data + 1, size - 1);
  else Header(data + 1, size - 1);
  return 0;
}
