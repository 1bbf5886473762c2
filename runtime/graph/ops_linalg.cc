// Matrix products and linear algebra.
#include "base/status.h"
#include "graph/op_registry.h"

namespace weft {

void RegisterLinalgOps(OpRegistry* r) {
  {
    OpDef d;
    d.name = "MatMul";
    d.input_names = {"a", "b"};
    d.type_attr = "T";
    d.allowed_types = kNumericTypes;
    AttrValue no;
    no.type = AttrType::kBool;
    d.attrs = {AttrDef{"transpose_a", AttrType::kBool, false, no},
               AttrDef{"transpose_b", AttrType::kBool, false, no}};
    d.summary = "Matrix product of rank-2 a and b.";
    d.infer = [](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
      const ShapeInfo& a = c.input_shapes[0];
      const ShapeInfo& b = c.input_shapes[1];
      if ((a.known_rank() && a.rank != 2) || (b.known_rank() && b.rank != 2))
        return c.Fail("MatMul needs rank-2 inputs, got %s and %s",
                      a.ToString().c_str(), b.ToString().c_str());
      bool ta = c.attr("transpose_a")->i != 0;
      bool tb = c.attr("transpose_b")->i != 0;
      int64_t m = a.known_rank() ? a.dims[ta ? 1 : 0] : -1;
      int64_t ka = a.known_rank() ? a.dims[ta ? 0 : 1] : -1;
      int64_t kb = b.known_rank() ? b.dims[tb ? 1 : 0] : -1;
      int64_t n = b.known_rank() ? b.dims[tb ? 0 : 1] : -1;
      if (ka >= 0 && kb >= 0 && ka != kb)
        return c.Fail("inner dimensions differ: a is %s%s, b is %s%s "
                      "(%lld vs %lld)", a.ToString().c_str(),
                      ta ? " transposed" : "", b.ToString().c_str(),
                      tb ? " transposed" : "", static_cast<long long>(ka),
                      static_cast<long long>(kb));
      c.output_dtypes = {c.input_dtypes[0]};
      c.output_shapes = {ShapeInfo::Of({m, n})};
      return nullptr;
    };
    r->Add(std::move(d));
  }
}

}  // namespace weft
