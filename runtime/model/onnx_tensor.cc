// ONNX tensors and Weft tensors, both ways, and the importer's errors
// (onnx_importer.h): every size in a TensorProto is checked against the
// bytes the file holds before anything is allocated.
#include <cmath>
#include <cstring>
#include <limits>

#include "model/onnx_importer.h"
#include "ops/shape_checks.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX raw_data is little-endian; this importer copies it as is");

namespace weft {
namespace onnx_import {

namespace {

// Copies `count` elements of `Src` from a repeated field into `dst`,
// converting each to `Dst`.
template <typename Dst, typename Field>
void CopyField(const Field& field, void* dst) {
  Dst* out = static_cast<Dst*>(dst);
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

}  // namespace

void Fail(weft_code code, std::string message) {
  throw ImportError{code, std::move(message)};
}

void Unsupported(std::string reason) {
  Fail(WEFT_UNIMPLEMENTED, std::move(reason));
}

std::string JoinInts(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t NormalizeAxis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    Fail(WEFT_INVALID_ARGUMENT, what + " " + std::to_string(axis) +
                                    " is outside [-" + std::to_string(rank) +
                                    ", " + std::to_string(rank) + ")");
  return axis < 0 ? axis + rank : axis;
}

bool IsFloat(weft_dtype d) {
  return d == WEFT_FLOAT32 || d == WEFT_FLOAT64 || d == WEFT_FLOAT16 ||
         d == WEFT_BFLOAT16;
}

bool IsInteger(weft_dtype d) {
  switch (d) {
    case WEFT_INT8: case WEFT_INT16: case WEFT_INT32: case WEFT_INT64:
    case WEFT_UINT8: case WEFT_UINT16: case WEFT_UINT32: case WEFT_UINT64:
      return true;
    default:
      return false;
  }
}

namespace {

// ONNX's TensorProto data types that are Weft dtypes, both ways (the
// importer and the exporter read this one table).
struct DtypePair {
  int32_t onnx;
  weft_dtype weft;
};
constexpr DtypePair kDtypes[] = {
    {onnx::TensorProto::FLOAT, WEFT_FLOAT32},
    {onnx::TensorProto::DOUBLE, WEFT_FLOAT64},
    {onnx::TensorProto::FLOAT16, WEFT_FLOAT16},
    {onnx::TensorProto::BFLOAT16, WEFT_BFLOAT16},
    {onnx::TensorProto::INT8, WEFT_INT8},
    {onnx::TensorProto::INT16, WEFT_INT16},
    {onnx::TensorProto::INT32, WEFT_INT32},
    {onnx::TensorProto::INT64, WEFT_INT64},
    {onnx::TensorProto::UINT8, WEFT_UINT8},
    {onnx::TensorProto::UINT16, WEFT_UINT16},
    {onnx::TensorProto::UINT32, WEFT_UINT32},
    {onnx::TensorProto::UINT64, WEFT_UINT64},
    {onnx::TensorProto::BOOL, WEFT_BOOL},
};

}  // namespace

int32_t OnnxFromDtype(weft_dtype d) {
  for (const DtypePair& p : kDtypes)
    if (p.weft == d) return p.onnx;
  return 0;
}

weft_dtype DtypeFromOnnx(int32_t t, const std::string& what) {
  using P = onnx::TensorProto;
  for (const DtypePair& p : kDtypes)
    if (p.onnx == t) return p.weft;
  switch (t) {
    case P::STRING:
      Unsupported(what + " holds strings, which Weft has no dtype for");
    case P::COMPLEX64:
    case P::COMPLEX128:
      Unsupported(what + " holds complex numbers, which Weft has no dtype "
                         "for");
    default:
      Unsupported(what + " has ONNX data type " + std::to_string(t) +
                  ", which Weft does not know");
  }
}

TensorPtr TensorFromProto(const onnx::TensorProto& p, const std::string& what) {
  using P = onnx::TensorProto;
  weft_dtype dtype = DtypeFromOnnx(p.data_type(), what);
  if (p.data_location() == P::EXTERNAL || p.external_data_size() > 0)
    Unsupported(what + " keeps its data in an external file, which this "
                       "importer does not read");
  if (p.has_segment())
    Unsupported(what + " is a segment of a larger tensor");
  if (p.dims_size() > WEFT_MAX_RANK)
    Fail(WEFT_DATA_LOSS, what + " has rank " + std::to_string(p.dims_size()) +
                             ", above Weft's " +
                             std::to_string(WEFT_MAX_RANK));
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || !CheckedMul(count, d, &count) || count > kMaxStaticElements)
      Fail(WEFT_DATA_LOSS, what + " has dims " + JoinInts(dims) +
                               ", which no tensor has");
  }
  const size_t elem = weft_dtype_size(dtype);
  weft_tensor* raw = nullptr;
  // The size checks come before the allocation: a tensor claiming 2^40
  // elements with 12 bytes of data must not allocate 2^40 elements.
  int64_t stored = 0;
  if (p.has_raw_data()) {
    if (p.raw_data().size() != static_cast<size_t>(count) * elem)
      Fail(WEFT_DATA_LOSS,
           what + " has dims " + JoinInts(dims) + " of " +
               weft_dtype_name(dtype) + " (" +
               std::to_string(static_cast<size_t>(count) * elem) +
               " bytes) but " + std::to_string(p.raw_data().size()) +
               " bytes of data");
  } else {
    switch (p.data_type()) {
      case P::FLOAT: stored = p.float_data_size(); break;
      case P::DOUBLE: stored = p.double_data_size(); break;
      case P::INT64: stored = p.int64_data_size(); break;
      case P::UINT32: case P::UINT64: stored = p.uint64_data_size(); break;
      default: stored = p.int32_data_size(); break;
    }
    if (stored != count)
      Fail(WEFT_DATA_LOSS, what + " has dims " + JoinInts(dims) + " (" +
                               std::to_string(count) + " elements) but " +
                               std::to_string(stored) + " values");
  }
  weft_status* st = weft_tensor_create(dtype, dims.data(),
                                       static_cast<int32_t>(dims.size()), &raw);
  if (st != nullptr) {
    std::string m = weft_status_message(st);
    weft_code c = weft_status_code(st);
    weft_status_destroy(st);
    Fail(c, what + ": " + m);
  }
  TensorPtr t(raw);
  void* data = weft_tensor_data(raw);
  if (count == 0) return t;
  if (p.has_raw_data()) {
    std::memcpy(data, p.raw_data().data(), p.raw_data().size());
    return t;
  }
  switch (p.data_type()) {
    case P::FLOAT: CopyField<float>(p.float_data(), data); break;
    case P::DOUBLE: CopyField<double>(p.double_data(), data); break;
    case P::INT64: CopyField<int64_t>(p.int64_data(), data); break;
    case P::UINT32: CopyField<uint32_t>(p.uint64_data(), data); break;
    case P::UINT64: CopyField<uint64_t>(p.uint64_data(), data); break;
    case P::INT32: CopyField<int32_t>(p.int32_data(), data); break;
    case P::INT16: CopyField<int16_t>(p.int32_data(), data); break;
    case P::INT8: CopyField<int8_t>(p.int32_data(), data); break;
    case P::UINT16: case P::FLOAT16: case P::BFLOAT16:
      // Half-precision values are stored as their bit patterns.
      CopyField<uint16_t>(p.int32_data(), data);
      break;
    case P::UINT8: CopyField<uint8_t>(p.int32_data(), data); break;
    case P::BOOL: {
      uint8_t* out = static_cast<uint8_t*>(data);
      for (int i = 0; i < p.int32_data_size(); ++i)
        out[i] = p.int32_data(i) != 0;
      break;
    }
    default:
      break;
  }
  return t;
}

namespace {

TensorPtr NewTensor(weft_dtype dtype, const std::vector<int64_t>& dims) {
  weft_tensor* raw = nullptr;
  weft_status* st = weft_tensor_create(dtype, dims.data(),
                                       static_cast<int32_t>(dims.size()), &raw);
  if (st != nullptr) {
    std::string m = weft_status_message(st);
    weft_code c = weft_status_code(st);
    weft_status_destroy(st);
    Fail(c, m);
  }
  return TensorPtr(raw);
}

template <typename T>
void Store(void* data, size_t i, T v, weft_dtype dtype) {
  switch (dtype) {
    case WEFT_FLOAT32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case WEFT_FLOAT64: static_cast<double*>(data)[i] = static_cast<double>(v); break;
    case WEFT_INT8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); break;
    case WEFT_INT16: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); break;
    case WEFT_INT32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
    case WEFT_INT64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); break;
    case WEFT_UINT8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v); break;
    case WEFT_UINT16: static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(v); break;
    case WEFT_UINT32: static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(v); break;
    case WEFT_UINT64: static_cast<uint64_t*>(data)[i] = static_cast<uint64_t>(v); break;
    case WEFT_BOOL: static_cast<uint8_t*>(data)[i] = v != 0; break;
    default:
      Unsupported(std::string("a constant of ") + weft_dtype_name(dtype) +
                  " made while importing");
  }
}

