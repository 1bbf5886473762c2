// Checks, on the host, the parts of the CUDA kernels that are plain
// arithmetic: broadcast and reduction index math against a naive reference,
// and the integer and conversion rules of the op conventions.  It needs no
// GPU, so it runs wherever the plugin builds; the kernels themselves are
// only exercised on a machine with a CUDA device.  Reports TAP.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "elementwise_ops.h"
#include "reduce_ops.h"
#include "train_ops.h"

using namespace weft_cuda;

namespace {

int g_case = 0;
int g_failed = 0;

void Report(bool ok, const char* name) {
  ++g_case;
  if (!ok) ++g_failed;
  std::printf("%s %d - %s\n", ok ? "ok" : "not ok", g_case, name);
}

weft_kernel_tensor Tensor(const std::vector<int64_t>& dims) {
  weft_kernel_tensor t{};
  t.struct_size = sizeof(t);
  t.rank = static_cast<int32_t>(dims.size());
  t.dims = dims.data();
  t.element_count = 1;
  for (int64_t d : dims) t.element_count *= d;
  return t;
}

// Row-major linear index of `coords` (aligned to the right of a rank-`rank`
// space) in a tensor of shape `dims`, where size-1 dims are broadcast.
int64_t BroadcastIndex(const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& coords) {
  const size_t skip = coords.size() - dims.size();
  int64_t index = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    index = index * dims[i] + (dims[i] == 1 ? 0 : coords[skip + i]);
  }
  return index;
}

std::vector<int64_t> Coords(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> coords(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    coords[d] = i % dims[d];
    i /= dims[d];
  }
  return coords;
}

bool CheckBroadcast(const std::vector<int64_t>& xd,
                    const std::vector<int64_t>& yd) {
  const size_t rank = xd.size() > yd.size() ? xd.size() : yd.size();
  std::vector<int64_t> out(rank);
  weft_kernel_tensor x = Tensor(xd), y = Tensor(yd);
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t a = AlignedDim(x, static_cast<int32_t>(rank), d);
    const int64_t b = AlignedDim(y, static_cast<int32_t>(rank), d);
    out[d] = a == 1 ? b : a;
    count *= out[d];
  }
  BroadcastLayout layout{};
  if (!CoalesceBroadcast(x, y, out.data(), static_cast<int32_t>(rank),
                         &layout)) {
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t xo, yo;
    // The kernels take the linear path (step 0 or the single stride) for
    // rank <= 1 layouts; mirror that.
    if (layout.rank <= 1) {
      xo = layout.rank == 1 ? i * layout.x_strides[0] : 0;
      yo = layout.rank == 1 ? i * layout.y_strides[0] : 0;
    } else {
      BroadcastOffsets(layout, i, &xo, &yo);
    }
    const std::vector<int64_t> coords = Coords(i, out);
    if (xo != BroadcastIndex(xd, coords) || yo != BroadcastIndex(yd, coords)) {
      return false;
    }
  }
  return true;
}

bool Broadcastable(const std::vector<int64_t>& a,
                   const std::vector<int64_t>& b) {
  for (size_t i = 1; i <= a.size() && i <= b.size(); ++i) {
    const int64_t p = a[a.size() - i], q = b[b.size() - i];
    if (p != q && p != 1 && q != 1) return false;
  }
  return true;
}

std::vector<int64_t> RandomShape(std::mt19937& rng, int max_rank) {
  std::vector<int64_t> dims(rng() % (max_rank + 1));
  for (int64_t& d : dims) d = 1 + rng() % 4;
  return dims;
}

