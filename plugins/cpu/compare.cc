// Comparisons, logical ops and Select.
//
// Comparisons and the logical ops are binary ops with a bool result, run by
// the same broadcasting driver as the arithmetic (elementwise_binary.h).
// Bool inputs are read as "non-zero", so a stray byte such as 2 still
// compares equal to 1.  Comparisons follow IEEE: anything compared with NaN
// is false, except NotEqual, which is true.
#include <cstdint>

#include "broadcast.h"
#include "elementwise_binary.h"
#include "elementwise_types.h"
#include "kernel.h"

namespace weft_cpu {
namespace {

struct ComparisonDefaults : BinaryOpDefaults {
  static constexpr bool kBoolResult = true;
};

struct GreaterOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  template <typename T>
  static Bool Apply(T a, T b) {
    return MakeBool(a > b);
  }
};

struct GreaterEqualOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  template <typename T>
  static Bool Apply(T a, T b) {
    return MakeBool(a >= b);
  }
};

struct LessOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  template <typename T>
  static Bool Apply(T a, T b) {
    return MakeBool(a < b);
  }
};

struct LessEqualOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes;
  template <typename T>
  static Bool Apply(T a, T b) {
    return MakeBool(a <= b);
  }
};

struct EqualOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes | kBoolDtype;
  template <typename T>
  static Bool Apply(T a, T b) {
    return MakeBool(a == b);
  }
  static Bool Apply(Bool a, Bool b) { return MakeBool(Truth(a) == Truth(b)); }
};

struct NotEqualOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kNumericDtypes | kBoolDtype;
  template <typename T>
  static Bool Apply(T a, T b) {
    return MakeBool(a != b);
  }
  static Bool Apply(Bool a, Bool b) { return MakeBool(Truth(a) != Truth(b)); }
};

struct LogicalAndOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kBoolDtype;
  static Bool Apply(Bool a, Bool b) { return MakeBool(Truth(a) && Truth(b)); }
};

struct LogicalOrOp : ComparisonDefaults {
  static constexpr unsigned kDtypes = kBoolDtype;
  static Bool Apply(Bool a, Bool b) { return MakeBool(Truth(a) || Truth(b)); }
};

weft_status* LogicalNotKernel(weft_kernel_context* ctx) {
  Tensor x;
  if (weft_status* s = ReadInput(ctx, 0, &x)) return s;
  if (x.dtype != WEFT_BOOL) return UnsupportedDtype(ctx, x.dtype);
  Tensor y;
  if (weft_status* s = AllocateOutput(ctx, 0, WEFT_BOOL, x.dims, x.rank, &y)) {
    return s;
  }
  const Bool* xp = x.data<Bool>();
  Bool* yp = y.data<Bool>();
  ParallelFor(ctx, y.count, 1, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) yp[i] = MakeBool(!Truth(xp[i]));
  });
  return nullptr;
}

// ---- Select ---------------------------------------------------------------

// Select moves elements without looking at them, so one instantiation per
// element size serves every dtype (bool and the 16-bit floats included).
template <typename Word>
void SelectRows(const BroadcastPlan& plan, const Bool* condition,
                const Word* t, const Word* e, Word* z, int64_t begin,
                int64_t end) {
  // Innermost strides are 0 (one value for the whole row) or 1.
  const int32_t last = plan.rank - 1;
  const int64_t cs = plan.strides[0][last];
  const int64_t ts = plan.strides[1][last];
  const int64_t es = plan.strides[2][last];
  WalkBroadcastOperands<3>(
      plan, begin, end,
      [&](const int64_t* offsets, int64_t z_offset, int64_t n) {
        const Bool* c = condition + offsets[0];
        const Word* tp = t + offsets[1];
        const Word* ep = e + offsets[2];
        Word* zp = z + z_offset;
        for (int64_t i = 0; i < n; ++i) {
          zp[i] = Truth(c[i * cs]) ? tp[i * ts] : ep[i * es];
        }
      });
}

template <typename Word>
void SelectCompute(const weft_kernel_context* ctx, const Tensor& condition,
                   const Tensor& t, const Tensor& e, const Tensor& z) {
  const Tensor* operands[3] = {&condition, &t, &e};
  BroadcastPlan plan;
  MakeBroadcastPlan(operands, 3, z, &plan);
  ParallelFor(ctx, z.count, 1, 1, [&](int64_t begin, int64_t end) {
    SelectRows<Word>(plan, condition.data<Bool>(), t.data<Word>(),
                     e.data<Word>(), z.data<Word>(), begin, end);
  });
}

weft_status* SelectKernel(weft_kernel_context* ctx) {
  Tensor condition, t, e;
  if (weft_status* s = ReadInput(ctx, 0, &condition)) return s;
  if (weft_status* s = ReadInput(ctx, 1, &t)) return s;
  if (weft_status* s = ReadInput(ctx, 2, &e)) return s;
  if (condition.dtype != WEFT_BOOL) {
    return DtypeMismatch(ctx, "input condition", condition.dtype, WEFT_BOOL);
  }
  if (e.dtype != t.dtype) return DtypeMismatch(ctx, "input e", e.dtype, t.dtype);

  const Tensor* operands[3] = {&condition, &t, &e};
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = 0;
  if (weft_status* s = BroadcastShape(ctx, operands, 3, dims, &rank)) return s;
  Tensor z;
  if (weft_status* s = AllocateOutput(ctx, 0, t.dtype, dims, rank, &z)) {
    return s;
  }
  if (z.count == 0) return nullptr;
  switch (weft_dtype_size_of(t.dtype)) {
    case 1: SelectCompute<uint8_t>(ctx, condition, t, e, z); return nullptr;
    case 2: SelectCompute<uint16_t>(ctx, condition, t, e, z); return nullptr;
    case 4: SelectCompute<uint32_t>(ctx, condition, t, e, z); return nullptr;
    case 8: SelectCompute<uint64_t>(ctx, condition, t, e, z); return nullptr;
    default: return UnsupportedDtype(ctx, t.dtype);
  }
}

template <typename Op>
weft_status* Register(const Registrar& registrar, const char* name) {
  return RegisterForDtypes(registrar, name, Op::kDtypes,
                           Guarded<BinaryKernel<Op>>,
                           GuardedDescribed<BinaryDescribed<Op>>,
                           kBinaryOverwrites<Op>);
}

}  // namespace

weft_status* RegisterCompareKernels(const Registrar& registrar) {
  weft_status* s = nullptr;
  if ((s = Register<GreaterOp>(registrar, "Greater")) ||
      (s = Register<GreaterEqualOp>(registrar, "GreaterEqual")) ||
      (s = Register<LessOp>(registrar, "Less")) ||
      (s = Register<LessEqualOp>(registrar, "LessEqual")) ||
      (s = Register<EqualOp>(registrar, "Equal")) ||
      (s = Register<NotEqualOp>(registrar, "NotEqual")) ||
      (s = Register<LogicalAndOp>(registrar, "LogicalAnd")) ||
      (s = Register<LogicalOrOp>(registrar, "LogicalOr")) ||
      (s = registrar.Add("LogicalNot", {WEFT_BOOL},
                         Guarded<LogicalNotKernel>)) ||
      (s = registrar.Add("Select",
                         {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32, WEFT_INT64,
                          WEFT_UINT8, WEFT_BOOL, WEFT_FLOAT16, WEFT_BFLOAT16,
                          WEFT_INT8, WEFT_INT16, WEFT_UINT16, WEFT_UINT32,
                          WEFT_UINT64},
                         Guarded<SelectKernel>))) {
    return s;
  }
  return nullptr;
}

}  // namespace weft_cpu
