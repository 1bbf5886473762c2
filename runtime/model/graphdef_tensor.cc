// TensorFlow GraphDef import: TensorProto decoding.  A TensorProto holds its
// values either as raw little-endian bytes (tensor_content) or in the typed
// field of its dtype, where fewer values than elements mean "repeat the
// last" (tf.zeros([4096, 4096]) is one float).  Both become a Weft tensor's
// bytes here, every size checked against what the file holds.
//
// Constants are decoded for three uses: a Const node, built when something
// first reads it (Materialize); an attribute folded from a constant input
// (ConstInts, ConstInt, ConstScalarFloat); and the scalars converters make
// (ScalarConstant).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/graphdef_import.h"

namespace weft {
namespace graphdef_import {
namespace {

// Appends `count` elements, each the typed field's value as Stored: all of
// them, none (zeros), or fewer with the last repeated.
template <typename Stored, typename Field>
weft_status* ExpandValues(
    const Field& values, int64_t count, std::string* bytes,
    const std::function<weft_status*(const std::string&)>& fail) {
  int64_t have = values.size();
  if (have > count)
    return fail("holds " + std::to_string(have) + " values for " +
                std::to_string(count) + " elements");
  bytes->assign(static_cast<size_t>(count) * sizeof(Stored), '\0');
  if (have == 0) return nullptr;
  for (int64_t i = 0; i < count; ++i)
    StoreAs(static_cast<Stored>(
                values.Get(static_cast<int>(std::min(i, have - 1)))),
            &(*bytes)[static_cast<size_t>(i) * sizeof(Stored)]);
  return nullptr;
}

template <typename T>
void AppendInts(const std::string& bytes, std::vector<int64_t>* out) {
  for (size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T))
    out->push_back(LoadAs<T>(bytes.data() + i));
}

}  // namespace

std::string TfDtypeName(int dtype) {
  static const char* const kNames[] = {
      "invalid", "float32",  "float64",   "int32",    "uint8",   "int16",
      "int8",    "string",   "complex64", "int64",    "bool",    "qint8",
      "quint8",  "qint32",   "bfloat16",  "qint16",   "quint16", "uint16",
      "complex128", "float16", "resource", "variant", "uint32",  "uint64"};
  if (dtype > kRefDtypeOffset && dtype <= kRefDtypeOffset + 23)
    return TfDtypeName(dtype - kRefDtypeOffset) + "_ref";
  if (dtype >= 0 && dtype < static_cast<int>(sizeof kNames / sizeof *kNames))
    return kNames[dtype];
  return "dtype " + std::to_string(dtype);
}

weft_dtype WeftDtype(int tf) {
  switch (tf) {
    case tf::DT_FLOAT: return WEFT_FLOAT32;
    case tf::DT_DOUBLE: return WEFT_FLOAT64;
    case tf::DT_INT32: return WEFT_INT32;
    case tf::DT_UINT8: return WEFT_UINT8;
    case tf::DT_INT16: return WEFT_INT16;
    case tf::DT_INT8: return WEFT_INT8;
    case tf::DT_INT64: return WEFT_INT64;
    case tf::DT_BOOL: return WEFT_BOOL;
    case tf::DT_BFLOAT16: return WEFT_BFLOAT16;
    case tf::DT_UINT16: return WEFT_UINT16;
    case tf::DT_HALF: return WEFT_FLOAT16;
    case tf::DT_UINT32: return WEFT_UINT32;
    case tf::DT_UINT64: return WEFT_UINT64;
    default: return WEFT_DTYPE_INVALID;
  }
}

weft_status* Importer::DecodeTensor(int n, const tf::TensorProto& t,
                                    int64_t max_elements, weft_dtype* dtype,
                                    std::vector<int64_t>* dims,
                                    std::string* bytes) const {
  auto fail = [&](const std::string& why) {
    return NodeError(WEFT_DATA_LOSS, n, "constant " + why);
  };
  *dtype = WeftDtype(t.dtype());
  if (*dtype == WEFT_DTYPE_INVALID)
    return NodeError(WEFT_UNIMPLEMENTED, n,
                     "a constant of dtype " + TfDtypeName(t.dtype()) +
                         ", which Weft does not have");
  if (t.tensor_shape().unknown_rank() ||
      t.tensor_shape().dim_size() > WEFT_MAX_RANK)
    return fail("has an unknown rank or one above " +
                std::to_string(WEFT_MAX_RANK));
  int64_t count = 1;
  dims->clear();
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() < 0) return fail("has a negative dimension");
    if (__builtin_mul_overflow(count, d.size(), &count) ||
        count > (int64_t{1} << 48))
      return fail("has more than 2^48 elements");
    dims->push_back(d.size());
  }
  size_t size = weft_dtype_size(*dtype);
  if (count > max_elements ||
      static_cast<uint64_t>(count) * size > kMaxExpandedConstantBytes) {
    // Stored in full, any size the file holds is fine; expanded, it is
    // capped.
    bool full = !t.tensor_content().empty() &&
                t.tensor_content().size() == static_cast<uint64_t>(count) * size;
    if (count > max_elements || !full)
      return NodeError(WEFT_RESOURCE_EXHAUSTED, n,
                       "constant of " + std::to_string(count) +
                           " elements is larger than Weft expands here");
  }
  if (!t.tensor_content().empty()) {
    if (t.tensor_content().size() != static_cast<uint64_t>(count) * size)
      return fail("content holds " + std::to_string(t.tensor_content().size()) +
                  " bytes; " + std::to_string(count) + " elements of " +
                  weft_dtype_name(*dtype) + " need " +
                  std::to_string(static_cast<uint64_t>(count) * size));
    *bytes = t.tensor_content();  // little-endian, as the host
    return nullptr;
  }
  switch (*dtype) {
    case WEFT_FLOAT32: return ExpandValues<float>(t.float_val(), count, bytes, fail);
    case WEFT_FLOAT64: return ExpandValues<double>(t.double_val(), count, bytes, fail);
    case WEFT_INT32: return ExpandValues<int32_t>(t.int_val(), count, bytes, fail);
    case WEFT_INT16: return ExpandValues<int16_t>(t.int_val(), count, bytes, fail);
    case WEFT_UINT16: return ExpandValues<uint16_t>(t.int_val(), count, bytes, fail);
    case WEFT_INT8: return ExpandValues<int8_t>(t.int_val(), count, bytes, fail);
    case WEFT_UINT8: return ExpandValues<uint8_t>(t.int_val(), count, bytes, fail);
    case WEFT_INT64: return ExpandValues<int64_t>(t.int64_val(), count, bytes, fail);
    case WEFT_UINT32: return ExpandValues<uint32_t>(t.uint32_val(), count, bytes, fail);
    case WEFT_UINT64: return ExpandValues<uint64_t>(t.uint64_val(), count, bytes, fail);
    case WEFT_BOOL: return ExpandValues<uint8_t>(t.bool_val(), count, bytes, fail);
    // Half floats travel as their 16 bits in int32s.
    case WEFT_FLOAT16:
    case WEFT_BFLOAT16: return ExpandValues<uint16_t>(t.half_val(), count, bytes, fail);
    default:
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       std::string("a constant of dtype ") +
                           weft_dtype_name(*dtype) + " cannot be read");
  }
}

