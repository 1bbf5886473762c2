// Interleave (weft/dataset.h): a dataset made per input element by the
// caller's function, cycle_length of them open at once, block_length
// elements from each in turn, in tf.data's deterministic order.
//
// The order is tf.data's: the slot under the cycle gives up to
// block_length elements, then the cycle moves on; a slot whose dataset ends
// passes its turn and takes the next input element at its next turn.  Here
// a slot takes that element at once (and the first cycle_length are taken
// at the first read): empty slots come round again in the order they
// emptied, so each input element lands in the same slot at the same point
// of the output either way, and an error met early (the input's, the
// maker's) is kept in its slot until the cycle reaches it.  Opening early is
// what lets the threads of num_parallel_calls read ahead from every open
// dataset; what they read waits in its slot, so only timing changes.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset_api.h"
#include "session/thread_pool.h"

namespace weft {
namespace data {
namespace {

constexpr int64_t kMaxCycle = 1024;
constexpr int64_t kMaxBlock = int64_t{1} << 30;
constexpr int64_t kMaxReadAhead = 16;

// The caller's maker; `release` once the last dataset or iterator using it
// has gone.
struct Maker {
  weft_dataset_make_fn make = nullptr;
  void* arg = nullptr;
  void (*release)(void*) = nullptr;
  ~Maker() {
    if (release != nullptr) release(arg);
  }
};

struct Spec {
  DatasetPtr input;
  std::shared_ptr<Maker> maker;
  std::vector<weft_dtype> types;
  int64_t cycle = 1, block = 1;
  int32_t threads = 0;  // 0: no read-ahead
  std::string name;
};

std::string DtypesText(const std::vector<weft_dtype>& types) {
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i)
    s += (i ? ", " : "") + std::string(weft_dtype_name_of(types[i]));
  return s + ")";
}

// One open input element: its dataset's iterator, or the error met opening
// it.  With read-ahead, what the pool has read of it; `ready`, `ended`,
// `error` and `busy` are then guarded by the iterator's mutex, and `it` is
// the pool's while busy.
struct Slot {
  int64_t index = 0;
  std::unique_ptr<Iterator> it;
  std::deque<Element> ready;
  bool ended = false;   // nothing more to read: `ready`, then `error`
  bool busy = false;    // a read is queued or running
  bool closed = false;  // dropped after an error: read no more
  weft_status* error = nullptr;
  ~Slot() { weft_status_destroy(error); }
};

class InterleaveIterator : public Iterator {
 public:
  InterleaveIterator(std::shared_ptr<const Spec> spec,
                     std::unique_ptr<Iterator> input,
                     std::unique_ptr<ThreadPool> pool)
      : spec_(std::move(spec)), input_(std::move(input)),
        slots_(static_cast<size_t>(spec_->cycle)),
        read_ahead_(std::min(spec_->block, kMaxReadAhead)),
        pool_(std::move(pool)) {}

  ~InterleaveIterator() override {
    if (!pool_) return;
    // Reads queued or running finish (queued ones at once) before the
    // slots go; the pool's threads are joined first of all members.
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.wait(lock, [this] { return busy_ == 0; });
  }

  weft_status* Next(Element* out, bool* end) override {
    if (failed_code_ != WEFT_OK) return Error(failed_code_, failed_message_);
    weft_status* st = Guard([&] { return Advance(out, end); });
    if (st != nullptr) {
      // The pass is over: every later read fails the same way.
      failed_code_ = weft_status_code(st);
      failed_message_ = weft_status_message(st);
      CloseAll();
    }
    return st;
  }

 private:
  weft_status* Advance(Element* out, bool* end) {
    if (!started_) {
      started_ = true;
      for (size_t i = 0; i < slots_.size(); ++i) Fill(i);
    }
    while (open_ > 0) {
      std::shared_ptr<Slot>& slot = slots_[cycle_];
      if (!slot) {
        NextInCycle();
        continue;
      }
      bool slot_end = false;
      WEFT_RETURN_IF_ERROR(Read(slot, out, &slot_end));
      if (!slot_end) {
        if (++block_ == spec_->block) NextInCycle();
        *end = false;
        return nullptr;
      }
      slot.reset();
      --open_;
      Fill(cycle_);
      NextInCycle();
    }
    *end = true;
    return nullptr;
  }

  void NextInCycle() {
    block_ = 0;
    cycle_ = (cycle_ + 1) % slots_.size();
  }

  std::string Where(int64_t index) const {
    return spec_->name + ": input element " + std::to_string(index);
  }

