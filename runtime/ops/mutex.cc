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
#include <memory>
#include <mutex>

#include "base/status.h"
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

  // Takes the mutex now (true) or queues `done` (false).
  bool LockOrWait(uint64_t* id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_) {
      held_ = true;
      return true;
    }
    waiters_.push_back({++next_id_, nullptr});
    *id = next_id_;
    return false;
  }
  void Attach(uint64_t id, std::shared_ptr<AsyncDone> done) {
    bool grant = false;
    weft_status* why = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Waiter& w : waiters_)
        if (w.id == id) {
          w.done = std::move(done);
          return;
        }
      for (auto it = granted_.begin(); it != granted_.end(); ++it)
        if (*it == id) {  // handed the mutex before it could attach
          granted_.erase(it);
          grant = true;
          break;
        }
      for (auto it = cancelled_.begin(); !grant && it != cancelled_.end();
           ++it)
        if (it->first == id) {  // cancelled before it could attach
          why = it->second;
          cancelled_.erase(it);
          break;
        }
    }
    if (grant) Grant(done);
    else if (why != nullptr) done->Done(why);
  }
  // Cancels waiter `id` with `why` (taken over): answered now when
  // attached, on Attach otherwise; nothing when it got the mutex.
  void Cancel(uint64_t id, weft_status* why) {
    std::shared_ptr<AsyncDone> d;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = waiters_.begin(); it != waiters_.end(); ++it)
        if (it->id == id) {
          d = std::move(it->done);
          waiters_.erase(it);
          if (d == nullptr) {
            cancelled_.emplace_back(id, why);
            return;
          }
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
      Waiter w = std::move(waiters_.front());
      waiters_.pop_front();
      if (w.done == nullptr) {  // not attached yet: it takes it on Attach
        granted_.push_back(w.id);
        return;
      }
      next = std::move(w.done);
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
  std::deque<uint64_t> granted_;
  std::deque<std::pair<uint64_t, weft_status*>> cancelled_;
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

std::string Where(RuntimeOpContext* ctx) {
  return "node '" + ctx->node()->name + "' (" + ctx->node()->op_type + ")";
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
                  Where(ctx).c_str(), name.c_str());
  return nullptr;
}

weft_status* MakeMutex(RuntimeOpContext* ctx) {
  std::shared_ptr<MutexResource> m;
  WEFT_RETURN_IF_ERROR(GetMutex(ctx, ctx->node(), &m));
  TensorValue h;
  h.dtype = WEFT_INT32;
  h.buffer = AllocateHostBuffer(sizeof(int32_t));
  if (!h.buffer) return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  ctx->set_output(0, std::move(h));
  return nullptr;
}

weft_status* Lock(RuntimeOpContext* ctx) {
  const weft_node* qn = ctx->node()->inputs[0].node;
  if (qn->op_type != "Mutex")
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: input 0 must be a Mutex",
                  Where(ctx).c_str());
  std::shared_ptr<MutexResource> m;
  WEFT_RETURN_IF_ERROR(GetMutex(ctx, qn, &m));
  uint64_t id = 0;
  if (m->LockOrWait(&id)) {
    TensorValue token;
    WEFT_RETURN_IF_ERROR(m->Token(&token));
    ctx->set_output(0, std::move(token));
    return nullptr;
  }
  std::weak_ptr<MutexResource> weak = m;
  std::shared_ptr<AsyncDone> done = ctx->Park([weak, id](weft_status* why) {
    if (std::shared_ptr<MutexResource> mu = weak.lock()) mu->Cancel(id, why);
    else weft_status_destroy(why);
  });
  m->Attach(id, done);
  return nullptr;
}

weft_status* Consume(RuntimeOpContext* ctx) {
  const TensorValue& token = ctx->input(0);
  Buffer* b = token.buffer.get();
  if (b == nullptr || b->kind != Buffer::Kind::kHostWrapped ||
      b->deleter != ReleaseToken)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: input 0 is not a lock made by MutexLock",
                  Where(ctx).c_str());
  auto* h = static_cast<Holding*>(b->deleter_arg);
  if (h->released.exchange(true))
    return Errorf(WEFT_FAILED_PRECONDITION, "%s: the lock was released "
                  "already (consumed twice)", Where(ctx).c_str());
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