weft_status* Importer::DecodeConstantInput(int n, int k, const char* what,
                                           int64_t max_elements,
                                           weft_dtype* dtype,
                                           std::string* bytes) {
  const tf::TensorProto* t = nullptr;
  WEFT_RETURN_IF_ERROR(ConstantInput(n, k, what, &t));
  std::vector<int64_t> dims;
  return DecodeTensor(n, *t, max_elements, dtype, &dims, bytes);
}

weft_status* Importer::ConstInts(int n, int k, const char* what,
                                 std::vector<int64_t>* out) {
  weft_dtype dtype;
  std::string bytes;
  WEFT_RETURN_IF_ERROR(
      DecodeConstantInput(n, k, what, kMaxFoldedElements, &dtype, &bytes));
  out->clear();
  if (dtype == WEFT_INT32)
    AppendInts<int32_t>(bytes, out);
  else if (dtype == WEFT_INT64)
    AppendInts<int64_t>(bytes, out);
  else
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("input ") + what + " is " +
                         weft_dtype_name(dtype) + ", not int32 or int64");
  return nullptr;
}

weft_status* Importer::ConstInt(int n, int k, const char* what,
                                int64_t* out) {
  std::vector<int64_t> values;
  WEFT_RETURN_IF_ERROR(ConstInts(n, k, what, &values));
  if (values.size() != 1)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string(what) + " is not one value");
  *out = values[0];
  return nullptr;
}

