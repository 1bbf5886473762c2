// Shapes and data movement: Rank, Shape, Reshape, Concat, Slice, Gather, ...
//
// Every structural parameter is an attribute, so each shape function below
// checks everything the attributes and the known part of the input shapes
// allow; the kernels re-check only what an unknown dimension left open.
#include <cmath>
#include <string>

#include "base/status.h"
#include "ops/registry.h"
#include "ops/shape_checks.h"
#include "weft/tensor.h"

namespace weft {
namespace {

// An attribute whose absence means something of its own (Squeeze's dims).
AttrDef Absent(const char* name, AttrType type) {
  return AttrDef{name, type, false, {}, false};
}

AttrValue Float(double f) { AttrValue v; v.f = f; return v; }

// The usual result: one output of input 0's dtype.
weft_status* Produce(InferenceContext& c, ShapeInfo shape) {
  c.output_dtypes = {c.input_dtypes[0]};
  c.output_shapes = {std::move(shape)};
  return nullptr;
}

std::string ListString(const std::vector<int64_t>& v) {
  return ShapeString(v.data(), static_cast<int32_t>(v.size()));
}

const std::vector<int64_t>& Ints(const InferenceContext& c, const char* name) {
  return c.attr(name)->ints;
}

// Normalises `axis` into [0, count); `count` is the rank for an existing
// axis, rank + 1 where a new axis is inserted.
weft_status* NormalizeAxis(const InferenceContext& c, const char* attr,
                           int64_t axis, int32_t count, const ShapeInfo& in,
                           int32_t* out) {
  int64_t a = axis < 0 ? axis + count : axis;
  if (a < 0 || a >= count)
    return c.Fail("attribute %s = %lld is out of range [%d, %d) for input "
                  "shape %s", attr, static_cast<long long>(axis), -count,
                  count, in.ToString().c_str());
  *out = static_cast<int32_t>(a);
  return nullptr;
}

weft_status* CheckOutputRank(const InferenceContext& c, int64_t rank) {
  if (rank > WEFT_MAX_RANK)
    return c.Fail("the output would have rank %lld; ranks run up to %d",
                  static_cast<long long>(rank), WEFT_MAX_RANK);
  return nullptr;
}

// A dim that two inputs must agree on: the known one wins, two known ones
// must be equal.
bool MergeDim(int64_t a, int64_t b, int64_t* out) {
  if (a >= 0 && b >= 0 && a != b) return false;
  *out = a >= 0 ? a : b;
  return true;
}

// The common shape of inputs that must share one (Pack), or share one except
// along `skip` (Concat; -1 for none).  Unknown rank when no input has one.
weft_status* MergeShapes(const InferenceContext& c, int32_t skip,
                         ShapeInfo* out) {
  *out = ShapeInfo::Unknown();
  size_t first = 0;
  for (size_t i = 0; i < c.input_shapes.size(); ++i) {
    const ShapeInfo& s = c.input_shapes[i];
    if (!s.known_rank()) continue;
    if (!out->known_rank()) {
      *out = s;
      first = i;
      continue;
    }
    bool ok = s.rank == out->rank;
    for (int32_t d = 0; ok && d < s.rank; ++d)
      if (d != skip) ok = MergeDim(out->dims[d], s.dims[d], &out->dims[d]);
    if (!ok)
      return c.Fail("input %zu has shape %s, incompatible with input %zu's "
                    "%s%s", i, s.ToString().c_str(), first,
                    c.input_shapes[first].ToString().c_str(),
                    skip >= 0 ? " (only the concat axis may differ)" : "");
  }
  return nullptr;
}

weft_status* OutType(InferenceContext& c, weft_dtype* out) {
  *out = static_cast<weft_dtype>(c.attr("out_type")->i);
  if (*out != WEFT_INT32 && *out != WEFT_INT64)
    return c.Fail("attribute out_type must be int32 or int64, got %s",
                  weft_dtype_name(*out));
  return nullptr;
}

// Records the dtype of input `index` as attribute `name` after checking it
// is an integer index type.
weft_status* IndexType(InferenceContext& c, size_t index, const char* what,
                       const char* name) {
  weft_dtype t = c.input_dtypes[index];
  if (t != WEFT_INT32 && t != WEFT_INT64)
    return c.Fail("%s must be int32 or int64, got %s", what,
                  weft_dtype_name(t));
  AttrValue v;
  v.type = AttrType::kDtype;
  v.i = t;
  SetAttr(c.attrs, name, v);
  return nullptr;
}

// OneHot and Pad write a float attribute into tensors of any dtype; a value
// the dtype cannot hold exactly would be silently changed.
weft_status* CheckRepresentable(const InferenceContext& c, const char* attr,
                                double v, weft_dtype t) {
  for (weft_dtype f : kFloatTypes)
    if (t == f) return nullptr;  // rounding is what a float conversion means
  bool is_signed = t == WEFT_INT8 || t == WEFT_INT16 || t == WEFT_INT32 ||
                   t == WEFT_INT64;
  int bits = t == WEFT_BOOL ? 1 : 8 * static_cast<int>(weft_dtype_size(t));
  // The first value past the range; exact as a double even for 64 bits.
  double end = std::ldexp(1.0, is_signed ? bits - 1 : bits);
  double lo = is_signed ? -end : 0;
  if (!(v >= lo && v < end) || v != std::trunc(v))
    return c.Fail("attribute %s = %g cannot be represented in %s", attr, v,
                  weft_dtype_name(t));
  return nullptr;
}

OpDef Base(const char* name, std::vector<std::string> inputs,
           const char* summary) {
  OpDef d;
  d.name = name;
  d.input_names = std::move(inputs);
  d.type_attr = "T";
  d.allowed_types = kAllTypes;
  d.summary = summary;
  return d;
}

}  // namespace

// Defined in random.cc: the random ops read their `shape` the same way.
weft_status* FullyKnownShapeAttr(const InferenceContext& c, const char* attr,
                                 ShapeInfo* out);

namespace {

void RegisterShapeOps(OpRegistry* r) {
  OpDef rank = Base("Rank", {"x"}, "The rank of x, an int32 scalar.");
  rank.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    c.output_dtypes = {WEFT_INT32};
    c.output_shapes = {ShapeInfo::Of({})};
    return nullptr;
  };
  r->Add(std::move(rank));

