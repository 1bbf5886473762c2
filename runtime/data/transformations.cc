// Dataset transformations (weft/dataset.h): map, filter, shuffle, batch,
// padded batch, repeat, take, skip, prefetch, zip, and the iterator node
// that reads a dataset in a graph.  Deterministic for a seed: a shuffle's
// k-th pass draws from seed and k.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "data/dataset_api.h"
#include "graph/graph.h"
#include "session/executor.h"
#include "session/session.h"
#include "session/thread_pool.h"

namespace weft {
namespace data {
namespace {

// ---- Map and filter: a function graph run in its own session -----------------

struct Function {
  weft_session* session = nullptr;
  std::vector<weft_output> inputs;  // Placeholders, checked per call
  // Made with the function: each call runs it on the executor directly,
  // without the C API's checks, lookups and tensor handles.
  std::shared_ptr<Plan> plan;
  ~Function() { weft_session_destroy(session); }

  weft_status* Call(const Element& in, Element* out) const {
    for (size_t i = 0; i < in.size(); ++i)
      WEFT_RETURN_IF_ERROR(CheckFeedValue(inputs[i], in[i]));
    std::vector<TensorValue> fetched;
    WEFT_RETURN_IF_ERROR(Execute(session, *plan, in, &fetched, nullptr));
    // In host memory (the session is the CPU's); constants among them are
    // state, which no consumer writes over and a fetch copies.
    *out = std::move(fetched);
    return nullptr;
  }
};

// Map: one element at a time on the caller's thread, or with `parallel`
// workers that each take the next input element, run the function and go
// on to the next while the window of elements in flight has room: a worker
// sleeps only when the window is full (and is woken when the consumer has
// taken half of it) or the input ended, and the consumer only when the
// oldest element is not done.  A pipeline that keeps up thus wakes no
// thread per element.  Results come in input order.
class MapIterator : public Iterator {
 public:
  MapIterator(std::unique_ptr<Iterator> in, std::shared_ptr<Function> fn,
              int32_t parallel, std::string name)
      : in_(std::move(in)), fn_(std::move(fn)), parallel_(parallel),
        window_limit_(std::max<size_t>(16, 4 * static_cast<size_t>(parallel))),
        name_(std::move(name)) {}
  ~MapIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    room_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  weft_status* Next(Element* out, bool* end) override {
    if (parallel_ == 1) {
      Element e;
      WEFT_RETURN_IF_ERROR(in_->Next(&e, end));
      if (*end) return nullptr;
      return Annotate(fn_->Call(e, out), name_);
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (workers_.empty())
      for (int32_t i = 0; i < parallel_; ++i)
        workers_.emplace_back([this] { Work(); });
    waiting_ = true;
    done_cv_.wait(lock, [this] {
      return (!window_.empty() && window_.front()->done) ||
             (window_.empty() && input_end_);
    });
    waiting_ = false;
    if (window_.empty()) return *end = true, nullptr;
    std::unique_ptr<Slot> first = std::move(window_.front());
    window_.pop_front();
    // Sleeping workers go on once half the window is free.
    if (sleeping_ > 0 && window_.size() <= window_limit_ / 2)
      room_cv_.notify_all();
    lock.unlock();
    *end = false;
    *out = std::move(first->out);
    return Annotate(std::exchange(first->status, nullptr), name_);
  }

 private:
  struct Slot {
    Element out;
    bool done = false;
    weft_status* status = nullptr;
    ~Slot() { weft_status_destroy(status); }
  };

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!stop_ && !input_end_ && window_.size() >= window_limit_) {
        sleeping_++;
        room_cv_.wait(lock, [this] {
          return stop_ || input_end_ || window_.size() <= window_limit_ / 2;
        });
        sleeping_--;
      }
      if (stop_) return;
      if (input_end_) {
        // Nothing left to read: wait for the end.
        room_cv_.wait(lock, [this] { return stop_; });
        return;
      }
      // The input is read under the lock, so the window's order is the
      // input's; the function runs outside it.
      Element in;
      bool end = false;
      weft_status* st = in_->Next(&in, &end);
      if (st == nullptr && end) {
        input_end_ = true;
        room_cv_.notify_all();
        if (waiting_) done_cv_.notify_one();
        continue;
      }
      window_.push_back(std::make_unique<Slot>());
      Slot* slot = window_.back().get();
      if (st != nullptr) {
        // The input's error takes this element's place; nothing follows.
        slot->status = st;
        slot->done = true;
        input_end_ = true;
        room_cv_.notify_all();
        if (waiting_) done_cv_.notify_one();
        continue;
      }
      lock.unlock();
      Element result;
      st = fn_->Call(in, &result);
      lock.lock();
      slot->out = std::move(result);
      slot->status = st;
      slot->done = true;
      if (waiting_ && slot == window_.front().get()) done_cv_.notify_one();
    }
  }

