// Fuzz target: the Dataset API (weft/dataset.h), driven by fuzz input as a
// small program.  Each input makes datasets from small tensors, ranges and
// a fixed-length record file of its own bytes, transforms them with fuzzed
// arguments (negative and huge counts, batch and buffer sizes, zips of
// datasets that disagree, padded batches of ragged elements, interleaves
// whose maker fails or makes the wrong thing), then reads a bounded number
// of elements through iterator nodes in a session (weft_dataset_iterator,
// weft_session_run), restarts them now and then, and destroys everything,
// sometimes in the middle of a pass with threads still reading ahead.
// Everything must end in a status: a crash, a sanitizer report, a leak, a
// hang (libFuzzer's -timeout), an INTERNAL or UNKNOWN status, a fetched
// value unlike its dataset's signature, an interleave's `arg` not released
// exactly once, or threads left behind stops the fuzzer.  Built and run by
// scripts/fuzz.sh, which points WEFT_PLUGIN_PATH at the CPU plugin of the
// normal build (map and filter functions run on it).
//
// Bounds: memory and time stay small because the program is short, tensors
// hold at most 64 elements, sizes that would be accepted are capped (batch
// 8, shuffle 64, prefetch 4, cycle 8, 3 or 4 threads), and a dataset is
// kept for reading only when the harness's estimate of the source elements
// one of its elements can pull stays under kMaxWork: an infinite input
// under a filter or a skip of everything would never answer, as in
// tf.data.  Datasets past the bound are still made and destroyed, never
// read.  WEFT_FUZZ_STATS=1 prints what the inputs reached at exit.
#include <dirent.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kMaxSteps = 10;
constexpr int kMaxReads = 24;
constexpr int64_t kMaxWork = 1024;
constexpr int64_t kInf = int64_t{1} << 40;

const int64_t kCounts[] = {0, 1, 2, 3, 5, -1, -2,
                           std::numeric_limits<int64_t>::max(),
                           std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int32_t>::max(),
                           int64_t{1} << 20, (int64_t{1} << 20) + 1,
                           int64_t{1} << 30, (int64_t{1} << 30) + 1,
                           int64_t{1} << 62, 64, 65, 1000};