  for (bool is_size : {false, true}) {
    OpDef d = Base(is_size ? "Size" : "Shape", {"x"},
                   is_size ? "The element count of x, a scalar of out_type."
                           : "The dims of x, a vector of out_type.");
    d.attrs = {Optional("out_type", AttrType::kDtype, IntValue(WEFT_INT32))};
    d.infer = [is_size](InferenceContext& c) -> weft_status* {
      WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
      weft_dtype t;
      WEFT_RETURN_IF_ERROR(OutType(c, &t));
      const ShapeInfo& in = c.input_shapes[0];
      int64_t n = 0;
      WEFT_RETURN_IF_ERROR(CheckedCount(c, in.dims, "input", &n));
      // Values unknown now are checked by the kernel.
      std::vector<int64_t> values = is_size ? std::vector<int64_t>{n} : in.dims;
      for (int64_t v : values)
        if (t == WEFT_INT32 && v > INT32_MAX && (!is_size || in.fully_known()))
          return c.Fail("%lld (from %s) does not fit out_type int32",
                        static_cast<long long>(v), in.ToString().c_str());
      c.output_dtypes = {t};
      c.output_shapes = {ShapeInfo::Of({})};
      if (!is_size) c.output_shapes[0].dims = {in.known_rank() ? in.rank : -1};
      c.output_shapes[0].rank = is_size ? 0 : 1;
      return nullptr;
    };
    r->Add(std::move(d));
  }

