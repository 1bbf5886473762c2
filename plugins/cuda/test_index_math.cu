// Checks, on the host, the parts of the CUDA kernels that are plain
// arithmetic: broadcast and reduction index math against a naive reference,
// and the integer and conversion rules of the op conventions.  It needs no
// GPU, so it runs wherever the plugin builds; the kernels themselves are
// only exercised on a machine with a CUDA device.  Reports TAP.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "elementwise_ops.h"
#include "layout_attrs.h"
#include "layout_ops.h"
#include "linalg_ops.h"
#include "matmul_ops.h"
#include "random_ops.h"
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

// Select's three-way layout: random condition, t and e shapes, each a
// broadcastable variant of one output shape.
void TestSelectLayout() {
  std::mt19937 rng(11);
  bool ok = true;
  int checked = 0;
  for (int trial = 0; trial < 3000 && ok; ++trial) {
    const std::vector<int64_t> full = RandomShape(rng, 6);
    std::vector<int64_t> shapes[3];
    for (auto& shape : shapes) {
      shape.assign(full.end() - rng() % (full.size() + 1), full.end());
      for (int64_t& d : shape) {
        if (rng() % 3 == 0) d = 1;
      }
    }
    const size_t rank = full.size();
    std::vector<int64_t> out(rank, 1);
    weft_kernel_tensor tensors[3] = {Tensor(shapes[0]), Tensor(shapes[1]),
                                     Tensor(shapes[2])};
    const weft_kernel_tensor* operands[3] = {&tensors[0], &tensors[1],
                                             &tensors[2]};
    int64_t count = 1;
    for (size_t d = 0; d < rank; ++d) {
      for (const auto* t : operands) {
        const int64_t size = AlignedDim(*t, static_cast<int32_t>(rank),
                                        static_cast<int32_t>(d));
        if (size != 1) out[d] = size;
      }
      count *= out[d];
    }
    OperandsLayout<3> layout{};
    if (!CoalesceOperands<3>(operands, out.data(), static_cast<int32_t>(rank),
                             &layout)) {
      ok = false;
      break;
    }
    for (int64_t i = 0; i < count && ok; ++i) {
      int64_t offsets[3];
      OperandOffsets(layout, i, offsets);
      const std::vector<int64_t> coords = Coords(i, out);
      for (int k = 0; k < 3; ++k) {
        ok = ok && offsets[k] == BroadcastIndex(shapes[k], coords);
      }
    }
    ++checked;
    if (!ok) std::printf("# select layout mismatch at trial %d\n", trial);
  }
  Report(ok && checked == 3000,
         "Select's three-operand offsets match NumPy rules on 3000 shapes");
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

// ---- FloorDiv, FloorMod, Pow, Maximum/Minimum, comparisons ----

// Python's floor division and remainder, from the exact quotient: an
// independent route to what the CPU plugin's FloorDivOp/FloorModOp give
// (wrapped to T, so MIN // -1 is MIN).
template <typename T>
bool CheckFloorPair(T a, T b) {
  const __int128 x = a, y = b;
  __int128 q = x / y;
  if (q * y != x && ((x < 0) != (y < 0))) q -= 1;
  const __int128 r = x - q * y;
  DivisionCheck none{nullptr, 0};
  const T div = ApplyBinary<kFloorDiv, T>(a, b, none);
  const T mod = ApplyBinary<kFloorMod, T>(a, b, none);
  const bool ok = div == static_cast<T>(static_cast<uint64_t>(q)) &&
                  mod == static_cast<T>(static_cast<int64_t>(r));
  if (!ok) {
    std::printf("# floor %lld, %lld: got %lld, %lld\n",
                static_cast<long long>(a), static_cast<long long>(b),
                static_cast<long long>(div), static_cast<long long>(mod));
  }
  return ok;
}

template <typename T>
bool CheckFloorEveryPair() {
  bool ok = true;
  for (int a = std::numeric_limits<T>::min();
       a <= std::numeric_limits<T>::max() && ok; ++a) {
    for (int b = std::numeric_limits<T>::min();
         b <= std::numeric_limits<T>::max() && ok; ++b) {
      if (b != 0) ok = CheckFloorPair<T>(static_cast<T>(a), static_cast<T>(b));
    }
  }
  return ok;
}

template <typename T>
bool CheckFloorRandom(std::mt19937_64& rng) {
  const T edges[] = {std::numeric_limits<T>::min(),
                     std::numeric_limits<T>::max(), T(1), T(2), T(3), T(7)};
  bool ok = true;
  for (int i = 0; i < 20000 && ok; ++i) {
    // Small divisors often, so that remainders are not mostly a itself.
    T a = static_cast<T>(rng());
    T b = static_cast<T>(i % 3 == 0 ? rng() : rng() % 17);
    if (i % 5 == 0) a = edges[rng() % 6];
    if (i % 7 == 0) b = edges[rng() % 6];
    if (std::is_signed<T>::value && rng() % 2) b = static_cast<T>(T(0) - b);
    if (b != 0) ok = CheckFloorPair<T>(a, b);
  }
  return ok;
}

void TestFloorDivMod() {
  Report(CheckFloorEveryPair<int8_t>() && CheckFloorEveryPair<uint8_t>(),
         "integer FloorDiv/FloorMod: every int8 and uint8 pair");
  std::mt19937_64 rng(5);
  Report(CheckFloorRandom<int16_t>(rng) && CheckFloorRandom<uint16_t>(rng) &&
             CheckFloorRandom<int32_t>(rng) &&
             CheckFloorRandom<uint32_t>(rng) &&
             CheckFloorRandom<int64_t>(rng),
         "integer FloorDiv/FloorMod: random and extreme pairs, 16 to 64 bits");
  unsigned int word = 0;
  DivisionCheck check{&word, 9};
  const bool zeros = ApplyBinary<kFloorDiv, int16_t>(3, 0, check) == 0 &&
                     ApplyBinary<kFloorMod, uint64_t>(3, 0, check) == 0;
  Report(zeros && word == 9, "integer FloorDiv/FloorMod by zero report");
  // Unsigned divisors with every bit set are not -1.
  DivisionCheck none{nullptr, 0};
  Report(ApplyBinary<kDiv, uint32_t>(4000000000u, 0xFFFFFFFFu, none) == 0 &&
             ApplyBinary<kFloorDiv, uint64_t>(~0ull, ~0ull, none) == 1 &&
             ApplyBinary<kFloorMod, uint32_t>(5u, 0xFFFFFFFFu, none) == 5 &&
             ApplyBinary<kDiv, uint8_t>(200, 3, none) == 66,
         "unsigned division has no MIN / -1 case");
  const double inf = INFINITY;
  const double m0 = ApplyBinary<kFloorMod, double>(4.0, -2.0, none);
  const float p0 = ApplyBinary<kFloorMod, float>(-4.0f, 2.0f, none);
  Report(ApplyBinary<kFloorMod, double>(-7.0, 2.0, none) == 1.0 &&
             ApplyBinary<kFloorMod, double>(7.0, -2.0, none) == -1.0 &&
             ApplyBinary<kFloorMod, float>(-5.5f, 2.0f, none) == 0.5f &&
             m0 == 0.0 && std::signbit(m0) && p0 == 0.0f &&
             !std::signbit(p0) &&
             std::isnan(ApplyBinary<kFloorMod, double>(inf, 2.0, none)) &&
             std::isnan(ApplyBinary<kFloorMod, double>(1.0, 0.0, none)) &&
             ApplyBinary<kFloorMod, double>(5.0, inf, none) == 5.0 &&
             ApplyBinary<kFloorMod, double>(-5.0, inf, none) == inf,
         "float FloorMod has the divisor's sign (Python), zeros included");
  Report(ApplyBinary<kFloorDiv, double>(-7.0, 2.0, none) == -4.0 &&
             ApplyBinary<kFloorDiv, float>(7.0f, 2.0f, none) == 3.0f &&
             ApplyBinary<kFloorDiv, double>(1.0, 0.1, none) == 10.0 &&
             ApplyBinary<kFloorDiv, double>(-1.0, 0.0, none) == -inf &&
             ApplyBinary<kRealDiv, float>(1.0f, 0.0f, none) == INFINITY,
         "float FloorDiv is floor(x / y) (1 // 0.1 is 10), RealDiv IEEE");
}

// x^e by e multiplications modulo 2^64.
uint64_t SlowPow(uint64_t x, int e) {
  uint64_t r = 1;
  for (int i = 0; i < e; ++i) r *= x;
  return r;
}

void TestPow() {
  DivisionCheck none{nullptr, 0};
  std::mt19937_64 rng(3);
  bool ok = true;
  for (int i = 0; i < 5000 && ok; ++i) {
    const uint64_t base = i % 2 ? rng() : rng() % 9;
    const int e = static_cast<int>(rng() % 80);
    const uint64_t want = SlowPow(base, e);
    ok = ApplyBinary<kPow, int32_t>(static_cast<int32_t>(base), e, none) ==
             static_cast<int32_t>(want) &&
         ApplyBinary<kPow, int64_t>(static_cast<int64_t>(base), e, none) ==
             static_cast<int64_t>(want) &&
         ApplyBinary<kPow, uint8_t>(static_cast<uint8_t>(base),
                                    static_cast<uint8_t>(e), none) ==
             static_cast<uint8_t>(want);
  }
  Report(ok && ApplyBinary<kPow, int32_t>(-3, 3, none) == -27 &&
             ApplyBinary<kPow, int32_t>(0, 0, none) == 1 &&
             ApplyBinary<kPow, uint8_t>(2, 200, none) == 0,
         "integer Pow wraps like repeated Mul (5000 random pairs)");
  unsigned int word = 0;
  DivisionCheck check{&word, 4};
  Report(ApplyBinary<kPow, int64_t>(2, -1, check) == 0 && word == 4,
         "integer Pow with a negative exponent reports");
  Report(ApplyBinary<kPow, double>(2.0, -1.0, none) == 0.5 &&
             ApplyBinary<kPow, float>(4.0f, 0.5f, none) == 2.0f &&
             std::isnan(ApplyBinary<kPow, double>(-8.0, 1.0 / 3, none)),
         "float Pow is pow");
}

void TestMaximumAndCompare() {
  DivisionCheck none{nullptr, 0};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Report(std::isnan(ApplyBinary<kMaximum, float>(nan, 1.0f, none)) &&
             std::isnan(ApplyBinary<kMaximum, float>(1.0f, nan, none)) &&
             std::isnan(ApplyBinary<kMinimum, double>(2.0, NAN, none)) &&
             std::isnan(ApplyBinary<kMinimum, double>(NAN, 2.0, none)) &&
             ApplyBinary<kMaximum, float>(-INFINITY, -1.0f, none) == -1.0f &&
             ApplyBinary<kMinimum, int8_t>(-128, 127, none) == -128 &&
             ApplyBinary<kMaximum, uint64_t>(~0ull, 1, none) == ~0ull,
         "Maximum and Minimum: NaN from either side wins");
  bool nan_false = true;
  nan_false = nan_false && !ApplyBinary<kGreater, float>(nan, 1.0f, none);
  nan_false = nan_false && !ApplyBinary<kGreaterEqual, float>(nan, nan, none);
  nan_false = nan_false && !ApplyBinary<kLess, float>(1.0f, nan, none);
  nan_false = nan_false && !ApplyBinary<kLessEqual, float>(nan, 1.0f, none);
  nan_false = nan_false && !ApplyBinary<kEqual, float>(nan, nan, none);
  nan_false = nan_false && ApplyBinary<kNotEqual, float>(nan, nan, none);
  Report(nan_false, "comparisons with NaN are false except NotEqual");
  Report(ApplyBinary<kLess, uint8_t>(1, 255, none) == 1 &&
             ApplyBinary<kGreaterEqual, int64_t>(-1, -1, none) == 1 &&
             ApplyBinary<kLessEqual, int32_t>(3, 2, none) == 0,
         "comparisons give bytes 0 and 1");
  const BoolByte t1{1}, t2{2}, f{0};
  Report(ApplyBinary<kEqual>(t1, t2, none) == 1 &&
             ApplyBinary<kNotEqual>(t1, t2, none) == 0 &&
             ApplyBinary<kNotEqual>(t2, f, none) == 1 &&
             ApplyBinary<kLogicalAnd>(t2, t1, none) == 1 &&
             ApplyBinary<kLogicalAnd>(t2, f, none) == 0 &&
             ApplyBinary<kLogicalOr>(f, t2, none) == 1 &&
             ApplyBinary<kLogicalOr>(f, f, none) == 0,
         "bool ops read any nonzero byte as true and write 0 or 1");
  Report(ApplyBinary<kMul, uint16_t>(65535, 65535, none) == 1 &&
             ApplyBinary<kAdd, uint8_t>(200, 100, none) == 44 &&
             ApplyBinary<kSub, uint8_t>(1, 2, none) == 255 &&
             ApplyBinary<kMul, int16_t>(-32768, -1, none) == -32768,
         "narrow integer arithmetic wraps without overflowing int");
}

// ---- Data movement (layout_ops.h) ----

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Row-major index of `coords` in `dims`.
int64_t LinearIndex(const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& coords) {
  int64_t index = 0;
  for (size_t i = 0; i < dims.size(); ++i) index = index * dims[i] + coords[i];
  return index;
}

void TestTransposeAndTile() {
  std::mt19937 rng(21);
  bool transpose_ok = true, tile_ok = true;
  for (int trial = 0; trial < 2000 && transpose_ok && tile_ok; ++trial) {
    const std::vector<int64_t> x = RandomShape(rng, 6);
    const int32_t rank = static_cast<int32_t>(x.size());
    std::vector<int64_t> perm(rank);
    for (int32_t i = 0; i < rank; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> z(rank);
    StridedWalk walk{};
    transpose_ok = PlanTranspose(x.data(), rank, perm.data(), z.data(), &walk);
    for (int64_t i = 0; i < Product(z) && transpose_ok; ++i) {
      const std::vector<int64_t> zc = Coords(i, z);
      std::vector<int64_t> xc(rank);
      for (int32_t d = 0; d < rank; ++d) xc[perm[d]] = zc[d];
      transpose_ok = WalkOffset(walk, i) == LinearIndex(x, xc);
    }
    // Tile of at most rank 4 keeps within kMaxWalkRank dims.
    const std::vector<int64_t> t(x.begin(), x.begin() + (rank < 4 ? rank : 4));
    const int32_t t_rank = static_cast<int32_t>(t.size());
    std::vector<int64_t> multiples(t_rank), tiled(t_rank);
    for (int32_t d = 0; d < t_rank; ++d) {
      multiples[d] = rng() % 4;
      tiled[d] = t[d] * multiples[d];
    }
    tile_ok = PlanTile(t.data(), t_rank, multiples.data(), &walk);
    for (int64_t i = 0; i < Product(tiled) && tile_ok; ++i) {
      std::vector<int64_t> c = Coords(i, tiled);
      for (int32_t d = 0; d < t_rank; ++d) c[d] %= t[d];
      tile_ok = WalkOffset(walk, i) == LinearIndex(t, c);
    }
    if (!transpose_ok || !tile_ok) {
      std::printf("# layout mismatch at trial %d\n", trial);
    }
  }
  Report(transpose_ok, "Transpose offsets match a naive permutation, 2000 "
                       "random shapes and perms");
  Report(tile_ok, "Tile offsets match coordinates modulo x's dims, 2000 "
                  "random shapes and multiples");
}

// Slice, Pad, Concat, Split, Pack, Unpack and the box gradients all move a
// box at `begin` within an outer tensor.
void TestBoxes() {
  std::mt19937 rng(23);
  bool ok = true;
  for (int trial = 0; trial < 3000 && ok; ++trial) {
    const std::vector<int64_t> outer = RandomShape(rng, 6);
    const int32_t rank = static_cast<int32_t>(outer.size());
    std::vector<int64_t> box(rank), begin(rank);
    for (int32_t d = 0; d < rank; ++d) {
      box[d] = rng() % (outer[d] + 1);
      begin[d] = rng() % (outer[d] - box[d] + 1);
    }
    StridedWalk walk{};
    int64_t corner = -1;
    ok = PlanBox(outer.data(), rank, box.data(), begin.data(), &walk,
                 &corner);
    for (int64_t i = 0; i < Product(box) && ok; ++i) {
      std::vector<int64_t> c = Coords(i, box);
      for (int32_t d = 0; d < rank; ++d) c[d] += begin[d];
      ok = corner + WalkOffset(walk, i) == LinearIndex(outer, c);
    }
    if (!ok) std::printf("# box mismatch at trial %d\n", trial);
  }
  Report(ok, "box offsets (Slice, Pad, Concat, Split, Pack, Unpack, "
             "SliceGrad, PadGrad) match naive ones, 3000 random boxes");
  // Strides that run on merge: a whole row-major tensor is one dim.
  const int64_t dims[] = {2, 3, 4}, begin[] = {0, 0, 0};
  StridedWalk walk{};
  int64_t corner = 0;
  PlanBox(dims, 3, dims, begin, &walk, &corner);
  Report(walk.rank == 1 && walk.dims[0] == 24 && walk.strides[0] == 1,
         "contiguous dims merge into one");
}

// Gather and OneHot against loops over their output's coordinates.
void TestGatherAndOneHot() {
  std::mt19937 rng(29);
  bool gather_ok = true, one_hot_ok = true;
  for (int trial = 0; trial < 1000 && gather_ok && one_hot_ok; ++trial) {
    const int64_t outer = 1 + rng() % 4, limit = 1 + rng() % 5,
                  inner = 1 + rng() % 4, n = rng() % 6;
    std::vector<int64_t> idx(n);
    for (int64_t& v : idx) v = static_cast<int64_t>(rng() % (limit + 2)) - 1;
    const GatherShape shape{n, limit, inner};
    int64_t e = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < inner; ++i, ++e) {
          int64_t source = -1;
          const bool in = GatherSource(
              shape, e, idx[GatherIndexSlot(shape, e)], &source);
          const bool want_in = idx[k] >= 0 && idx[k] < limit;
          gather_ok = gather_ok && GatherIndexSlot(shape, e) == k &&
                      in == want_in &&
                      (!in || source == (o * limit + idx[k]) * inner + i);
        }
      }
    }
    // OneHot of indices [outer, inner] with depth `limit` at the axis
    // between them.
    std::vector<int64_t> values(outer * inner);
    for (int64_t& v : values) v = static_cast<int64_t>(rng() % (limit + 2)) - 1;
    std::vector<int> hits(outer * limit * inner, 0);
    for (int64_t j = 0; j < outer * inner; ++j) {
      const int64_t t = OneHotTarget(j, limit, inner, values[j]);
      if (t >= 0) ++hits[t];
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t d = 0; d < limit; ++d) {
        for (int64_t i = 0; i < inner; ++i) {
          const int want = values[o * inner + i] == d ? 1 : 0;
          one_hot_ok = one_hot_ok && hits[(o * limit + d) * inner + i] == want;
        }
      }
    }
  }
  Report(gather_ok, "Gather sources and out-of-range indices, 1000 random "
                    "shapes");
  Report(one_hot_ok, "OneHot targets; indices outside [0, depth) write "
                     "nothing, 1000 random shapes");
}

