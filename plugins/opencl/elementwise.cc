// Element-wise kernels: broadcasting binary ops, unary ops, Cast, BiasAdd,
// Identity, Fill, ZerosLike and OnesLike.  Semantics follow the CPU plugin
// (runtime/ops/CONVENTIONS.md): integers wrap, integer division by zero and
// integer Pow with a negative exponent are errors found on the device.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kernel_call.h"

namespace weft_opencl {
namespace {

// ---- Broadcasting ----

// Output dims and each input's strides over them (0 where it broadcasts),
// with size-1 dims dropped and neighbours that run contiguously in both
// inputs merged; rank 0 when both inputs have the output's shape.
struct Broadcast {
  int rank = 0;
  cl_long dims[kMaxKernelRank] = {};
  cl_long x_strides[kMaxKernelRank] = {};
  cl_long y_strides[kMaxKernelRank] = {};
};

// Fills out_dims (rank out_rank) with the broadcast shape, or returns an
// error naming both shapes.
weft_status* BroadcastShape(const KernelCall& call,
                            const weft_kernel_tensor& x,
                            const weft_kernel_tensor& y, int64_t* out_dims,
                            int32_t* out_rank) {
  const int32_t rank = x.rank > y.rank ? x.rank : y.rank;
  for (int32_t i = 0; i < rank; ++i) {
    const int32_t xi = i - (rank - x.rank), yi = i - (rank - y.rank);
    const int64_t xd = xi >= 0 ? x.dims[xi] : 1;
    const int64_t yd = yi >= 0 ? y.dims[yi] : 1;
    if (xd != yd && xd != 1 && yd != 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "shapes of x (rank %d) and y (rank %d) cannot be "
                        "broadcast: dim %d is %lld against %lld",
                        x.rank, y.rank, i, static_cast<long long>(xd),
                        static_cast<long long>(yd));
    }
    out_dims[i] = xd == 1 ? yd : xd;
  }
  *out_rank = rank;
  return nullptr;
}

weft_status* PlanBroadcast(const KernelCall& call,
                           const weft_kernel_tensor& x,
                           const weft_kernel_tensor& y,
                           const weft_kernel_tensor& z, Broadcast* plan) {
  if (SameDims(x, y)) return nullptr;
  // Walk from the innermost dim out, keeping (dim, x stride, y stride).
  int64_t x_stride = 1, y_stride = 1;
  int rank = 0;
  cl_long dims[WEFT_MAX_RANK], xs[WEFT_MAX_RANK], ys[WEFT_MAX_RANK];
  for (int32_t i = z.rank - 1; i >= 0; --i) {
    const int32_t xi = i - (z.rank - x.rank), yi = i - (z.rank - y.rank);
    const int64_t xd = xi >= 0 ? x.dims[xi] : 1;
    const int64_t yd = yi >= 0 ? y.dims[yi] : 1;
    const int64_t d = z.dims[i];
    if (d == 1) continue;
    const cl_long sx = xd == 1 ? 0 : x_stride;
    const cl_long sy = yd == 1 ? 0 : y_stride;
    x_stride *= xd;
    y_stride *= yd;
    if (rank > 0 && xs[rank - 1] * dims[rank - 1] == sx &&
        ys[rank - 1] * dims[rank - 1] == sy) {
      dims[rank - 1] *= d;  // runs on from the dim inside it
      continue;
    }
    dims[rank] = d;
    xs[rank] = sx;
    ys[rank] = sy;
    ++rank;
  }
  if (rank > kMaxKernelRank) {
    return call.Error(WEFT_UNIMPLEMENTED,
                      "broadcasting over %d independent dims; the OpenCL "
                      "kernels walk at most %d",
                      rank, kMaxKernelRank);
  }
  // The kernels walk dims outermost first.
  plan->rank = rank == 0 ? 1 : rank;
  for (int i = 0; i < rank; ++i) {
    plan->dims[i] = dims[rank - 1 - i];
    plan->x_strides[i] = xs[rank - 1 - i];
    plan->y_strides[i] = ys[rank - 1 - i];
  }
  if (rank == 0) {  // every dim is 1: a single element
    plan->dims[0] = 1;
  }
  return nullptr;
}

bool IsNumeric(int32_t dtype, bool fp64) {
  return dtype == WEFT_FLOAT32 || dtype == WEFT_INT32 ||
         dtype == WEFT_INT64 || dtype == WEFT_UINT8 ||
         (fp64 && dtype == WEFT_FLOAT64);
}

// Whether float64 kernels were registered (every device runs them).
bool g_fp64 = false;

// ---- Binary ----

// The dtypes a binary op takes, float64 last (left out on a device without
// it).  Comparisons take the CPU plugin's sets: uint8 as well, and bool for
// Equal and NotEqual.
const int32_t kFloatTypes[] = {WEFT_FLOAT32, WEFT_FLOAT64};
const int32_t kArithmeticTypes[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                                    WEFT_UINT8, WEFT_FLOAT64};
// Maximum, Minimum, FloorDiv, FloorMod: every integer width as well.
const int32_t kEveryNumericType[] = {
    WEFT_FLOAT32, WEFT_INT32,  WEFT_INT64,  WEFT_UINT8,  WEFT_INT8,
    WEFT_INT16,   WEFT_UINT16, WEFT_UINT32, WEFT_UINT64, WEFT_FLOAT64};
// LogicalAnd, LogicalOr.
const int32_t kBoolType[] = {WEFT_BOOL};
const int32_t kOrderedTypes[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                                 WEFT_UINT8, WEFT_FLOAT64};
const int32_t kEquatableTypes[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                                   WEFT_UINT8,   WEFT_BOOL,  WEFT_FLOAT64};

struct BinaryOp {
  const char* op;
  const char* kernel;  // kernel name before the dtype suffix
  const int32_t* dtypes;
  int32_t num_dtypes;  // with float64
  bool compare;        // a bool result (IEEE: NaN compares false, != true)
  bool floats = true;  // the list ends with float64