  // Slot i takes the next input element, unless the input has ended or an
  // error waits in a slot (the pass ends there: nothing after it is read).
  void Fill(size_t i) {
    if (input_done_) return;
    auto slot = std::make_shared<Slot>();
    slot->index = next_index_;
    Element e;
    bool end = false;
    slot->error = input_->Next(&e, &end);
    if (slot->error != nullptr) {
      slot->error = Annotate(slot->error, Where(next_index_) + " (reading "
                                              "the input)");
    } else if (end) {
      input_done_ = true;
      return;
    } else {
      ++next_index_;
      slot->error = Annotate(Open(e, slot.get()), Where(slot->index));
    }
    if (slot->error != nullptr) {
      input_done_ = true;
      slot->ended = true;
    }
    slots_[i] = slot;
    ++open_;
    if (pool_ && slot->error == nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      Schedule(slot);
    }
  }

  weft_status* Open(const Element& e, Slot* slot) {
    const Maker& maker = *spec_->maker;
    std::vector<weft_tensor> tensors;
    tensors.reserve(e.size());
    std::vector<const weft_tensor*> args;
    for (const TensorValue& v : e) {
      tensors.push_back(weft_tensor{v});
      args.push_back(&tensors.back());
    }
    weft_dataset* made = nullptr;
    weft_status* st = maker.make(maker.arg, args.data(),
                                 static_cast<int32_t>(args.size()), &made);
    if (st != nullptr) {
      weft_dataset_destroy(made);
      return Annotate(st, "making its dataset");
    }
    if (made == nullptr)
      return Error(WEFT_INVALID_ARGUMENT,
                   "the maker returned no error and no dataset");
    DatasetPtr ds = made->impl;
    weft_dataset_destroy(made);
    if (ds->types != spec_->types)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "the maker's dataset %s has components %s; the "
                    "interleave's are %s", ds->Name().c_str(),
                    DtypesText(ds->types).c_str(),
                    DtypesText(spec_->types).c_str());
    return ds->MakeIterator(&slot->it);
  }

  // The slot's next element, or *end when its dataset has ended.
  weft_status* Read(const std::shared_ptr<Slot>& slot, Element* out,
                    bool* end) {
    if (!pool_) {
      if (slot->error != nullptr) return std::exchange(slot->error, nullptr);
      return Annotate(slot->it->Next(out, end), Where(slot->index));
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !slot->ready.empty() || slot->ended; });
    if (!slot->ready.empty()) {
      *out = std::move(slot->ready.front());
      slot->ready.pop_front();
      *end = false;
      Schedule(slot);
      return nullptr;
    }
    *end = slot->error == nullptr;
    return std::exchange(slot->error, nullptr);
  }

  // A read of `slot` on the pool, unless one is under way or its buffer is
  // full.  mu_ held.
  void Schedule(const std::shared_ptr<Slot>& slot) {
    if (stop_ || slot->closed || slot->busy || slot->ended ||
        static_cast<int64_t>(slot->ready.size()) >= read_ahead_)
      return;
    slot->busy = true;
    ++busy_;
    pool_->Schedule([this, slot] { ReadAhead(slot); });
  }

  // On the pool: one element of `slot`, then the next read while it has
  // room (the queue is first in, first out: the open slots take turns).
  void ReadAhead(const std::shared_ptr<Slot>& slot) {
    bool skip;
    {
      std::lock_guard<std::mutex> lock(mu_);
      skip = stop_ || slot->closed;
    }
    Element e;
    bool end = false;
    weft_status* st = nullptr;
    if (!skip) st = Guard([&] { return slot->it->Next(&e, &end); });
    std::lock_guard<std::mutex> lock(mu_);
    slot->busy = false;
    --busy_;
    if (st != nullptr) {
      slot->error = Annotate(st, Where(slot->index));
      slot->ended = true;
    } else if (end) {
      slot->ended = true;
    } else if (!skip) {
      slot->ready.push_back(std::move(e));
      Schedule(slot);
    }
    cv_.notify_all();
  }

  // After an error: the slots go, and reads under way are not followed by
  // more.
  void CloseAll() {
    if (pool_) {
      std::lock_guard<std::mutex> lock(mu_);
      for (const std::shared_ptr<Slot>& slot : slots_)
        if (slot) slot->closed = true;
    }
    slots_.assign(slots_.size(), nullptr);
    open_ = 0;
  }