void TestBroadcastRandom() {
  std::mt19937 rng(7);
  bool ok = true;
  int checked = 0;
  for (int trial = 0; trial < 4000 && ok; ++trial) {
    std::vector<int64_t> xd = RandomShape(rng, 6);
    // y: a suffix of x's shape with some dims set to 1, or x's dims with
    // some set to 1 and a few leading ones added.
    std::vector<int64_t> yd(xd.end() - rng() % (xd.size() + 1), xd.end());
    for (int64_t& d : yd) {
      if (rng() % 3 == 0) d = 1;
    }
    for (int extra = rng() % 3; extra > 0; --extra) {
      yd.insert(yd.begin(), 1 + rng() % 3);
    }
    if (rng() % 2) std::swap(xd, yd);
    if (!Broadcastable(xd, yd)) continue;  // extras can land on x's dims
    ok = CheckBroadcast(xd, yd);
    ++checked;
    if (!ok) {
      std::printf("# broadcast mismatch at trial %d\n", trial);
    }
  }
  std::printf("# %d random broadcastable shape pairs checked\n", checked);
  Report(ok && checked > 1000,
         "broadcast offsets match NumPy rules on random shape pairs");
  Report(CheckBroadcast({2, 3, 4}, {2, 3, 4}) && CheckBroadcast({5}, {}) &&
             CheckBroadcast({}, {}) && CheckBroadcast({3, 1}, {1, 4}) &&
             CheckBroadcast({2, 1, 3, 1, 2}, {3, 4, 1}),
         "broadcast offsets on hand-picked shapes");
  // Alternating patterns past the group limit are refused, not mangled.
  std::vector<int64_t> xd, yd;
  for (int i = 0; i < 9; ++i) {
    xd.push_back(2); xd.push_back(1);
    yd.push_back(1); yd.push_back(2);
  }
  std::vector<int64_t> out(18, 2);
  weft_kernel_tensor x = Tensor(xd), y = Tensor(yd);
  BroadcastLayout layout{};
  Report(!CoalesceBroadcast(x, y, out.data(), 18, &layout),
         "too many alternating broadcast groups are refused");
}

bool CheckReduce(const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& reduced) {
  weft_kernel_tensor x = Tensor(dims);
  ReduceLayout layout{};
  bool innermost = false;
  if (!CoalesceReduce(x, reduced.data(), &layout, &innermost)) return false;
  std::vector<long long> values(x.element_count);
  std::mt19937_64 rng(dims.size() * 131 + x.element_count);
  for (long long& v : values) v = static_cast<long long>(rng() % 1000003);
  // Reference: kept dims, in order, form the output's row-major space.
  std::vector<int64_t> kept;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) kept.push_back(dims[d]);
  }
  int64_t out_count = 1;
  for (int64_t d : kept) out_count *= d;
  std::vector<long long> expected(out_count, 0);
  for (int64_t i = 0; i < x.element_count; ++i) {
    std::vector<int64_t> c = Coords(i, dims);
    int64_t o = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) o = o * dims[d] + c[d];
    }
    expected[o] += values[i];
  }
  for (int64_t o = 0; o < out_count; ++o) {
    const int64_t base = SpaceOffset(o, layout.kept_rank, layout.kept_dims,
                                     layout.kept_strides);
    long long sum = 0;
    for (int64_t r = 0; r < layout.reduced_count; ++r) {
      const int64_t at = base + SpaceOffset(r, layout.reduced_rank,
                                            layout.reduced_dims,
                                            layout.reduced_strides);
      if (at < 0 || at >= x.element_count) return false;
      sum += values[at];
    }
    if (sum != expected[o]) return false;
  }
  return true;
}

void TestReduceRandom() {
  std::mt19937 rng(11);
  bool ok = true;
  for (int trial = 0; trial < 3000 && ok; ++trial) {
    std::vector<int64_t> dims = RandomShape(rng, 6);
    std::vector<int64_t> reduced(dims.size());
    for (int64_t& r : reduced) r = rng() % 2;
    ok = CheckReduce(dims, reduced);
    if (!ok) std::printf("# reduce mismatch at trial %d\n", trial);
  }
  Report(ok, "reduction offsets match a naive sum on 3000 random shapes");
}