  int32_t DtypeCount() const {
    return g_fp64 || !floats ? num_dtypes : num_dtypes - 1;
  }
  bool Takes(int32_t dtype) const {
    return std::find(dtypes, dtypes + DtypeCount(), dtype) !=
           dtypes + DtypeCount();
  }
};

#define WEFT_TYPES(list) list, sizeof list / sizeof *list

const BinaryOp kBinaryOps[] = {
    {"Add", "add", WEFT_TYPES(kArithmeticTypes), false},
    {"Sub", "sub", WEFT_TYPES(kArithmeticTypes), false},
    {"Mul", "mul", WEFT_TYPES(kArithmeticTypes), false},
    {"Div", "div", WEFT_TYPES(kArithmeticTypes), false},
    {"RealDiv", "div", WEFT_TYPES(kFloatTypes), false},
    {"Pow", "pow", WEFT_TYPES(kArithmeticTypes), false},
    {"Maximum", "maximum", WEFT_TYPES(kEveryNumericType), false},
    {"Minimum", "minimum", WEFT_TYPES(kEveryNumericType), false},
    {"FloorDiv", "floor_div", WEFT_TYPES(kEveryNumericType), false},
    {"FloorMod", "floor_mod", WEFT_TYPES(kEveryNumericType), false},
    {"LogicalAnd", "logical_and", WEFT_TYPES(kBoolType), true, false},
    {"LogicalOr", "logical_or", WEFT_TYPES(kBoolType), true, false},
    {"Less", "less", WEFT_TYPES(kOrderedTypes), true},
    {"LessEqual", "less_equal", WEFT_TYPES(kOrderedTypes), true},
    {"Greater", "greater", WEFT_TYPES(kOrderedTypes), true},
    {"GreaterEqual", "greater_equal", WEFT_TYPES(kOrderedTypes), true},
    {"Equal", "equal", WEFT_TYPES(kEquatableTypes), true},
    {"NotEqual", "not_equal", WEFT_TYPES(kEquatableTypes), true},
};

#undef WEFT_TYPES

weft_status* BinaryKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const BinaryOp& op = *static_cast<const BinaryOp*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y, z;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &y)) return s;
    if (x.dtype != y.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "x is %s but y is %s; they must match",
                        weft_dtype_name_of(x.dtype),
                        weft_dtype_name_of(y.dtype));
    }
    const bool is_float = x.dtype == WEFT_FLOAT32 || x.dtype == WEFT_FLOAT64;
    if (!op.Takes(x.dtype)) return call.UnsupportedDtype(x.dtype);
    const bool divides = std::strcmp(op.kernel, "div") == 0 ||
                         std::strncmp(op.kernel, "floor_", 6) == 0;
    int64_t dims[WEFT_MAX_RANK];
    int32_t rank = 0;
    if (weft_status* s = BroadcastShape(call, x, y, dims, &rank)) return s;
    if (weft_status* s = call.AllocateOutput(
            0, op.compare ? WEFT_BOOL : x.dtype, dims, rank, &z)) {
      return s;
    }
    if (z.element_count == 0) return nullptr;
    Broadcast plan;
    if (weft_status* s = PlanBroadcast(call, x, y, z, &plan)) return s;
    ErrorArg errors = call.Unchecked();
    if (!is_float && divides) {
      errors = call.Checked(DeviceError::kDivisionByZero, x.dtype);
    } else if (!is_float && std::strcmp(op.kernel, "pow") == 0) {
      errors = call.Checked(DeviceError::kNegativeExponent, x.dtype);
    }
    char name[64];
    return call.Launch(Program::kElementwise,
                       KernelName(name, sizeof name, op.kernel, x.dtype),
                       Linear(z.element_count), Buffer(x), Buffer(y),
                       Buffer(z), static_cast<cl_long>(z.element_count),
                       static_cast<cl_int>(plan.rank), Long8(plan.dims),
                       Long8(plan.x_strides), Long8(plan.y_strides), errors);
  });
}

