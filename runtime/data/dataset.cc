// Datasets' iterators, and the ops that read them inside a graph:
//
//   IteratorGetNext -> components    the next element of the iterator
//       named by attribute `iterator` (one per session, made on first
//       use); OUT_OF_RANGE at the end of the data.
//   IteratorInit                     starts the iterator's pass again.
//
// The dataset itself is attached to the graph (Graph::Attach, key in
// attribute `dataset`).  get_next never holds an inter-op thread while the
// pipeline works: the op parks and the iterator's own worker thread calls
// Next, then completes it; cancelling the run ends the wait at once, and
// an element that arrives afterwards is kept for the next get_next, so
// nothing is lost.
#include "data/dataset.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "base/status.h"
#include "graph/graph.h"
#include "ops/runtime_op.h"
#include "tensor/buffer.h"

namespace weft {
namespace data {

weft_status* HostTensor(weft_dtype dtype, const Dims& dims, TensorValue* out) {
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(CheckedByteSize(dtype, dims.data(), dims.rank(),
                                       &bytes));
  out->dtype = dtype;
  out->dims = dims;
  out->offset = 0;
  out->buffer = AllocateHostBuffer(bytes, /*zeroed=*/false);
  if (bytes != 0 && !out->buffer)
    return Errorf(WEFT_RESOURCE_EXHAUSTED, "out of memory for %zu bytes",
                  bytes);
  return nullptr;
}

namespace {

std::string DimsText(const Dims& d) {
  std::string s = "[";
  for (int32_t i = 0; i < d.rank(); ++i)
    s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Copies element `e` (dims e.dims) into its slot of a batch whose element
// dims are `shape`, row by row of the last dim.
void CopyPadded(const TensorValue& e, const std::vector<int64_t>& shape,
                char* slot, size_t esize) {
  const int32_t rank = e.dims.rank();
  const char* src = static_cast<const char*>(e.host_data());
  if (rank == 0) {
    std::memcpy(slot, src, esize);
    return;
  }
  const int64_t row = e.dims[rank - 1];
  if (row == 0) return;
  const int64_t rows = e.elements() / row;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, at = 0, stride = shape.back();
    for (int32_t i = rank - 2; i >= 0; --i) {
      at += (rem % e.dims[i]) * stride;
      rem /= e.dims[i];
      stride *= shape[static_cast<size_t>(i)];
    }
    std::memcpy(slot + static_cast<size_t>(at) * esize,
                src + static_cast<size_t>(r * row) * esize,
                static_cast<size_t>(row) * esize);
  }
}

}  // namespace

weft_status* Stack(const std::vector<weft_dtype>& types,
                   const std::vector<Element>& elements, bool pad,
                   const std::string& what, Element* out) {
  out->assign(types.size(), TensorValue());
  for (size_t c = 0; c < types.size(); ++c) {
    std::vector<int64_t> shape;
    for (size_t k = 0; k < elements.size(); ++k) {
      const Dims& d = elements[k][c].dims;
      if (k == 0) shape.assign(d.data(), d.data() + d.rank());
      bool same = static_cast<size_t>(d.rank()) == shape.size();
      for (int32_t i = 0; same && i < d.rank(); ++i) {
        int64_t& s = shape[static_cast<size_t>(i)];
        if (d[i] != s && pad) s = std::max(s, d[i]);
        else same = d[i] == s;
      }
      if (!same)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "%s: component %zu of element %zu has shape %s, "
                      "unlike the elements before it (%s cannot stack "
                      "them%s)", what.c_str(), c, k, DimsText(d).c_str(),
                      what.c_str(), pad ? "" : "; a padded batch pads");
    }
    std::vector<int64_t> dims = {static_cast<int64_t>(elements.size())};
    dims.insert(dims.end(), shape.begin(), shape.end());
    TensorValue& v = (*out)[c];
    WEFT_RETURN_IF_ERROR(
        HostTensor(types[c],
                   Dims(dims.data(), static_cast<int32_t>(dims.size())), &v));
    const size_t esize = weft_dtype_size_of(types[c]);
    int64_t slot = 1;
    for (int64_t d : shape) slot *= d;
    const size_t slot_bytes = static_cast<size_t>(slot) * esize;
    char* dst = static_cast<char*>(v.host_data());
    if (slot_bytes == 0) continue;
    if (pad) std::memset(dst, 0, slot_bytes * elements.size());
    for (size_t k = 0; k < elements.size(); ++k) {
      const TensorValue& e = elements[k][c];
      if (static_cast<size_t>(e.byte_size()) == slot_bytes)
        std::memcpy(dst + k * slot_bytes, e.host_data(), slot_bytes);
      else
        CopyPadded(e, shape, dst + k * slot_bytes, esize);
    }
  }
  return nullptr;
}

namespace {

// ---- The iterator a session keeps per IteratorGetNext ---------------------

class IteratorResource : public SessionResource {
 public:
  explicit IteratorResource(DatasetPtr ds) : ds_(std::move(ds)) {}
  ~IteratorResource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    // Requests never served (the session ends under a waiting run, which
    // cannot happen while runs hold the session) are cancelled.
    for (Request& r : requests_)
      if (r.done) r.done->Done(Error(WEFT_CANCELLED, "the session ended"));
  }

