// Shared plumbing for the CPU plugin's kernels: the host table, statuses,
// tensor access, the exception barrier and intra-op parallelism.
//
// Kernels sit on the hot path of every node the executor runs, so the success
// path here allocates nothing, formats no string and takes no lock.  Error
// paths are marked cold and may do all of those.
#ifndef WEFT_PLUGINS_CPU_KERNEL_H_
#define WEFT_PLUGINS_CPU_KERNEL_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>

#include "thread_pool.h"
#include "work_pool.h"
#include "weft/plugin.h"
#include "weft/tensor.h"

namespace weft_cpu {

// The host's service table, set by weft_plugin_entry before any kernel is
// registered and never changed while kernels can run.
extern const weft_host_api* g_host;

// Slots appended to weft_host_api after the first release may be missing
// from an older host's (shorter) table.
#define WEFT_CPU_HOST_HAS(slot)                                  \
  (g_host->struct_size >= offsetof(weft_host_api, slot) +        \
                              sizeof(g_host->slot) &&            \
   g_host->slot != nullptr)

#define WEFT_CPU_COLD __attribute__((cold, noinline))
#define WEFT_CPU_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

// A status made by the host from a printf-style message.
WEFT_CPU_COLD WEFT_CPU_PRINTF(2, 3) weft_status* MakeStatus(int32_t code,
                                                            const char* format,
                                                            ...);

// Like MakeStatus, prefixed with the node and op so that the user can find
// the culprit in a large graph.
WEFT_CPU_COLD WEFT_CPU_PRINTF(3, 4) weft_status* NodeError(
    const weft_kernel_context* ctx, int32_t code, const char* format, ...);

// Releases a status the host handed back (an absent optional attribute).
void DiscardStatus(weft_status* status);
// The code of a host status; WEFT_OK for NULL.
int32_t StatusCode(const weft_status* status);

const char* DtypeName(int32_t dtype);
// Renders dims as "[2,3]" into `buffer` (truncating); for error messages.
const char* FormatShape(const int64_t* dims, int32_t rank, char* buffer,
                        size_t size);

// A tensor as kernels use it: the host's view with the data pointer resolved.
struct Tensor {
  int32_t dtype = WEFT_DTYPE_INVALID;
  int32_t rank = 0;
  const int64_t* dims = nullptr;
  int64_t count = 0;
  char* base = nullptr;  // first element; may be NULL when count == 0

  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(base);
  }
};

inline void FromKernelTensor(const weft_kernel_tensor& t, Tensor* out) {
  out->dtype = t.dtype;
  out->rank = t.rank;
  out->dims = t.dims;
  out->count = t.element_count;
  out->base = t.data == nullptr ? nullptr
                                : static_cast<char*>(t.data) + t.offset;
}

WEFT_CPU_COLD weft_status* RankTooLarge(const weft_kernel_context* ctx,
                                        const char* what, int32_t rank);

// Reads input `index`.  Ranks beyond WEFT_MAX_RANK are refused here so that
// every kernel may keep per-dimension state in fixed arrays.
inline weft_status* ReadInput(const weft_kernel_context* ctx, int32_t index,
                              Tensor* out) {
  weft_kernel_tensor t;
  t.struct_size = sizeof t;
  if (weft_status* s = g_host->kernel_input(ctx, index, &t)) return s;
  if (t.rank < 0 || t.rank > WEFT_MAX_RANK) {
    return RankTooLarge(ctx, "input", t.rank);
  }
  FromKernelTensor(t, out);
  return nullptr;
}

// ---- Calls with every tensor described (compute_described, host 1.8) ----

// The refusals of a described call, out of line: the host gave another
// number of tensors than the op has, a rank beyond WEFT_MAX_RANK, or an
// output the kernel would not have made (the op's shape function and the
// kernel disagree).
WEFT_CPU_COLD weft_status* DescribedArity(const weft_kernel_context* ctx,
                                          int32_t inputs, int32_t outputs);
WEFT_CPU_COLD weft_status* DescribedOutputMismatch(
    const weft_kernel_context* ctx, const Tensor& got, int32_t want_dtype,
    const int64_t* want_dims, int32_t want_rank);

// The tensors of a described call as kernels use them, `n_in` inputs and
// `n_out` outputs wanted; ranks beyond WEFT_MAX_RANK refused as ReadInput
// refuses them.
inline weft_status* ReadDescribed(const weft_kernel_context* ctx,
                                  const weft_kernel_tensor* inputs,
                                  int32_t num_inputs,
                                  const weft_kernel_tensor* outputs,
                                  int32_t num_outputs, Tensor* in,
                                  int32_t n_in, Tensor* out, int32_t n_out) {
  if (num_inputs != n_in || num_outputs != n_out)
    return DescribedArity(ctx, num_inputs, num_outputs);
  for (int32_t i = 0; i < n_in; ++i) {
    if (inputs[i].rank < 0 || inputs[i].rank > WEFT_MAX_RANK)
      return RankTooLarge(ctx, "input", inputs[i].rank);
    FromKernelTensor(inputs[i], &in[i]);
  }
  for (int32_t o = 0; o < n_out; ++o) {
    if (outputs[o].rank < 0 || outputs[o].rank > WEFT_MAX_RANK)
      return RankTooLarge(ctx, "output", outputs[o].rank);
    FromKernelTensor(outputs[o], &out[o]);
  }
  return nullptr;
}