// ---- Unary ----

struct UnaryOp {
  const char* op;
  const char* kernel;
  bool takes_integers;
};

const UnaryOp kUnaryOps[] = {
    {"Neg", "neg", true},         {"Abs", "abs", true},
    {"Sign", "sign", true},       {"Square", "square", true},
    {"Relu", "relu", true},       {"Exp", "exp", false},
    {"Log", "log", false},        {"Sigmoid", "sigmoid", false},
    {"Tanh", "tanh", false},      {"Sqrt", "sqrt", false},
    {"Rsqrt", "rsqrt", false},
};

// Runs `kernel` (x, y, n) over x into a new output of `dtype` and x's shape.
weft_status* MapKernel(KernelCall& call, const weft_kernel_tensor& x,
                       int32_t dtype, const char* kernel) {
  weft_kernel_tensor y;
  if (weft_status* s = call.AllocateOutput(0, dtype, x.dims, x.rank, &y)) {
    return s;
  }
  if (y.element_count == 0) return nullptr;
  return call.Launch(Program::kElementwise, kernel, Linear(y.element_count),
                     Buffer(x), Buffer(y),
                     static_cast<cl_long>(y.element_count));
}

weft_status* UnaryKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const UnaryOp& op = *static_cast<const UnaryOp*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    const bool is_float = x.dtype == WEFT_FLOAT32 || x.dtype == WEFT_FLOAT64;
    if (!IsNumeric(x.dtype, g_fp64) || (!op.takes_integers && !is_float)) {
      return call.UnsupportedDtype(x.dtype);
    }
    char name[64];
    return MapKernel(call, x, x.dtype,
                     KernelName(name, sizeof name, op.kernel, x.dtype));
  });
}

weft_status* LogicalNotKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (x.dtype != WEFT_BOOL) return call.UnsupportedDtype(x.dtype);
    return MapKernel(call, x, WEFT_BOOL, "logical_not_bool");
  });
}

// ---- Identity: the input's memory, no copy ----

weft_status* IdentityKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    return call.ForwardInput(0, 0, x.dims, x.rank);
  });
}

// ---- Cast ----

// The dtypes Cast converts between (cast_<from>_<to> exists for every
// pair), float64 last.
const int32_t kCastTypes[] = {WEFT_FLOAT32, WEFT_FLOAT16, WEFT_BFLOAT16,
                              WEFT_INT32,   WEFT_INT64,   WEFT_FLOAT64};

int32_t CastTypeCount() { return g_fp64 ? 6 : 5; }

bool Castable(int32_t dtype) {
  return std::find(kCastTypes, kCastTypes + CastTypeCount(), dtype) !=
         kCastTypes + CastTypeCount();
}

