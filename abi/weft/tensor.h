/** @file
 * Weft — tensors.
 *
 * A tensor is a dense, row-major n-dimensional array in host memory with an
 * element type and a shape.  Tensors handed to and returned by the user API
 * always live in host memory; device memory stays inside the runtime and its
 * plugins.
 *
 * Threads: a tensor may be read from many threads at once.  Writing through
 * weft_tensor_data() while another thread reads the same tensor is a data
 * race, as with any array.  weft_tensor_destroy() must not race with any use.
 */
#ifndef WEFT_TENSOR_H_
#define WEFT_TENSOR_H_

#include <stddef.h>
#include <stdint.h>

#include "weft/dtype.h"
#include "weft/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The largest rank a tensor may have. */
#define WEFT_MAX_RANK 32

/** A dense, row-major array in host memory.  Opaque, reference-counted. */
typedef struct weft_tensor weft_tensor;

/** Called once when the last user of wrapped caller memory lets go.  May be
 * called from any thread, including a runtime worker thread. */
typedef void (*weft_deleter)(void* data, size_t byte_size, void* deleter_arg);

/** Creates a tensor of `dtype` and shape `dims[0..rank)` backed by new,
 * zero-filled host memory aligned to 64 bytes.  `dims` may be NULL when rank
 * is 0 (a scalar).  Dimensions must be >= 0; a dimension of 0 gives an empty
 * tensor.  On success *out_tensor is owned by the caller: release it with
 * weft_tensor_destroy().  Errors: INVALID_ARGUMENT for a bad dtype, a
 * negative dimension, rank above WEFT_MAX_RANK or a size that overflows;
 * RESOURCE_EXHAUSTED when memory runs out.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_create(
    weft_dtype dtype, const int64_t* dims, int32_t rank,
    weft_tensor** out_tensor);

/** Wraps caller memory without copying (zero-copy).  `data` must hold
 * `byte_size` bytes, exactly dtype size × element count, be aligned to the
 * dtype's size (kernels read it through typed pointers; INVALID_ARGUMENT
 * otherwise), and stay valid until
 * `deleter(data, byte_size, deleter_arg)` is called; `deleter` may be NULL
 * when the caller keeps the memory alive longer than every tensor that
 * shares it (including tensors the runtime derives from it, such as fetched
 * outputs of an Identity).  On error the deleter is NOT called and the caller
 * keeps ownership of `data`.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_create_from_data(
    weft_dtype dtype, const int64_t* dims, int32_t rank, void* data,
    size_t byte_size, weft_deleter deleter, void* deleter_arg,
    weft_tensor** out_tensor);

/** Creates a tensor holding a copy of `byte_size` bytes at `data`.  The same
 * errors as weft_tensor_create(), plus INVALID_ARGUMENT when byte_size does
 * not match the shape.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_create_copy(
    weft_dtype dtype, const int64_t* dims, int32_t rank, const void* data,
    size_t byte_size, weft_tensor** out_tensor);

/** Releases the caller's reference.  Memory is freed (or the deleter called)
 * once no tensor, session or pending run still uses it.  NULL is a no-op. */
WEFT_API void weft_tensor_destroy(weft_tensor* tensor);

/** The tensor's element type. */
WEFT_API weft_dtype weft_tensor_dtype(const weft_tensor* tensor);
/** The number of dimensions, 0 for a scalar. */
WEFT_API int32_t weft_tensor_rank(const weft_tensor* tensor);
/** Size of dimension `axis`; -1 when axis is out of range. */
WEFT_API int64_t weft_tensor_dim(const weft_tensor* tensor, int32_t axis);
/** The dims array, borrowed: lives as long as `tensor`.  May be NULL for a
 * scalar. */
WEFT_API const int64_t* weft_tensor_dims(const weft_tensor* tensor);
/** Product of the dims (1 for a scalar, 0 for an empty tensor). */
WEFT_API int64_t weft_tensor_element_count(const weft_tensor* tensor);
/** The size of the data in bytes: element count × dtype size. */
WEFT_API size_t weft_tensor_byte_size(const weft_tensor* tensor);
/** The first element, in host memory; borrowed, lives as long as `tensor`.
 * Writable: tensors are mutable arrays, but a tensor fed to a running
 * session must not be written until that run returns.  May be NULL for an
 * empty tensor. */
WEFT_API void* weft_tensor_data(const weft_tensor* tensor);

/** ---- DLPack (v0.6, as shipped by Debian's libdlpack-dev) ----------------
 * Include <dlpack/dlpack.h> to use these.  Only CPU (kDLCPU, device_id 0)
 * tensors that are compact and row-major (any strides when empty) are
 * exchanged, with data + byte_offset aligned to the element size and the
 * whole tensor inside the address space; anything else is refused with
 * UNIMPLEMENTED or INVALID_ARGUMENT naming the reason. */
struct DLManagedTensor;

/** Exports `tensor` as a DLManagedTensor sharing its memory (no copy).  The
 * caller owns *out and releases it by calling (*out)->deleter(*out), which
 * drops the reference the export holds; `tensor` itself stays owned by the
 * caller.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_to_dlpack(
    const weft_tensor* tensor, struct DLManagedTensor** out);

/** Imports a DLManagedTensor without copying.  On success the new tensor owns
 * `managed` and calls managed->deleter(managed) when the last reference
 * goes; on error ownership stays with the caller.  Thread-safe. */
WEFT_API WEFT_MUST_USE weft_status* weft_tensor_from_dlpack(
    struct DLManagedTensor* managed, weft_tensor** out_tensor);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TENSOR_H_ */