weft_status* Importer::ConstScalarFloat(int n, int k, const char* what,
                                        double* out) {
  weft_dtype dtype;
  std::string bytes;
  WEFT_RETURN_IF_ERROR(DecodeConstantInput(n, k, what, 1 << 10, &dtype, &bytes));
  size_t size = weft_dtype_size(dtype);
  if (size == 0 || bytes.size() != size)
    return NodeError(WEFT_INVALID_ARGUMENT, n,
                     std::string("input ") + what + " is not a scalar");
  const char* p = bytes.data();
  switch (dtype) {
    case WEFT_FLOAT32: *out = LoadAs<float>(p); break;
    case WEFT_FLOAT64: *out = LoadAs<double>(p); break;
    case WEFT_INT32: *out = LoadAs<int32_t>(p); break;
    case WEFT_INT64: *out = static_cast<double>(LoadAs<int64_t>(p)); break;
    case WEFT_UINT8: *out = LoadAs<uint8_t>(p); break;
    case WEFT_BOOL: *out = *p != 0; break;
    default:
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       std::string("input ") + what + " is " +
                           weft_dtype_name(dtype) +
                           "; Weft folds it only from float or int values");
  }
  return nullptr;
}

weft_status* Importer::MakeTensor(int n, const tf::TensorProto& t,
                                  weft_tensor** out) {
  weft_dtype dtype;
  std::vector<int64_t> dims;
  std::string bytes;
  WEFT_RETURN_IF_ERROR(DecodeTensor(n, t, int64_t{1} << 48, &dtype, &dims, &bytes));
  return weft_tensor_create_copy(dtype, dims.data(),
                                 static_cast<int32_t>(dims.size()),
                                 bytes.data(), bytes.size(), out);
}

weft_status* Importer::BuildConst(int n, weft_tensor* value, weft_node** out,
                                  const std::string& name, bool record) {
  weft_status* s = Build(n, "Const", {},
                         [&](weft_op_builder* b) {
                           weft_op_set_attr_tensor(b, "value", value);
                         },
                         out, name, false, record);
  weft_tensor_destroy(value);
  return s;
}

// Builds a Const the first time something needs it as a node.
weft_status* Importer::Materialize(int p) {
  if (imported_[p].built) return nullptr;
  if (node(p).op() != "Const")
    return NodeError(WEFT_INTERNAL, p, "read before it was imported");
  const tf::AttrValue* v = Attr(p, "value");
  if (v == nullptr || v->value_case() != tf::AttrValue::kTensor)
    return NodeError(WEFT_INVALID_ARGUMENT, p, "has no tensor attribute value");
  weft_dtype declared;
  WEFT_RETURN_IF_ERROR(AttrDtype(p, "dtype", WeftDtype(v->tensor().dtype()),
                                 &declared));
  if (declared != WeftDtype(v->tensor().dtype()))
    return NodeError(WEFT_INVALID_ARGUMENT, p,
                     "attribute dtype says " + std::string(weft_dtype_name(declared)) +
                         " but its value is " + TfDtypeName(v->tensor().dtype()));
  weft_tensor* value = nullptr;
  WEFT_RETURN_IF_ERROR(MakeTensor(p, v->tensor(), &value));
  return BuildConst(p, value, nullptr, "", true);
}

weft_status* Importer::ScalarConstant(int n, const std::string& suffix,
                                      weft_dtype dtype, double value,
                                      weft_output* out) {
  char data[8];
  switch (dtype) {
    case WEFT_FLOAT32: StoreAs(static_cast<float>(value), data); break;
    case WEFT_FLOAT64: StoreAs(value, data); break;
    case WEFT_INT32: StoreAs(static_cast<int32_t>(value), data); break;
    case WEFT_INT64: StoreAs(static_cast<int64_t>(value), data); break;
    default:
      return NodeError(WEFT_UNIMPLEMENTED, n,
                       std::string("Weft imports it for float32, float64, "
                                   "int32 and int64, not ") +
                           weft_dtype_name(dtype));
  }
  weft_tensor* t = nullptr;
  WEFT_RETURN_IF_ERROR(weft_tensor_create_copy(dtype, nullptr, 0, data,
                                               weft_dtype_size(dtype), &t));
  weft_node* built = nullptr;
  WEFT_RETURN_IF_ERROR(BuildConst(n, t, &built, HelperName(n, suffix), false));
  *out = weft_output{built, 0};
  return nullptr;
}

}  // namespace graphdef_import
}  // namespace weft