weft_status* CastKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x;
    if (weft_status* s = call.Input(0, &x)) return s;
    int32_t dst = WEFT_DTYPE_INVALID;
    if (weft_status* s = call.AttrDtype("DstT", &dst)) return s;
    if (!Castable(x.dtype)) return call.UnsupportedDtype(x.dtype);
    if (!Castable(dst)) return call.UnsupportedDtype(dst);
    if (x.dtype == dst) return call.ForwardInput(0, 0, x.dims, x.rank);
    char name[64];
    std::snprintf(name, sizeof name, "cast_%s_%s", KernelSuffix(x.dtype),
                  KernelSuffix(dst));
    return MapKernel(call, x, dst, name);
  });
}

// ---- BiasAdd ----

weft_status* BiasAddKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    const char* format = nullptr;
    if (weft_status* s = call.AttrString("data_format", &format)) return s;
    if (format != nullptr && std::strcmp(format, "NHWC") != 0) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "data_format '%s' is not supported; only NHWC",
                        format);
    }
    weft_kernel_tensor x, b, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    if (weft_status* s = call.Input(1, &b)) return s;
    if (x.rank < 1 || b.rank != 1 || b.dims[0] != x.dims[x.rank - 1]) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "bias must be [C] for a value of shape [..., C]");
    }
    if (x.dtype != b.dtype) {
      return call.Error(WEFT_INVALID_ARGUMENT, "value is %s but bias is %s",
                        weft_dtype_name_of(x.dtype),
                        weft_dtype_name_of(b.dtype));
    }
    if (x.dtype != WEFT_FLOAT32 && x.dtype != WEFT_INT32 &&
        x.dtype != WEFT_INT64 && !(g_fp64 && x.dtype == WEFT_FLOAT64)) {
      return call.UnsupportedDtype(x.dtype);
    }
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    char name[64];
    return call.Launch(Program::kElementwise,
                       KernelName(name, sizeof name, "bias_add", x.dtype),
                       Linear(y.element_count), Buffer(x), Buffer(b),
                       Buffer(y), static_cast<cl_long>(y.element_count),
                       static_cast<cl_long>(b.dims[0]));
  });
}

// ---- ZerosLike, OnesLike: a fill of the output, no program ----

// One element of `dtype` holding `value` (0 or 1) into `pattern`; its size,
// or 0 for a dtype without a representation here.
size_t FillPattern(int32_t dtype, int value, unsigned char* pattern) {
  switch (dtype) {
    case WEFT_FLOAT32: {
      const float v = static_cast<float>(value);
      std::memcpy(pattern, &v, sizeof v);
      return sizeof v;
    }
    case WEFT_FLOAT64: {
      const double v = value;
      std::memcpy(pattern, &v, sizeof v);
      return sizeof v;
    }
    case WEFT_FLOAT16:
    case WEFT_BFLOAT16: {
      const uint16_t v = value == 0 ? 0 : dtype == WEFT_FLOAT16 ? 0x3C00
                                                                : 0x3F80;
      std::memcpy(pattern, &v, sizeof v);
      return sizeof v;
    }
    default: {
      const size_t size = weft_dtype_size_of(dtype);
      if (size == 0) return 0;
      // Integers and bool, little-endian as OpenCL devices store them
      // (checked against the host's order by the copy tests).
      std::memset(pattern, 0, size);
      pattern[0] = static_cast<unsigned char>(value);
      return size;
    }
  }
}

weft_status* FillKernel(void* arg, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    const int value = *static_cast<const int*>(arg);
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor x, y;
    if (weft_status* s = call.Input(0, &x)) return s;
    unsigned char pattern[8];
    const size_t size = FillPattern(x.dtype, value, pattern);
    if (size == 0) return call.UnsupportedDtype(x.dtype);
    if (weft_status* s = call.AllocateOutput(0, x.dtype, x.dims, x.rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    return call.Fill(y, pattern, size);
  });
}

const int kZero = 0, kOne = 1;

// ---- Fill: the scalar input, on the device, copied into the shape ----

