// Matrix products and linear algebra: MatMul, BatchMatMul, MatrixInverse,
// MatrixDeterminant.
#include <cstdint>
#include <string>
#include <utility>

#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"

namespace weft {
namespace {

// float16 and bfloat16 are storage types, but products of them are common
// enough (mixed-precision inference) that the product ops accept them.
const std::vector<weft_dtype> kProductTypes = {
    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32,
    WEFT_FLOAT64, WEFT_INT32,    WEFT_INT64};
const std::vector<weft_dtype> kSolverTypes = {WEFT_FLOAT32, WEFT_FLOAT64};

AttrDef FalseBool(const char* name) {
  AttrValue no;
  no.type = AttrType::kBool;
  return AttrDef{name, AttrType::kBool, false, no};
}

weft_status* InferMatMul(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  const ShapeInfo& a = c.input_shapes[0];
  const ShapeInfo& b = c.input_shapes[1];
  if ((a.known_rank() && a.rank != 2) || (b.known_rank() && b.rank != 2))
    return c.Fail("MatMul needs rank-2 inputs, got %s and %s (BatchMatMul "
                  "takes stacks of matrices)", a.ToString().c_str(),
                  b.ToString().c_str());
  const bool ta = c.attr("transpose_a")->i != 0;
  const bool tb = c.attr("transpose_b")->i != 0;
  int64_t m, ka, kb, n;
  MatrixDims(a, ta, &m, &ka);
  MatrixDims(b, tb, &kb, &n);
  WEFT_RETURN_IF_ERROR(CheckInnerDims(c, ta ? "a transposed" : "a", a, ka,
                                      tb ? "b transposed" : "b", b, kb));
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {ShapeInfo::Of({m, n})};
  return nullptr;
}

// Batch dims are broadcast NumPy-style (aligned from the right, each pair
// equal or one of them 1); the matrices are the last two dims.
weft_status* InferBatchMatMul(InferenceContext& c) {
  WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
  const ShapeInfo& x = c.input_shapes[0];
  const ShapeInfo& y = c.input_shapes[1];
  if ((x.known_rank() && x.rank < 2) || (y.known_rank() && y.rank < 2))
    return c.Fail("inputs must have rank >= 2 ([..., rows, cols]), got %s "
                  "and %s", x.ToString().c_str(), y.ToString().c_str());
  const bool adj_x = c.attr("adj_x")->i != 0;
  const bool adj_y = c.attr("adj_y")->i != 0;
  int64_t m, kx, ky, n;
  MatrixDims(x, adj_x, &m, &kx);
  MatrixDims(y, adj_y, &ky, &n);
  WEFT_RETURN_IF_ERROR(CheckInnerDims(c, adj_x ? "x adjoint" : "x", x, kx,
                                      adj_y ? "y adjoint" : "y", y, ky));
  c.output_dtypes = {c.input_dtypes[0]};
  if (!x.known_rank() || !y.known_rank()) {
    c.output_shapes = {ShapeInfo::Unknown()};
    return nullptr;
  }
  const int32_t bx = x.rank - 2, by = y.rank - 2;
  const int32_t batch_rank = bx > by ? bx : by;
  std::vector<int64_t> dims(batch_rank + 2);
  for (int32_t i = 0; i < batch_rank; ++i) {
    const int32_t ix = bx - batch_rank + i, iy = by - batch_rank + i;
    const int64_t dx = ix >= 0 ? x.dims[ix] : 1;
    const int64_t dy = iy >= 0 ? y.dims[iy] : 1;
    if (dx == 1) {
      dims[i] = dy;
    } else if (dy == 1) {
      dims[i] = dx;
    } else if (dx < 0 || dy < 0) {
      dims[i] = dx < 0 ? dy : dx;  // an unknown dim can only match
    } else if (dx == dy) {
      dims[i] = dx;
    } else {
      return c.Fail("batch dimensions of x %s and y %s cannot be broadcast "
                    "(batch axis %d: %lld vs %lld)", x.ToString().c_str(),
                    y.ToString().c_str(), i, static_cast<long long>(dx),
                    static_cast<long long>(dy));
    }
  }
  dims[batch_rank] = m;
  dims[batch_rank + 1] = n;
  c.output_shapes = {ShapeInfo::Of(std::move(dims))};
  return nullptr;
}

// Checks `input` is a stack of square matrices, [..., M, M].
weft_status* CheckSquare(const InferenceContext& c) {
  const ShapeInfo& in = c.input_shapes[0];
  if (!in.known_rank()) return nullptr;
  if (in.rank < 2)
    return c.Fail("input must have rank >= 2 ([..., M, M]), got %s",
                  in.ToString().c_str());
  const int64_t rows = in.dims[in.rank - 2], cols = in.dims[in.rank - 1];
  if (rows >= 0 && cols >= 0 && rows != cols)
    return c.Fail("input must be square matrices [..., M, M], got %s "
                  "(%lld x %lld)", in.ToString().c_str(),
                  static_cast<long long>(rows), static_cast<long long>(cols));
  return nullptr;
}

OpDef SolverOp(const char* name, const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = {"input"};
  d.type_attr = "T";
  d.allowed_types = kSolverTypes;
  d.summary = summary;
  return d;
}

}  // namespace

void RegisterLinalgOps(OpRegistry* r) {
  OpDef matmul;
  matmul.name = "MatMul";
  matmul.input_names = {"a", "b"};
  matmul.type_attr = "T";
  matmul.allowed_types = kProductTypes;
  matmul.attrs = {FalseBool("transpose_a"), FalseBool("transpose_b")};
  matmul.summary = "Matrix product of rank-2 a and b.";
  matmul.infer = InferMatMul;
  r->Add(std::move(matmul));

  OpDef batch;
  batch.name = "BatchMatMul";
  batch.input_names = {"x", "y"};
  batch.type_attr = "T";
  batch.allowed_types = kProductTypes;
  batch.attrs = {FalseBool("adj_x"), FalseBool("adj_y")};
  batch.summary =
      "Matrix products of the last two dims; batch dims broadcast.";
  batch.infer = InferBatchMatMul;
  r->Add(std::move(batch));

  OpDef inverse = SolverOp(
      "MatrixInverse",
      "Inverse of each [M, M] matrix (of its adjoint when adjoint is set); "
      "a singular matrix is an error.");
  inverse.attrs = {FalseBool("adjoint")};
  inverse.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    WEFT_RETURN_IF_ERROR(CheckSquare(c));
    c.output_dtypes = {c.input_dtypes[0]};
    c.output_shapes = {c.input_shapes[0]};
    return nullptr;
  };
  r->Add(std::move(inverse));

  OpDef det = SolverOp("MatrixDeterminant",
                       "Determinant of each [M, M] matrix: [...].");
  det.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    WEFT_RETURN_IF_ERROR(CheckSquare(c));
    const ShapeInfo& in = c.input_shapes[0];
    c.output_dtypes = {c.input_dtypes[0]};
    if (!in.known_rank()) {
      c.output_shapes = {ShapeInfo::Unknown()};
    } else {
      c.output_shapes = {ShapeInfo::Of(
          std::vector<int64_t>(in.dims.begin(), in.dims.end() - 2))};
    }
    return nullptr;
  };
  r->Add(std::move(det));
}

}  // namespace weft
