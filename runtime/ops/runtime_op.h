// Runtime ops: ops the runtime executes itself, on the host thread that runs
// the node, with per-run state and without a plugin kernel.  Stacks that save
// forward values for loop gradients and TensorArrays are runtime ops: they
// hold references to tensors (wherever those live) and move bytes with the
// device's copy functions, so they work on every device without kernels.
//
// An op is a runtime op when its OpDef has exec == ExecKind::kRuntime and a
// `runtime` function.  The executor calls it with a RuntimeOpContext.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor_value.h"
#include "weft/status.h"

struct weft_node;
struct weft_plugin_stream;

namespace weft {

struct Device;

// State a runtime op keeps for the rest of one Session::Run (a stack's
// elements, a TensorArray's slots).  Destroyed when the run ends, after the
// run's device work has completed.
class RunResource {
 public:
  virtual ~RunResource() = default;
};

// The run's resources, by key (a stack's or TensorArray's name plus, where
// one exists per outer iteration, that iteration).  Thread-safe; resources
// themselves lock what they share.
class RunResources {
 public:
  // The resource at `key`, made by `make` on first use.  `make` may fail
  // (return null with *status set); the failure is returned and nothing is
  // stored.
  weft_status* GetOrCreate(
      const std::string& key,
      const std::function<weft_status*(std::unique_ptr<RunResource>*)>& make,
      RunResource** out);
  // The resource at `key`, or null when none was made yet.
  RunResource* Find(const std::string& key);
  // Drops every resource (the run has ended; nothing uses them).
  void Clear() {
    if (map_ != nullptr) map_.reset();
  }

 private:
  std::mutex mu_;
  // Made by the first resource: most runs have none, and an empty
  // unordered_map still costs every run its construction and a clear.
  std::unique_ptr<
      std::unordered_map<std::string, std::unique_ptr<RunResource>>>
      map_;
};

// What a runtime op sees.  Implemented by the executor.
// State that outlives a run: a session's queues.  Made by the runtime op
// that first names it and kept until the session is destroyed.
class SessionResource {
 public:
  virtual ~SessionResource() = default;
};

// A session's resources by key ("queue:NAME").  Thread-safe.
class SessionResources {
 public:
  // The resource at `key`, made by `make` on first use; `make` may fail
  // (returns its status, nothing stored).
  weft_status* GetOrCreate(
      const std::string& key,
      const std::function<weft_status*(std::shared_ptr<SessionResource>*)>&
          make,
      std::shared_ptr<SessionResource>* out);
  // Every resource, for shutting them down (queues close).
  std::vector<std::shared_ptr<SessionResource>> All();

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<SessionResource>> map_;
};

class RuntimeOpContext;

// The end of a parked (asynchronous) runtime op: whoever finishes its work,
// on any thread, sets the outputs and calls Done exactly once.  The run
// does not hold a thread for the node meanwhile.
class AsyncDone {
 public:
  virtual ~AsyncDone() = default;
  // Output `i` (a reference, no copy).  Before Done.
  virtual void set_output(int32_t i, TensorValue value) = 0;
  // Ends the node: `status` null for success, else the run fails with it
  // (taken over; the node's name is added when missing).
  virtual void Done(weft_status* status) = 0;
  // "node 'q' (QueueDequeue)", for messages.
  virtual const std::string& where() const = 0;
  // Makes the node's outputs dead, as if it were on an untaken branch (a
  // TaskRecv whose sender's value was dead).  Before Done; only in plans
  // with control flow (RuntimeOpContext::plan_has_control_flow).
  virtual void set_dead() = 0;
};

// Called when the run a parked op belongs to is cancelled, passes its
// deadline or fails elsewhere: it must end the op promptly (Done with
// `why`, which it then owns) unless the op has already been ended, in
// which case it destroys `why`.  It may be called more than once and on
// any thread; one that comes while the op function that parked still holds
// a lock the callback takes waits for that lock.
using CancelFn = std::function<void(weft_status* why)>;

// The run's stream on a runtime op's device, for work a parked op enqueues
// later from another thread (a collective the device's plugin runs,
// ops/collective.cc).  Valid until the node completes.
struct DeviceQueue {
  // Calls `work` with the run's stream on the device (null on a device
  // without streams) while no other thread of the run enqueues on it.
  std::function<weft_status*(
      const std::function<weft_status*(weft_plugin_stream*)>& work)>
      enqueue;
  // Keeps `buffer` until the stream has passed the work enqueued so far:
  // a buffer only the op holds (a copy it made) would otherwise go back to
  // the device's cache, and be handed out again, while that work reads it.
  std::function<void(BufferRef buffer)> keep;
};

class RuntimeOpContext {
 public:
  virtual ~RuntimeOpContext() = default;