weft_status* FillValueKernel(void*, weft_kernel_context* ctx) {
  return Guarded([&]() -> weft_status* {
    KernelCall call(ctx);
    if (weft_status* s = call.Begin()) return s;
    weft_kernel_tensor value, y;
    if (weft_status* s = call.Input(0, &value)) return s;
    if (value.element_count != 1) {
      return call.Error(WEFT_INVALID_ARGUMENT,
                        "value must be a scalar, has %lld elements",
                        static_cast<long long>(value.element_count));
    }
    bool present = false;
    const int64_t* dims = nullptr;
    int32_t rank = 0;
    if (weft_status* s = call.AttrIntList("shape", &present, &dims, &rank)) {
      return s;
    }
    if (!present) {
      return call.Error(WEFT_INVALID_ARGUMENT, "attribute shape is missing");
    }
    const char* suffix = SizeSuffix(weft_dtype_size_of(value.dtype));
    if (suffix == nullptr) return call.UnsupportedDtype(value.dtype);
    if (weft_status* s = call.AllocateOutput(0, value.dtype, dims, rank, &y)) {
      return s;
    }
    if (y.element_count == 0) return nullptr;
    char name[16];
    std::snprintf(name, sizeof name, "fill_%s", suffix);
    return call.Launch(Program::kElementwise, name, Linear(y.element_count),
                       Buffer(value), Buffer(y),
                       static_cast<cl_long>(y.element_count));
  });
}

}  // namespace

weft_status* RegisterElementwiseKernels(weft_kernel_registrar* registrar,
                                        bool fp64) {
  g_fp64 = fp64;
  const int32_t numeric_count = fp64 ? 5 : 4;
  const int32_t float_count = fp64 ? 2 : 1;
  for (const BinaryOp& op : kBinaryOps) {
    if (weft_status* s = RegisterKernel(
            registrar, op.op, "T", op.dtypes, op.DtypeCount(), BinaryKernel,
            const_cast<BinaryOp*>(&op))) {
      return s;
    }
  }
  for (const UnaryOp& op : kUnaryOps) {
    if (weft_status* s = RegisterKernel(
            registrar, op.op, "T",
            op.takes_integers ? kArithmeticTypes : kFloatTypes,
            op.takes_integers ? numeric_count : float_count, UnaryKernel,
            const_cast<UnaryOp*>(&op))) {
      return s;
    }
  }
  if (weft_status* s = RegisterKernel(registrar, "LogicalNot", "T", kBoolType,
                                      1, LogicalNotKernel, nullptr)) {
    return s;
  }
  // Identity moves no bytes, so every dtype runs.
  if (weft_status* s = RegisterKernel(registrar, "Identity", nullptr, nullptr,
                                      0, IdentityKernel, nullptr)) {
    return s;
  }
  // Both ends are constrained (what Castable admits), so a Cast to a dtype
  // the device has no conversion for finds no kernel here at plan time.
  const weft_kernel_type_constraint cast_dst = {"DstT", kCastTypes,
                                                CastTypeCount()};
  if (weft_status* s = RegisterKernel(registrar, "Cast", "SrcT", kCastTypes,
                                      CastTypeCount(), CastKernel, nullptr,
                                      &cast_dst, 1)) {
    return s;
  }
  const int32_t bias_types[] = {WEFT_FLOAT32, WEFT_INT32, WEFT_INT64,
                                WEFT_FLOAT64};
  if (weft_status* s = RegisterKernel(registrar, "BiasAdd", "T", bias_types,
                                      fp64 ? 4 : 3, BiasAddKernel, nullptr)) {
    return s;
  }
  if (weft_status* s = RegisterKernel(registrar, "Fill", "T", kFixedSizeTypes,
                                      kFixedSizeTypeCount, FillValueKernel,
                                      nullptr)) {
    return s;
  }
  if (weft_status* s = RegisterKernel(registrar, "ZerosLike", "T",
                                      kFixedSizeTypes, kFixedSizeTypeCount,
                                      FillKernel, const_cast<int*>(&kZero))) {
    return s;
  }
  return RegisterKernel(registrar, "OnesLike", "T", kFixedSizeTypes,
                        kFixedSizeTypeCount, FillKernel,
                        const_cast<int*>(&kOne));
}

}  // namespace weft_opencl
