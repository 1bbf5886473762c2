// Queues: session state that decouples the part of a graph producing values
// from the part consuming them (TensorFlow's FIFOQueue, RandomShuffleQueue
// and PaddingFIFOQueue).  Runtime ops over a queue kept in the session's
// resources: it outlives runs, so one run (or a queue runner's thread)
// enqueues while another dequeues.  A dequeue that must wait for elements,
// or an enqueue for room, parks (RuntimeOpContext::Park): the run holds no
// thread meanwhile, and a deadline, weft_session_cancel or a failure
// elsewhere in the run ends the wait.
//
//   FIFOQueue, RandomShuffleQueue, PaddingFIFOQueue -> handle
//       the queue named by attribute shared_name (default: the node's
//       name), made by the first run that needs it; `handle` is an int32
//       scalar that only orders the queue's ops after it.
//   QueueEnqueue(handle, components...)       one element
//   QueueEnqueueMany(handle, components...)   elements along dimension 0
//   QueueDequeue(handle) -> components
//   QueueDequeueMany(handle, n) -> components of n elements, stacked
//   QueueDequeueUpTo(handle, n) -> as many as remain (>= 1) once closed
//   QueueClose(handle)                        cancel_pending_enqueues
//   QueueSize(handle) -> int32
//
// Weft's attributes have no list(dtype) or list(shape), so the element's
// signature travels as integer lists: `component_types` holds weft_dtype
// codes, `shapes` each component's rank followed by its dims (-1: a dim
// PaddingFIFOQueue pads; empty list: any shape).
//
// Rules, as TensorFlow's: elements leave a FIFO queue in order; a
// RandomShuffleQueue hands out a uniformly chosen element (from its seed)
// and keeps at least min_after_dequeue until closed; a closed queue refuses
// enqueues (CANCELLED), and a dequeue that cannot be served any more ends
// with OUT_OF_RANGE (DequeueUpTo first takes what is left).  Waiting
// enqueues survive a close unless cancel_pending_enqueues.  Every value is
// copied into host memory on enqueue, so a fed tensor the caller reuses
// afterwards cannot change a queued element.
#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "data/dataset.h"
#include "graph/graph.h"
#include "ops/registry.h"
#include "ops/runtime_op.h"
#include "tensor/buffer.h"

namespace weft {
namespace {

using Tuple = std::vector<TensorValue>;

enum class QueueKind { kFifo, kShuffle, kPadding };

struct QueueSpec {
  QueueKind kind = QueueKind::kFifo;
  std::string op;
  std::vector<weft_dtype> types;
  std::vector<ShapeInfo> shapes;  // empty: any shape
  int64_t capacity = -1;          // -1: unbounded
  int64_t min_after_dequeue = 0;
  int64_t seed = 0;