  virtual const weft_node* node() const = 0;
  // The device the node is placed on: outputs the op makes live there.
  virtual Device* device() const = 0;
  virtual RunResources* resources() = 0;

  // The iteration number of each frame enclosing the node, outermost first
  // (empty in the root frame).  Iteration numbers start at 0 in each frame
  // instance.
  virtual int32_t frame_depth() const = 0;
  virtual int64_t iteration(int32_t level) const = 0;
  // "frame 'f' iteration 3, frame 'g' iteration 0", for messages.
  virtual std::string FrameDescription() const = 0;

  virtual int32_t num_inputs() const = 0;
  // Input values where they are (possibly another device's memory: a
  // runtime op reads only what it copies with the functions below).
  virtual const TensorValue& input(int32_t i) const = 0;
  virtual int32_t num_outputs() const = 0;
  // Sets output `i` (a reference, no copy).
  virtual void set_output(int32_t i, TensorValue value) = 0;
  // Makes every output dead, as if the node were on an untaken branch.
  virtual void set_dead() = 0;

  // A new value on device(), uninitialized.
  virtual weft_status* Allocate(weft_dtype dtype, const Dims& dims,
                                TensorValue* out) = 0;
  // Copies `bytes` bytes from `src` (any device, or host memory) at byte
  // offset `src_offset` into `dst` (on device()) at `dst_offset`, in order
  // with the run's other work on device().
  virtual weft_status* Copy(const TensorValue& src, uint64_t src_offset,
                            TensorValue* dst, uint64_t dst_offset,
                            uint64_t bytes) = 0;
  // Reads `bytes` bytes of `src` (any device) into host memory, waiting for
  // the work that produces it.
  virtual weft_status* ReadToHost(const TensorValue& src, void* dst,
                                  uint64_t bytes) = 0;
  // A new value on device() holding `bytes` bytes copied from host memory.
  virtual weft_status* FromHost(weft_dtype dtype, const Dims& dims,
                                const void* data, TensorValue* out) = 0;
  // `v` itself when device() can read it where it is, else a copy on
  // device().
  virtual weft_status* Localize(const TensorValue& v, TensorValue* out) = 0;
  // Runs the kernel device() has for `helper` (a node made by the op, not
  // in any graph: its op_type, attrs and output dtypes choose and check
  // the kernel) on inputs device() can read.  How a TensorArray adds two
  // gradients of one element.
  virtual weft_status* RunKernel(const weft_node* helper,
                                 const TensorValue* const* inputs,
                                 int32_t num_inputs, TensorValue* outputs,
                                 int32_t num_outputs) = 0;

  // The session's resources (queues), which outlive the run.
  virtual SessionResources* session_resources() = 0;
  // Parks the node: it completes when the returned AsyncDone's Done is
  // called, and the op function returns null at once (outputs set through
  // the AsyncDone, not set_output).  `cancel` ends the wait early (see
  // CancelFn).  At most once per call of the op function.  Park never
  // calls `cancel` itself, so an op may park while holding the lock its
  // waiters live under (and should: another thread can then never find
  // the waiter without its AsyncDone).
  virtual std::shared_ptr<AsyncDone> Park(CancelFn cancel) = 0;
  // The run's stream on device(), for work enqueued after Park.
  virtual DeviceQueue device_queue() = 0;

  // The run's collective nodes in the order every rank starts them
  // (Plan::collectives), and whether the plan has control flow.
  virtual const std::vector<const weft_node*>& plan_collectives() const = 0;
  virtual bool plan_has_control_flow() const = 0;
  // OpDef::runs_dead ops: whether this call is for dead inputs (then the
  // op reads no input and its outputs are dead whatever it does).
  virtual bool inputs_dead() const { return false; }
};

using RuntimeOpFn = weft_status* (*)(RuntimeOpContext* ctx);

// "node 'q' (QueueDequeue)": how a runtime op's errors name it.
std::string NodeWhere(const weft_node* node);


}  // namespace weft