// Whether output `z` of a described call is what the kernel would have
// allocated: `dtype` and dims[0..rank).
inline bool IsOutput(const Tensor& z, int32_t dtype, const int64_t* dims,
                     int32_t rank) {
  if (z.dtype != dtype || z.rank != rank) return false;
  for (int32_t i = 0; i < rank; ++i)
    if (z.dims[i] != dims[i]) return false;
  return true;
}

// Output `output` over input `input`'s memory where the host allows it
// (host 1.3: an update's unshared variable), else a fresh allocation.  The
// caller must compute each element of the output from the same element of
// the inputs, and must not fail once it writes.
inline weft_status* AllocateOutput(weft_kernel_context* ctx, int32_t index,
                                   int32_t dtype, const int64_t* dims,
                                   int32_t rank, Tensor* out) {
  weft_kernel_tensor t;
  t.struct_size = sizeof t;
  if (weft_status* s =
          g_host->kernel_allocate_output(ctx, index, dtype, dims, rank, &t)) {
    return s;
  }
  FromKernelTensor(t, out);
  return nullptr;
}

// Inline: element-wise kernels on scalars call it on every node.
inline weft_status* AllocateOutputOver(weft_kernel_context* ctx,
                                       int32_t input, int32_t output,
                                       int32_t dtype, const int64_t* dims,
                                       int32_t rank, Tensor* out) {
  if (!WEFT_CPU_HOST_HAS(kernel_forward_input_or_allocate))
    return AllocateOutput(ctx, output, dtype, dims, rank, out);
  weft_kernel_tensor t;
  t.struct_size = sizeof t;
  if (weft_status* s = g_host->kernel_forward_input_or_allocate(
          ctx, input, output, dtype, dims, rank, &t, nullptr)) {
    return s;
  }
  FromKernelTensor(t, out);
  return nullptr;
}

// Optional attributes: the default when absent, any other failure returned.
weft_status* OptionalBoolAttr(const weft_kernel_context* ctx, const char* name,
                              bool fallback, bool* out);
// *present is false when the attribute is absent.
weft_status* OptionalIntListAttr(const weft_kernel_context* ctx,
                                 const char* name, const int64_t** values,
                                 int32_t* count, bool* present);

// The error for an input whose dtype is not the one the kernel expects, and
// for a dtype this plugin has no kernel for.
WEFT_CPU_COLD weft_status* DtypeMismatch(const weft_kernel_context* ctx,
                                         const char* what, int32_t got,
                                         int32_t want);
WEFT_CPU_COLD weft_status* UnsupportedDtype(const weft_kernel_context* ctx,
                                            int32_t dtype);

// Turns an exception into a status: bad_alloc is RESOURCE_EXHAUSTED, the
// rest INTERNAL.  Call only from inside a catch block.
WEFT_CPU_COLD weft_status* StatusFromCurrentException(
    const weft_kernel_context* ctx) noexcept;

using KernelBody = weft_status* (*)(weft_kernel_context* ctx);

// The compute function registered with the host: the body behind an
// exception barrier.  A try block costs nothing until something throws.
template <KernelBody Body>
weft_status* Guarded(void* /*kernel_arg*/, weft_kernel_context* ctx) noexcept {
  try {
    return Body(ctx);
  } catch (...) {
    return StatusFromCurrentException(ctx);
  }
}

using DescribedBody = weft_status* (*)(weft_kernel_context* ctx,
                                      const weft_kernel_tensor* inputs,
                                      int32_t num_inputs,
                                      const weft_kernel_tensor* outputs,
                                      int32_t num_outputs);

// The same barrier for a compute_described function, flattened: the body
// (whose own noinline parts stay out of line) needs no call of its own.
template <DescribedBody Body>
__attribute__((flatten)) weft_status* GuardedDescribed(void* /*kernel_arg*/, weft_kernel_context* ctx,
                              const weft_kernel_tensor* inputs,
                              int32_t num_inputs,
                              const weft_kernel_tensor* outputs,
                              int32_t num_outputs) noexcept {
  try {
    return Body(ctx, inputs, num_inputs, outputs, num_outputs);
  } catch (...) {
    return StatusFromCurrentException(ctx);
  }
}

// ---- Intra-op parallelism ------------------------------------------------