  bool SameAs(const QueueSpec& o) const {
    if (kind != o.kind || types != o.types || capacity != o.capacity ||
        min_after_dequeue != o.min_after_dequeue || seed != o.seed ||
        shapes.size() != o.shapes.size())
      return false;
    for (size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i].rank != o.shapes[i].rank ||
          shapes[i].dims != o.shapes[i].dims)
        return false;
    return true;
  }
};

bool IsQueueOp(const std::string& op) {
  return op == "FIFOQueue" || op == "RandomShuffleQueue" ||
         op == "PaddingFIFOQueue";
}

int64_t IntAttr(const AttrMap& attrs, const char* name, int64_t fallback) {
  const AttrValue* a = FindAttr(attrs, name);
  return a != nullptr ? a->i : fallback;
}

// The queue's signature from its node's attributes; `fail` words errors.
template <typename Fail>
weft_status* ReadSpec(const std::string& op, const AttrMap& attrs,
                      Fail fail, QueueSpec* spec) {
  spec->op = op;
  spec->kind = op == "RandomShuffleQueue" ? QueueKind::kShuffle
               : op == "PaddingFIFOQueue" ? QueueKind::kPadding
                                          : QueueKind::kFifo;
  const AttrValue* types = FindAttr(attrs, "component_types");
  std::string why = DecodeDtypeList(
      types != nullptr ? types->ints : std::vector<int64_t>(), &spec->types);
  if (!why.empty()) return fail("component_types: %s", why.c_str());
  const AttrValue* shapes = FindAttr(attrs, "shapes");
  if (shapes != nullptr && !shapes->ints.empty()) {
    why = DecodeShapeList(shapes->ints, &spec->shapes);
    if (!why.empty()) return fail("shapes: %s", why.c_str());
    for (size_t c = 0; c < spec->shapes.size(); ++c) {
      const ShapeInfo& s = spec->shapes[c];
      if (!s.known_rank())
        return fail("shapes: component %zu has an unknown rank; a queue's "
                    "components have ranks", c);
      for (int64_t d : s.dims)
        if (d == -1 && spec->kind != QueueKind::kPadding)
          return fail("shapes: component %zu has dim -1 (only a "
                      "PaddingFIFOQueue takes -1)", c);
    }
    if (spec->shapes.size() != spec->types.size())
      return fail("shapes describes %zu components; component_types has "
                  "%zu", spec->shapes.size(), spec->types.size());
  }
  if (spec->kind == QueueKind::kPadding && spec->shapes.empty())
    return fail("a PaddingFIFOQueue needs shapes (-1 for the dims it pads)");
  spec->capacity = IntAttr(attrs, "capacity", -1);
  if (spec->capacity == 0 || spec->capacity < -1)
    return fail("capacity is %lld: give a positive number, or -1 for "
                "unbounded", static_cast<long long>(spec->capacity));
  if (spec->kind == QueueKind::kShuffle) {
    spec->min_after_dequeue = IntAttr(attrs, "min_after_dequeue", 0);
    spec->seed = IntAttr(attrs, "seed", 0);
    if (spec->min_after_dequeue < 0 ||
        (spec->capacity > 0 && spec->min_after_dequeue >= spec->capacity))
      return fail("min_after_dequeue is %lld: it must be >= 0 and below "
                  "capacity (%lld)",
                  static_cast<long long>(spec->min_after_dequeue),
                  static_cast<long long>(spec->capacity));
  }
  return nullptr;
}

std::string QueueName(const weft_node* queue_node) {
  const AttrValue* shared = FindAttr(queue_node->attrs, "shared_name");
  return shared != nullptr && !shared->s.empty() ? shared->s
                                                 : queue_node->name;
}

// What a waiter is owed, run after the queue's lock is released.
struct Completion {
  uint64_t id = 0;
  std::shared_ptr<AsyncDone> done;  // null: the op that is running now
  weft_status* status = nullptr;
  bool dequeue = false;
  bool many = false;
  std::vector<Tuple> got;
};

class Queue : public SessionResource {
 public:
  Queue(QueueSpec spec, std::string name)
      : spec_(std::move(spec)), name_(std::move(name)),
        rng_(static_cast<uint64_t>(spec_.seed)) {}

  const QueueSpec& spec() const { return spec_; }
  const std::string& name() const { return name_; }

  // Makes the running op's AsyncDone (RuntimeOpContext::Park) for waiter
  // `id`: called under the queue's lock, so the waiter has it before any
  // other op can complete it.
  using Parker = std::function<std::shared_ptr<AsyncDone>(uint64_t id)>;

  // Adds an enqueue of `tuples`; completions go to *out, the op's own
  // among them (id returned) when it need not wait, else it is parked.
  uint64_t Enqueue(std::vector<Tuple> tuples, std::vector<Completion>* out,
                   bool* closed, const Parker& park) {
    std::lock_guard<std::mutex> lock(mu_);
    *closed = closed_;
    if (closed_) return 0;
    Enqueuer e;
    e.id = ++next_id_;
    e.tuples = std::move(tuples);
    enqueuers_.push_back(std::move(e));
    const uint64_t id = next_id_;
    Pump(out);
    for (Enqueuer& w : enqueuers_)
      if (w.id == id) w.done = park(id);
    return id;
  }

  uint64_t Dequeue(int64_t want, bool many, bool up_to,
                   std::vector<Completion>* out, const Parker& park) {
    std::lock_guard<std::mutex> lock(mu_);
    Dequeuer d;
    d.id = ++next_id_;
    d.want = want;
    d.many = many;
    d.up_to = up_to;
    dequeuers_.push_back(std::move(d));
    const uint64_t id = next_id_;
    Pump(out);
    for (Dequeuer& w : dequeuers_)
      if (w.id == id) w.done = park(id);
    return id;
  }

