// Zero-copy exchange with DLPack 0.6 (Debian's libdlpack-dev).  0.6 has no
// boolean type code; Weft's bool is exported as uint8 and a uint8 import
// stays uint8, so the round trip of a bool tensor is explicit, never silent.
#include <dlpack/dlpack.h>

#include <new>

#include "base/status.h"
#include "tensor/tensor_value.h"

namespace {

bool ToDl(weft_dtype t, DLDataType* out) {
  out->lanes = 1;
  switch (t) {
    case WEFT_FLOAT16: *out = {kDLFloat, 16, 1}; return true;
    case WEFT_FLOAT32: *out = {kDLFloat, 32, 1}; return true;
    case WEFT_FLOAT64: *out = {kDLFloat, 64, 1}; return true;
    case WEFT_BFLOAT16: *out = {kDLBfloat, 16, 1}; return true;
    case WEFT_INT8: *out = {kDLInt, 8, 1}; return true;
    case WEFT_INT16: *out = {kDLInt, 16, 1}; return true;
    case WEFT_INT32: *out = {kDLInt, 32, 1}; return true;
    case WEFT_INT64: *out = {kDLInt, 64, 1}; return true;
    case WEFT_UINT8: case WEFT_BOOL: *out = {kDLUInt, 8, 1}; return true;
    case WEFT_UINT16: *out = {kDLUInt, 16, 1}; return true;
    case WEFT_UINT32: *out = {kDLUInt, 32, 1}; return true;
    case WEFT_UINT64: *out = {kDLUInt, 64, 1}; return true;
    default: return false;
  }
}

weft_dtype FromDl(DLDataType d) {
  if (d.lanes != 1) return WEFT_DTYPE_INVALID;
  switch (d.code) {
    case kDLFloat:
      return d.bits == 16 ? WEFT_FLOAT16 : d.bits == 32 ? WEFT_FLOAT32
             : d.bits == 64 ? WEFT_FLOAT64 : WEFT_DTYPE_INVALID;
    case kDLBfloat:
      return d.bits == 16 ? WEFT_BFLOAT16 : WEFT_DTYPE_INVALID;
    case kDLInt:
      return d.bits == 8 ? WEFT_INT8 : d.bits == 16 ? WEFT_INT16
             : d.bits == 32 ? WEFT_INT32 : d.bits == 64 ? WEFT_INT64
             : WEFT_DTYPE_INVALID;
    case kDLUInt:
      return d.bits == 8 ? WEFT_UINT8 : d.bits == 16 ? WEFT_UINT16
             : d.bits == 32 ? WEFT_UINT32 : d.bits == 64 ? WEFT_UINT64
             : WEFT_DTYPE_INVALID;
    default:
      return WEFT_DTYPE_INVALID;
  }
}

// What an exported DLManagedTensor keeps alive: a reference to the buffer
// and its own copy of the shape.
struct Export {
  DLManagedTensor managed;
  weft::TensorValue value;
};

void DeleteExport(DLManagedTensor* m) {
  delete static_cast<Export*>(m->manager_ctx);
}

void CallDlDeleter(void*, size_t, void* arg) {
  auto* m = static_cast<DLManagedTensor*>(arg);
  if (m->deleter) m->deleter(m);
}

}  // namespace

extern "C" {

weft_status* weft_tensor_to_dlpack(const weft_tensor* tensor,
                                   DLManagedTensor** out) {
  if (out == nullptr) return weft::Error(WEFT_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (tensor == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "tensor is NULL");
  DLDataType dt;
  if (!ToDl(tensor->value.dtype, &dt))
    return weft::Errorf(WEFT_UNIMPLEMENTED, "dtype %s has no DLPack code",
                        weft_dtype_name(tensor->value.dtype));
  auto* e = new (std::nothrow) Export;
  if (e == nullptr) return weft::Error(WEFT_RESOURCE_EXHAUSTED, "out of memory");
  e->value = tensor->value;
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = e->value.host_data();
  dl.device = {kDLCPU, 0};
  dl.ndim = e->value.dims.rank();
  dl.dtype = dt;
  // DLPack wants a mutable shape array; the export owns its Dims copy.
  dl.shape = const_cast<int64_t*>(e->value.dims.data());
  dl.strides = nullptr;  // compact row-major
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = DeleteExport;
  *out = &e->managed;
  return nullptr;
}

weft_status* weft_tensor_from_dlpack(DLManagedTensor* managed,
                                     weft_tensor** out_tensor) {
  if (out_tensor == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "out_tensor is NULL");
  *out_tensor = nullptr;
  if (managed == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "managed is NULL");
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU)
    return weft::Errorf(WEFT_UNIMPLEMENTED,
                        "DLPack device type %d: only kDLCPU tensors can be "
                        "imported", static_cast<int>(dl.device.device_type));
  weft_dtype dtype = FromDl(dl.dtype);
  if (dtype == WEFT_DTYPE_INVALID)
    return weft::Errorf(WEFT_UNIMPLEMENTED,
                        "DLPack dtype (code %u, bits %u, lanes %u) has no "
                        "Weft equivalent", dl.dtype.code, dl.dtype.bits,
                        dl.dtype.lanes);
  if (dl.ndim < 0 || dl.ndim > WEFT_MAX_RANK)
    return weft::Errorf(WEFT_INVALID_ARGUMENT, "DLPack ndim %d is invalid",
                        dl.ndim);
  if (dl.ndim > 0 && dl.shape == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "DLPack shape is NULL");
  if (dl.strides != nullptr) {
    int64_t expect = 1;
    for (int i = dl.ndim - 1; i >= 0; --i) {
      if (dl.shape[i] != 1 && dl.strides[i] != expect)
        return weft::Error(WEFT_INVALID_ARGUMENT,
                           "DLPack tensor is not compact row-major; copy it "
                           "to a contiguous layout first");
      expect *= dl.shape[i];
    }
  }
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(weft::CheckedByteSize(dtype, dl.shape, dl.ndim, &bytes));
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return weft_tensor_create_from_data(dtype, dl.shape, dl.ndim, data, bytes,
                                      CallDlDeleter, managed, out_tensor);
}

}  // extern "C"