// GatherGrad against the CPU's way: zeros, then each gathered slice's
// gradient added in the indices' order.
void TestGatherGrad() {
  std::mt19937 rng(37);
  bool ok = true;
  for (int trial = 0; trial < 500 && ok; ++trial) {
    const int64_t outer = 1 + rng() % 3, limit = 1 + rng() % 5,
                  inner = 1 + rng() % 3, n = rng() % 7;
    std::vector<int64_t> idx(n);
    for (int64_t& v : idx) v = static_cast<int64_t>(rng() % limit);
    std::vector<double> grad(outer * n * inner);
    for (double& g : grad) g = std::ldexp(static_cast<double>(rng() % 1000), -7);
    std::vector<double> want(outer * limit * inner, 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < inner; ++i) {
          want[(o * limit + idx[j]) * inner + i] +=
              grad[(o * n + j) * inner + i];
        }
      }
    }
    const GatherShape shape{n, limit, inner};
    for (int64_t e = 0; e < outer * limit * inner && ok; ++e) {
      ok = GatherGradElement(grad.data(), idx.data(), shape, e) == want[e];
    }
  }
  Report(ok, "GatherGrad sums match a scatter-add in index order, 500 "
             "random shapes");
}

void TestEncodeElement() {
  using weft_plugin_kit::EncodeElement;
  uint64_t b[10] = {};
  const bool ok = EncodeElement(1.0, WEFT_FLOAT16, &b[0]) &&
                  EncodeElement(-2.0, WEFT_BFLOAT16, &b[1]) &&
                  EncodeElement(300.0, WEFT_INT8, &b[2]) &&
                  EncodeElement(-1.9, WEFT_INT32, &b[3]) &&
                  EncodeElement(-1.0, WEFT_UINT8, &b[4]) &&
                  EncodeElement(0.5, WEFT_BOOL, &b[5]) &&
                  EncodeElement(1.5, WEFT_FLOAT32, &b[6]) &&
                  EncodeElement(65504.0, WEFT_UINT16, &b[7]) &&
                  EncodeElement(1.0 + 1.0 / 2048, WEFT_FLOAT16, &b[8]) &&
                  EncodeElement(-129.0, WEFT_INT8, &b[9]);
  Report(ok && b[0] == 0x3c00 && b[1] == 0xc000 && b[2] == 0 &&
             b[3] == 0xffffffffu && b[4] == 0 && b[5] == 1 &&
             b[6] == 0x3fc00000u && b[7] == 65504 && b[8] == 0x3c00 &&
             b[9] == 0,
         "Pad's constant as an element: truncation, 0 out of range, half "
         "ties to even");
}