  OpDef reshape = Base("Reshape", {"x"}, "x viewed with a new shape: no copy.");
  reshape.attrs = {Required("shape", AttrType::kIntList)};
  reshape.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    std::vector<int64_t> dims = Ints(c, "shape");
    std::string want = ListString(dims);
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, dims.size()));
    int inferred = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < -1)
        return c.Fail("attribute shape = %s has a negative dimension",
                      want.c_str());
      if (dims[i] == -1 && inferred >= 0)
        return c.Fail("attribute shape = %s has more than one -1",
                      want.c_str());
      if (dims[i] == -1) inferred = static_cast<int>(i);
    }
    int64_t known = 0;
    WEFT_RETURN_IF_ERROR(
        CheckedCount(c, dims, "attribute shape =", &known));
    if (inferred >= 0 && known == 0)
      return c.Fail("cannot infer the -1 in attribute shape = %s: the other "
                    "dimensions multiply to 0", want.c_str());
    const ShapeInfo& in = c.input_shapes[0];
    if (in.fully_known()) {
      int64_t n = 0;
      WEFT_RETURN_IF_ERROR(CheckedCount(c, in.dims, "input", &n));
      bool ok = inferred >= 0 ? n % known == 0 : n == known;
      if (!ok)
        return c.Fail("cannot reshape %s (%lld elements) into attribute "
                      "shape = %s", in.ToString().c_str(),
                      static_cast<long long>(n), want.c_str());
      if (inferred >= 0) dims[inferred] = n / known;
    }
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(reshape));

  OpDef expand = Base("ExpandDims", {"x"}, "x with a size-1 axis inserted.");
  expand.attrs = {Required("axis", AttrType::kInt)};
  expand.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    if (!in.known_rank()) return Produce(c, ShapeInfo::Unknown());
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, in.rank + 1));
    int32_t axis;
    WEFT_RETURN_IF_ERROR(
        NormalizeAxis(c, "axis", c.attr("axis")->i, in.rank + 1, in, &axis));
    std::vector<int64_t> dims = in.dims;
    dims.insert(dims.begin() + axis, 1);
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(expand));

  OpDef squeeze = Base("Squeeze", {"x"}, "x without size-1 axes.");
  squeeze.attrs = {Absent("squeeze_dims", AttrType::kIntList)};
  squeeze.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    const AttrValue* listed = c.attr("squeeze_dims");
    if (!in.known_rank()) return Produce(c, ShapeInfo::Unknown());
    std::vector<bool> drop(in.rank, false);
    if (listed == nullptr) {
      for (int32_t i = 0; i < in.rank; ++i) {
        // An unknown dim might be 1: the output rank is unknown.
        if (in.dims[i] < 0) return Produce(c, ShapeInfo::Unknown());
        drop[i] = in.dims[i] == 1;
      }
    }
    for (int64_t a : listed ? listed->ints : std::vector<int64_t>{}) {
      int32_t axis;
      WEFT_RETURN_IF_ERROR(
          NormalizeAxis(c, "squeeze_dims", a, in.rank, in, &axis));
      if (drop[axis])
        return c.Fail("attribute squeeze_dims lists axis %d twice", axis);
      if (in.dims[axis] >= 0 && in.dims[axis] != 1)
        return c.Fail("cannot squeeze dimension %d of %s: its size is %lld, "
                      "not 1", axis, in.ToString().c_str(),
                      static_cast<long long>(in.dims[axis]));
      drop[axis] = true;
    }
    std::vector<int64_t> dims;
    for (int32_t i = 0; i < in.rank; ++i)
      if (!drop[i]) dims.push_back(in.dims[i]);
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(squeeze));
}

