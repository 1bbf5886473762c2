// Mutexes: critical sections inside graphs, across the runs of a session
// (TensorFlow's MutexV2, MutexLock, ConsumeMutexLock).
//
//   Mutex -> handle                  the mutex named by shared_name (default:
//       the node's name), made on first use; `handle` orders its users.
//   MutexLock(handle) -> lock        waits (parked, holding no thread) until
//       the mutex is free, then holds it; `lock` is an int32 scalar token.
//   ConsumeMutexLock(lock)           releases it.  Put the critical
//       section's ops between the two with control edges.
//
// The lock is also released when the token's last reference goes (a run
// that fails before ConsumeMutexLock, a fetched token the caller destroys),
// so a mutex can never stay held by a run that has ended.  A waiting
// MutexLock is cancelled with its run (deadline, weft_session_cancel).
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "data/dataset.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "ops/runtime_op.h"
#include "tensor/buffer.h"

namespace weft {
namespace {

class MutexResource;

// What a lock token's buffer carries: the mutex to release, once.
struct Holding {
  std::weak_ptr<MutexResource> mutex;
  std::atomic<bool> released{false};
  int32_t storage = 0;  // the token's value
};

class MutexResource : public SessionResource,
                      public std::enable_shared_from_this<MutexResource> {
 public:
  explicit MutexResource(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  // Takes the mutex (true), or queues the running op as a waiter, parked
  // by `park` under the lock so that a release finds it ready (false).
  bool LockOrPark(
      const std::function<std::shared_ptr<AsyncDone>(uint64_t id)>& park) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_) {
      held_ = true;
      return true;
    }
    const uint64_t id = ++next_id_;
    waiters_.push_back({id, park(id)});
    return false;
  }
  // Cancels waiter `id` with `why` (taken over); nothing when it has the
  // mutex already.
  void Cancel(uint64_t id, weft_status* why) {
    std::shared_ptr<AsyncDone> d;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = waiters_.begin(); it != waiters_.end(); ++it)
        if (it->id == id) {
          d = std::move(it->done);
          waiters_.erase(it);
          break;
        }
    }
    if (d) d->Done(why);
    else weft_status_destroy(why);
  }
  void Release() {
    std::shared_ptr<AsyncDone> next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (waiters_.empty()) {
        held_ = false;
        return;
      }
      next = std::move(waiters_.front().done);
      waiters_.pop_front();
    }
    Grant(next);
  }
  // A token holding this mutex, as output 0 of `done` or a value.
  weft_status* Token(TensorValue* out);
  void Grant(const std::shared_ptr<AsyncDone>& done) {
    TensorValue token;
    weft_status* st = Token(&token);
    if (st != nullptr) {
      Release();
      done->Done(st);
      return;
    }
    done->set_output(0, std::move(token));
    done->Done(nullptr);
  }

 private:
  struct Waiter {
    uint64_t id;
    std::shared_ptr<AsyncDone> done;
  };
  std::string name_;
  std::mutex mu_;
  bool held_ = false;
  uint64_t next_id_ = 0;
  std::deque<Waiter> waiters_;
};

void ReleaseToken(void* data, size_t bytes, void* arg) {
  (void)data;
  (void)bytes;
  auto* h = static_cast<Holding*>(arg);
  if (!h->released.exchange(true))
    if (std::shared_ptr<MutexResource> m = h->mutex.lock()) m->Release();
  delete h;
}

weft_status* MutexResource::Token(TensorValue* out) {
  auto* h = new Holding;
  h->mutex = shared_from_this();
  auto* b = new Buffer;
  b->kind = Buffer::Kind::kHostWrapped;
  b->handle = &h->storage;
  b->bytes = sizeof h->storage;
  b->deleter = ReleaseToken;
  b->deleter_arg = h;
  out->dtype = WEFT_INT32;
  out->dims = Dims();
  out->offset = 0;
  out->buffer = BufferRef(b);
  return nullptr;
}

std::string MutexName(const weft_node* n) {
  const AttrValue* shared = FindAttr(n->attrs, "shared_name");
  return shared != nullptr && !shared->s.empty() ? shared->s : n->name;
}