  std::unique_ptr<Iterator> in_;
  std::shared_ptr<Function> fn_;
  int32_t parallel_;
  size_t window_limit_;
  std::string name_;
  std::mutex mu_;
  std::condition_variable room_cv_;  // workers: room in the window, or stop
  std::condition_variable done_cv_;  // the consumer: the oldest is done
  std::deque<std::unique_ptr<Slot>> window_;  // in input order
  bool input_end_ = false, stop_ = false;
  bool waiting_ = false;  // the consumer waits on done_cv_
  int32_t sleeping_ = 0;  // workers waiting on room_cv_
  std::vector<std::thread> workers_;
};

// ---- Prefetch: a producer thread ahead of the consumer -----------------------

class PrefetchIterator : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> in, int64_t buffer)
      : in_(std::move(in)), buffer_(buffer) {
    producer_ = std::thread([this] { Produce(); });
  }
  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    producer_.join();
    weft_status_destroy(error_);
  }
  weft_status* Next(Element* out, bool* end) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !items_.empty() || done_; });
    if (!items_.empty()) {
      *out = std::move(items_.front());
      items_.pop_front();
      *end = false;
      cv_.notify_all();
      return nullptr;
    }
    if (error_ != nullptr)
      return Error(weft_status_code(error_), weft_status_message(error_));
    return *end = true, nullptr;
  }
  bool TryNext(Element* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (items_.empty()) return false;
    *out = std::move(items_.front());
    items_.pop_front();
    cv_.notify_all();
    return true;
  }

 private:
  void Produce() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] {
          return stop_ || static_cast<int64_t>(items_.size()) < buffer_;
        });
        if (stop_) return;
      }
      Element e;
      bool end = false;
      weft_status* st = in_->Next(&e, &end);
      std::lock_guard<std::mutex> lock(mu_);
      if (st != nullptr || end) {
        error_ = st;
        done_ = true;
        cv_.notify_all();
        return;
      }
      items_.push_back(std::move(e));
      cv_.notify_all();
    }
  }

  std::unique_ptr<Iterator> in_;
  int64_t buffer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Element> items_;
  bool done_ = false, stop_ = false;
  weft_status* error_ = nullptr;
  std::thread producer_;
};