void RegisterLayoutOps(OpRegistry* r) {
  OpDef transpose = Base("Transpose", {"x"}, "x with its axes permuted.");
  transpose.attrs = {Required("perm", AttrType::kIntList)};
  transpose.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    const std::vector<int64_t>& perm = Ints(c, "perm");
    int32_t n = static_cast<int32_t>(perm.size());
    if (in.known_rank() && n != in.rank)
      return c.Fail("attribute perm = %s has %d entries but the input %s "
                    "has rank %d",
                    ListString(perm).c_str(), n, in.ToString().c_str(),
                    in.rank);
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, n));
    std::vector<bool> seen(n, false);
    std::vector<int64_t> dims(n, -1);
    for (int32_t i = 0; i < n; ++i) {
      int64_t p = perm[i] < 0 ? perm[i] + n : perm[i];
      if (p < 0 || p >= n || seen[p])
        return c.Fail("attribute perm = %s is not a permutation of 0..%d",
                      ListString(perm).c_str(), n - 1);
      seen[p] = true;
      if (in.known_rank()) dims[i] = in.dims[p];
    }
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(transpose));

  OpDef slice = Base("Slice", {"x"}, "The box of x at begin, of size size.");
  slice.attrs = {Required("begin", AttrType::kIntList),
                 Required("size", AttrType::kIntList)};
  slice.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    const std::vector<int64_t>& begin = Ints(c, "begin");
    const std::vector<int64_t>& size = Ints(c, "size");
    std::string b = ListString(begin), s = ListString(size);
    if (begin.size() != size.size() ||
        (in.known_rank() && static_cast<int32_t>(begin.size()) != in.rank))
      return c.Fail("attributes begin = %s and size = %s need one entry per "
                    "dimension of the input %s", b.c_str(), s.c_str(),
                    in.ToString().c_str());
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, begin.size()));
    std::vector<int64_t> dims(begin.size());
    for (size_t i = 0; i < begin.size(); ++i) {
      int64_t dim = in.known_rank() ? in.dims[i] : -1;
      bool ok = begin[i] >= 0 && size[i] >= -1;
      if (ok && dim >= 0)
        ok = begin[i] <= dim && (size[i] < 0 || size[i] <= dim - begin[i]);
      if (!ok)
        return c.Fail("attributes begin = %s, size = %s are out of bounds for "
                      "the input %s "
                      "(dimension %zu)", b.c_str(), s.c_str(),
                      in.ToString().c_str(), i);
      dims[i] = size[i] >= 0 ? size[i] : (dim >= 0 ? dim - begin[i] : -1);
    }
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(slice));

  OpDef tile = Base("Tile", {"x"}, "x repeated multiples[i] times per axis.");
  tile.attrs = {Required("multiples", AttrType::kIntList)};
  tile.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    const std::vector<int64_t>& m = Ints(c, "multiples");
    int32_t n = static_cast<int32_t>(m.size());
    if (in.known_rank() && n != in.rank)
      return c.Fail("attribute multiples = %s needs one entry per dimension "
                    "of the input %s", ListString(m).c_str(),
                    in.ToString().c_str());
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, n));
    std::vector<int64_t> dims(n, -1);
    for (int32_t i = 0; i < n; ++i) {
      if (m[i] < 0)
        return c.Fail("attribute multiples = %s has a negative entry",
                      ListString(m).c_str());
      int64_t d = in.known_rank() ? in.dims[i] : -1;
      if (m[i] == 0 || d == 0) dims[i] = 0;
      else if (d > 0 && !CheckedMul(d, m[i], &dims[i]))
        return c.Fail("tiling %s by attribute multiples = %s overflows",
                      in.ToString().c_str(), ListString(m).c_str());
    }
    int64_t count = 0;
    WEFT_RETURN_IF_ERROR(CheckedCount(c, dims, "the tiled shape", &count));
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(tile));

  OpDef pad = Base("Pad", {"x"}, "x surrounded by constant_value.");
  pad.attrs = {Required("paddings", AttrType::kIntList),
               Optional("constant_value", AttrType::kFloat, Float(0))};
  pad.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    const std::vector<int64_t>& p = Ints(c, "paddings");
    if (p.size() % 2 != 0 ||
        (in.known_rank() && p.size() != 2 * static_cast<size_t>(in.rank)))
      return c.Fail("attribute paddings = %s needs a (before, after) pair per "
                    "dimension of the input %s", ListString(p).c_str(),
                    in.ToString().c_str());
    WEFT_RETURN_IF_ERROR(CheckRepresentable(
        c, "constant_value", c.attr("constant_value")->f, c.input_dtypes[0]));
    int32_t n = static_cast<int32_t>(p.size() / 2);
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, n));
    std::vector<int64_t> dims(n, -1);
    for (int32_t i = 0; i < n; ++i) {
      if (p[2 * i] < 0 || p[2 * i + 1] < 0)
        return c.Fail("attribute paddings = %s has a negative entry",
                      ListString(p).c_str());
      int64_t d = in.known_rank() ? in.dims[i] : -1;
      if (d >= 0 && (!CheckedAdd(d, p[2 * i], &dims[i]) ||
                     !CheckedAdd(dims[i], p[2 * i + 1], &dims[i])))
        return c.Fail("padding %s by attribute paddings = %s overflows",
                      in.ToString().c_str(), ListString(p).c_str());
    }
    int64_t count = 0;
    WEFT_RETURN_IF_ERROR(CheckedCount(c, dims, "the padded shape", &count));
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(pad));
}