  // Removes waiter `id` (cancelled); its AsyncDone, or null if it is gone.
  std::shared_ptr<AsyncDone> Remove(uint64_t id, std::vector<Completion>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<AsyncDone> done;
    for (auto it = enqueuers_.begin(); it != enqueuers_.end(); ++it)
      if (it->id == id) {
        done = std::move(it->done);
        enqueuers_.erase(it);
        break;
      }
    for (auto it = dequeuers_.begin(); done == nullptr && it != dequeuers_.end();
         ++it)
      if (it->id == id) {
        done = std::move(it->done);
        PutBack(&it->got);
        dequeuers_.erase(it);
        break;
      }
    if (done != nullptr) Pump(out);
    return done;
  }

  void Close(bool cancel_pending, std::vector<Completion>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    if (cancel_pending) {
      for (Enqueuer& e : enqueuers_) {
        Completion c;
        c.id = e.id;
        c.done = std::move(e.done);
        c.status = Errorf(WEFT_CANCELLED,
                          "queue '%s' was closed with "
                          "cancel_pending_enqueues while the enqueue waited "
                          "for room", name_.c_str());
        out->push_back(std::move(c));
      }
      enqueuers_.clear();
    }
    Pump(out);
  }

  int64_t Size() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(items_.size());
  }

 private:
  struct Enqueuer {
    uint64_t id = 0;
    std::vector<Tuple> tuples;
    size_t next = 0;
    std::shared_ptr<AsyncDone> done;
  };
  struct Dequeuer {
    uint64_t id = 0;
    int64_t want = 1;
    bool many = false;
    bool up_to = false;
    std::vector<Tuple> got;
    std::shared_ptr<AsyncDone> done;
  };

  bool HasRoom() const {
    return spec_.capacity < 0 ||
           static_cast<int64_t>(items_.size()) < spec_.capacity;
  }
  bool Available() const {
    if (items_.empty()) return false;
    if (spec_.kind != QueueKind::kShuffle || closed_) return true;
    return static_cast<int64_t>(items_.size()) > spec_.min_after_dequeue;
  }
  Tuple Take() {
    size_t k = 0;
    if (spec_.kind == QueueKind::kShuffle && items_.size() > 1) {
      std::uniform_int_distribution<size_t> pick(0, items_.size() - 1);
      k = pick(rng_);
      std::swap(items_[k], items_.front());
    }
    Tuple t = std::move(items_.front());
    items_.pop_front();
    return t;
  }
  void PutBack(std::vector<Tuple>* got) {
    for (size_t i = got->size(); i-- > 0;)
      items_.push_front(std::move((*got)[i]));
    got->clear();
  }

  // Moves waiting enqueues' elements in and serves waiting dequeues, in
  // arrival order, until nothing more can happen.
  void Pump(std::vector<Completion>* out) {
    for (bool progress = true; progress;) {
      progress = false;
      while (!enqueuers_.empty() && HasRoom()) {
        Enqueuer& e = enqueuers_.front();
        if (e.next < e.tuples.size()) {
          items_.push_back(std::move(e.tuples[e.next++]));
          progress = true;
        }
        if (e.next == e.tuples.size()) {
          Completion c;
          c.id = e.id;
          c.done = std::move(e.done);
          out->push_back(std::move(c));
          enqueuers_.pop_front();
          progress = true;
        }
      }
      while (!dequeuers_.empty()) {
        Dequeuer& d = dequeuers_.front();
        while (static_cast<int64_t>(d.got.size()) < d.want && Available()) {
          d.got.push_back(Take());
          progress = true;
        }
        const bool full = static_cast<int64_t>(d.got.size()) == d.want;
        // Closed with nothing left to come: serve what there is or end.
        const bool starved = closed_ && enqueuers_.empty() && !Available();
        if (!full && !starved) break;
        Completion c;
        c.id = d.id;
        c.done = std::move(d.done);
        c.dequeue = true;
        c.many = d.many;
        if (full || (d.up_to && !d.got.empty())) {
          c.got = std::move(d.got);
        } else {
          PutBack(&d.got);
          c.status = Errorf(
              WEFT_OUT_OF_RANGE,
              "queue '%s' is closed and has %zu element(s), fewer than the "
              "%lld the dequeue needs", name_.c_str(), items_.size(),
              static_cast<long long>(d.want));
        }
        out->push_back(std::move(c));
        dequeuers_.pop_front();
        progress = true;
      }
    }
  }