uint64_t Mix(uint64_t seed, uint64_t pass) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (pass + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<ShapeInfo> Batched(const std::vector<ShapeInfo>& shapes,
                               int64_t first) {
  std::vector<ShapeInfo> out;
  for (const ShapeInfo& s : shapes) {
    ShapeInfo b = s;
    if (b.known_rank()) {
      b.dims.insert(b.dims.begin(), first);
      b.rank++;
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace
}  // namespace data
}  // namespace weft

// ---- The C API ---------------------------------------------------------------

using weft::Error;
using weft::Errorf;
using weft::data::CheckInput;
using weft::data::CheckOut;
using weft::data::CheckPaths;
using weft::data::DatasetPtr;
using weft::data::Element;
using weft::data::Iterator;
using weft::data::Wrap;

namespace {

// A function graph's session (CPU, one thread: parallelism comes from
// running several elements at once) and its signature against the input
// dataset's.
weft_status* MakeFunction(const weft_dataset* in, weft_graph* fn,
                          const weft_output* inputs, int32_t num_inputs,
                          const weft_output* outputs, int32_t num_outputs,
                          std::shared_ptr<weft::data::Function>* out) {
  if (fn == nullptr) return Error(WEFT_INVALID_ARGUMENT, "graph is NULL");
  const auto& types = in->impl->types;
  if (num_inputs != static_cast<int32_t>(types.size()) ||
      (num_inputs > 0 && inputs == nullptr))
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "the function takes %d inputs; the dataset's elements have "
                  "%zu components", num_inputs, types.size());
  if (num_outputs < 1 || outputs == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "the function has no outputs");
  for (int32_t i = 0; i < num_inputs; ++i) {
    if (!fn->impl->Owns(inputs[i].node) ||
        inputs[i].node->op_type != "Placeholder" || inputs[i].index != 0)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "function input %d is not a Placeholder of its graph", i);
    if (inputs[i].node->output_dtypes[0] != types[static_cast<size_t>(i)])
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "function input %d is %s; the dataset's component is %s",
                    i, weft_dtype_name(inputs[i].node->output_dtypes[0]),
                    weft_dtype_name(types[static_cast<size_t>(i)]));
  }
  for (int32_t i = 0; i < num_outputs; ++i)
    if (!fn->impl->Owns(outputs[i].node) || outputs[i].index < 0 ||
        outputs[i].index >= static_cast<int32_t>(
                                outputs[i].node->output_dtypes.size()))
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "function output %d is not an output of its graph", i);
  auto f = std::make_shared<weft::data::Function>();
  weft_session_options o;
  weft_session_options_init(&o);
  o.devices = "/device:CPU:0";
  o.inter_op_threads = 1;
  o.intra_op_threads = 1;
  WEFT_RETURN_IF_ERROR(weft_session_create(fn, &o, &f->session));
  f->inputs.assign(inputs, inputs + num_inputs);
  // Planned now: a function the executor cannot run is refused here.
  WEFT_RETURN_IF_ERROR(weft::Annotate(
      weft::FindPlan(f->session, inputs, num_inputs, outputs, num_outputs,
                     nullptr, 0, &f->plan),
      "the function"));
  *out = std::move(f);
  return nullptr;
}

}  // namespace