// ---- Prod, Max, Min, ArgMax, ArgMin (reduce_ops.h) ----

// Folds `values` the way the per-block kernel may: split among `threads`
// strided partials, then the partials combined pairwise in a shuffled order.
template <int K, typename T>
T BlockFold(const std::vector<T>& values, int threads, std::mt19937& rng) {
  using A = ReduceAccumulator<K, T>;
  std::vector<A> partial(threads, ReduceIdentity<K, T>());
  for (size_t r = 0; r < values.size(); ++r) {
    partial[r % threads] =
        ReduceCombine<K>(partial[r % threads], static_cast<A>(values[r]));
  }
  while (partial.size() > 1) {
    std::shuffle(partial.begin(), partial.end(), rng);
    const A b = partial.back();
    partial.pop_back();
    partial.back() = ReduceCombine<K>(partial.back(), b);
  }
  return ReduceFinish<K, T>(partial[0], static_cast<int64_t>(values.size()));
}

template <typename T>
bool CheckMaxMin(std::mt19937& rng, bool with_nan) {
  bool ok = true;
  for (int trial = 0; trial < 500 && ok; ++trial) {
    std::vector<T> v(1 + rng() % 40);
    for (T& e : v) e = static_cast<T>(static_cast<int>(rng() % 200) - 100);
    if constexpr (std::is_floating_point<T>::value) {
      if (with_nan && rng() % 2) v[rng() % v.size()] = static_cast<T>(NAN);
    }
    bool nan = false;
    T max = v[0], min = v[0];
    for (T e : v) {
      nan = nan || e != e;
      if (e > max) max = e;
      if (e < min) min = e;
    }
    const T got_max = BlockFold<kReduceMax>(v, 1 + rng() % 8, rng);
    const T got_min = BlockFold<kReduceMin>(v, 1 + rng() % 8, rng);
    ok = nan ? (got_max != got_max && got_min != got_min)
             : (got_max == max && got_min == min);
  }
  return ok;
}