  QueueSpec spec_;
  std::string name_;
  std::mutex mu_;
  std::deque<Tuple> items_;
  bool closed_ = false;
  std::mt19937_64 rng_;
  uint64_t next_id_ = 0;
  std::list<Enqueuer> enqueuers_;
  std::list<Dequeuer> dequeuers_;
};

// ---- Values --------------------------------------------------------------

// A host copy of `bytes` bytes of `v` starting at byte `offset`.
weft_status* CopyToHost(RuntimeOpContext* ctx, const TensorValue& v,
                        uint64_t offset, const Dims& dims, TensorValue* out) {
  WEFT_RETURN_IF_ERROR(data::HostTensor(v.dtype, dims, out));
  const size_t bytes = out->byte_size();
  if (bytes == 0) return nullptr;
  if (const void* host = v.host_data()) {
    std::memcpy(out->host_data(), static_cast<const char*>(host) + offset,
                bytes);
    return nullptr;
  }
  if (offset == 0) return ctx->ReadToHost(v, out->host_data(), bytes);
  std::vector<char> all(v.byte_size());
  WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, all.data(), all.size()));
  std::memcpy(out->host_data(), all.data() + offset, bytes);
  return nullptr;
}

bool ShapeFits(const ShapeInfo& want, const Dims& got) {
  if (!want.known_rank()) return true;
  if (want.rank != got.rank()) return false;
  for (int32_t i = 0; i < want.rank; ++i)
    if (want.dims[i] >= 0 && want.dims[i] != got[i]) return false;
  return true;
}

std::string DimsString(const Dims& d) {
  std::string s = "[";
  for (int32_t i = 0; i < d.rank(); ++i)
    s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Dequeue outputs: the element itself, or `got` stacked along a new first
// dimension (a PaddingFIFOQueue pads with zeros to the largest of each
// dim; the others' elements agree, as enqueue checked against the shapes
// DequeueMany requires).
weft_status* Stack(const Queue& q, std::vector<Tuple>& got, bool many,
                   std::vector<TensorValue>* outputs) {
  const QueueSpec& spec = q.spec();
  const size_t n = spec.types.size();
  if (!many) {
    outputs->assign(n, TensorValue());
    for (size_t c = 0; c < n; ++c) (*outputs)[c] = std::move(got[0][c]);
    return nullptr;
  }
  if (!got.empty())
    return data::Stack(spec.types, got, spec.kind == QueueKind::kPadding,
                       "queue '" + q.name() + "'", outputs);
  // An empty batch: [0] followed by the element's dims (padded ones 0).
  outputs->assign(n, TensorValue());
  for (size_t c = 0; c < n; ++c) {
    std::vector<int64_t> dims = {0};
    if (!spec.shapes.empty())
      for (int64_t d : spec.shapes[c].dims) dims.push_back(std::max<int64_t>(d, 0));
    WEFT_RETURN_IF_ERROR(data::HostTensor(
        spec.types[c], Dims(dims.data(), static_cast<int32_t>(dims.size())),
        &(*outputs)[c]));
  }
  return nullptr;
}

// Runs completions: the current op's own (id `self`, reported through
// *self_outputs / return) and other waiters' (through their AsyncDone).
weft_status* Deliver(Queue& q, std::vector<Completion>& done, uint64_t self,
                     bool* self_done, std::vector<TensorValue>* self_outputs) {
  weft_status* mine = nullptr;
  for (Completion& c : done) {
    weft_status* st = c.status;
    std::vector<TensorValue> outputs;
    if (st == nullptr && c.dequeue) st = Stack(q, c.got, c.many, &outputs);
    if (c.id == self) {
      *self_done = true;
      mine = st;
      if (self_outputs != nullptr) *self_outputs = std::move(outputs);
      continue;
    }
    if (c.done == nullptr) {  // cannot happen: waiters park under the lock
      weft_status_destroy(st);
      continue;
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      c.done->set_output(static_cast<int32_t>(i), std::move(outputs[i]));
    c.done->Done(st);
  }
  return mine;
}

// ---- The ops ---------------------------------------------------------------

weft_status* FindQueue(RuntimeOpContext* ctx, std::shared_ptr<Queue>* out) {
  const weft_node* n = ctx->node();
  const weft_node* qn = n->inputs.empty() ? nullptr : n->inputs[0].node;
  if (qn == nullptr || !IsQueueOp(qn->op_type))
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: input 0 must be a queue's "
                  "handle", NodeWhere(ctx->node()).c_str());
  const std::string key = "queue:" + QueueName(qn);
  std::shared_ptr<SessionResource> r;
  WEFT_RETURN_IF_ERROR(ctx->session_resources()->GetOrCreate(
      key,
      [&](std::shared_ptr<SessionResource>*) -> weft_status* {
        return Errorf(WEFT_FAILED_PRECONDITION,
                      "%s: queue '%s' does not exist (its queue node did not "
                      "run)", NodeWhere(ctx->node()).c_str(), QueueName(qn).c_str());
      },
      &r));
  *out = std::static_pointer_cast<Queue>(r);
  return nullptr;
}

weft_status* HandleOutput(RuntimeOpContext* ctx) {
  TensorValue h;
  WEFT_RETURN_IF_ERROR(data::HostTensor(WEFT_INT32, Dims(), &h));
  ctx->set_output(0, std::move(h));
  return nullptr;
}

weft_status* MakeQueue(RuntimeOpContext* ctx) {
  const weft_node* n = ctx->node();
  QueueSpec spec;
  WEFT_RETURN_IF_ERROR(ReadSpec(
      n->op_type, n->attrs,
      [&](const char* fmt, auto... args) {
        return Annotate(Errorf(WEFT_INVALID_ARGUMENT, fmt, args...),
                        NodeWhere(ctx->node()));
      },
      &spec));
  const std::string name = QueueName(n);
  std::shared_ptr<SessionResource> r;
  WEFT_RETURN_IF_ERROR(ctx->session_resources()->GetOrCreate(
      "queue:" + name,
      [&](std::shared_ptr<SessionResource>* made) -> weft_status* {
        *made = std::make_shared<Queue>(spec, name);
        return nullptr;
      },
      &r));
  if (!std::static_pointer_cast<Queue>(r)->spec().SameAs(spec))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: queue '%s' already exists in this session with "
                  "another kind, signature or capacity",
                  NodeWhere(ctx->node()).c_str(), name.c_str());
  return HandleOutput(ctx);
}