template <typename T, size_t N>
T Pick(FuzzedDataProvider& fdp, const T (&table)[N]) {
  return table[fdp.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

int64_t Count(FuzzedDataProvider& fdp) {
  if (fdp.ConsumeBool()) return fdp.ConsumeIntegralInRange<int64_t>(-1, 6);
  return Pick(fdp, kCounts);
}

// A count the library would accept (1 to `most`) above `cap` becomes `cap`:
// refusals are fuzzed, costs stay small.
int64_t Capped(int64_t v, int64_t most, int64_t cap) {
  return v > cap && v <= most ? cap : v;
}

// Bounds saturate at kInf; negative arguments (refused counts) count as 0.
int64_t Clamp(int64_t a) { return std::clamp<int64_t>(a, 0, kInf); }
int64_t Add(int64_t a, int64_t b) {
  return std::min(kInf, Clamp(a) + Clamp(b));
}
int64_t Mul(int64_t a, int64_t b) {
  a = Clamp(a);
  b = Clamp(b);
  if (a == 0 || b == 0) return 0;
  return a > kInf / b ? kInf : std::min(kInf, a * b);
}

// Statuses that blame the runtime rather than the input are findings.
void Check(weft_status* st, const char* what) {
  if (st == nullptr) return;
  const weft_code code = weft_status_code(st);
  if (code == WEFT_OK || code == WEFT_INTERNAL || code == WEFT_UNKNOWN) {
    std::fprintf(stderr, "%s returned %s: %s\n", what, weft_code_name(code),
                 weft_status_message(st));
    std::abort();
  }
  weft_status_destroy(st);
}

// Counts of what inputs reached, printed at exit when WEFT_FUZZ_STATS is
// set, to see whether the harness gets past the refusals into reading.
struct Stats {
  std::map<std::string, long> made, kept;
  long reads = 0, elements = 0, interleaved = 0;
  std::map<std::string, long> errors;  // by code
  ~Stats() {
    if (std::getenv("WEFT_FUZZ_STATS") == nullptr) return;
    for (const auto& [what, n] : made)
      std::fprintf(stderr, "%-22s made %6ld  kept %6ld\n", what.c_str(), n,
                   kept[what]);
    std::fprintf(stderr, "get_next runs %ld: %ld elements, %ld through an "
                 "interleave\n", reads, elements, interleaved);
    for (const auto& [code, n] : errors)
      std::fprintf(stderr, "  %s %ld\n", code.c_str(), n);
  }
} stats;

int ThreadCount() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 0;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

const std::string& RecordPath() {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string tmpl = std::string(dir) + "/weft-fuzz-dataset-XXXXXX";
    int fd = mkstemp(&tmpl[0]);
    if (fd < 0) std::abort();
    close(fd);
    return tmpl;
  }();
  return path;
}

// A dataset of the program and the harness's bounds on it: `bound`, the
// elements of a pass; `work`, the source elements one element may pull
// (kInf when unbounded).
struct Entry {
  weft_dataset* ds = nullptr;
  int64_t bound = 0;
  int64_t work = 1;
};

// An interleave's maker: picks one of `candidates` by a hash of the
// element, or misbehaves, as `mode` says.
std::atomic<int> live_makers{0};

struct MakerState {
  std::vector<weft_dataset*> candidates;
  uint64_t salt = 0;
  int mode = 0;
  MakerState() { ++live_makers; }
  ~MakerState() {
    for (weft_dataset* d : candidates) weft_dataset_destroy(d);
    --live_makers;
  }
};

weft_status* Make(void* arg, const weft_tensor* const* element, int32_t n,
                  weft_dataset** out) {
  const MakerState* m = static_cast<const MakerState*>(arg);
  if (element == nullptr || n < 1 || out == nullptr) std::abort();
  uint64_t h = m->salt ^ 0xcbf29ce484222325ull;
  for (int32_t i = 0; i < n; ++i) {
    if (element[i] == nullptr) std::abort();
    const size_t bytes = weft_tensor_byte_size(element[i]);
    const uint8_t* p = static_cast<const uint8_t*>(weft_tensor_data(element[i]));
    if (bytes != 0 && p == nullptr) std::abort();
    for (size_t k = 0; k < bytes; ++k) h = (h ^ p[k]) * 0x100000001b3ull;
  }
  const bool odd = h % 3 == 0;
  if (m->mode == 1 && odd)
    return weft_status_create(WEFT_NOT_FOUND, "the fuzz maker refuses");
  if (m->mode == 2 && odd) return nullptr;  // no error and no dataset
  if (m->candidates.empty())
    return weft_dataset_range(0, static_cast<int64_t>(h % 4), 1, out);
  weft_status* st = weft_dataset_take(
      m->candidates[(h >> 8) % m->candidates.size()], -1, out);
  if (m->mode == 3 && odd && st == nullptr)  // a dataset and an error
    return weft_status_create(WEFT_ABORTED, "the fuzz maker fails late");
  return st;
}

void Release(void* arg) { delete static_cast<MakerState*>(arg); }

const weft_dtype kDtypes[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                              WEFT_UINT8, WEFT_BOOL, WEFT_FLOAT64,
                              WEFT_INT16};

struct Program {
  FuzzedDataProvider& fdp;
  std::vector<Entry> pool;

  explicit Program(FuzzedDataProvider& f) : fdp(f) {}
  ~Program() {
    for (Entry& e : pool) weft_dataset_destroy(e.ds);
  }

  // Keeps a new dataset when it is cheap enough to read, else destroys it.
  void Keep(weft_status* st, weft_dataset* ds, int64_t bound, int64_t work,
            const char* what) {
    if (st != nullptr && ds != nullptr) {
      std::fprintf(stderr, "%s failed and made a dataset\n", what);
      std::abort();
    }
    Check(st, what);
    if (ds == nullptr) return;
    ++stats.made[what];
    const int32_t n = weft_dataset_num_components(ds);
    if (n < 1 || weft_dataset_name(ds) == nullptr ||
        weft_dataset_component_dtype(ds, n) != WEFT_DTYPE_INVALID ||
        weft_dataset_component_dtype(ds, -1) != WEFT_DTYPE_INVALID) {
      std::fprintf(stderr, "%s made a dataset of %d components\n", what, n);
      std::abort();
    }
    for (int32_t i = 0; i < n; ++i)
      if (weft_dtype_size(weft_dataset_component_dtype(ds, i)) == 0)
        std::abort();
    if (work > kMaxWork || pool.size() >= 12) {
      weft_dataset_destroy(ds);
      return;
    }
    ++stats.kept[what];
    pool.push_back({ds, bound, work});
  }

  // Any dataset of the pool, sometimes NULL.
  const Entry* Any() {
    if (pool.empty() || fdp.ConsumeIntegral<uint8_t>() == 0) return nullptr;
    return &pool[fdp.ConsumeIntegralInRange<size_t>(0, pool.size() - 1)];
  }

  // Usually a dataset of few elements (an interleave's input, a filter's),
  // else any.
  const Entry* Small() {
    std::vector<const Entry*> small;
    for (const Entry& e : pool)
      if (e.bound <= 16) small.push_back(&e);
    if (small.empty() || fdp.ConsumeIntegral<uint8_t>() < 64) return Any();
    return small[fdp.ConsumeIntegralInRange<size_t>(0, small.size() - 1)];
  }

  void Range() {
    const int64_t start = Count(fdp), stop = Count(fdp), step = Count(fdp);
    __int128 count = 0;
    if (step > 0 && stop > start)
      count = ((__int128)stop - start + step - 1) / step;
    if (step < 0 && stop < start)
      count = ((__int128)start - stop - step - 1) / -(__int128)step;
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_range(start, stop, step, &ds);
    Keep(st, ds, count > kInf ? kInf : static_cast<int64_t>(count), 1,
         "range");
  }

  // 1 to 3 components of up to kMaxElements each, dimension 0 usually
  // shared; sometimes a scalar or a NULL.
  void Slices() {
    const int n = fdp.ConsumeIntegralInRange<int>(0, 3);
    const int64_t rows = fdp.ConsumeIntegralInRange<int64_t>(0, 5);
    std::vector<weft_tensor*> comps;
    for (int i = 0; i < n; ++i) {
      const uint8_t how = fdp.ConsumeIntegral<uint8_t>();
      if (how == 0) {
        comps.push_back(nullptr);
        continue;
      }
      std::vector<int64_t> dims;
      if (how != 1) {
        dims.push_back(how < 240 ? rows : fdp.ConsumeIntegralInRange<int64_t>(0, 5));
        const int rank = fdp.ConsumeIntegralInRange<int>(0, 2);
        for (int k = 0; k < rank; ++k)
          dims.push_back(fdp.ConsumeIntegralInRange<int64_t>(0, 3));
      }
      const weft_dtype dtype = Pick(fdp, kDtypes);
      weft_tensor* t = nullptr;
      Check(weft_tensor_create(dtype, dims.data(),
                               static_cast<int32_t>(dims.size()), &t),
            "weft_tensor_create");
      uint8_t* p = static_cast<uint8_t*>(weft_tensor_data(t));
      const size_t bytes = weft_tensor_byte_size(t);
      for (size_t k = 0; k < bytes && fdp.remaining_bytes() > 0; ++k)
        p[k] = dtype == WEFT_BOOL ? fdp.ConsumeBool()
                                  : fdp.ConsumeIntegral<uint8_t>();
      comps.push_back(t);
    }
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_from_tensor_slices(
        comps.data(), fdp.ConsumeIntegral<uint8_t>() == 0 ? 1025 : n, &ds);
    for (weft_tensor* t : comps) weft_tensor_destroy(t);
    Keep(st, ds, rows, 1, "from_tensor_slices");
  }

  // A file of the input's bytes, as fixed-length records.
  void FixedLength() {
    const std::string bytes = fdp.ConsumeRandomLengthString(64);
    FILE* f = std::fopen(RecordPath().c_str(), "wb");
    if (f == nullptr) std::abort();
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) !=
                              bytes.size())
      std::abort();
    std::fclose(f);
    const int64_t header = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(0, 4) : Count(fdp);
    const int64_t record = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(0, 9) : Count(fdp);
    const int64_t footer = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(0, 4) : Count(fdp);
    const char* const kCompression[] = {"", nullptr, "GZIP", "ZLIB", "LZMA"};
    const char* paths[2] = {RecordPath().c_str(), RecordPath().c_str()};
    const int32_t n = fdp.ConsumeIntegralInRange<int32_t>(0, 2);
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_fixed_length_records(
        paths, n, header, record, footer, Pick(fdp, kCompression), &ds);
    Keep(st, ds, 2 * 64, 1, "fixed_length_records");
  }

  void Zip() {
    const int n = fdp.ConsumeIntegralInRange<int>(0, 3);
    std::vector<const weft_dataset*> ins;
    int64_t bound = kInf, work = 0;
    for (int i = 0; i < n; ++i) {
      const Entry* e = Any();
      ins.push_back(e ? e->ds : nullptr);
      if (e) {
        bound = std::min(bound, e->bound);
        work = Add(work, e->work);
      }
    }
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_zip(
        ins.data(), fdp.ConsumeIntegral<uint8_t>() == 0 ? 65 : n, &ds);
    Keep(st, ds, bound, work, "zip");
  }

  // A function graph over `in`'s components (their dtypes, sometimes
  // another).  Map: outputs are some of them (Identity) and constants.
  // Filter: a constant predicate, sometimes not a bool scalar.
  void Function(bool filter) {
    const Entry* in = filter ? Small() : Any();
    weft_graph* fn = nullptr;
    if (weft_graph_create(&fn) != nullptr) std::abort();
    std::vector<weft_output> inputs;
    const int32_t n = in ? weft_dataset_num_components(in->ds) : 1;
    for (int32_t i = 0; i < n; ++i) {
      weft_dtype dtype = in ? weft_dataset_component_dtype(in->ds, i)
                            : WEFT_FLOAT32;
      if (fdp.ConsumeIntegral<uint8_t>() > 240) dtype = Pick(fdp, kDtypes);
      weft_output p;
      Check(weft_graph_placeholder(fn, nullptr, dtype, nullptr, -1, &p),
            "weft_graph_placeholder");
      inputs.push_back(p);
    }
    std::vector<weft_output> outputs;
    const int num_outputs = filter ? 1 : fdp.ConsumeIntegralInRange<int>(0, 2);
    for (int k = 0; k < num_outputs; ++k) {
      weft_output o{};
      if (!filter && !inputs.empty() && fdp.ConsumeBool()) {
        weft_output x = inputs[fdp.ConsumeIntegralInRange<size_t>(
            0, inputs.size() - 1)];
        Check(weft_graph_apply(fn, "Identity", nullptr, &x, 1, &o),
              "Identity");
      } else {
        const int64_t two = 2;
        const bool vector = fdp.ConsumeIntegral<uint8_t>() > 220;
        const weft_dtype dtype = filter && fdp.ConsumeIntegral<uint8_t>() < 240
                                     ? WEFT_BOOL
                                     : Pick(fdp, kDtypes);
        weft_tensor* t = nullptr;
        Check(weft_tensor_create(dtype, &two, vector ? 1 : 0, &t),
              "weft_tensor_create");
        std::memset(weft_tensor_data(t), fdp.ConsumeBool(),
                    weft_tensor_byte_size(t));
        Check(weft_graph_constant(fn, nullptr, t, &o), "weft_graph_constant");
        weft_tensor_destroy(t);
      }
      outputs.push_back(o);
    }
    weft_dataset* ds = nullptr;
    weft_status* st;
    const int32_t num_inputs = static_cast<int32_t>(inputs.size()) -
                               (fdp.ConsumeIntegral<uint8_t>() == 0);
    if (filter) {
      st = weft_dataset_filter(in ? in->ds : nullptr, fn, inputs.data(),
                               num_inputs, outputs[0], &ds);
    } else {
      const int32_t parallel = static_cast<int32_t>(
          Capped(fdp.ConsumeIntegralInRange<int32_t>(-1, 66), 64, 3));
      st = weft_dataset_map(in ? in->ds : nullptr, fn, inputs.data(),
                            num_inputs, outputs.data(),
                            static_cast<int32_t>(outputs.size()), parallel,
                            &ds);
    }
    // The dataset keeps what it needs of the graph.
    weft_graph_destroy(fn);
    if (in == nullptr) return Keep(st, ds, 0, 1, filter ? "filter" : "map");
    // A map's element costs a session run: counted as 8 pulls.
    Keep(st, ds, in->bound,
         filter ? Mul(Add(in->bound, 1), in->work) : Mul(in->work, 8),
         filter ? "filter" : "map");
  }

  void Shuffle() {
    const Entry* in = Any();
    const int64_t buffer = Capped(Count(fdp), int64_t{1} << 30, 64);
    weft_dataset* ds = nullptr;
    weft_status* st =
        weft_dataset_shuffle(in ? in->ds : nullptr, buffer,
                             fdp.ConsumeIntegral<int64_t>(), &ds);
    const int64_t fill = in ? std::min(std::max<int64_t>(buffer, 0), in->bound) : 0;
    Keep(st, ds, in ? in->bound : 0, in ? Mul(Add(fill, 1), in->work) : 1,
         "shuffle");
  }

  void Batch(bool pad) {
    const Entry* in = Any();
    const int64_t size = Capped(Count(fdp), int64_t{1} << 30, 8);
    const int32_t drop = fdp.ConsumeIntegral<int32_t>();
    weft_dataset* ds = nullptr;
    weft_status* st =
        pad ? weft_dataset_padded_batch(in ? in->ds : nullptr, size, drop, &ds)
            : weft_dataset_batch(in ? in->ds : nullptr, size, drop, &ds);
    if (in == nullptr || size < 1) return Keep(st, ds, 0, 1, "batch");
    Keep(st, ds, Add(in->bound, size - 1) / Clamp(size), Mul(size, in->work),
         pad ? "padded_batch" : "batch");
  }

  void Repeat() {
    const Entry* in = Any();
    const int64_t count = Count(fdp);
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_repeat(in ? in->ds : nullptr, count, &ds);
    if (in == nullptr) return Keep(st, ds, 0, 1, "repeat");
    const int64_t bound =
        count < 0 ? (in->bound == 0 ? 0 : kInf) : Mul(in->bound, count);
    Keep(st, ds, bound, Add(Mul(in->work, 2), 1), "repeat");
  }

  void TakeSkip(bool take) {
    const Entry* in = Any();
    const int64_t count = Count(fdp);
    weft_dataset* ds = nullptr;
    weft_status* st = take ? weft_dataset_take(in ? in->ds : nullptr, count, &ds)
                           : weft_dataset_skip(in ? in->ds : nullptr, count, &ds);
    if (in == nullptr) return Keep(st, ds, 0, 1, take ? "take" : "skip");
    if (take) {
      Keep(st, ds, count < 0 ? in->bound : std::min(in->bound, count),
           in->work, "take");
      return;
    }
    const int64_t skipped = count < 0 ? in->bound : std::min(in->bound, count);
    Keep(st, ds, in->bound - skipped, Mul(Add(skipped, 1), in->work), "skip");
  }

  void Prefetch() {
    const Entry* in = Any();
    const int64_t buffer = Capped(Count(fdp), int64_t{1} << 20, 4);
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_prefetch(in ? in->ds : nullptr, buffer, &ds);
    Keep(st, ds, in ? in->bound : 0,
         in ? Mul(in->work, std::max<int64_t>(buffer, 1)) : 1, "prefetch");
  }

  void Interleave() {
    const Entry* in = Small();
    auto* maker = new MakerState;
    maker->salt = fdp.ConsumeIntegral<uint64_t>();
    maker->mode = fdp.ConsumeIntegralInRange<int>(0, 5);  // 4, 5: behaves
    int64_t inner_bound = 3, inner_work = 1;
    for (int i = fdp.ConsumeIntegralInRange<int>(0, 3); i > 0; --i) {
      const Entry* c = Any();
      if (c == nullptr) continue;
      weft_dataset* copy = nullptr;
      Check(weft_dataset_take(c->ds, -1, &copy), "take");
      maker->candidates.push_back(copy);
      inner_bound = std::max(inner_bound, c->bound);
      inner_work = std::max(inner_work, c->work);
    }
    // The candidates' dtypes, usually those of the first.
    std::vector<weft_dtype> types;
    if (!maker->candidates.empty() && fdp.ConsumeIntegral<uint8_t>() < 220) {
      const weft_dataset* first = maker->candidates[0];
      for (int32_t i = 0; i < weft_dataset_num_components(first); ++i)
        types.push_back(weft_dataset_component_dtype(first, i));
    } else {
      types.push_back(fdp.ConsumeIntegral<uint8_t>() < 240
                          ? WEFT_INT64
                          : static_cast<weft_dtype>(
                                fdp.ConsumeIntegralInRange<int>(-1, 20)));
    }
    // Mostly accepted, so that reading gets its turn.
    const int64_t cycle = fdp.ConsumeIntegral<uint8_t>() < 192
                              ? fdp.ConsumeIntegralInRange<int64_t>(1, 4)
                              : Capped(Count(fdp), 1024, 8);
    const int64_t block = fdp.ConsumeIntegral<uint8_t>() < 192
                              ? fdp.ConsumeIntegralInRange<int64_t>(1, 3)
                              : Count(fdp);
    const int32_t parallel = static_cast<int32_t>(
        Capped(fdp.ConsumeIntegralInRange<int32_t>(-1, 66), 64, 4));
    const uint8_t hostile = fdp.ConsumeIntegral<uint8_t>();
    weft_dataset* ds = nullptr;
    weft_status* st = weft_dataset_interleave(
        in ? in->ds : nullptr, hostile == 1 ? nullptr : Make, maker,
        hostile == 2 ? nullptr : Release, hostile == 3 ? nullptr : types.data(),
        hostile == 4 ? 0 : static_cast<int32_t>(types.size()), cycle, block,
        parallel, &ds);
    // Without `release`, the harness lets go of its maker once the
    // dataset is gone (it is destroyed here: nothing reads it).
    if (hostile == 2) {
      weft_dataset_destroy(ds);
      delete maker;
      Check(st, "interleave");
      return;
    }
    if (in == nullptr) return Keep(st, ds, 0, 1, "interleave");
    // Each element may open every input (their datasets empty), and each
    // open dataset reads up to 16 ahead.
    const int64_t opens = Mul(Add(in->bound, 1), Add(in->work, inner_work));
    Keep(st, ds, Mul(in->bound, inner_bound),
         Add(opens, Mul(Mul(cycle, 16), inner_work)),
         "interleave");
  }

  // Calls the API gets wrong on purpose.
  void Hostile() {
    weft_dataset* ds = nullptr;
    const Entry* in = Any();
    const weft_dataset* d = in ? in->ds : nullptr;
    switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: Check(weft_dataset_batch(d, 1, 0, nullptr), "batch out NULL"); break;
      case 1: Check(weft_dataset_zip(nullptr, 1, &ds), "zip NULL"); break;
      case 2: Check(weft_dataset_from_tensor_slices(nullptr, 1, &ds), "slices NULL"); break;
      case 3: Check(weft_dataset_tfrecord(nullptr, 0, nullptr, &ds), "tfrecord NULL"); break;
      case 4: {
        weft_graph* g = nullptr;
        if (weft_graph_create(&g) != nullptr) std::abort();
        weft_output comps[8];
        Check(weft_dataset_iterator(g, fdp.ConsumeBool() ? "" : nullptr, d,
                                    comps, nullptr),
              "iterator without a name");
        weft_graph_destroy(g);
        break;
      }
      default:
        (void)weft_dataset_name(nullptr);
        (void)weft_dataset_num_components(nullptr);
        (void)weft_dataset_component_dtype(nullptr, 0);
        weft_dataset_destroy(nullptr);
        break;
    }
    if (ds != nullptr) std::abort();
  }

  void Step() {
    switch (fdp.ConsumeIntegralInRange<int>(0, 17)) {
      case 0: case 1: Range(); break;
      case 2: case 3: Slices(); break;
      case 4: FixedLength(); break;
      case 5: Zip(); break;
      case 6: Function(false); break;
      case 7: Function(true); break;
      case 8: Shuffle(); break;
      case 9: Batch(false); break;
      case 10: Batch(true); break;
      case 11: Repeat(); break;
      case 12: TakeSkip(fdp.ConsumeBool()); break;
      case 13: Prefetch(); break;
      case 14: case 15: case 16: Interleave(); break;
      default: Hostile(); break;
    }
  }

  // Reads through iterator nodes in a session: get_next of one iterator or
  // both, init now and then; values must match their dataset's signature.
  void Read() {
    if (pool.empty()) return;
    weft_graph* g = nullptr;
    if (weft_graph_create(&g) != nullptr) std::abort();
    struct It {
      const Entry* entry;
      std::vector<weft_output> comps;
      weft_node* init = nullptr;
    };
    std::vector<It> its;
    for (int i = fdp.ConsumeIntegralInRange<int>(1, 2); i > 0; --i) {
      It it;
      it.entry = &pool[fdp.ConsumeIntegralInRange<size_t>(0, pool.size() - 1)];
      it.comps.resize(static_cast<size_t>(
          weft_dataset_num_components(it.entry->ds)));
      // The same name twice now and then: refused, as any node name.
      const std::string name = "it" + std::to_string(
          fdp.ConsumeIntegral<uint8_t>() < 30 ? 0 : its.size());
      weft_status* st = weft_dataset_iterator(
          g, name.c_str(), it.entry->ds, it.comps.data(),
          fdp.ConsumeBool() ? &it.init : nullptr);
      if (st == nullptr) its.push_back(std::move(it));
      Check(st, "weft_dataset_iterator");
    }
    weft_session_options o;
    weft_session_options_init(&o);
    o.devices = "/device:CPU:0";
    o.inter_op_threads = fdp.ConsumeIntegralInRange<int32_t>(1, 2);
    o.intra_op_threads = 1;
    weft_session* s = nullptr;
    Check(weft_session_create(g, &o, &s), "weft_session_create");
    for (int r = 0; s != nullptr && !its.empty() && r < kMaxReads &&
                    fdp.ConsumeIntegral<uint8_t>() > 3;
         ++r) {
      const uint8_t how = fdp.ConsumeIntegral<uint8_t>();
      if (how < 20) {
        std::vector<weft_node*> inits;
        for (const It& it : its)
          if (it.init != nullptr) inits.push_back(it.init);
        Check(weft_session_run(s, nullptr, nullptr, 0, nullptr, 0,
                               inits.data(),
                               static_cast<int32_t>(inits.size()), nullptr),
              "init");
        continue;
      }
      std::vector<weft_output> fetches;
      std::vector<weft_dtype> want;
      bool interleaved = false;
      for (size_t i = 0; i < its.size(); ++i) {
        if (its.size() > 1 && how % 3 != 2 && static_cast<size_t>(how % 3) != i)
          continue;
        const It& it = its[i];
        interleaved = interleaved ||
                      std::strstr(weft_dataset_name(it.entry->ds),
                                  "Interleave") != nullptr;
        for (size_t c = 0; c < it.comps.size(); ++c) {
          fetches.push_back(it.comps[c]);
          want.push_back(weft_dataset_component_dtype(
              it.entry->ds, static_cast<int32_t>(c)));
        }
      }
      std::vector<weft_tensor*> got(fetches.size(), nullptr);
      weft_status* st = weft_session_run(
          s, nullptr, nullptr, 0, fetches.data(),
          static_cast<int32_t>(fetches.size()), nullptr, 0, got.data());
      for (size_t i = 0; i < got.size(); ++i) {
        weft_tensor* t = got[i];
        if (st != nullptr && t != nullptr) {
          std::fprintf(stderr, "a failed run returned a value\n");
          std::abort();
        }
        if (st == nullptr) {
          if (t == nullptr || weft_tensor_dtype(t) != want[i]) {
            std::fprintf(stderr, "component %zu: not a %s\n", i,
                         weft_dtype_name(want[i]));
            std::abort();
          }
          int64_t n = 1;
          for (int32_t k = 0; k < weft_tensor_rank(t); ++k)
            n *= weft_tensor_dim(t, k);
          if (weft_tensor_byte_size(t) !=
              static_cast<size_t>(n) * weft_dtype_size(want[i]))
            std::abort();
        }
        weft_tensor_destroy(t);
      }
      ++stats.reads;
      if (st == nullptr) ++stats.elements;
      else ++stats.errors[weft_code_name(weft_status_code(st))];
      if (st == nullptr && interleaved) ++stats.interleaved;
      Check(st, "get_next");
    }
    weft_session_destroy(s);
    weft_graph_destroy(g);
  }
};