void TestIntegerArithmetic() {
  unsigned int word = 0;
  DivisionCheck check{&word, 42};
  const int32_t kMin32 = std::numeric_limits<int32_t>::min();
  const int64_t kMin64 = std::numeric_limits<int64_t>::min();
  Report(ApplyBinary<kDiv, int32_t>(kMin32, -1, check) == kMin32 &&
             ApplyBinary<kDiv, int64_t>(kMin64, -1, check) == kMin64 &&
             word == 0,
         "MIN / -1 wraps to MIN without an error");
  Report(ApplyBinary<kDiv, int32_t>(7, -2, check) == -3 &&
             ApplyBinary<kDiv, int32_t>(-7, 2, check) == -3,
         "integer division truncates toward zero");
  const bool zero = ApplyBinary<kDiv, int32_t>(5, 0, check) == 0;
  DivisionCheck later{&word, 43};
  const bool zero_again = ApplyBinary<kDiv, int64_t>(-5, 0, later) == 0;
  Report(zero && zero_again && word == 42,
         "division by zero gives 0 and records the first launch only");
  Report(ApplyBinary<kAdd, int32_t>(std::numeric_limits<int32_t>::max(), 1,
                                    check) == kMin32 &&
             ApplyBinary<kMul, int64_t>(kMin64, -1, check) == kMin64 &&
             ApplyUnary<kNeg, int32_t>(kMin32) == kMin32,
         "integer overflow wraps");
  Report(Finish<int32_t, true>(static_cast<unsigned long long>(-7LL), 2) ==
                 -3 &&
             Finish<int32_t, false>(0x100000005ULL, 1) == 5,
         "integer Mean truncates, int32 Sum wraps");
}

void TestConversions() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Report(Convert<double, int32_t>(nan) == 0 &&
             Convert<float, int64_t>(std::numeric_limits<float>::quiet_NaN()) ==
                 0,
         "NaN casts to integer 0");
  Report(Convert<float, int32_t>(3.9f) == 3 &&
             Convert<double, int32_t>(-3.9) == -3 &&
             Convert<double, int32_t>(2147483647.9) == 2147483647 &&
             Convert<double, int32_t>(-2147483648.9) ==
                 std::numeric_limits<int32_t>::min(),
         "float to int truncates toward zero up to the range ends");
  Report(Convert<double, int32_t>(2147483648.0) == 0 &&
             Convert<double, int32_t>(-2147483649.0) == 0 &&
             Convert<double, int64_t>(9223372036854775808.0) == 0 &&
             Convert<double, int64_t>(-9223372036854775808.0) ==
                 std::numeric_limits<int64_t>::min() &&
             Convert<float, int64_t>(1e30f) == 0 &&
             Convert<double, int32_t>(INFINITY) == 0,
         "out-of-range floats cast to 0");
  Report(Convert<int64_t, int32_t>(0x100000005LL) == 5 &&
             Convert<int32_t, double>(-3) == -3.0,
         "integer narrowing is modular, widening exact");
}

void TestUnary() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Report(std::isnan(ApplyUnary<kRelu, float>(nan)) &&
             ApplyUnary<kRelu, float>(-2.0f) == 0.0f &&
             ApplyUnary<kRelu, int64_t>(-5) == 0 &&
             ApplyUnary<kRelu, double>(2.5) == 2.5,
         "Relu clamps negatives and keeps NaN");
  Report(ApplyUnary<kSigmoid, float>(-1000.0f) == 0.0f &&
             ApplyUnary<kSigmoid, float>(1000.0f) == 1.0f &&
             ApplyUnary<kSigmoid, double>(0.0) == 0.5,
         "Sigmoid saturates without NaN");
}

// ---- Training ops (train_ops.h) ----

// The CPU plugin's ReductionGroups (gradient_helpers_reduce_nn.cc): the
// group index of each element of x, walking x in row-major order.
std::vector<int64_t> CpuGroups(const std::vector<int64_t>& dims,
                               const std::vector<bool>& reduce,
                               int64_t* groups, int64_t* size) {
  const int32_t rank = static_cast<int32_t>(dims.size());
  std::vector<int64_t> stride(rank);
  int64_t s = 1;
  *size = 1;
  for (int32_t a = rank - 1; a >= 0; --a) {
    stride[a] = reduce[a] ? 0 : s;
    if (reduce[a]) {
      *size *= dims[a];
    } else {
      s *= dims[a];
    }
  }
  *groups = s;
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<int64_t> out(count);
  std::vector<int64_t> index(rank, 0);
  int64_t group = 0;
  for (int64_t i = 0; i < count; ++i) {
    out[i] = group;
    for (int32_t a = rank - 1; a >= 0; --a) {
      group += stride[a];
      if (++index[a] < dims[a]) break;
      group -= stride[a] * dims[a];
      index[a] = 0;
    }
  }
  return out;
}