// The Parker for the running op: its cancellation removes waiter `id`
// from the queue (putting back what a dequeue took) and ends it.
Queue::Parker ParkerFor(RuntimeOpContext* ctx, const std::shared_ptr<Queue>& q) {
  std::weak_ptr<Queue> weak = q;
  return [ctx, weak](uint64_t id) {
    return ctx->Park([weak, id](weft_status* why) {
      std::shared_ptr<Queue> queue = weak.lock();
      std::shared_ptr<AsyncDone> mine;
      std::vector<Completion> others;
      if (queue) mine = queue->Remove(id, &others);
      if (mine) mine->Done(why);
      else weft_status_destroy(why);
      if (queue) {
        bool unused = false;
        weft_status_destroy(Deliver(*queue, others, 0, &unused, nullptr));
      }
    });
  };
}

weft_status* Enqueue(RuntimeOpContext* ctx) {
  std::shared_ptr<Queue> q;
  WEFT_RETURN_IF_ERROR(FindQueue(ctx, &q));
  const QueueSpec& spec = q->spec();
  const bool many = ctx->node()->op_type == "QueueEnqueueMany";
  const int32_t n = ctx->num_inputs() - 1;
  if (n != static_cast<int32_t>(spec.types.size()))
    return Errorf(WEFT_INVALID_ARGUMENT, "%s: %d component(s) for queue '%s' "
                  "of %zu", NodeWhere(ctx->node()).c_str(), n, q->name().c_str(),
                  spec.types.size());
  int64_t count = 1;
  for (int32_t c = 0; c < n; ++c) {
    const TensorValue& v = ctx->input(c + 1);
    if (v.dtype != spec.types[static_cast<size_t>(c)])
      return Errorf(WEFT_INVALID_ARGUMENT, "%s: component %d is %s; queue "
                    "'%s' holds %s", NodeWhere(ctx->node()).c_str(), c,
                    weft_dtype_name(v.dtype), q->name().c_str(),
                    weft_dtype_name(spec.types[static_cast<size_t>(c)]));
    if (many) {
      if (v.dims.rank() == 0)
        return Errorf(WEFT_INVALID_ARGUMENT, "%s: component %d is a scalar; "
                      "QueueEnqueueMany splits dimension 0",
                      NodeWhere(ctx->node()).c_str(), c);
      if (c > 0 && v.dims[0] != count)
        return Errorf(WEFT_INVALID_ARGUMENT, "%s: component %d has %lld "
                      "elements along dimension 0, component 0 has %lld",
                      NodeWhere(ctx->node()).c_str(), c,
                      static_cast<long long>(v.dims[0]),
                      static_cast<long long>(count));
      count = v.dims[0];
    }
    Dims element = many ? Dims(v.dims.data() + 1, v.dims.rank() - 1) : v.dims;
    if (!spec.shapes.empty() &&
        !ShapeFits(spec.shapes[static_cast<size_t>(c)], element))
      return Errorf(WEFT_INVALID_ARGUMENT, "%s: component %d has shape %s; "
                    "queue '%s' holds %s", NodeWhere(ctx->node()).c_str(), c,
                    DimsString(element).c_str(), q->name().c_str(),
                    spec.shapes[static_cast<size_t>(c)].ToString().c_str());
  }
  std::vector<Tuple> tuples(static_cast<size_t>(count), Tuple(n));
  for (int32_t c = 0; c < n; ++c) {
    const TensorValue& v = ctx->input(c + 1);
    Dims element = many ? Dims(v.dims.data() + 1, v.dims.rank() - 1) : v.dims;
    const uint64_t step =
        static_cast<uint64_t>(element.elements()) * weft_dtype_size_of(v.dtype);
    for (int64_t k = 0; k < count; ++k)
      WEFT_RETURN_IF_ERROR(CopyToHost(ctx, v, static_cast<uint64_t>(k) * step,
                                      element,
                                      &tuples[static_cast<size_t>(k)][c]));
  }
  std::vector<Completion> done;
  bool closed = false;
  const uint64_t id =
      q->Enqueue(std::move(tuples), &done, &closed, ParkerFor(ctx, q));
  if (closed)
    return Errorf(WEFT_CANCELLED, "%s: queue '%s' is closed",
                  NodeWhere(ctx->node()).c_str(), q->name().c_str());
  bool self_done = false;
  weft_status* st = Deliver(*q, done, id, &self_done, nullptr);
  return self_done ? st : nullptr;  // else parked: its Done completes it
}