int baseline_threads = 0;
int thread_growths = 0;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // One OpenMP thread, as the sanitized tests run: a pool that grows with
  // the work would read as threads left behind.
  setenv("OMP_NUM_THREADS", "1", 0);
  setenv("OMP_THREAD_LIMIT", "1", 0);
  if (weft_kernel_count("Identity") == 0) {
    std::fprintf(stderr, "dataset: no kernel for Identity: point "
                         "WEFT_PLUGIN_PATH at the CPU plugin "
                         "(build/plugins/cpu)\n");
    std::exit(1);
  }
  (void)RecordPath();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  {
    Program p(fdp);
    for (int i = 0; i < kMaxSteps && fdp.remaining_bytes() > 0 &&
                    fdp.ConsumeIntegral<uint8_t>() > 10;
         ++i)
      p.Step();
    while (fdp.remaining_bytes() > 0 && fdp.ConsumeBool()) p.Read();
  }
  if (live_makers.load() != 0) {
    std::fprintf(stderr, "%d interleave makers not released\n",
                 live_makers.load());
    std::abort();
  }
  // Threads that outlive every dataset, session and graph: a few start
  // once for the process (the CPU plugin's); more, again and again, is a
  // leak.
  const int threads = ThreadCount();
  if (threads > baseline_threads) {
    if (baseline_threads != 0 && ++thread_growths > 20) {
      std::fprintf(stderr, "threads keep growing: %d now\n", threads);
      std::abort();
    }
    baseline_threads = threads;
  }
  return 0;
}