void TestSpread() {
  std::mt19937 rng(29);
  bool ok = true;
  int checked = 0;
  for (int trial = 0; trial < 3000 && ok; ++trial) {
    std::vector<int64_t> dims = RandomShape(rng, 6);
    std::vector<bool> reduce(dims.size());
    bool flags[WEFT_MAX_RANK];
    for (size_t a = 0; a < dims.size(); ++a) flags[a] = reduce[a] = rng() % 2;
    int64_t groups = 0, size = 0;
    const std::vector<int64_t> want = CpuGroups(dims, reduce, &groups, &size);
    const SpreadLayout l = BuildSpread(dims.data(),
                                       static_cast<int32_t>(dims.size()), flags);
    ok = l.groups == groups && l.size == size;
    for (size_t i = 0; ok && i < want.size(); ++i) {
      ok = SpaceOffset(static_cast<int64_t>(i), l.rank, l.dims, l.strides) ==
           want[i];
    }
    ++checked;
  }
  Report(ok, "SumGrad/MeanGrad spread offsets equal the CPU's reduction "
             "groups on 3000 random shapes and axes");
}

// SumToShapeOf against a naive sum: x's element at coords c adds into like's
// element at c (aligned from the right) mod like's dims.
bool CheckSumToShape(const std::vector<int64_t>& xd,
                     const std::vector<int64_t>& ld) {
  const int32_t xr = static_cast<int32_t>(xd.size());
  const int32_t lr = static_cast<int32_t>(ld.size());
  if (!SumToShapeFits(xd.data(), xr, ld.data(), lr)) return false;
  ReduceLayout layout{};
  bool innermost = false;
  if (!SumToShapeLayout(xd.data(), xr, ld.data(), lr, &layout, &innermost)) {
    return false;
  }
  int64_t count = 1, out_count = 1;
  for (int64_t d : xd) count *= d;
  for (int64_t d : ld) out_count *= d;
  std::vector<long long> values(count), want(out_count, 0), got(out_count);
  std::mt19937_64 rng(count * 7 + out_count);
  for (long long& v : values) v = static_cast<long long>(rng() % 100003);
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<int64_t> c = Coords(i, xd);
    int64_t o = 0;
    for (int32_t k = 0; k < lr; ++k) o = o * ld[k] + c[xr - lr + k] % ld[k];
    want[o] += values[i];
  }
  for (int64_t o = 0; o < out_count; ++o) {
    const int64_t base = SpaceOffset(o, layout.kept_rank, layout.kept_dims,
                                     layout.kept_strides);
    long long sum = 0;
    for (int64_t r = 0; r < layout.reduced_count; ++r) {
      const int64_t at = base + SpaceOffset(r, layout.reduced_rank,
                                            layout.reduced_dims,
                                            layout.reduced_strides);
      if (at < 0 || at >= count) return false;
      sum += values[at];
    }
    got[o] = sum;
  }
  return got == want;
}

void TestSumToShape() {
  std::mt19937 rng(31);
  bool ok = true;
  int checked = 0;
  for (int trial = 0; trial < 3000 && ok; ++trial) {
    std::vector<int64_t> ld = RandomShape(rng, 4);
    std::vector<int64_t> xd;
    for (int extra = rng() % 3; extra > 0; --extra) xd.push_back(1 + rng() % 3);
    for (int64_t l : ld) xd.push_back(l * (1 + rng() % 3));
    ok = CheckSumToShape(xd, ld);
    if (!ok) std::printf("# SumToShapeOf mismatch at trial %d\n", trial);
    ++checked;
  }
  Report(ok, "SumToShapeOf's reduction equals a naive sum on 3000 random "
             "shapes (leading dims, multiples, ones)");
  const int64_t x[] = {4, 6}, like_ok[] = {2, 3}, like_bad[] = {4, 4},
                longer[] = {1, 4, 6};
  Report(SumToShapeFits(x, 2, like_ok, 2) && !SumToShapeFits(x, 2, like_bad, 2) &&
             !SumToShapeFits(x, 2, longer, 3) && SumToShapeFits(x, 2, x, 0),
         "SumToShapeOf refuses dims that are not multiples and a longer "
         "like; sums to a scalar");
}