weft_status* Dequeue(RuntimeOpContext* ctx) {
  std::shared_ptr<Queue> q;
  WEFT_RETURN_IF_ERROR(FindQueue(ctx, &q));
  const std::string& op = ctx->node()->op_type;
  const bool many = op != "QueueDequeue";
  int64_t want = 1;
  if (many) {
    const TensorValue& v = ctx->input(1);
    int32_t n = 0;
    if (v.dtype != WEFT_INT32 || v.elements() != 1)
      return Errorf(WEFT_INVALID_ARGUMENT, "%s: n must be one int32",
                    NodeWhere(ctx->node()).c_str());
    WEFT_RETURN_IF_ERROR(ctx->ReadToHost(v, &n, sizeof n));
    if (n < 0)
      return Errorf(WEFT_INVALID_ARGUMENT, "%s: n is %d; it must be >= 0",
                    NodeWhere(ctx->node()).c_str(), n);
    want = n;
  }
  std::vector<TensorValue> outputs;
  if (want == 0) {  // an empty batch, at once
    std::vector<Tuple> none;
    WEFT_RETURN_IF_ERROR(Stack(*q, none, true, &outputs));
  } else {
    std::vector<Completion> done;
    const uint64_t id = q->Dequeue(want, many, op == "QueueDequeueUpTo",
                                   &done, ParkerFor(ctx, q));
    bool self_done = false;
    weft_status* st = Deliver(*q, done, id, &self_done, &outputs);
    if (!self_done) return nullptr;  // parked: its Done completes it
    if (st != nullptr) return Annotate(st, NodeWhere(ctx->node()));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    ctx->set_output(static_cast<int32_t>(i), std::move(outputs[i]));
  return nullptr;
}

weft_status* Close(RuntimeOpContext* ctx) {
  std::shared_ptr<Queue> q;
  WEFT_RETURN_IF_ERROR(FindQueue(ctx, &q));
  std::vector<Completion> done;
  q->Close(IntAttr(ctx->node()->attrs, "cancel_pending_enqueues", 0) != 0,
           &done);
  bool unused = false;
  return Deliver(*q, done, 0, &unused, nullptr);
}

weft_status* Size(RuntimeOpContext* ctx) {
  std::shared_ptr<Queue> q;
  WEFT_RETURN_IF_ERROR(FindQueue(ctx, &q));
  const int64_t size = q->Size();
  TensorValue v;
  WEFT_RETURN_IF_ERROR(data::HostTensor(WEFT_INT32, Dims(), &v));
  const int32_t n = static_cast<int32_t>(std::min<int64_t>(size, INT32_MAX));
  std::memcpy(v.host_data(), &n, sizeof n);
  ctx->set_output(0, std::move(v));
  return nullptr;
}

// ---- Schemas -----------------------------------------------------------------

// The spec of the queue whose handle is input 0.
weft_status* InputSpec(InferenceContext& c, QueueSpec* spec) {
  if (c.input_ops.empty() || !IsQueueOp(c.input_ops[0]) ||
      c.input_attrs.size() < 1 || c.input_attrs[0] == nullptr)
    return c.Fail("input 0 must be the handle of a FIFOQueue, "
                  "RandomShuffleQueue or PaddingFIFOQueue%s%s",
                  c.input_ops.empty() ? "" : ", not the output of a ",
                  c.input_ops.empty() ? "" : c.input_ops[0].c_str());
  return ReadSpec(
      c.input_ops[0], *c.input_attrs[0],
      [&](const char* fmt, auto... args) { return c.Fail(fmt, args...); },
      spec);
}

weft_status* InferQueue(InferenceContext& c) {
  QueueSpec spec;
  WEFT_RETURN_IF_ERROR(ReadSpec(
      c.op, *c.attrs,
      [&](const char* fmt, auto... args) { return c.Fail(fmt, args...); },
      &spec));
  c.output_dtypes = {WEFT_INT32};
  c.output_shapes = {ShapeInfo::Of({})};
  return nullptr;
}

weft_status* InferEnqueue(InferenceContext& c) {
  QueueSpec spec;
  WEFT_RETURN_IF_ERROR(InputSpec(c, &spec));
  const bool many = c.op == "QueueEnqueueMany";
  const size_t n = c.input_dtypes.size() - 1;
  if (n != spec.types.size())
    return c.Fail("%zu component(s) for a queue of %zu", n,
                  spec.types.size());
  for (size_t k = 0; k < n; ++k) {
    if (c.input_dtypes[k + 1] != spec.types[k])
      return c.Fail("component %zu is %s; the queue holds %s", k,
                    weft_dtype_name(c.input_dtypes[k + 1]),
                    weft_dtype_name(spec.types[k]));
    const ShapeInfo& s = c.input_shapes[k + 1];
    if (many && s.rank == 0)
      return c.Fail("component %zu is a scalar; QueueEnqueueMany splits "
                    "dimension 0", k);
    if (spec.shapes.empty() || !s.known_rank()) continue;
    const int32_t off = many ? 1 : 0;
    const ShapeInfo& want = spec.shapes[k];
    bool fits = s.rank - off == want.rank;
    for (int32_t i = 0; fits && i < want.rank; ++i) {
      const int64_t got = s.dims[static_cast<size_t>(i + off)];
      const int64_t w = want.dims[static_cast<size_t>(i)];
      fits = got < 0 || w < 0 || got == w;
    }
    if (!fits)
      return c.Fail("component %zu has shape %s; the queue holds %s%s", k,
                    s.ToString().c_str(), want.ToString().c_str(),
                    many ? " per element (after dimension 0)" : "");
  }
  c.output_dtypes = {};
  c.output_shapes = {};
  return nullptr;
}

weft_status* InferDequeue(InferenceContext& c) {
  QueueSpec spec;
  WEFT_RETURN_IF_ERROR(InputSpec(c, &spec));
  const bool many = c.op != "QueueDequeue";
  if (many) {
    if (c.input_dtypes.size() != 2 || c.input_dtypes[1] != WEFT_INT32 ||
        (c.input_shapes[1].known_rank() && c.input_shapes[1].rank != 0))
      return c.Fail("input n must be an int32 scalar");
    if (spec.shapes.empty())
      return c.Fail("%s stacks elements, so the queue needs shapes", c.op.c_str());
  }
  c.output_dtypes = spec.types;
  c.output_shapes.clear();
  for (size_t k = 0; k < spec.types.size(); ++k) {
    ShapeInfo s = spec.shapes.empty() ? ShapeInfo::Unknown() : spec.shapes[k];
    if (many) s.dims.insert(s.dims.begin(), -1), s.rank++;
    c.output_shapes.push_back(std::move(s));
  }
  return nullptr;
}

weft_status* InferHandleOnly(InferenceContext& c) {
  QueueSpec spec;
  WEFT_RETURN_IF_ERROR(InputSpec(c, &spec));
  if (c.op == "QueueSize") {
    c.output_dtypes = {WEFT_INT32};
    c.output_shapes = {ShapeInfo::Of({})};
  } else {
    c.output_dtypes = {};
    c.output_shapes = {};
  }
  return nullptr;
}

OpDef QueueOpDef(const char* name, std::vector<std::string> inputs,
                 RuntimeOpFn fn,
                 std::function<weft_status*(InferenceContext&)> infer,
                 const char* summary) {
  OpDef d = RuntimeOp(name, std::move(inputs), fn, summary);
  d.infer = std::move(infer);
  return d;
}

}  // namespace