// The CPU's ArgMax/ArgMin scan: the first maximum, or the first NaN.
template <bool kMax, typename T>
int64_t NaiveArg(const std::vector<T>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != v[i]) return static_cast<int64_t>(i);
  }
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (kMax ? v[i] > v[best] : v[i] < v[best]) best = i;
  }
  return static_cast<int64_t>(best);
}

template <bool kMax, typename T>
int64_t KernelArg(const std::vector<T>& v) {
  T best = v[0];
  int64_t index = 0;
  for (size_t k = 1; k < v.size(); ++k) {
    if (ArgBetter<kMax>(v[k], best)) {
      best = v[k];
      index = static_cast<int64_t>(k);
    }
  }
  return index;
}

void TestReduceKinds() {
  std::mt19937 rng(31);
  Report(CheckMaxMin<float>(rng, true) && CheckMaxMin<double>(rng, true) &&
             CheckMaxMin<int32_t>(rng, false) &&
             CheckMaxMin<int64_t>(rng, false),
         "Max and Min over any split into partials: the extreme, or NaN when "
         "any element is");
  Report(BlockFold<kReduceMax, uint8_t>({0, 0}, 2, rng) == 0 &&
             BlockFold<kReduceMin, uint8_t>({255, 255}, 3, rng) == 255 &&
             BlockFold<kReduceMax, int32_t>({INT32_MIN}, 4, rng) ==
                 INT32_MIN &&
             BlockFold<kReduceMin, int64_t>({INT64_MAX}, 4, rng) ==
                 INT64_MAX &&
             BlockFold<kReduceMax, float>({-INFINITY}, 4, rng) == -INFINITY,
         "Max and Min identities are the type's ends");
  // Integer Prod and Sum wrap to T's width whatever the grouping.
  bool wrap_ok = true;
  for (int trial = 0; trial < 500 && wrap_ok; ++trial) {
    std::vector<int32_t> v32(1 + rng() % 30);
    std::vector<uint8_t> v8(v32.size());
    uint32_t prod32 = 1;
    uint8_t prod8 = 1, sum8 = 0;
    for (size_t i = 0; i < v32.size(); ++i) {
      v32[i] = static_cast<int32_t>(rng());
      v8[i] = static_cast<uint8_t>(rng());
      prod32 *= static_cast<uint32_t>(v32[i]);
      prod8 = static_cast<uint8_t>(prod8 * v8[i]);
      sum8 = static_cast<uint8_t>(sum8 + v8[i]);
    }
    wrap_ok = BlockFold<kReduceProd>(v32, 1 + rng() % 8, rng) ==
                  static_cast<int32_t>(prod32) &&
              BlockFold<kReduceProd>(v8, 1 + rng() % 8, rng) == prod8 &&
              BlockFold<kReduceSum>(v8, 1 + rng() % 8, rng) == sum8;
  }
  Report(wrap_ok, "integer Prod and uint8 Sum wrap to the type's width");
  Report(BlockFold<kReduceMean, uint8_t>({255, 255, 1}, 2, rng) == 170 &&
             BlockFold<kReduceProd, double>({1.5, -2.0, 4.0}, 2, rng) == -12.0,
         "uint8 Mean sums wide and truncates; float Prod");
  bool arg_ok = true;
  for (int trial = 0; trial < 3000 && arg_ok; ++trial) {
    std::vector<float> v(1 + rng() % 12);
    for (float& e : v) {
      const unsigned pick = rng() % 10;
      e = pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                                                 : static_cast<float>(rng() % 4);
    }
    std::vector<int64_t> w(v.size());
    for (int64_t& e : w) e = static_cast<int64_t>(rng() % 3) - 1;
    arg_ok = KernelArg<true>(v) == NaiveArg<true>(v) &&
             KernelArg<false>(v) == NaiveArg<false>(v) &&
             KernelArg<true>(w) == NaiveArg<true>(w) &&
             KernelArg<false>(w) == NaiveArg<false>(w);
  }
  Report(arg_ok, "ArgMax and ArgMin: first extreme, first NaN (3000 random "
                 "columns with ties, infinities and NaN)");
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
  Report(Convert<double, int8_t>(-128.9) == -128 &&
             Convert<double, int8_t>(128.0) == 0 &&
             Convert<float, uint8_t>(255.5f) == 255 &&
             Convert<float, uint8_t>(-1.0f) == 0 &&
             Convert<double, uint64_t>(18446744073709549568.0) ==
                 18446744073709549568ull &&
             Convert<double, uint64_t>(18446744073709551616.0) == 0 &&
             Convert<double, int16_t>(-32769.0) == 0 &&
             Convert<int32_t, int8_t>(300) == 44 &&
             Convert<int64_t, uint16_t>(-1) == 65535,
         "narrow integers: truncation in range, 0 outside, modular "
         "narrowing");
  const BoolByte t = Convert<double, BoolByte>(-0.5);
  const BoolByte f = Convert<float, BoolByte>(-0.0f);
  const BoolByte h = Convert<__half, BoolByte>(__float2half_rn(0.25f));
  Report(t.bits == 1 && f.bits == 0 && h.bits == 1 &&
             Convert<BoolByte, float>(BoolByte{7}) == 1.0f &&
             Convert<BoolByte, int64_t>(BoolByte{0}) == 0 &&
             Convert<double, BoolByte>(NAN).bits == 1,
         "to bool is x != 0 (NaN true); from bool 0 or 1");
  const __half half = Convert<double, __half>(1.0 + 1.0 / 2048);
  const __half big = Convert<int32_t, __half>(70000);
  const __nv_bfloat16 bf = Convert<float, __nv_bfloat16>(1.00390625f);
  Report(__half2float(half) == 1.0f && std::isinf(__half2float(big)) &&
             __bfloat162float(bf) == 1.0f &&
             Convert<__half, int32_t>(__float2half_rn(-2.75f)) == -2 &&
             Convert<__nv_bfloat16, uint8_t>(__float2bfloat16_rn(300.0f)) ==
                 0 &&
             Convert<__half, double>(__float2half_rn(0.1f)) ==
                 static_cast<double>(__half2float(__float2half_rn(0.1f))),
         "half and bfloat16 round to nearest even through float, and "
         "convert to integers like floats");
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
  const int32_t kMin32 = std::numeric_limits<int32_t>::min();
  Report(ApplyUnary<kAbs, int32_t>(kMin32) == kMin32 &&
             ApplyUnary<kAbs, int64_t>(-5) == 5 &&
             ApplyUnary<kAbs, uint8_t>(200) == 200 &&
             ApplyUnary<kSquare, int32_t>(kMin32) == 0 &&
             ApplyUnary<kSquare, uint8_t>(16) == 0 &&
             ApplyUnary<kSquare, int32_t>(46341) == -2147479015 &&
             ApplyUnary<kNeg, uint8_t>(1) == 255 &&
             ApplyUnary<kRelu, uint8_t>(200) == 200,
         "integer Abs, Square and Neg wrap (|MIN| is MIN), uint8 included");
  const float neg_zero = ApplyUnary<kSign, float>(-0.0f);
  const double abs_zero = ApplyUnary<kAbs, double>(-0.0);
  Report(ApplyUnary<kSign, double>(-3.5) == -1.0 &&
             ApplyUnary<kSign, float>(1e-30f) == 1.0f &&
             neg_zero == 0.0f && std::signbit(neg_zero) &&
             std::isnan(ApplyUnary<kSign, float>(nan)) &&
             ApplyUnary<kSign, int64_t>(-7) == -1 &&
             ApplyUnary<kSign, uint8_t>(0) == 0 &&
             ApplyUnary<kSign, uint8_t>(9) == 1 && abs_zero == 0.0 &&
             !std::signbit(abs_zero),
         "Sign keeps zeros' sign and NaN; Abs of -0 is +0");
  Report(std::isnan(ApplyUnary<kSqrt, double>(-1.0)) &&
             ApplyUnary<kSqrt, float>(INFINITY) == INFINITY &&
             ApplyUnary<kRsqrt, float>(4.0f) == 0.5f &&
             ApplyUnary<kRsqrt, double>(0.0) == INFINITY &&
             ApplyUnary<kRsqrt, double>(2.0) == 1.0 / std::sqrt(2.0) &&
             ApplyUnary<kSquare, float>(-3.0f) == 9.0f,
         "Sqrt and Rsqrt as the CPU's sqrt and 1 / sqrt");
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

// ProdGrad as the kernels compute it (ProdGroup per group, then
// ProdOthers per element through the spread layout) against the CPU's
// loops over its reduction groups, exactly, with zeros in the groups.
void TestProdGrad() {
  std::mt19937 rng(41);
  bool ok = true;
  for (int trial = 0; trial < 2000 && ok; ++trial) {
    std::vector<int64_t> dims = RandomShape(rng, 5);
    std::vector<bool> reduce(dims.size());
    bool flags[WEFT_MAX_RANK];
    int64_t flag_words[WEFT_MAX_RANK];
    for (size_t a = 0; a < dims.size(); ++a) {
      flags[a] = reduce[a] = rng() % 2;
      flag_words[a] = flags[a] ? 1 : 0;
    }
    int64_t groups = 0, size = 0;
    const std::vector<int64_t> group = CpuGroups(dims, reduce, &groups, &size);
    std::vector<double> x(group.size()), dy(groups);
    for (double& v : x) {
      v = rng() % 4 == 0 ? 0.0 : std::ldexp(static_cast<double>(rng() % 64) - 32, -3);
    }
    for (double& v : dy) v = static_cast<double>(rng() % 16) - 8;
    // The CPU's SpreadGrad<kProd>.
    std::vector<double> nonzero(groups, 1.0);
    std::vector<int64_t> zeros(groups, 0);
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == 0.0) ++zeros[group[i]]; else nonzero[group[i]] *= x[i];
    }
    const weft_kernel_tensor t = Tensor(dims);
    ReduceLayout layout{};
    bool innermost = false;
    if (!CoalesceReduce(t, flag_words, &layout, &innermost)) continue;
    const SpreadLayout spread = BuildSpread(
        dims.data(), static_cast<int32_t>(dims.size()), flags);
    std::vector<double> got_nonzero(groups);
    std::vector<int64_t> got_zeros(groups);
    for (int64_t k = 0; k < groups; ++k) {
      ProdGroup(x.data(), layout, k, &got_nonzero[k], &got_zeros[k]);
    }
    for (size_t i = 0; ok && i < x.size(); ++i) {
      const int64_t k = group[i];
      double others = 0.0;
      if (zeros[k] == 0) {
        others = nonzero[k] / x[i];
      } else if (zeros[k] == 1 && x[i] == 0.0) {
        others = nonzero[k];
      }
      const int64_t gk = SpaceOffset(static_cast<int64_t>(i), spread.rank,
                                     spread.dims, spread.strides);
      const double got =
          dy[gk] * ProdOthers(got_nonzero[gk], got_zeros[gk], x[i]);
      ok = gk == k && got_nonzero[k] == nonzero[k] &&
           got_zeros[k] == zeros[k] && got == dy[k] * others;
    }
    if (!ok) std::printf("# ProdGrad mismatch at trial %d\n", trial);
  }
  Report(ok, "ProdGrad equals the CPU's, bit for bit, on 2000 random shapes "
             "and axes with zeros");
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