// Converts a double to T without undefined behaviour (out of range and NaN
// become 0, as Weft's Cast does).
template <typename T>
T SafeIntFromDouble(double v) {
  if (!(v >= static_cast<double>(std::numeric_limits<T>::min()) &&
        v <= static_cast<double>(std::numeric_limits<T>::max())))
    return 0;
  return static_cast<T>(v);
}

}  // namespace

TensorPtr MakeTensor(weft_dtype dtype, const std::vector<int64_t>& dims,
                     const std::vector<double>& values) {
  TensorPtr t = NewTensor(dtype, dims);
  if (static_cast<size_t>(weft_tensor_element_count(t.get())) != values.size())
    Fail(WEFT_INTERNAL, "constant of the wrong size");
  void* data = weft_tensor_data(t.get());
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    if (IsFloat(dtype))
      Store(data, i, v, dtype);
    else if (dtype == WEFT_BOOL)
      Store(data, i, v != 0 ? 1 : 0, dtype);
    else if (dtype == WEFT_UINT64)
      Store(data, i, SafeIntFromDouble<uint64_t>(v), dtype);
    else
      Store(data, i, SafeIntFromDouble<int64_t>(v), dtype);
  }
  return t;
}

TensorPtr MakeIntTensor(weft_dtype dtype, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& values) {
  TensorPtr t = NewTensor(dtype, dims);
  if (static_cast<size_t>(weft_tensor_element_count(t.get())) != values.size())
    Fail(WEFT_INTERNAL, "constant of the wrong size");
  void* data = weft_tensor_data(t.get());
  for (size_t i = 0; i < values.size(); ++i) Store(data, i, values[i], dtype);
  return t;
}

