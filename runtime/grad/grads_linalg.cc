// Gradients of the matrix ops: MatMul, BatchMatMul, MatrixInverse,
// MatrixDeterminant.  All are products of existing ops.
#include "grad/grad_builder.h"

namespace weft {
namespace {

// A product op and the names of its two transpose attributes.
struct ProductOp {
  const char* op;
  const char* transpose_a;
  const char* transpose_b;
  bool broadcasts;  // batch dims broadcast (summed back in the gradient)
};

const ProductOp kMatMul = {"MatMul", "transpose_a", "transpose_b", false};
const ProductOp kBatchMatMul = {"BatchMatMul", "adj_x", "adj_y", true};

weft_output Product(GradBuilder& g, const ProductOp& p, weft_output a,
                    bool ta, weft_output b, bool tb) {
  weft_op_builder* nb = g.Begin(p.op, {a, b});
  weft_op_set_attr_bool(nb, p.transpose_a, ta);
  weft_op_set_attr_bool(nb, p.transpose_b, tb);
  return g.Finish(nb);
}

// For c = op(a) op(b) (op transposing where the attribute says so),
// d op(a) = dc op(b)^T and d op(b) = op(a)^T dc, each transposed back when
// its input is stored transposed:
//   da = dc b^T (ta=0,tb=0)   dc b (0,1)   b dc^T (1,0)   b^T dc^T (1,1)
//   db = a^T dc (0,0)   dc^T a (0,1)   a dc (1,0)   dc^T a^T (1,1)
void ProductGrad(GradBuilder& g, const ProductOp& p) {
  const bool ta = g.attr(p.transpose_a)->i != 0;
  const bool tb = g.attr(p.transpose_b)->i != 0;
  const weft_output a = g.x(0), b = g.x(1), dc = g.dy();
  weft_output da{nullptr, 0}, db{nullptr, 0};
  if (g.wanted(0))
    da = ta ? Product(g, p, b, tb, dc, true) : Product(g, p, dc, false, b, !tb);
  if (g.wanted(1))
    db = tb ? Product(g, p, dc, true, a, ta) : Product(g, p, a, !ta, dc, false);
  if (p.broadcasts) {
    if (da.node != nullptr) da = g.SumTo(da, a);
    if (db.node != nullptr) db = g.SumTo(db, b);
  }
  g.Set(0, da);
  g.Set(1, db);
}

// Y = A^-1: dA = -Y^T dY Y^T.  With `adjoint`, Y = (A^T)^-1 and
// dA = -Y dY^T Y.
void MatrixInverseGrad(GradBuilder& g) {
  const bool adjoint = g.attr("adjoint")->i != 0;
  const weft_output y = g.y();
  weft_output left = Product(g, kBatchMatMul, y, !adjoint, g.dy(), adjoint);
  g.Set(0, g.Apply("Neg", {Product(g, kBatchMatMul, left, false, y,
                                   !adjoint)}));
}

// d det(A) / dA = det(A) A^-T.
void MatrixDeterminantGrad(GradBuilder& g) {
  weft_output scale = g.Apply("Mul", {g.dy(), g.y()});
  for (int i = 0; i < 2; ++i) {  // [...] -> [..., 1, 1]
    weft_op_builder* b = g.Begin("ExpandDims", {scale});
    weft_op_set_attr_int(b, "axis", -1);
    scale = g.Finish(b);
  }
  weft_op_builder* b = g.Begin("MatrixInverse", {g.x(0)});
  weft_op_set_attr_bool(b, "adjoint", 1);
  g.Set(0, g.Apply("Mul", {scale, g.Finish(b)}));
}

}  // namespace

void RegisterLinalgGradients() {
  RegisterGradientWith("MatMul",
                       [](GradBuilder& g) { ProductGrad(g, kMatMul); });
  RegisterGradientWith("BatchMatMul",
                       [](GradBuilder& g) { ProductGrad(g, kBatchMatMul); });
  RegisterGradientWith("MatrixInverse", MatrixInverseGrad);
  RegisterGradientWith("MatrixDeterminant", MatrixDeterminantGrad);
}

}  // namespace weft
