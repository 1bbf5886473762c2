// Runs a plan: dataflow with pending counts, a ready queue on the session's
// inter-op pool, and asynchronous device work through plugin streams.
#pragma once

#include <vector>

#include "session/plan.h"
#include "session/session.h"

namespace weft {

// `feeds` are placed in the plan's feed slots; on success `fetched[i]` is
// the value of fetch i (on whatever device produced it).
weft_status* Execute(weft_session* session, const Plan& plan,
                     std::vector<TensorValue> feeds,
                     std::vector<TensorValue>* fetched);

}  // namespace weft