// ---- Random ops (random_ops.h, philox_stream.h) ----

// Philox4x32-10's known answers (Random123's kat_vectors).
void TestPhiloxKnownAnswers() {
  struct Case {
    uint32_t in[6], out[4];
  };
  const Case cases[] = {
      {{0, 0, 0, 0, 0, 0},
       {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
        0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822,
        0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  bool ok = true;
  for (const Case& c : cases) {
    const weft_philox::RandomBits b = weft_philox::Philox4x32_10(
        c.in[0], c.in[1], c.in[2], c.in[3], c.in[4], c.in[5]);
    for (int i = 0; i < 4; ++i) ok = ok && b.word[i] == c.out[i];
  }
  Report(ok, "Philox4x32-10 gives Random123's known answers");
}

// The CPU plugin's loops (plugins/cpu/random.cc before its distributions
// moved to philox_stream.h), written out again as the reference.
template <typename T>
double CpuUniformLane(const weft_philox::RandomBits& bits, int lane) {
  if constexpr (std::is_same<T, double>::value) {
    return static_cast<double>(bits.Wide(lane) >> 11) * 0x1p-53;
  } else if constexpr (std::is_same<T, float>::value) {
    return (bits.word[lane] >> 8) * 0x1p-24;
  } else if constexpr (std::is_same<T, __half>::value) {
    return (bits.word[lane] >> 21) * 0x1p-11;
  } else {
    return (bits.word[lane] >> 24) * 0x1p-8;
  }
}

template <typename T>
void CpuNormalPair(const weft_philox::RandomBits& bits, int pair, double* z0,
                   double* z1) {
  if constexpr (sizeof(T) == 8) {
    const double u1 =
        (static_cast<double>(bits.Wide(0) >> 11) + 0.5) * 0x1p-53;
    const double u2 = static_cast<double>(bits.Wide(1) >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    *z0 = r * std::cos(2.0 * M_PI * u2);
    *z1 = r * std::sin(2.0 * M_PI * u2);
  } else {
    const float u1 = (static_cast<float>(bits.word[2 * pair] >> 9) + 0.5f) *
                     0x1p-23f;
    const float u2 =
        static_cast<float>(bits.word[2 * pair + 1] >> 8) * 0x1p-24f;
    const float r = std::sqrt(-2.0f * std::log(u1));
    *z0 = r * std::cos(static_cast<float>(2.0 * M_PI) * u2);
    *z1 = r * std::sin(static_cast<float>(2.0 * M_PI) * u2);
  }
}

template <typename T>
T CpuFromDouble(double v) {
  if constexpr (std::is_same<T, double>::value) {
    return v;
  } else {
    return Narrow<T>(static_cast<float>(v));  // Eigen's round to nearest even
  }
}

template <int kDist, typename T>
std::vector<T> CpuGenerate(const weft_philox::CounterRandom& random,
                           double mean, double stddev, int64_t n) {
  std::vector<T> out(static_cast<size_t>(n));
  constexpr int lanes = sizeof(T) == 8 ? 2 : 4;
  const int64_t groups = (n + lanes - 1) / lanes;
  for (int64_t g = 0; g < groups; ++g) {
    const weft_philox::RandomBits bits = random(static_cast<uint64_t>(g));
    const int count = static_cast<int>(std::min<int64_t>(lanes, n - g * lanes));
    T* at = out.data() + g * lanes;
    if constexpr (kDist == kRandomUniform) {
      for (int lane = 0; lane < count; ++lane) {
        at[lane] = CpuFromDouble<T>(CpuUniformLane<T>(bits, lane));
      }
    } else {
      double z[4] = {};
      for (int pair = 0; pair < lanes / 2; ++pair) {
        CpuNormalPair<T>(bits, pair, &z[2 * pair], &z[2 * pair + 1]);
      }
      for (int lane = 0; lane < count; ++lane) {
        for (uint32_t stream = 1;
             kDist == kRandomTruncatedNormal && std::fabs(z[lane]) > 2.0;
             ++stream) {
          double again[2];
          CpuNormalPair<T>(random(static_cast<uint64_t>(g), stream), lane / 2,
                           &again[0], &again[1]);
          z[lane] = again[lane % 2];
        }
        at[lane] = CpuFromDouble<T>(mean + stddev * z[lane]);
      }
    }
  }
  return out;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The kernel's threads, one per draw, in reverse order.
template <int kDist, typename T>
std::vector<T> KernelGenerate(const weft_philox::CounterRandom& random,
                              double mean, double stddev, int64_t n) {
  std::vector<T> out(static_cast<size_t>(n));
  const int lanes = weft_philox::LanesFor(sizeof(T));
  for (int64_t g = (n + lanes - 1) / lanes; g-- > 0;) {
    RandomGroup<kDist, T>(random, g, n, mean, stddev, out.data());
  }
  return out;
}

template <int kDist, typename T>
bool CheckGenerate(int64_t n, uint64_t seed, uint64_t seed2, uint64_t run,
                   double mean, double stddev) {
  const weft_philox::CounterRandom random(seed, seed2, run);
  return SameBits(KernelGenerate<kDist, T>(random, mean, stddev, n),
                  CpuGenerate<kDist, T>(random, mean, stddev, n));
}

template <int kDist>
bool CheckGenerateAllTypes() {
  bool ok = true;
  const int64_t sizes[] = {1, 2, 3, 5, 7, 64, 1001};
  const uint64_t seeds[][3] = {{42, 7, 0}, {1, 2, 3}, {~0ull, 0, 1ull << 40},
                               {5, 6, 17}};
  for (int64_t n : sizes) {
    for (const auto& s : seeds) {
      ok = ok && CheckGenerate<kDist, float>(n, s[0], s[1], s[2], 0.5, 2.0);
      ok = ok && CheckGenerate<kDist, double>(n, s[0], s[1], s[2], -1, 0.25);
      ok = ok && CheckGenerate<kDist, __half>(n, s[0], s[1], s[2], 0, 1);
      ok = ok &&
           CheckGenerate<kDist, __nv_bfloat16>(n, s[0], s[1], s[2], 3, 0.5);
    }
  }
  return ok;
}

void TestRandomGenerators() {
  Report(CheckGenerateAllTypes<kRandomUniform>(),
         "RandomUniform's elements are the CPU's, bit for bit, every dtype");
  Report(CheckGenerateAllTypes<kRandomNormal>(),
         "RandomNormal's elements are the CPU's (same libm), every dtype");
  Report(CheckGenerateAllTypes<kRandomTruncatedNormal>(),
         "TruncatedNormal's elements and redraws are the CPU's, every dtype");
  // TruncatedNormal redraws within 2 standard deviations.
  const weft_philox::CounterRandom random(3, 4, 5);
  const std::vector<double> t =
      KernelGenerate<kRandomTruncatedNormal, double>(random, 0, 1, 4000);
  bool ok = true;
  for (double v : t) ok = ok && std::fabs(v) <= 2.0;
  Report(ok, "TruncatedNormal stays within 2 standard deviations");
}

template <typename F, typename Bits>
F CpuKeepOrZero(F v, bool keep) {
  Bits bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= Bits{0} - static_cast<Bits>(keep);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template <typename T>
bool CheckDropout(double rate, uint64_t seed, int64_t n) {
  const weft_philox::CounterRandom random(seed, 9, 2);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> value(-4, 4);
  std::vector<T> x(static_cast<size_t>(n)), cpu(x.size()), kernel(x.size());
  for (T& v : x) v = Narrow<T>(value(gen));
  if (n > 1) x[1] = Narrow<T>(-0.0f);
  // The CPU's DropoutRun.
  constexpr bool wide = std::is_same<T, double>::value;
  const double threshold_d = std::ceil(rate * 0x1p32);
  const uint64_t threshold = static_cast<uint64_t>(threshold_d);
  for (int64_t g = 0; g < (n + 3) / 4; ++g) {
    const weft_philox::RandomBits bits = random(static_cast<uint64_t>(g));
    for (int lane = 0; lane < 4 && g * 4 + lane < n; ++lane) {
      const int64_t i = g * 4 + lane;
      const bool keep = bits.word[lane] >= threshold;
      if constexpr (wide) {
        cpu[i] = CpuKeepOrZero<double, uint64_t>(x[i] * (1.0 / (1.0 - rate)),
                                                 keep);
      } else {
        const float scale = static_cast<float>(1.0 / (1.0 - rate));
        cpu[i] = Narrow<T>(
            CpuKeepOrZero<float, uint32_t>(Widen(x[i]) * scale, keep));
      }
    }
  }
  // The kernel's loop, draws in reverse order.
  const uint64_t t = weft_philox::DropoutThreshold(rate);
  for (int64_t g = (n + 3) / 4; g-- > 0;) {
    const weft_philox::RandomBits bits = random(static_cast<uint64_t>(g));
    for (int lane = 0; lane < 4 && g * 4 + lane < n; ++lane) {
      const int64_t i = g * 4 + lane;
      kernel[i] = DropoutElement<T>(bits, lane, t, 1.0 / (1.0 - rate), x[i]);
    }
  }
  return t == threshold && SameBits(cpu, kernel);
}

void TestDropout() {
  bool ok = true;
  const double rates[] = {0.1, 0.5, 0.4, 0.999, 1e-12, 0.3333333333};
  const int64_t sizes[] = {1, 3, 4, 9, 1000};
  for (double rate : rates) {
    for (int64_t n : sizes) {
      ok = ok && CheckDropout<float>(rate, 11, n);
      ok = ok && CheckDropout<double>(rate, 12, n);
      ok = ok && CheckDropout<__half>(rate, 13, n);
      ok = ok && CheckDropout<__nv_bfloat16>(rate, 14, n);
    }
  }
  Report(ok, "Dropout's masks, scales and +0s are the CPU's, every dtype");
  // About 1 - rate of the elements survive.
  const weft_philox::CounterRandom random(1, 1, 1);
  const uint64_t t = weft_philox::DropoutThreshold(0.25);
  int64_t kept = 0;
  for (int64_t g = 0; g < 25000; ++g) {
    const weft_philox::RandomBits bits = random(static_cast<uint64_t>(g));
    for (int lane = 0; lane < 4; ++lane) {
      kept += DropoutElement<float>(bits, lane, t, 1 / 0.75, 1.0f) != 0.0f;
    }
  }
  Report(kept > 74000 && kept < 76000, "Dropout keeps 1 - rate of 100000");
}

void TestShuffleOrder() {
  bool ok = true;
  const int64_t rows_list[] = {2, 3, 10, 257};
  for (int64_t rows : rows_list) {
    for (uint64_t seed = 1; seed < 6; ++seed) {
      const weft_philox::CounterRandom random(seed, seed * 3, seed + 1);
      // The CPU's Fisher-Yates and its UniformBelow.
      std::vector<int64_t> cpu(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) cpu[i] = i;
      for (int64_t i = rows - 1; i > 0; --i) {
        const uint64_t bound = static_cast<uint64_t>(i) + 1;
        const uint64_t reject_below = (0 - bound) % bound;
        uint64_t j = 0;
        bool found = false;
        for (uint32_t stream = 0; !found; ++stream) {
          const weft_philox::RandomBits bits =
              random(static_cast<uint64_t>(i), stream);
          for (int w = 0; w < 2 && !found; ++w) {
            if (bits.Wide(w) >= reject_below) {
              j = bits.Wide(w) % bound;
              found = true;
            }
          }
        }
        std::swap(cpu[i], cpu[j]);
      }
      std::vector<int64_t> kernel(static_cast<size_t>(rows));
      ShuffleOrder(random, rows, kernel.data());
      ok = ok && kernel == cpu;
      std::vector<int64_t> sorted = kernel;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < rows; ++i) ok = ok && sorted[i] == i;
    }
  }
  Report(ok, "RandomShuffle's permutation is the CPU's Fisher-Yates");
}

// BatchNormWithGlobalNormalization against the CPU's loop
// (plugins/cpu/nn_channel.cc), bit for bit.
template <typename T>
bool CheckBatchNorm(int64_t rows, int64_t c, double eps, bool scale,
                    uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> value(-3, 3), positive(0, 2);
  std::vector<T> t(static_cast<size_t>(rows * c)), mean(c), var(c), beta(c),
      gamma(c);
  for (T& v : t) v = static_cast<T>(value(gen));
  for (int64_t k = 0; k < c; ++k) {
    mean[k] = static_cast<T>(value(gen));
    var[k] = static_cast<T>(positive(gen));
    beta[k] = static_cast<T>(value(gen));
    gamma[k] = static_cast<T>(value(gen));
  }
  std::vector<T> factor(c);
  for (int64_t k = 0; k < c; ++k) {
    factor[k] = T(1) / std::sqrt(var[k] + static_cast<T>(eps));
    if (scale) factor[k] *= gamma[k];
  }
  bool ok = true;
  for (int64_t i = 0; i < rows * c; ++i) {
    const int64_t k = i % c;
    const T cpu = (t[i] - mean[k]) * factor[k] + beta[k];
    const T f = BatchNormFactor<T>(var[k], static_cast<T>(eps), gamma[k],
                                   scale);
    const T kernel = BatchNormElement<T>(t[i], mean[k], f, beta[k]);
    ok = ok && std::memcmp(&cpu, &kernel, sizeof(T)) == 0;
  }
  return ok;
}

void TestBatchNorm() {
  bool ok = true;
  for (int scale = 0; scale < 2; ++scale) {
    ok = ok && CheckBatchNorm<float>(37, 5, 1e-3, scale, 1);
    ok = ok && CheckBatchNorm<double>(37, 5, 1e-3, scale, 2);
    ok = ok && CheckBatchNorm<float>(3, 64, 1e-5, scale, 3);
    ok = ok && CheckBatchNorm<double>(1, 1, 0.0, scale, 4);
  }
  Report(ok, "BatchNormWithGlobalNormalization: the CPU's factor and formula");
}

// ---- BatchMatMul and the plain MatMul (matmul_ops.h) ----

// The batch layout against NumPy broadcasting of coordinates, on random
// shapes; refusals where two dims differ and neither is 1.
void TestMatMulBatch() {
  std::mt19937 gen(77);
  bool ok = true;
  int refused = 0, uniform_seen = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int32_t xr = 2 + static_cast<int32_t>(gen() % 4);
    const int32_t yr = 2 + static_cast<int32_t>(gen() % 4);
    std::vector<int64_t> xd(xr), yd(yr);
    for (auto& d : xd) d = 1 + gen() % 3;
    for (auto& d : yd) d = 1 + gen() % 3;
    MatMulBatch batch{};
    int32_t axis = 0;
    int64_t dx = 0, dy = 0;
    const bool fits = BroadcastMatMulBatch(xd.data(), xr, yd.data(), yr,
                                           &batch, &axis, &dx, &dy);
    // The naive rule.
    const int32_t rank = std::max(xr, yr) - 2;
    std::vector<int64_t> xb(rank, 1), yb(rank, 1), ob(rank);
    for (int32_t i = 0; i < xr - 2; ++i) xb[rank - (xr - 2) + i] = xd[i];
    for (int32_t i = 0; i < yr - 2; ++i) yb[rank - (yr - 2) + i] = yd[i];
    bool naive_fits = true;
    int64_t count = 1;
    for (int32_t i = 0; i < rank; ++i) {
      if (xb[i] != yb[i] && xb[i] != 1 && yb[i] != 1) naive_fits = false;
      ob[i] = xb[i] == 1 ? yb[i] : xb[i];
      count *= ob[i];
    }
    ok = ok && fits == naive_fits;
    if (!fits) {
      ++refused;
      ok = ok && xb[axis] == dx && yb[axis] == dy && dx != dy;
      continue;
    }
    ok = ok && batch.rank == rank && batch.count == count;
    // Where cuBLAS's strided batch takes the layout, its matrices are the
    // plain kernel's.
    int64_t x_stride = -1, y_stride = -1;
    const bool uniform = UniformBatchStrides(xd.data(), xr, yd.data(), yr,
                                             batch, 6, 35, &x_stride,
                                             &y_stride);
    uniform_seen += uniform;
    for (int64_t index = 0; index < count; ++index) {
      const std::vector<int64_t> c = Coords(index, ob);
      int64_t want_x = 0, want_y = 0;
      for (int32_t i = 0; i < rank; ++i) {
        want_x = want_x * xb[i] + (xb[i] == 1 ? 0 : c[i]);
        want_y = want_y * yb[i] + (yb[i] == 1 ? 0 : c[i]);
      }
      int64_t xi = -1, yi = -1;
      batch.Sources(index, &xi, &yi);
      ok = ok && xi == want_x && yi == want_y;
      ok = ok && (!uniform || (index * x_stride == xi * 6 &&
                               index * y_stride == yi * 35));
    }
  }
  Report(ok && refused > 0 && uniform_seen > 0,
         "BatchMatMul's batch broadcast and refusals against NumPy's rule; "
         "cuBLAS's strides where it takes the batch");
}

// One product's elements against naive op(x) · op(y): integers wrap
// (checked against exact 128-bit sums), adjoints index right, and 16-bit
// floats sum in float32.
template <typename T>
bool CheckMatMulElements(int64_t m, int64_t k, int64_t n, bool adj_x,
                         bool adj_y, std::mt19937_64& gen) {
  std::vector<T> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(k * n));
  std::vector<__int128> xv(x.size()), yv(y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const uint64_t r = gen();
    x[i] = static_cast<T>(std::is_integral<T>::value ? r : r % 7);
    xv[i] = static_cast<__int128>(x[i]);
  }
  for (size_t i = 0; i < y.size(); ++i) {
    const uint64_t r = gen();
    y[i] = static_cast<T>(std::is_integral<T>::value ? r : r % 5);
    yv[i] = static_cast<__int128>(y[i]);
  }
  bool ok = true;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      unsigned __int128 sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const __int128 a = adj_x ? xv[p * m + i] : xv[i * k + p];
        const __int128 b = adj_y ? yv[j * k + p] : yv[p * n + j];
        sum += static_cast<unsigned __int128>(a * b);
      }
      const T want = static_cast<T>(static_cast<uint64_t>(sum));
      const T got = MatMulElement<T>(x.data(), y.data(), m, k, n, adj_x,
                                     adj_y, i, j);
      ok = ok && got == want;
    }
  }
  return ok;
}