void RegisterQueueOps(OpRegistry* r) {
  const char* kinds[][2] = {
      {"FIFOQueue", "A queue whose elements leave in the order they came."},
      {"RandomShuffleQueue",
       "A queue that hands out a random element (from its seed), keeping at "
       "least min_after_dequeue until closed."},
      {"PaddingFIFOQueue",
       "A FIFO queue whose batches pad the dims given as -1 with zeros."}};
  for (auto& k : kinds) {
    OpDef d = QueueOpDef(k[0], {}, MakeQueue, InferQueue, k[1]);
    d.attrs = {Required("component_types", AttrType::kIntList),
               Optional("shapes", AttrType::kIntList, IntListValue({})),
               Optional("capacity", AttrType::kInt, IntValue(-1)),
               Optional("shared_name", AttrType::kString, StringValue(""))};
    if (std::string(k[0]) == "RandomShuffleQueue") {
      d.attrs.push_back(Optional("min_after_dequeue", AttrType::kInt,
                                 IntValue(0)));
      d.attrs.push_back(Optional("seed", AttrType::kInt, IntValue(0)));
    }
    d.outputs_doc = "handle: int32 scalar ordering the queue's ops after it";
    d.attributes_doc =
        "component_types: list(int) of weft_dtype codes; shapes: list(int), "
        "per component its rank then its dims (-1 padded, PaddingFIFOQueue "
        "only), empty for any shape; capacity: int = -1 (unbounded); "
        "shared_name: string = the node's name";
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueEnqueue", {"handle", "components"}, Enqueue,
                         InferEnqueue,
                         "Adds one element; waits (parked) while the queue "
                         "is full.  CANCELLED once the queue is closed.");
    d.variadic = true;
    d.num_outputs = 0;
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueEnqueueMany", {"handle", "components"},
                         Enqueue, InferEnqueue,
                         "Adds the elements along dimension 0 of the "
                         "components, in order.");
    d.variadic = true;
    d.num_outputs = 0;
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueDequeue", {"handle"}, Dequeue, InferDequeue,
                         "Takes one element; waits (parked) while the queue "
                         "is empty.  OUT_OF_RANGE once it is closed and "
                         "empty.");
    d.outputs_doc = "one output per component";
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueDequeueMany", {"handle", "n"}, Dequeue,
                         InferDequeue,
                         "Takes n elements, stacked along a new dimension 0; "
                         "OUT_OF_RANGE when the queue closes with fewer.");
    d.outputs_doc = "one output per component";
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueDequeueUpTo", {"handle", "n"}, Dequeue,
                         InferDequeue,
                         "As QueueDequeueMany, but once the queue is closed "
                         "takes what remains (at least 1).");
    d.outputs_doc = "one output per component";
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueClose", {"handle"}, Close, InferHandleOnly,
                         "Closes the queue: enqueues are refused, dequeues "
                         "drain it and then end with OUT_OF_RANGE.");
    d.num_outputs = 0;
    d.attrs = {Optional("cancel_pending_enqueues", AttrType::kBool,
                        IntValue(0))};
    r->Add(std::move(d));
  }
  {
    OpDef d = QueueOpDef("QueueSize", {"handle"}, Size, InferHandleOnly,
                         "The number of elements in the queue.");
    r->Add(std::move(d));
  }
}

}  // namespace weft