// Split and Unpack make one output per piece; a count in the millions is a
// mistake that would exhaust memory before any kernel could refuse it.
constexpr int64_t kMaxOutputs = 1 << 20;

void RegisterJoinOps(OpRegistry* r) {
  OpDef concat = Base("Concat", {"values"}, "values joined along axis.");
  concat.variadic = true;
  concat.attrs = {Required("axis", AttrType::kInt)};
  concat.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo* first = nullptr;
    for (const ShapeInfo& s : c.input_shapes)
      if (s.known_rank() && first == nullptr) first = &s;
    if (first == nullptr) return Produce(c, ShapeInfo::Unknown());
    if (first->rank == 0)
      return c.Fail("cannot concatenate scalars (shape []); use Pack");
    int32_t axis;
    WEFT_RETURN_IF_ERROR(NormalizeAxis(c, "axis", c.attr("axis")->i,
                                       first->rank, *first, &axis));
    ShapeInfo out;
    WEFT_RETURN_IF_ERROR(MergeShapes(c, axis, &out));
    int64_t sum = 0;
    for (const ShapeInfo& s : c.input_shapes) {
      int64_t d = s.known_rank() ? s.dims[axis] : -1;
      if (d < 0) {
        sum = -1;
        break;
      }
      if (!CheckedAdd(sum, d, &sum))
        return c.Fail("the concatenated dimension along axis %d overflows",
                      axis);
    }
    out.dims[axis] = sum;
    return Produce(c, std::move(out));
  };
  r->Add(std::move(concat));

  OpDef pack = Base("Pack", {"values"}, "values stacked along a new axis.");
  pack.variadic = true;
  pack.attrs = {Optional("axis", AttrType::kInt, IntValue(0))};
  pack.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    ShapeInfo out;
    WEFT_RETURN_IF_ERROR(MergeShapes(c, -1, &out));
    if (out.known_rank()) {
      WEFT_RETURN_IF_ERROR(CheckOutputRank(c, out.rank + 1));
      int32_t axis;
      WEFT_RETURN_IF_ERROR(NormalizeAxis(c, "axis", c.attr("axis")->i,
                                         out.rank + 1, out, &axis));
      out.dims.insert(out.dims.begin() + axis,
                      static_cast<int64_t>(c.input_shapes.size()));
      out.rank += 1;
    }
    return Produce(c, std::move(out));
  };
  r->Add(std::move(pack));

  OpDef split = Base("Split", {"value"}, "value cut into num_split pieces.");
  split.attrs = {Required("axis", AttrType::kInt),
                 Required("num_split", AttrType::kInt)};
  split.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    int64_t n = c.attr("num_split")->i;
    if (n < 1 || n > kMaxOutputs)
      return c.Fail("attribute num_split = %lld must be in [1, %lld]",
                    static_cast<long long>(n),
                    static_cast<long long>(kMaxOutputs));
    ShapeInfo piece = ShapeInfo::Unknown();
    if (in.known_rank()) {
      int32_t axis;
      WEFT_RETURN_IF_ERROR(
          NormalizeAxis(c, "axis", c.attr("axis")->i, in.rank, in, &axis));
      int64_t d = in.dims[axis];
      if (d >= 0 && d % n != 0)
        return c.Fail("attribute num_split = %lld does not divide "
                      "dimension %d (%lld) of %s", static_cast<long long>(n),
                      axis, static_cast<long long>(d), in.ToString().c_str());
      piece = in;
      piece.dims[axis] = d >= 0 ? d / n : -1;
    }
    c.output_dtypes.assign(n, c.input_dtypes[0]);
    c.output_shapes.assign(n, piece);
    return nullptr;
  };
  r->Add(std::move(split));

  OpDef unpack = Base("Unpack", {"value"}, "value cut into its slices "
                      "along axis, which is removed.");
  unpack.attrs = {Absent("num", AttrType::kInt),
                  Optional("axis", AttrType::kInt, IntValue(0))};
  unpack.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& in = c.input_shapes[0];
    const AttrValue* given = c.attr("num");
    int64_t num = given ? given->i : -1;
    if (given && (num < 0 || num > kMaxOutputs))
      return c.Fail("attribute num = %lld must be in [0, %lld]",
                    static_cast<long long>(num),
                    static_cast<long long>(kMaxOutputs));
    ShapeInfo piece = ShapeInfo::Unknown();
    if (in.known_rank()) {
      if (in.rank == 0) return c.Fail("cannot unpack a scalar");
      int32_t axis;
      WEFT_RETURN_IF_ERROR(
          NormalizeAxis(c, "axis", c.attr("axis")->i, in.rank, in, &axis));
      int64_t d = in.dims[axis];
      if (given && d >= 0 && num != d)
        return c.Fail("attribute num = %lld but dimension %d of %s is %lld",
                      static_cast<long long>(num), axis, in.ToString().c_str(),
                      static_cast<long long>(d));
      if (!given && d > kMaxOutputs)
        return c.Fail("dimension %d of %s is too large to unpack", axis,
                      in.ToString().c_str());
      if (!given) num = d;
      piece = in;
      piece.dims.erase(piece.dims.begin() + axis);
      piece.rank -= 1;
    }
    if (num < 0)
      return c.Fail("attribute num is needed: the size of the unpacked axis "
                    "of %s is unknown", in.ToString().c_str());
    SetAttr(c.attrs, "num", IntValue(num));
    c.output_dtypes.assign(num, c.input_dtypes[0]);
    c.output_shapes.assign(num, piece);
    return nullptr;
  };
  r->Add(std::move(unpack));
}