void TestMatMulElements() {
  std::mt19937_64 gen(5);
  bool ok = true;
  for (int adj = 0; adj < 4; ++adj) {
    const bool ax = adj & 1, ay = adj & 2;
    ok = ok && CheckMatMulElements<int32_t>(3, 7, 5, ax, ay, gen);
    ok = ok && CheckMatMulElements<int64_t>(4, 9, 2, ax, ay, gen);
    ok = ok && CheckMatMulElements<double>(5, 3, 6, ax, ay, gen);
    ok = ok && CheckMatMulElements<float>(1, 11, 1, ax, ay, gen);
  }
  Report(ok, "matrix product elements: integers wrap, adjoints index right");
  // float16 and bfloat16: widened, summed in float32, rounded once.
  const __half hx[3] = {__float2half_rn(1.0f), __float2half_rn(0x1p-11f),
                        __float2half_rn(0x1p-11f)};
  const __half hy[3] = {__float2half_rn(1.0f), __float2half_rn(1.0f),
                        __float2half_rn(1.0f)};
  // 1 + 2^-11 + 2^-11 = 1 + 2^-10 in float32; half rounding after each
  // step would give 1 twice (ties to even).
  const float h = __half2float(
      MatMulElement<__half>(hx, hy, 1, 3, 1, false, false, 0, 0));
  const __nv_bfloat16 bx[2] = {__float2bfloat16_rn(256.0f),
                               __float2bfloat16_rn(1.0f)};
  const __nv_bfloat16 by[2] = {__float2bfloat16_rn(1.0f),
                               __float2bfloat16_rn(1.0f)};
  const float b = __bfloat162float(
      MatMulElement<__nv_bfloat16>(bx, by, 1, 2, 1, false, false, 0, 0));
  Report(h == 1.0f + 0x1p-10f && b == 256.0f,
         "float16 and bfloat16 products sum in float32 and round once");
}