  const Dataset& dataset() const { return *ds_; }

  // An id for the next request.
  uint64_t NewId() { return next_id_.fetch_add(1) + 1; }

  // Serves request `id`, a get_next or a restart (init), on the worker
  // thread, answering through `done`.
  void Submit(uint64_t id, bool init, std::shared_ptr<AsyncDone> done) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_.joinable()) worker_ = std::thread([this] { Work(); });
    Request r;
    r.id = id;
    r.init = init;
    r.done = std::move(done);
    requests_.push_back(std::move(r));
    cv_.notify_all();
  }

  // An element for a get_next now, without the worker: one kept from a
  // cancelled get_next, or one the pipeline has ready (a prefetch
  // buffer's).  Only when no request is queued or being served, so order
  // is kept; the worker, idle then, cannot touch the iterator while mu_ is
  // held.  A bad element is left to the worker's path, which reports it.
  bool TakeReady(Element* out) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!requests_.empty() || busy_) return false;
    if (!stash_.empty()) {
      *out = std::move(stash_.front());
      stash_.pop_front();
      return true;
    }
    if (!it_ || ended_ || !it_->TryNext(out)) return false;
    weft_status* bad = CheckElement(*out);
    if (bad == nullptr) return true;
    weft_status_destroy(bad);
    // Put back where the worker finds it first (and reports it).
    stash_.push_front(std::move(*out));
    return false;
  }

  // Cancels request `id`: unserved, it is dropped; in progress, it is
  // answered now and its element, when it comes, kept for the next one.
  void Cancel(uint64_t id, weft_status* why) {
    std::shared_ptr<AsyncDone> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = requests_.begin(); it != requests_.end(); ++it)
        if (it->id == id) {
          done = std::move(it->done);
          requests_.erase(it);
          break;
        }
      if (done == nullptr && busy_ && current_.id == id) {
        done = std::move(current_.done);
        current_.abandoned = true;
      }
    }
    if (done) done->Done(why);
    else weft_status_destroy(why);
  }

 private:
  struct Request {
    uint64_t id = 0;
    bool init = false;
    bool abandoned = false;
    std::shared_ptr<AsyncDone> done;
  };

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !requests_.empty(); });
      if (stop_) return;
      current_ = std::move(requests_.front());
      requests_.pop_front();
      busy_ = true;
      weft_status* st = nullptr;
      Element element;
      bool end = false;
      if (current_.init) {
        stash_.clear();
        it_.reset();
        ended_ = false;
      } else if (!stash_.empty()) {
        element = std::move(stash_.front());
        stash_.pop_front();
        st = CheckElement(element);
      } else {
        lock.unlock();
        st = NextElement(&element, &end);
        lock.lock();
      }
      busy_ = false;
      std::shared_ptr<AsyncDone> done = std::move(current_.done);
      if (current_.abandoned) {
        // Its run was cancelled: keep what came for the next get_next.
        if (st == nullptr && !end && !current_.init)
          stash_.push_back(std::move(element));
        weft_status_destroy(st);
        continue;
      }
      lock.unlock();
      if (done != nullptr) {
        if (st == nullptr && end)
          st = Errorf(WEFT_OUT_OF_RANGE, "end of dataset %s",
                      ds_->Name().c_str());
        if (st == nullptr)
          for (size_t i = 0; i < element.size(); ++i)
            done->set_output(static_cast<int32_t>(i), std::move(element[i]));
        done->Done(st);
      } else {
        weft_status_destroy(st);
      }
      lock.lock();
    }
  }

  // Worker thread only (it_ and ended_ are its own).
  weft_status* NextElement(Element* out, bool* end) {
    if (ended_) return *end = true, nullptr;
    if (!it_) WEFT_RETURN_IF_ERROR(ds_->MakeIterator(&it_));
    weft_status* st = it_->Next(out, end);
    if (st == nullptr && *end) ended_ = true;
    if (st == nullptr && !*end) return CheckElement(*out);
    return st;
  }

  // Does `e` have the dataset's signature?
  weft_status* CheckElement(const Element& e) const {
    if (e.size() != ds_->types.size())
      return Errorf(WEFT_INTERNAL, "dataset %s made %zu components, not %zu",
                    ds_->Name().c_str(), e.size(), ds_->types.size());
    for (size_t c = 0; c < e.size(); ++c)
      if (e[c].dtype != ds_->types[c])
        return Errorf(WEFT_INTERNAL, "dataset %s made a %s component %zu, "
                      "not %s", ds_->Name().c_str(),
                      weft_dtype_name(e[c].dtype), c,
                      weft_dtype_name(ds_->types[c]));
    return nullptr;
  }

  DatasetPtr ds_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> requests_;
  Request current_;
  bool busy_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> next_id_{0};
  std::deque<Element> stash_;
  std::thread worker_;
  std::unique_ptr<Iterator> it_;
  bool ended_ = false;
};