// Below this many elements an element-wise kernel runs on the calling
// thread.  The pool's workers spin between kernels when the machine is
// idle, so handing them work costs about a microsecond; when they sleep the
// caller starts on the chunks at once and a late worker only takes what is
// left (work_pool.h).  From 128K elements (about 13 us of work at 0.1 ns
// an element) a second thread may pay.  The MLP step's 200K-element weight
// update took 13 us on one thread, 21 us on one of two (half of its
// gradient in the other core's cache), 62 us on two when each core updated
// the rows the other had computed, and 14 us on two since each chunk has a
// home thread (work_pool.h): memory-bound, it gains nothing, but no longer
// loses.
constexpr int64_t kParallelThreshold = 128 * 1024;
// Chunks per thread: the caller and the workers claim them one at a time,
// so a thread the scheduler holds back leaves its share to the others.
constexpr int64_t kChunksPerThread = 2;

// Runs fn(begin, end) over items [0, n), split across the session's
// intra-op threads (WorkPool, work_pool.h) when the items hold enough
// elements in all to pay for it.  `cycles_per_item` is a rough cost, kept
// for the callers' documentation of their loops.  The split never changes
// a result: every caller computes each item on its own.
template <typename Fn>
void ParallelFor(const weft_kernel_context* ctx, int64_t n,
                 int64_t elements_per_item, double cycles_per_item, Fn&& fn) {
  (void)cycles_per_item;
  if (n <= 0) return;
  if (n == 1 || n * elements_per_item < kParallelThreshold) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t want = g_host->kernel_intra_op_threads(ctx);
  const int threads = static_cast<int>(want < n ? want : n);
  WorkPool* pool = WorkPool::For(threads);
  if (pool == nullptr) {
    fn(int64_t{0}, n);
    return;
  }
  int64_t chunks = threads * kChunksPerThread;
  if (chunks > n) chunks = n;
  const int64_t min_items =
      (kParallelThreshold / kChunksPerThread + elements_per_item - 1) /
      elements_per_item;
  if (n / chunks < min_items) chunks = n / min_items > 1 ? n / min_items : 1;
  pool->Run(chunks, [n, chunks, &fn](int64_t i) {
    fn(n * i / chunks, n * (i + 1) / chunks);
  });
}

// ---- Registration --------------------------------------------------------

class Registrar {
 public:
  Registrar(const weft_host_api* host, weft_kernel_registrar* registrar)
      : host_(host), registrar_(registrar) {}

  // Registers `compute` for `op` on the dtypes listed for attribute
  // `dtype_attr` (NULL with an empty list: every dtype).
  weft_status* Add(const char* op, std::initializer_list<int32_t> dtypes,
                   weft_kernel_compute_fn compute,
                   const char* dtype_attr = "T") const;
  // The same with the list as an array of n dtypes (n > 0).
  weft_status* Add(const char* op, const int32_t* dtypes, int32_t n,
                   weft_kernel_compute_fn compute,
                   const char* dtype_attr = "T") const;
  // The same, with a compute_described entry (host 1.8) and the inputs its
  // output 0 may overwrite (weft_kernel_def.output_overwrites).
  weft_status* Add(const char* op, const int32_t* dtypes, int32_t n,
                   weft_kernel_compute_fn compute,
                   weft_kernel_described_fn described,
                   uint32_t output_overwrites) const;
  // The same, for a kernel that also constrains type attribute `attr2` to
  // `dtypes2` (Cast: SrcT and DstT).
  weft_status* Add(const char* op, const char* dtype_attr,
                   std::initializer_list<int32_t> dtypes, const char* attr2,
                   std::initializer_list<int32_t> dtypes2,
                   weft_kernel_compute_fn compute) const;

 private:
  const weft_host_api* host_;
  weft_kernel_registrar* registrar_;
};

// Each op family registers its kernels; the first error stops loading.
weft_status* RegisterBinaryKernels(const Registrar& registrar);
weft_status* RegisterUnaryKernels(const Registrar& registrar);
weft_status* RegisterSoftmaxKernels(const Registrar& registrar);
weft_status* RegisterReduceKernels(const Registrar& registrar);
weft_status* RegisterCastKernels(const Registrar& registrar);
weft_status* RegisterMatMulKernels(const Registrar& registrar);
weft_status* RegisterCompareKernels(const Registrar& registrar);
weft_status* RegisterArrayKernels(const Registrar& registrar);
weft_status* RegisterRandomKernels(const Registrar& registrar);
weft_status* RegisterNnKernels(const Registrar& registrar);
weft_status* RegisterLinalgKernels(const Registrar& registrar);
weft_status* RegisterTrainKernels(const Registrar& registrar);
weft_status* RegisterGradKernelsA(const Registrar& registrar);
weft_status* RegisterGradKernelsB(const Registrar& registrar);
// DecodeRaw, DecodePng, DecodeJpeg, ParseExampleFeature (decode.cc).
weft_status* RegisterDecodeKernels(const Registrar& registrar);

}  // namespace weft_cpu

#endif  // WEFT_PLUGINS_CPU_KERNEL_H_