// ---- MatrixInverse and MatrixDeterminant (linalg_ops.h) ----

template <typename T>
bool Invert(const std::vector<T>& a, int64_t n, bool adjoint,
            std::vector<T>* out) {
  std::vector<T> work(static_cast<size_t>(n * n));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  out->assign(static_cast<size_t>(n * n), T(7));
  return InvertMatrix<T>(a.data(), out->data(), work.data(), perm.data(), n,
                         adjoint);
}

template <typename T>
T Determinant(const std::vector<T>& a, int64_t n) {
  std::vector<T> work(static_cast<size_t>(n * n) + 1);
  std::vector<int64_t> perm(static_cast<size_t>(n) + 1);
  return MatrixDeterminantOf<T>(a.data(), work.data(), perm.data(), n);
}

// Naive determinant by Gaussian elimination in long double.
long double NaiveDeterminant(std::vector<long double> a, int64_t n) {
  long double det = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r) {
      if (std::fabs(a[r * n + c]) > std::fabs(a[p * n + c])) p = r;
    }
    if (a[p * n + c] == 0) return 0;
    if (p != c) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
      det = -det;
    }
    det *= a[c * n + c];
    for (int64_t r = c + 1; r < n; ++r) {
      const long double f = a[r * n + c] / a[c * n + c];
      for (int64_t j = c; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
    }
  }
  return det;
}