std::vector<int64_t> IntsOf(const weft_tensor* t, const std::string& what) {
  const int64_t n = weft_tensor_element_count(t);
  const void* d = weft_tensor_data(t);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (weft_tensor_dtype(t)) {
      case WEFT_INT8: out[i] = static_cast<const int8_t*>(d)[i]; break;
      case WEFT_INT16: out[i] = static_cast<const int16_t*>(d)[i]; break;
      case WEFT_INT32: out[i] = static_cast<const int32_t*>(d)[i]; break;
      case WEFT_INT64: out[i] = static_cast<const int64_t*>(d)[i]; break;
      case WEFT_UINT8: out[i] = static_cast<const uint8_t*>(d)[i]; break;
      case WEFT_UINT16: out[i] = static_cast<const uint16_t*>(d)[i]; break;
      case WEFT_UINT32: out[i] = static_cast<const uint32_t*>(d)[i]; break;
      case WEFT_UINT64: {
        uint64_t v = static_cast<const uint64_t*>(d)[i];
        out[i] = v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
                                                      : static_cast<int64_t>(v);
        break;
      }
      default:
        Fail(WEFT_INVALID_ARGUMENT,
             what + " is " + weft_dtype_name(weft_tensor_dtype(t)) +
                 ", not integers");
    }
  }
  return out;
}

std::vector<double> DoublesOf(const weft_tensor* t, const std::string& what) {
  weft_dtype dt = weft_tensor_dtype(t);
  if (dt == WEFT_FLOAT32 || dt == WEFT_FLOAT64 || dt == WEFT_BOOL) {
    const int64_t n = weft_tensor_element_count(t);
    const void* d = weft_tensor_data(t);
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      out[i] = dt == WEFT_FLOAT32   ? static_cast<const float*>(d)[i]
               : dt == WEFT_FLOAT64 ? static_cast<const double*>(d)[i]
                                    : static_cast<const uint8_t*>(d)[i];
    return out;
  }
  if (IsInteger(dt)) {
    std::vector<int64_t> ints = IntsOf(t, what);
    return std::vector<double>(ints.begin(), ints.end());
  }
  Unsupported(what + " is " + weft_dtype_name(dt) +
              ", which this importer cannot read as numbers");
}

}  // namespace onnx_import
}  // namespace weft