void RegisterFillOps(OpRegistry* r) {
  OpDef fill = Base("Fill", {"value"}, "A tensor of shape filled with value.");
  fill.attrs = {Required("shape", AttrType::kIntList)};
  fill.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(UnifyInputTypes(c));
    const ShapeInfo& v = c.input_shapes[0];
    if (v.known_rank() && v.rank != 0)
      return c.Fail("value must be a scalar, got shape %s",
                    v.ToString().c_str());
    ShapeInfo out;
    WEFT_RETURN_IF_ERROR(FullyKnownShapeAttr(c, "shape", &out));
    return Produce(c, std::move(out));
  };
  r->Add(std::move(fill));
  r->Add(UnaryOp("ZerosLike", kAllTypes, "Zeros of x's shape and dtype."));
  r->Add(UnaryOp("OnesLike", kAllTypes, "Ones of x's shape and dtype."));
}

void RegisterIndexOps(OpRegistry* r) {
  OpDef gather = Base("Gather", {"params", "indices"},
                      "Slices of params along axis picked by indices.");
  gather.attrs = {Optional("axis", AttrType::kInt, IntValue(0))};
  gather.infer = [](InferenceContext& c) -> weft_status* {
    AttrValue t;
    t.type = AttrType::kDtype;
    t.i = c.input_dtypes[0];
    SetAttr(c.attrs, "T", t);
    WEFT_RETURN_IF_ERROR(IndexType(c, 1, "indices", "Tindices"));
    const ShapeInfo& params = c.input_shapes[0];
    const ShapeInfo& indices = c.input_shapes[1];
    if (!params.known_rank()) return Produce(c, ShapeInfo::Unknown());
    if (params.rank == 0) return c.Fail("params must have rank >= 1, got []");
    int32_t axis;
    WEFT_RETURN_IF_ERROR(NormalizeAxis(c, "axis", c.attr("axis")->i,
                                       params.rank, params, &axis));
    if (!indices.known_rank()) return Produce(c, ShapeInfo::Unknown());
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, params.rank - 1 + indices.rank));
    std::vector<int64_t> dims(params.dims.begin(),
                              params.dims.begin() + axis);
    dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
    dims.insert(dims.end(), params.dims.begin() + axis + 1, params.dims.end());
    return Produce(c, ShapeInfo::Of(std::move(dims)));
  };
  r->Add(std::move(gather));

  OpDef one_hot;
  one_hot.name = "OneHot";
  one_hot.input_names = {"indices"};
  one_hot.type_attr = "TI";
  one_hot.allowed_types = {WEFT_INT32, WEFT_INT64};
  one_hot.summary = "on_value where indices[...] == d along a new axis of "
                    "size depth, off_value elsewhere.";
  one_hot.attrs = {Required("depth", AttrType::kInt),
                   Optional("on_value", AttrType::kFloat, Float(1)),
                   Optional("off_value", AttrType::kFloat, Float(0)),
                   Optional("axis", AttrType::kInt, IntValue(-1)),
                   Optional("dtype", AttrType::kDtype, IntValue(WEFT_FLOAT32))};
  one_hot.infer = [](InferenceContext& c) -> weft_status* {
    WEFT_RETURN_IF_ERROR(IndexType(c, 0, "indices", "TI"));
    int64_t depth = c.attr("depth")->i;
    if (depth < 0)
      return c.Fail("attribute depth = %lld must be >= 0",
                    static_cast<long long>(depth));
    auto t = static_cast<weft_dtype>(c.attr("dtype")->i);
    if (weft_dtype_size(t) == 0)
      return c.Fail("attribute dtype has invalid value %d",
                    static_cast<int>(t));
    WEFT_RETURN_IF_ERROR(
        CheckRepresentable(c, "on_value", c.attr("on_value")->f, t));
    WEFT_RETURN_IF_ERROR(
        CheckRepresentable(c, "off_value", c.attr("off_value")->f, t));
    const ShapeInfo& in = c.input_shapes[0];
    c.output_dtypes = {t};
    c.output_shapes = {ShapeInfo::Unknown()};
    if (!in.known_rank()) return nullptr;
    WEFT_RETURN_IF_ERROR(CheckOutputRank(c, in.rank + 1));
    int32_t axis;
    WEFT_RETURN_IF_ERROR(
        NormalizeAxis(c, "axis", c.attr("axis")->i, in.rank + 1, in, &axis));
    std::vector<int64_t> dims = in.dims;
    dims.insert(dims.begin() + axis, depth);
    int64_t count = 0;
    WEFT_RETURN_IF_ERROR(
        CheckedCount(c, dims, "the one-hot shape", &count));
    c.output_shapes = {ShapeInfo::Of(std::move(dims))};
    return nullptr;
  };
  r->Add(std::move(one_hot));
}

}  // namespace

void RegisterArrayOps(OpRegistry* r) {
  RegisterShapeOps(r);
  RegisterLayoutOps(r);
  RegisterJoinOps(r);
  RegisterFillOps(r);
  RegisterIndexOps(r);
}

}  // namespace weft