template <typename T>
bool CheckRandomInverses(double tolerance) {
  std::mt19937 gen(31);
  std::uniform_real_distribution<double> value(-1, 1);
  bool ok = true;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = 1 + trial % 9;
    std::vector<T> a(static_cast<size_t>(n * n));
    // Diagonally weighted so the matrices are well conditioned.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        a[i * n + j] = static_cast<T>(value(gen) + (i == j ? 3.0 : 0.0));
      }
    }
    std::vector<T> inv, adj;
    ok = ok && Invert(a, n, false, &inv) && Invert(a, n, true, &adj);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        long double sum = 0;
        for (int64_t p = 0; p < n; ++p) {
          sum += static_cast<long double>(a[i * n + p]) * inv[p * n + j];
        }
        ok = ok && std::fabs(sum - (i == j ? 1 : 0)) < tolerance;
        ok = ok && adj[j * n + i] == inv[i * n + j];
      }
    }
    std::vector<long double> wide(a.begin(), a.end());
    const long double want = NaiveDeterminant(wide, n);
    ok = ok && std::fabs(Determinant(a, n) - want) <=
                   tolerance * std::fabs(want);
  }
  return ok;
}

void TestLinalg() {
  Report(CheckRandomInverses<double>(1e-12) &&
             CheckRandomInverses<float>(1e-4),
         "MatrixInverse times the matrix is I; the adjoint is the transpose; "
         "determinants match Gaussian elimination");
  // The CPU's refusals: exactly singular, pivot at most n·ε of the largest,
  // NaN and infinity anywhere (even above every pivot); zeros written.
  std::vector<double> out;
  bool ok = !Invert<double>({1, 2, 2, 4}, 2, false, &out) &&
            out == std::vector<double>(4, 0.0);
  ok = ok && !Invert<double>({1, 0, 0, 2 * DBL_EPSILON}, 2, false, &out);
  ok = ok && Invert<double>({1, 0, 0, 8 * DBL_EPSILON}, 2, false, &out);
  ok = ok && !Invert<double>({1, NAN, 0, 1}, 2, false, &out);
  ok = ok && !Invert<double>({1, INFINITY, 0, 1}, 2, false, &out);
  std::vector<float> fout;
  ok = ok && !Invert<float>({1, 0, 0, 2 * FLT_EPSILON}, 2, false, &fout);
  ok = ok && Invert<float>({1, 0, 0, 8 * FLT_EPSILON}, 2, false, &fout);
  ok = ok && !Invert<float>({0}, 1, false, &fout);
  // A permutation is its own inverse, exactly.
  ok = ok && Invert<double>({0, 1, 1, 0}, 2, false, &out) &&
       out == std::vector<double>({0, 1, 1, 0});
  Report(ok, "MatrixInverse refuses what the CPU refuses, with zeros");
  // Determinants: the empty product, the permutation's sign, singular 0,
  // partial products past the dtype's range, and overflow to infinity.
  bool det = Determinant<double>({}, 0) == 1.0;
  det = det && Determinant<double>({0, 1, 1, 0}, 2) == -1.0;
  det = det && Determinant<double>({1, 2, 2, 4}, 2) == 0.0;
  det = det && Determinant<double>({1e200, 0, 0, 0, 1e200, 0, 0, 0, 1e-300},
                                   3) == 1e200 * (1e200 * 1e-300);
  det = det && Determinant<float>({1e30f, 0, 0, 1e30f}, 2) == INFINITY;
  det = det &&
        Determinant<float>({1e30f, 0, 0, 0, 1e30f, 0, 0, 0, 1e-30f}, 3) ==
            1e30f;
  det = det && Determinant<double>({-1e300, 0, 0, 1e300}, 2) == -INFINITY;
  Report(det, "MatrixDeterminant: 0x0, signs, singular, range as the CPU");
}

}  // namespace

int main() {
  std::printf("TAP version 13\n");
  TestBroadcastRandom();
  TestReduceRandom();
  TestSelectLayout();
  TestIntegerArithmetic();
  TestFloorDivMod();
  TestPow();
  TestMaximumAndCompare();
  TestReduceKinds();
  TestConversions();
  TestTransposeAndTile();
  TestBoxes();
  TestGatherAndOneHot();
  TestGatherGrad();
  TestEncodeElement();
  TestUnary();
  TestSpread();
  TestProdGrad();
  TestSumToShape();
  TestUpdates();
  TestPhiloxKnownAnswers();
  TestRandomGenerators();
  TestDropout();
  TestShuffleOrder();
  TestBatchNorm();
  TestMatMulBatch();
  TestMatMulElements();
  TestLinalg();
  std::printf("1..%d\n", g_case);
  return g_failed == 0 ? 0 : 1;
}
