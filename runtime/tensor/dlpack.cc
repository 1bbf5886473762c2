// Zero-copy exchange with DLPack 0.6 (Debian's libdlpack-dev).  0.6 has no
// boolean type code; Weft's bool is exported as uint8 and a uint8 import
// stays uint8, so the round trip of a bool tensor is explicit, never silent.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>
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

// The device type as the producer stored it.  DLDeviceType is an enum, and
// a producer (another language, or a hostile caller) may store any 32-bit
// value there: loading one outside the enumerators is undefined behaviour,
// so it is read as an integer.
int32_t StoredDeviceType(const DLDevice& device) {
  static_assert(sizeof device.device_type == sizeof(int32_t),
                "DLDeviceType is stored as 32 bits");
  int32_t v;
  std::memcpy(&v, &device.device_type, sizeof v);
  return v;
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
  int32_t device_type = StoredDeviceType(dl.device);
  if (device_type != kDLCPU)
    return weft::Errorf(WEFT_UNIMPLEMENTED,
                        "DLPack device type %d: only kDLCPU (%d) tensors can "
                        "be imported", device_type, static_cast<int>(kDLCPU));
  if (dl.device.device_id != 0)
    return weft::Errorf(WEFT_INVALID_ARGUMENT,
                        "DLPack CPU tensor has device_id %d; it must be 0",
                        dl.device.device_id);
  weft_dtype dtype = FromDl(dl.dtype);
  if (dtype == WEFT_DTYPE_INVALID)
    return weft::Errorf(WEFT_UNIMPLEMENTED,
                        "DLPack dtype (code %u, bits %u, lanes %u) has no "
                        "Weft equivalent", dl.dtype.code, dl.dtype.bits,
                        dl.dtype.lanes);
  if (dl.ndim < 0 || dl.ndim > WEFT_MAX_RANK)
    return weft::Errorf(WEFT_INVALID_ARGUMENT,
                        "DLPack ndim %d is outside [0, %d]", dl.ndim,
                        WEFT_MAX_RANK);
  if (dl.ndim > 0 && dl.shape == nullptr)
    return weft::Error(WEFT_INVALID_ARGUMENT, "DLPack shape is NULL");
  // The shape first: once its element count is known to fit, the partial
  // products the stride check forms fit too.
  size_t bytes = 0;
  WEFT_RETURN_IF_ERROR(weft::Annotate(
      weft::CheckedByteSize(dtype, dl.shape, dl.ndim, &bytes), "DLPack: "));
  // An empty tensor has no element to lay out, so any strides describe it.
  if (dl.strides != nullptr && bytes > 0) {
    int64_t expect = 1;
    for (int i = dl.ndim - 1; i >= 0; --i) {
      if (dl.shape[i] != 1 && dl.strides[i] != expect)
        return weft::Error(WEFT_INVALID_ARGUMENT,
                           "DLPack tensor is not compact row-major; copy it "
                           "to a contiguous layout first");
      expect *= dl.shape[i];
    }
  }
  // The tensor spans [data + byte_offset, data + byte_offset + bytes): an
  // offset or a size that wraps around would point before the buffer.
  uintptr_t base = reinterpret_cast<uintptr_t>(dl.data);
  if (dl.data == nullptr && (bytes > 0 || dl.byte_offset != 0))
    return weft::Errorf(WEFT_INVALID_ARGUMENT,
                        "DLPack data is NULL with byte_offset %llu and %zu "
                        "bytes of data", static_cast<unsigned long long>(
                            dl.byte_offset), bytes);
  if (dl.byte_offset > UINTPTR_MAX - base ||
      bytes > UINTPTR_MAX - base - dl.byte_offset)
    return weft::Errorf(WEFT_INVALID_ARGUMENT,
                        "DLPack byte_offset %llu with %zu bytes of data from "
                        "%p runs past the end of the address space",
                        static_cast<unsigned long long>(dl.byte_offset),
                        bytes, dl.data);
  void* data = reinterpret_cast<void*>(base + dl.byte_offset);
  return weft_tensor_create_from_data(dtype, dl.shape, dl.ndim, data, bytes,
                                      CallDlDeleter, managed, out_tensor);
}

}  // extern "C"