void TestUpdates() {
  // Adam's first step from zero moments: m = g (1 - b1), v = g^2 (1 - b2),
  // var -= alpha m / (sqrt(v) + eps), alpha = lr sqrt(1 - b2) / (1 - b1).
  const double lr = 0.002, b1 = 0.9, b2 = 0.999, eps = 1e-8, g = 0.5;
  const double alpha = AdamAlpha(lr, b1, b2);
  double var = 1.0, m = 0, v = 0;
  AdamStep(1.0, 0.0, 0.0, g, alpha, b1, b2, eps, &var, &m, &v);
  const double m_want = 0.0 + (g - 0.0) * (1 - b1);
  const double v_want = 0.0 + (g * g - 0.0) * (1 - b2);
  const double var_want =
      1.0 - (lr * std::sqrt(1 - b2) / (1 - b1)) * m_want /
                (std::sqrt(v_want) + eps);
  Report(m == m_want && v == v_want && var == var_want &&
             std::fabs(var - (1.0 - lr)) < 1e-6,
         "Adam's first step: the CPU's formula, about lr in size");
  float pv = 0, pa = 0, nv = 0, na = 0;
  MomentumStep(1.0f, 0.5f, 0.1f, 2.0f, 0.9f, false, &pv, &pa);
  MomentumStep(1.0f, 0.5f, 0.1f, 2.0f, 0.9f, true, &nv, &na);
  Report(pa == 0.5f * 0.9f + 2.0f && na == pa &&
             pv == 1.0f - 0.1f * pa &&
             nv == 1.0f - (2.0f * 0.1f + pa * 0.9f * 0.1f) &&
             DescentStep(1.0f, 0.5f, 3.0f) == 1.0f - 0.5f * 3.0f,
         "momentum (plain and Nesterov) and gradient descent: the CPU's "
         "formulas");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Report(ApplyGrad<kReluGrad, float>(3.0f, 2.0f) == 3.0f &&
             ApplyGrad<kReluGrad, float>(3.0f, 0.0f) == 0.0f &&
             ApplyGrad<kReluGrad, float>(3.0f, nan) == 0.0f &&
             ApplyGrad<kSigmoidGrad, double>(0.25, 2.0) == 2.0 * 0.25 * 0.75 &&
             ApplyGrad<kTanhGrad, double>(0.5, 2.0) == 2.0 * (1 - 0.25) &&
             ApplyGrad<kSqrtGrad, double>(2.0, 3.0) == 3.0 * 0.5 / 2.0 &&
             ApplyGrad<kRsqrtGrad, double>(2.0, 3.0) ==
                 3.0 * -0.5 * 2.0 * 2.0 * 2.0,
         "element-wise gradients: the CPU's formulas (ReluGrad of NaN is 0)");
  uint64_t bits = 0;
  bool ok = OnePattern(WEFT_FLOAT32, &bits) == 4 && bits == 0x3F800000u;
  ok = ok && OnePattern(WEFT_FLOAT64, &bits) == 8 &&
       bits == 0x3FF0000000000000ull;
  ok = ok && OnePattern(WEFT_FLOAT16, &bits) == 2 && bits == 0x3C00;
  ok = ok && OnePattern(WEFT_BFLOAT16, &bits) == 2 && bits == 0x3F80;
  ok = ok && OnePattern(WEFT_INT64, &bits) == 8 && bits == 1;
  ok = ok && OnePattern(WEFT_BOOL, &bits) == 1 && bits == 1;
  ok = ok && OnePattern(WEFT_UINT16, &bits) == 2 && bits == 1;
  Report(ok, "OnesLike's bit patterns for every fixed-size dtype");
}

}  // namespace

int main() {
  std::printf("TAP version 13\n");
  TestBroadcastRandom();
  TestReduceRandom();
  TestIntegerArithmetic();
  TestConversions();
  TestUnary();
  TestSpread();
  TestSumToShape();
  TestUpdates();
  std::printf("1..%d\n", g_case);
  return g_failed == 0 ? 0 : 1;
}