weft_status* FindIterator(RuntimeOpContext* ctx,
                          std::shared_ptr<IteratorResource>* out) {
  const weft_node* n = ctx->node();
  const AttrValue* key = FindAttr(n->attrs, "dataset");
  const AttrValue* name = FindAttr(n->attrs, "iterator");
  std::shared_ptr<const void> attached =
      key != nullptr ? n->graph->Attached(key->s) : nullptr;
  if (attached == nullptr)
    return Errorf(WEFT_FAILED_PRECONDITION,
                  "%s: its graph holds no dataset '%s' (datasets are "
                  "attached by weft_dataset_iterator and are not saved in "
                  "graph files)", NodeWhere(ctx->node()).c_str(),
                  key != nullptr ? key->s.c_str() : "");
  auto ds = std::static_pointer_cast<const Dataset>(attached);
  std::shared_ptr<SessionResource> r;
  WEFT_RETURN_IF_ERROR(ctx->session_resources()->GetOrCreate(
      "iterator:" + (name != nullptr ? name->s : n->name),
      [&](std::shared_ptr<SessionResource>* made) -> weft_status* {
        *made = std::make_shared<IteratorResource>(ds);
        return nullptr;
      },
      &r));
  *out = std::static_pointer_cast<IteratorResource>(r);
  return nullptr;
}

// IteratorGetNext (init false) and IteratorInit (true).
weft_status* Serve(RuntimeOpContext* ctx, bool init) {
  std::shared_ptr<IteratorResource> it;
  WEFT_RETURN_IF_ERROR(FindIterator(ctx, &it));
  Element kept;
  if (!init && it->TakeReady(&kept)) {
    for (size_t i = 0; i < kept.size(); ++i)
      ctx->set_output(static_cast<int32_t>(i), std::move(kept[i]));
    return nullptr;
  }
  // Parked first, then submitted: the worker may answer at once.  A cancel
  // that comes before the submission finds nothing; the executor cancels
  // again once the op has returned.
  const uint64_t id = it->NewId();
  std::weak_ptr<IteratorResource> weak = it;
  std::shared_ptr<AsyncDone> done = ctx->Park([weak, id](weft_status* why) {
    std::shared_ptr<IteratorResource> r = weak.lock();
    if (r) r->Cancel(id, why);
    else weft_status_destroy(why);
  });
  it->Submit(id, init, std::move(done));
  return nullptr;
}

weft_status* GetNext(RuntimeOpContext* ctx) { return Serve(ctx, false); }
weft_status* Init(RuntimeOpContext* ctx) { return Serve(ctx, true); }

weft_status* InferGetNext(InferenceContext& c) {
  const AttrValue* types = c.attr("component_types");
  const AttrValue* shapes = c.attr("shapes");
  c.output_dtypes.clear();
  c.output_shapes.clear();
  std::string why = DecodeDtypeList(types->ints, &c.output_dtypes);
  if (!why.empty()) return c.Fail("component_types: %s", why.c_str());
  why = DecodeShapeList(shapes->ints, &c.output_shapes);
  if (!why.empty()) return c.Fail("shapes: %s", why.c_str());
  if (c.output_shapes.empty())
    c.output_shapes.assign(c.output_dtypes.size(), ShapeInfo::Unknown());
  if (c.output_shapes.size() != c.output_dtypes.size())
    return c.Fail("shapes describes %zu components; component_types has %zu",
                  c.output_shapes.size(), c.output_dtypes.size());
  return nullptr;
}

}  // namespace

void RegisterDatasetOps(OpRegistry* r) {
  {
    OpDef d = RuntimeOp("IteratorGetNext", {}, GetNext,
                        "The next element of a dataset's iterator (one per "
                        "session and attribute `iterator`); OUT_OF_RANGE at "
                        "the end of the data.");
    d.attrs = {Required("dataset", AttrType::kString),
               Required("iterator", AttrType::kString),
               Required("component_types", AttrType::kIntList),
               Optional("shapes", AttrType::kIntList, IntListValue({}))};
    d.infer = InferGetNext;
    d.outputs_doc = "one output per component";
    d.host_outputs = true;  // the pipeline's elements, as it made them
    r->Add(std::move(d));
  }
  {
    OpDef d = RuntimeOp("IteratorInit", {}, Init,
                        "Starts the iterator's pass over its dataset again.");
    d.attrs = {Required("dataset", AttrType::kString),
               Required("iterator", AttrType::kString)};
    d.num_outputs = 0;
    d.infer = [](InferenceContext& c) -> weft_status* {
      c.output_dtypes.clear();
      c.output_shapes.clear();
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace data
}  // namespace weft