extern "C" {

weft_status* weft_dataset_map(const weft_dataset* input, weft_graph* fn,
                              const weft_output* fn_inputs,
                              int32_t num_inputs,
                              const weft_output* fn_outputs,
                              int32_t num_outputs, int32_t num_parallel_calls,
                              weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  if (num_parallel_calls < 1 || num_parallel_calls > 64)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "num_parallel_calls is %d: give 1 to 64",
                  num_parallel_calls);
  return weft::Guard([&]() -> weft_status* {
    std::shared_ptr<weft::data::Function> f;
    WEFT_RETURN_IF_ERROR(MakeFunction(input, fn, fn_inputs, num_inputs,
                                      fn_outputs, num_outputs, &f));
    std::vector<weft_dtype> types;
    std::vector<weft::ShapeInfo> shapes;
    for (int32_t i = 0; i < num_outputs; ++i) {
      types.push_back(fn_outputs[i].node->output_dtypes[static_cast<size_t>(
          fn_outputs[i].index)]);
      shapes.push_back(fn_outputs[i].node->output_shapes[static_cast<size_t>(
          fn_outputs[i].index)]);
    }
    DatasetPtr in = input->impl;
    const std::string name = "Map(" + in->Name() + ")";
    const int32_t parallel = num_parallel_calls;
    return Wrap(
        weft::data::Fn(
            name, types, shapes,
            [in, f, parallel, name](std::unique_ptr<Iterator>* it) -> weft_status* {
              std::unique_ptr<Iterator> src;
              WEFT_RETURN_IF_ERROR(in->MakeIterator(&src));
              *it = std::make_unique<weft::data::MapIterator>(
                  std::move(src), f, parallel,
                  "in the map function of dataset " + name);
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

weft_status* weft_dataset_filter(const weft_dataset* input, weft_graph* fn,
                                 const weft_output* fn_inputs,
                                 int32_t num_inputs, weft_output predicate,
                                 weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  return weft::Guard([&]() -> weft_status* {
    std::shared_ptr<weft::data::Function> f;
    WEFT_RETURN_IF_ERROR(MakeFunction(input, fn, fn_inputs, num_inputs,
                                      &predicate, 1, &f));
    if (predicate.node->output_dtypes[static_cast<size_t>(predicate.index)] !=
        WEFT_BOOL)
      return Error(WEFT_INVALID_ARGUMENT, "the predicate must be a bool");
    DatasetPtr in = input->impl;
    const std::string name = "Filter(" + in->Name() + ")";
    return Wrap(
        weft::data::Fn(
            name, in->types, in->shapes,
            [in, f, name](std::unique_ptr<Iterator>* it) -> weft_status* {
              std::shared_ptr<Iterator> src;
              std::unique_ptr<Iterator> made;
              WEFT_RETURN_IF_ERROR(in->MakeIterator(&made));
              src = std::move(made);
              *it = std::make_unique<weft::data::FnIterator>(
                  [src, f, name](Element* e, bool* end) -> weft_status* {
                    for (;;) {
                      WEFT_RETURN_IF_ERROR(src->Next(e, end));
                      if (*end) return nullptr;
                      Element keep;
                      WEFT_RETURN_IF_ERROR(weft::Annotate(
                          f->Call(*e, &keep), "in the predicate of " + name));
                      if (keep[0].elements() != 1)
                        return Errorf(WEFT_INVALID_ARGUMENT,
                                      "the predicate of %s gave %lld values, "
                                      "not one", name.c_str(),
                                      static_cast<long long>(
                                          keep[0].elements()));
                      if (*static_cast<const uint8_t*>(keep[0].host_data()))
                        return nullptr;
                    }
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

weft_status* weft_dataset_shuffle(const weft_dataset* input,
                                  int64_t buffer_size, int64_t seed,
                                  weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  if (buffer_size < 1 || buffer_size > (int64_t{1} << 30))
    return Errorf(WEFT_INVALID_ARGUMENT, "buffer_size is %lld: give 1 to 2^30",
                  static_cast<long long>(buffer_size));
  return weft::Guard([&]() -> weft_status* {
    DatasetPtr in = input->impl;
    auto passes = std::make_shared<std::atomic<uint64_t>>(0);
    return Wrap(
        weft::data::Fn(
            "Shuffle(" + in->Name() + ")", in->types, in->shapes,
            [in, buffer_size, seed, passes](std::unique_ptr<Iterator>* it) -> weft_status* {
              std::shared_ptr<Iterator> src;
              std::unique_ptr<Iterator> made;
              WEFT_RETURN_IF_ERROR(in->MakeIterator(&made));
              src = std::move(made);
              auto rng = std::make_shared<std::mt19937_64>(
                  weft::data::Mix(static_cast<uint64_t>(seed), passes->fetch_add(1)));
              auto buffer = std::make_shared<std::vector<Element>>();
              auto src_end = std::make_shared<bool>(false);
              *it = std::make_unique<weft::data::FnIterator>(
                  [=](Element* e, bool* end) -> weft_status* {
                    while (!*src_end &&
                           static_cast<int64_t>(buffer->size()) < buffer_size) {
                      Element next;
                      bool done = false;
                      WEFT_RETURN_IF_ERROR(src->Next(&next, &done));
                      if (done) *src_end = true;
                      else buffer->push_back(std::move(next));
                    }
                    if (buffer->empty()) return *end = true, nullptr;
                    std::uniform_int_distribution<size_t> pick(
                        0, buffer->size() - 1);
                    const size_t k = pick(*rng);
                    std::swap((*buffer)[k], buffer->back());
                    *e = std::move(buffer->back());
                    buffer->pop_back();
                    *end = false;
                    return nullptr;
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

namespace {

weft_status* BatchImpl(const weft_dataset* input, int64_t batch_size,
                       int32_t drop_remainder, bool pad, weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  if (batch_size < 1 || batch_size > (int64_t{1} << 30))
    return Errorf(WEFT_INVALID_ARGUMENT, "batch_size is %lld: give 1 to 2^30",
                  static_cast<long long>(batch_size));
  return weft::Guard([&]() -> weft_status* {
    DatasetPtr in = input->impl;
    const bool drop = drop_remainder != 0;
    const std::string name =
        std::string(pad ? "PaddedBatch(" : "Batch(") + in->Name() + ")";
    std::vector<weft::ShapeInfo> shapes =
        weft::data::Batched(in->shapes, drop ? batch_size : -1);
    if (pad)
      for (weft::ShapeInfo& s : shapes)
        for (size_t i = 1; i < s.dims.size(); ++i) s.dims[i] = -1;
    return Wrap(
        weft::data::Fn(
            name, in->types, shapes,
            [in, batch_size, drop, pad, name](std::unique_ptr<Iterator>* it) -> weft_status* {
              std::shared_ptr<Iterator> src;
              std::unique_ptr<Iterator> made;
              WEFT_RETURN_IF_ERROR(in->MakeIterator(&made));
              src = std::move(made);
              auto types = in->types;
              *it = std::make_unique<weft::data::FnIterator>(
                  [=](Element* e, bool* end) -> weft_status* {
                    std::vector<Element> batch;
                    while (static_cast<int64_t>(batch.size()) < batch_size) {
                      Element next;
                      bool done = false;
                      WEFT_RETURN_IF_ERROR(src->Next(&next, &done));
                      if (done) break;
                      batch.push_back(std::move(next));
                    }
                    if (batch.empty() ||
                        (drop && static_cast<int64_t>(batch.size()) < batch_size))
                      return *end = true, nullptr;
                    *end = false;
                    return weft::data::Stack(types, batch, pad, name, e);
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

}  // namespace

weft_status* weft_dataset_batch(const weft_dataset* input, int64_t batch_size,
                                int32_t drop_remainder, weft_dataset** out) {
  return BatchImpl(input, batch_size, drop_remainder, false, out);
}

weft_status* weft_dataset_padded_batch(const weft_dataset* input,
                                       int64_t batch_size,
                                       int32_t drop_remainder,
                                       weft_dataset** out) {
  return BatchImpl(input, batch_size, drop_remainder, true, out);
}

weft_status* weft_dataset_repeat(const weft_dataset* input, int64_t count,
                                 weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  if (count < -1)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "count is %lld: give -1 (forever) or a count >= 0",
                  static_cast<long long>(count));
  return weft::Guard([&]() -> weft_status* {
    DatasetPtr in = input->impl;
    return Wrap(
        weft::data::Fn(
            "Repeat(" + in->Name() + ")", in->types, in->shapes,
            [in, count](std::unique_ptr<Iterator>* it) -> weft_status* {
              struct State {
                std::unique_ptr<Iterator> src;
                int64_t done = 0;
                bool empty_pass = true;
              };
              auto s = std::make_shared<State>();
              *it = std::make_unique<weft::data::FnIterator>(
                  [in, count, s](Element* e, bool* end) -> weft_status* {
                    for (;;) {
                      if (count >= 0 && s->done >= count)
                        return *end = true, nullptr;
                      if (!s->src) {
                        WEFT_RETURN_IF_ERROR(in->MakeIterator(&s->src));
                        s->empty_pass = true;
                      }
                      WEFT_RETURN_IF_ERROR(s->src->Next(e, end));
                      if (!*end) {
                        s->empty_pass = false;
                        return nullptr;
                      }
                      s->src.reset();
                      s->done++;
                      // An empty input repeated forever is still empty.
                      if (s->empty_pass) return *end = true, nullptr;
                    }
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

namespace {

weft_status* TakeSkip(const weft_dataset* input, int64_t n, bool take,
                      weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  if (n < -1)
    return Errorf(WEFT_INVALID_ARGUMENT, "count is %lld",
                  static_cast<long long>(n));
  return weft::Guard([&]() -> weft_status* {
    DatasetPtr in = input->impl;
    return Wrap(
        weft::data::Fn(
            std::string(take ? "Take(" : "Skip(") + in->Name() + ")",
            in->types, in->shapes,
            [in, n, take](std::unique_ptr<Iterator>* it) -> weft_status* {
              std::shared_ptr<Iterator> src;
              std::unique_ptr<Iterator> made;
              WEFT_RETURN_IF_ERROR(in->MakeIterator(&made));
              src = std::move(made);
              auto seen = std::make_shared<int64_t>(0);
              *it = std::make_unique<weft::data::FnIterator>(
                  [src, n, take, seen](Element* e, bool* end) -> weft_status* {
                    if (take) {
                      if (n >= 0 && *seen >= n) return *end = true, nullptr;
                      ++*seen;
                      return src->Next(e, end);
                    }
                    while (n < 0 || *seen < n) {
                      WEFT_RETURN_IF_ERROR(src->Next(e, end));
                      if (*end) return nullptr;
                      ++*seen;
                    }
                    return src->Next(e, end);
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

}  // namespace

weft_status* weft_dataset_take(const weft_dataset* input, int64_t count,
                               weft_dataset** out) {
  return TakeSkip(input, count, true, out);
}

weft_status* weft_dataset_skip(const weft_dataset* input, int64_t count,
                               weft_dataset** out) {
  return TakeSkip(input, count, false, out);
}

weft_status* weft_dataset_prefetch(const weft_dataset* input,
                                   int64_t buffer_size, weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckInput(input, out));
  if (buffer_size < 1 || buffer_size > (int64_t{1} << 20))
    return Errorf(WEFT_INVALID_ARGUMENT, "buffer_size is %lld: give 1 to 2^20",
                  static_cast<long long>(buffer_size));
  return weft::Guard([&]() -> weft_status* {
    DatasetPtr in = input->impl;
    return Wrap(weft::data::Fn(
                    "Prefetch(" + in->Name() + ")", in->types, in->shapes,
                    [in, buffer_size](std::unique_ptr<Iterator>* it) -> weft_status* {
                      std::unique_ptr<Iterator> src;
                      WEFT_RETURN_IF_ERROR(in->MakeIterator(&src));
                      *it = std::make_unique<weft::data::PrefetchIterator>(
                          std::move(src), buffer_size);
                      return static_cast<weft_status*>(nullptr);
                    }),
                out);
  });
}

weft_status* weft_dataset_zip(const weft_dataset* const* inputs, int32_t n,
                              weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  if (n < 1 || n > 64 || inputs == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "give 1 to 64 datasets to zip");
  return weft::Guard([&]() -> weft_status* {
    std::vector<DatasetPtr> ins;
    std::vector<weft_dtype> types;
    std::vector<weft::ShapeInfo> shapes;
    std::string name = "Zip(";
    for (int32_t i = 0; i < n; ++i) {
      if (inputs[i] == nullptr)
        return Errorf(WEFT_INVALID_ARGUMENT, "dataset %d is NULL", i);
      ins.push_back(inputs[i]->impl);
      types.insert(types.end(), ins.back()->types.begin(),
                   ins.back()->types.end());
      shapes.insert(shapes.end(), ins.back()->shapes.begin(),
                    ins.back()->shapes.end());
      name += (i ? ", " : "") + ins.back()->Name();
    }
    if (types.size() > 1024)
      return Error(WEFT_INVALID_ARGUMENT, "more than 1024 components");
    return Wrap(
        weft::data::Fn(
            name + ")", types, shapes,
            [ins](std::unique_ptr<Iterator>* it) -> weft_status* {
              auto srcs = std::make_shared<std::vector<std::unique_ptr<Iterator>>>();
              for (const DatasetPtr& d : ins) {
                srcs->emplace_back();
                WEFT_RETURN_IF_ERROR(d->MakeIterator(&srcs->back()));
              }
              *it = std::make_unique<weft::data::FnIterator>(
                  [srcs](Element* e, bool* end) -> weft_status* {
                    e->clear();
                    // Ends with the shortest input.
                    for (auto& src : *srcs) {
                      Element part;
                      WEFT_RETURN_IF_ERROR(src->Next(&part, end));
                      if (*end) return nullptr;
                      for (weft::TensorValue& v : part)
                        e->push_back(std::move(v));
                    }
                    return nullptr;
                  });
              return nullptr;
            }),
        out);
  });
}

weft_status* weft_dataset_iterator(weft_graph* graph, const char* name,
                                   const weft_dataset* dataset,
                                   weft_output* components,
                                   weft_node** init) {
  if (init != nullptr) *init = nullptr;
  if (graph == nullptr || dataset == nullptr || components == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "graph, dataset or components is NULL");
  if (name == nullptr || name[0] == '\0')
    return Error(WEFT_INVALID_ARGUMENT,
                 "name the iterator: its state is kept per session by name");
  return weft::Guard([&]() -> weft_status* {
    const std::string iterator = name;
    // Checked before anything is added: a failed call leaves the graph as
    // it was (nodes cannot be taken out again).
    if (weft_graph_node_by_name(graph, name) != nullptr ||
        (init != nullptr &&
         weft_graph_node_by_name(graph, (iterator + "/init").c_str()) !=
             nullptr))
      return Errorf(WEFT_ALREADY_EXISTS,
                    "the graph has a node named '%s' already", name);
    static std::atomic<uint64_t> counter{0};
    const std::string key = "dataset:" + std::to_string(++counter);
    const weft::data::Dataset& ds = *dataset->impl;
    std::vector<int64_t> types(ds.types.begin(), ds.types.end());
    std::vector<int64_t> shapes = weft::EncodeShapeList(ds.shapes);
    weft_op_builder* b = weft_op_begin(graph, "IteratorGetNext", name);
    weft_op_set_attr_string(b, "dataset", key.c_str());
    weft_node* node = nullptr;
    weft_op_set_attr_string(b, "iterator", name);
    weft_op_set_attr_int_list(b, "component_types", types.data(),
                              static_cast<int32_t>(types.size()));
    weft_op_set_attr_int_list(b, "shapes", shapes.data(),
                              static_cast<int32_t>(shapes.size()));
    WEFT_RETURN_IF_ERROR(weft_op_finish(b, &node));
    graph->impl->Attach(key, dataset->impl);
    if (init != nullptr) {
      weft_op_builder* ib =
          weft_op_begin(graph, "IteratorInit", (iterator + "/init").c_str());
      weft_op_set_attr_string(ib, "dataset", key.c_str());
      weft_op_set_attr_string(ib, "iterator", iterator.c_str());
      WEFT_RETURN_IF_ERROR(weft_op_finish(ib, init));
    }
    for (size_t c = 0; c < ds.types.size(); ++c)
      components[c] = weft_output{node, static_cast<int32_t>(c)};
    return nullptr;
  });
}

}  // extern "C"
