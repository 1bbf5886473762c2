// Values crossing between the tasks of a cluster session (one MPI rank per
// task): the planner cuts each edge whose ends are on different tasks into
// a TaskSend on the producer's task and a TaskRecv on the consumer's, two
// runtime ops that park while MPI moves the bytes (no inter-op thread
// waits).  They meet in a rendezvous keyed by name:
//
//   <plan>/<run>/<edge>[/<iterations>]
//
// <plan> names the session and the plan (the same on every rank running the
// same program), <run> counts that plan's runs on this rank (so a fast
// rank's next run cannot be taken for this one), <edge> the value and its
// destination, <iterations> the loop iterations the op runs in.  A message
// arriving before its TaskRecv waits in the rendezvous; its payload lands
// straight in the buffer that becomes the TaskRecv's output.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weft/dtype.h"

#include "ops/registry.h"
#include "ops/runtime_op.h"
#include "tensor/tensor_value.h"

namespace weft {
namespace distributed {

// The plan-only ops (not in the op registry: no program can make one).
//   TaskSend(x)        attrs: plan, edge, peer (rank), peer_name, wire (dtype)
//   TaskRecv() -> y    attrs: plan, edge, peer, peer_name, wire; y's dtype
//                      and shape are the synthetic node's
// `wire`, when it differs from the value's dtype, is float16 or bfloat16:
// the planner puts a Cast before the send and after the receive.
const OpDef* TaskSendDef();
const OpDef* TaskRecvDef();

// A message's header as the rendezvous reads it (exposed for tests and the
// fuzzer; every byte of it comes from another process).
struct ArrivalHeader {
  std::string key;    // the rendezvous key, when the header has one
  std::string error;  // empty, or why the value cannot be delivered
  weft_dtype dtype = WEFT_DTYPE_INVALID;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;  // the value's size: what the payload must hold
  bool dead = false;   // an untaken branch's value: no payload
};
// The header of a transfer: magic, key, dtype, dims, dead flag.
std::string EncodeTransferHeader(const std::string& key, weft_dtype dtype,
                                 const std::vector<int64_t>& dims, bool dead);
// False when `header` is not a Weft transfer (no key can be read: the
// message is dropped); else true with out->key, and out->error set when the
// rest is malformed or `payload_bytes` does not match the value's size.
bool ReadTransferHeader(const void* header, int64_t header_bytes,
                        int64_t payload_bytes, ArrivalHeader* out);

// ---- Messages outside plans (an asynchronous cluster's run requests and
// replies), through the same rendezvous and the same wire format.
// `value` (host memory) to rank `dest` under `key`; `done` (may be empty)
// once MPI is done with it, on the progress thread.
weft_status* SendMessage(int32_t dest, const std::string& key,
                         TensorValue value,
                         std::function<void(weft_status*)> done);
// Calls `done` once with what `source` sends under `key` (now, if it is
// here).  `urgent` keeps the progress thread polling in short steps while
// this waits.  *id is for CancelMessage.
using MessageDone = std::function<void(weft_status*, TensorValue)>;
weft_status* ReceiveMessage(int32_t source, const std::string& key,
                            bool urgent, MessageDone done, uint64_t* id);
// Takes back a wait not yet answered (false when it was: `done` ran or
// runs).
bool CancelMessage(int32_t source, const std::string& key, uint64_t id);

// Makes `run` the <run> of every key of the run whose resources these are
// (an asynchronous cluster's runs are numbered by the running task).
void SetTaskRun(RunResources* resources, uint64_t run);

// FNV-1a of `s`, for naming plans alike on every rank.
uint64_t NameHash(const std::string& s);

}  // namespace distributed
}  // namespace weft