weft_status* GetMutex(RuntimeOpContext* ctx, const weft_node* mutex_node,
                      std::shared_ptr<MutexResource>* out) {
  const std::string name = MutexName(mutex_node);
  std::shared_ptr<SessionResource> r;
  WEFT_RETURN_IF_ERROR(ctx->session_resources()->GetOrCreate(
      "mutex:" + name,
      [&](std::shared_ptr<SessionResource>* made) -> weft_status* {
        *made = std::make_shared<MutexResource>(name);
        return nullptr;
      },
      &r));
  *out = std::dynamic_pointer_cast<MutexResource>(r);
  if (*out == nullptr)
    return Errorf(WEFT_INTERNAL, "%s: 'mutex:%s' is not a mutex",
                  NodeWhere(ctx->node()).c_str(), name.c_str());
  return nullptr;
}

weft_status* MakeMutex(RuntimeOpContext* ctx) {
  std::shared_ptr<MutexResource> m;
  WEFT_RETURN_IF_ERROR(GetMutex(ctx, ctx->node(), &m));
  TensorValue h;
  WEFT_RETURN_IF_ERROR(data::HostTensor(WEFT_INT32, Dims(), &h));
  ctx->set_output(0, std::move(h));
  return nullptr;
}

weft_status* Lock(RuntimeOpContext* ctx) {
  const weft_node* qn = ctx->node()->inputs[0].node;
  if (qn->op_type != "Mutex")
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: input 0 must be a Mutex",
                  NodeWhere(ctx->node()).c_str());
  std::shared_ptr<MutexResource> m;
  WEFT_RETURN_IF_ERROR(GetMutex(ctx, qn, &m));
  std::weak_ptr<MutexResource> weak = m;
  const bool locked = m->LockOrPark([ctx, weak](uint64_t id) {
    return ctx->Park([weak, id](weft_status* why) {
      if (std::shared_ptr<MutexResource> mu = weak.lock()) mu->Cancel(id, why);
      else weft_status_destroy(why);
    });
  });
  if (!locked) return nullptr;  // parked: a release hands it the mutex
  TensorValue token;
  WEFT_RETURN_IF_ERROR(m->Token(&token));
  ctx->set_output(0, std::move(token));
  return nullptr;
}

weft_status* Consume(RuntimeOpContext* ctx) {
  const TensorValue& token = ctx->input(0);
  Buffer* b = token.buffer.get();
  if (b == nullptr || b->kind != Buffer::Kind::kHostWrapped ||
      b->deleter != ReleaseToken)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: input 0 is not a lock made by MutexLock",
                  NodeWhere(ctx->node()).c_str());
  auto* h = static_cast<Holding*>(b->deleter_arg);
  if (h->released.exchange(true))
    return Errorf(WEFT_FAILED_PRECONDITION, "%s: the lock was released "
                  "already (consumed twice)", NodeWhere(ctx->node()).c_str());
  if (std::shared_ptr<MutexResource> m = h->mutex.lock()) m->Release();
  return nullptr;
}

}  // namespace

void RegisterMutexOps(OpRegistry* r) {
  {
    OpDef d = RuntimeOp("Mutex", {}, MakeMutex,
                        "A mutex of the session, named by shared_name (default: "
                        "the node's name).");
    d.attrs = {Optional("shared_name", AttrType::kString, StringValue(""))};
    d.infer = [](InferenceContext& c) -> weft_status* {
      c.output_dtypes = {WEFT_INT32};
      c.output_shapes = {ShapeInfo::Of({})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOp("MutexLock", {"mutex"}, Lock,
                        "Waits for the mutex and holds it; the lock token is "
                        "released by ConsumeMutexLock (or when it is "
                        "destroyed).");
    d.infer = [](InferenceContext& c) -> weft_status* {
      if (c.input_ops.empty() || c.input_ops[0] != "Mutex")
        return c.Fail("input 0 must be a Mutex");
      c.output_dtypes = {WEFT_INT32};
      c.output_shapes = {ShapeInfo::Of({})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOp("ConsumeMutexLock", {"lock"}, Consume,
                        "Releases the lock MutexLock made.");
    d.num_outputs = 0;
    d.infer = [](InferenceContext& c) -> weft_status* {
      if (c.input_ops.empty() || c.input_ops[0] != "MutexLock")
        return c.Fail("input 0 must be a MutexLock's lock");
      c.output_dtypes.clear();
      c.output_shapes.clear();
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