  std::shared_ptr<const Spec> spec_;
  std::unique_ptr<Iterator> input_;
  std::vector<std::shared_ptr<Slot>> slots_;
  size_t cycle_ = 0;     // the slot whose turn it is
  int64_t block_ = 0;    // elements it has given this turn
  int64_t open_ = 0;     // slots holding a dataset or an error
  int64_t next_index_ = 0;
  bool started_ = false;
  bool input_done_ = false;  // ended, or an error waits in a slot
  weft_code failed_code_ = WEFT_OK;
  std::string failed_message_;
  const int64_t read_ahead_;
  // Read-ahead (num_parallel_calls > 1).
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t busy_ = 0;  // reads queued or running
  bool stop_ = false;
  std::unique_ptr<ThreadPool> pool_;  // last: joined before the rest goes
};

}  // namespace
}  // namespace data
}  // namespace weft

using weft::Error;
using weft::Errorf;
using weft::data::DatasetPtr;
using weft::data::Iterator;

extern "C" {

weft_status* weft_dataset_interleave(
    const weft_dataset* input, weft_dataset_make_fn make, void* arg,
    void (*release)(void* arg), const weft_dtype* component_dtypes,
    int32_t num_components, int64_t cycle_length, int64_t block_length,
    int32_t num_parallel_calls, weft_dataset** out) {
  // From here on `maker` (and then the dataset) releases arg, whatever
  // happens.
  std::unique_ptr<weft::data::Maker> maker(new (std::nothrow)
                                               weft::data::Maker);
  if (maker == nullptr) {
    if (release != nullptr) release(arg);
    return Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  maker->make = make;
  maker->arg = arg;
  maker->release = release;
  WEFT_RETURN_IF_ERROR(weft::data::CheckInput(input, out));
  if (make == nullptr) return Error(WEFT_INVALID_ARGUMENT, "make is NULL");
  if (num_components < 1 || num_components > 1024 ||
      component_dtypes == nullptr)
    return Error(WEFT_INVALID_ARGUMENT,
                 "give the dtypes of 1 to 1024 components");
  for (int32_t i = 0; i < num_components; ++i)
    if (weft_dtype_size_of(component_dtypes[i]) == 0)
      return Errorf(WEFT_INVALID_ARGUMENT,
                    "component_dtypes[%d] is %d, not a dtype", i,
                    static_cast<int>(component_dtypes[i]));
  if (cycle_length < 1 || cycle_length > weft::data::kMaxCycle)
    return Errorf(WEFT_INVALID_ARGUMENT, "cycle_length is %lld: give 1 to %lld",
                  static_cast<long long>(cycle_length),
                  static_cast<long long>(weft::data::kMaxCycle));
  if (block_length < 1 || block_length > weft::data::kMaxBlock)
    return Errorf(WEFT_INVALID_ARGUMENT, "block_length is %lld: give 1 to 2^30",
                  static_cast<long long>(block_length));
  if (num_parallel_calls < 1 || num_parallel_calls > 64)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "num_parallel_calls is %d: give 1 to 64",
                  num_parallel_calls);
  return weft::Guard([&]() -> weft_status* {
    auto spec = std::make_shared<weft::data::Spec>();
    spec->maker = std::shared_ptr<weft::data::Maker>(maker.release());
    spec->input = input->impl;
    spec->types.assign(component_dtypes, component_dtypes + num_components);
    spec->cycle = cycle_length;
    spec->block = block_length;
    spec->threads = num_parallel_calls > 1
                        ? static_cast<int32_t>(std::min<int64_t>(
                              num_parallel_calls, cycle_length))
                        : 0;
    spec->name = "Interleave(" + input->impl->Name() + ")";
    std::vector<weft::ShapeInfo> shapes(spec->types.size(),
                                        weft::ShapeInfo::Unknown());
    std::shared_ptr<const weft::data::Spec> fixed = std::move(spec);
    return weft::data::Wrap(
        weft::data::Fn(
            fixed->name, fixed->types, shapes,
            [fixed](std::unique_ptr<Iterator>* it) -> weft_status* {
              std::unique_ptr<Iterator> in;
              WEFT_RETURN_IF_ERROR(fixed->input->MakeIterator(&in));
              std::unique_ptr<weft::ThreadPool> pool;
              if (fixed->threads > 0)
                WEFT_RETURN_IF_ERROR(weft::ThreadPool::Create(
                    fixed->threads, "num_parallel_calls", &pool));
              *it = std::make_unique<weft::data::InterleaveIterator>(
                  fixed, std::move(in), std::move(pool));
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

}  // extern "C"
