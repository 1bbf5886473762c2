/* .npy arrays into and out of weft tensors (declared in tools/npy.h). */
#include <stdlib.h>

#include "tools/npy.h"
#include "weft/weft.h"

static void free_data(void* data, size_t byte_size, void* arg) {
  (void)byte_size;
  (void)arg;
  free(data);
}

weft_status* npy_to_tensor(npy_array* a, weft_tensor** out_tensor) {
  weft_status* status;
  if (a->byte_size == 0) {
    status = weft_tensor_create(a->dtype, a->dims, a->rank, out_tensor);
  } else {
    /* malloc's alignment suits every dtype, as create_from_data asks. */
    status = weft_tensor_create_from_data(a->dtype, a->dims, a->rank,
                                          a->data, a->byte_size, free_data,
                                          NULL, out_tensor);
    if (status == NULL) a->data = NULL;
  }
  if (status == NULL) npy_free(a);
  return status;
}

int npy_write_tensor(const char* path, const weft_tensor* tensor, char* err,
                     size_t err_size) {
  return npy_write(path, weft_tensor_dtype(tensor), weft_tensor_dims(tensor),
                   weft_tensor_rank(tensor), weft_tensor_data(tensor),
                   weft_tensor_byte_size(tensor), err, err_size);
}
