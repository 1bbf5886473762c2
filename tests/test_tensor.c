/* Tensors: creation, shape queries, errors, zero-copy wrapping and DLPack. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

/* ---- creation and queries ---------------------------------------------- */

Test(tensor, create_is_zero_filled_and_aligned) {
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create(WEFT_FLOAT32, WT_SHAPE(2, 3), &t));
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(2, 3));
  cr_expect_eq(weft_tensor_byte_size(t), 24);
  const int64_t* dims = weft_tensor_dims(t);
  cr_assert_not_null(dims);
  cr_expect_eq(dims[0], 2);
  cr_expect_eq(dims[1], 3);
  const unsigned char* bytes = weft_tensor_data(t);
  cr_assert_not_null(bytes);
  cr_expect_eq((uintptr_t)bytes % 64, 0, "data not 64-byte aligned");
  for (int i = 0; i < 24; ++i) cr_expect_eq(bytes[i], 0, "byte %d", i);
  weft_tensor_destroy(t);
}

Test(tensor, dim_out_of_range_is_minus_one) {
  weft_tensor* t = wt_tensor(WEFT_INT64, WT_SHAPE(5), NULL);
  cr_expect_eq(weft_tensor_dim(t, 0), 5);
  cr_expect_eq(weft_tensor_dim(t, 1), -1);
  cr_expect_eq(weft_tensor_dim(t, -1), -1);
  cr_expect_eq(weft_tensor_dim(t, 1000), -1);
  weft_tensor_destroy(t);
}

Test(tensor, scalar) {
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create(WEFT_FLOAT64, NULL, 0, &t));
  cr_expect_eq(weft_tensor_rank(t), 0);
  cr_expect_eq(weft_tensor_element_count(t), 1);
  cr_expect_eq(weft_tensor_byte_size(t), 8);
  cr_expect_eq(weft_tensor_dim(t, 0), -1);
  double* value = weft_tensor_data(t);
  cr_assert_not_null(value);
  cr_expect_eq(*value, 0.0);
  weft_tensor_destroy(t);
}

Test(tensor, empty_tensors) {
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create(WEFT_FLOAT32, WT_SHAPE(0, 5), &t));
  cr_expect_eq(weft_tensor_rank(t), 2);
  cr_expect_eq(weft_tensor_dim(t, 0), 0);
  cr_expect_eq(weft_tensor_dim(t, 1), 5);
  cr_expect_eq(weft_tensor_element_count(t), 0);
  cr_expect_eq(weft_tensor_byte_size(t), 0);
  weft_tensor_destroy(t);

  /* A zero anywhere makes the product 0, so a huge other dimension is no
   * overflow. */
  WT_OK(weft_tensor_create(WEFT_FLOAT64, WT_SHAPE(INT64_MAX, 0), &t));
  cr_expect_eq(weft_tensor_element_count(t), 0);
  cr_expect_eq(weft_tensor_byte_size(t), 0);
  weft_tensor_destroy(t);
  /* ...but the other dims' product must still fit in int64, since kernels
   * take partial products of dims (sizes outside and inside an axis). */
  t = NULL;
  WT_EXPECT_ERROR(
      weft_tensor_create(WEFT_FLOAT64, WT_SHAPE(INT64_MAX, 3, 0), &t),
      WEFT_INVALID_ARGUMENT, "too large");
  cr_expect_null(t);

  WT_OK(weft_tensor_create_copy(WEFT_INT32, WT_SHAPE(3, 0), NULL, 0, &t));
  cr_expect_eq(weft_tensor_element_count(t), 0);
  weft_tensor_destroy(t);
}

Test(tensor, max_rank_is_accepted) {
  int64_t dims[WEFT_MAX_RANK];
  for (int i = 0; i < WEFT_MAX_RANK; ++i) dims[i] = 1;
  dims[WEFT_MAX_RANK - 1] = 2;
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create(WEFT_UINT8, dims, WEFT_MAX_RANK, &t));
  cr_expect_eq(weft_tensor_rank(t), WEFT_MAX_RANK);
  cr_expect_eq(weft_tensor_element_count(t), 2);
  weft_tensor_destroy(t);
}

Test(tensor, dtype_sizes_and_names) {
  static const struct {
    weft_dtype dtype;
    size_t size;
    const char* name;
  } expected[] = {
      {WEFT_FLOAT32, 4, "float32"},   {WEFT_FLOAT64, 8, "float64"},
      {WEFT_INT32, 4, "int32"},       {WEFT_INT64, 8, "int64"},
      {WEFT_UINT8, 1, "uint8"},       {WEFT_BOOL, 1, "bool"},
      {WEFT_FLOAT16, 2, "float16"},   {WEFT_BFLOAT16, 2, "bfloat16"},
      {WEFT_INT8, 1, "int8"},         {WEFT_INT16, 2, "int16"},
      {WEFT_UINT16, 2, "uint16"},     {WEFT_UINT32, 4, "uint32"},
      {WEFT_UINT64, 8, "uint64"}};
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; ++i) {
    cr_expect_eq(weft_dtype_size(expected[i].dtype), expected[i].size,
                 "size of %s", expected[i].name);
    cr_expect_str_eq(weft_dtype_name(expected[i].dtype), expected[i].name);
  }
  cr_expect_eq(weft_dtype_size(WEFT_DTYPE_INVALID), 0);
  cr_expect_eq(weft_dtype_size((weft_dtype)99), 0);
  cr_expect_str_eq(weft_dtype_name(WEFT_DTYPE_INVALID), "invalid");
  cr_expect_str_eq(weft_dtype_name((weft_dtype)99), "invalid");
}

/* Plugins use the header's inline table, the runtime its exported one:
 * they must never disagree, or a plugin would size tensors differently. */
Test(tensor, inline_and_exported_dtype_tables_agree) {
  for (int32_t d = -2; d <= 40; ++d) {
    cr_expect_eq(weft_dtype_size_of(d), weft_dtype_size((weft_dtype)d),
                 "size of dtype %d", d);
    cr_expect_str_eq(weft_dtype_name_of(d), weft_dtype_name((weft_dtype)d),
                     "name of dtype %d", d);
  }
}

Test(tensor, every_dtype_can_be_created) {
  for (int d = WEFT_FLOAT32; d <= WEFT_UINT64; ++d) {
    weft_tensor* t = NULL;
    WT_OK(weft_tensor_create((weft_dtype)d, WT_SHAPE(3), &t));
    wt_expect_shape(t, (weft_dtype)d, WT_SHAPE(3));
    weft_tensor_destroy(t);
  }
}

Test(tensor, destroy_null_is_a_no_op) { weft_tensor_destroy(NULL); }

/* ---- creation errors --------------------------------------------------- */

Test(tensor, invalid_dtype_is_refused) {
  weft_tensor* t = NULL;
  WT_EXPECT_CODE(weft_tensor_create(WEFT_DTYPE_INVALID, WT_SHAPE(2), &t),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_tensor_create((weft_dtype)99, WT_SHAPE(2), &t),
                 WEFT_INVALID_ARGUMENT);
  float data[2] = {0};
  WT_EXPECT_CODE(weft_tensor_create_copy((weft_dtype)-1, WT_SHAPE(2), data,
                                         sizeof data, &t),
                 WEFT_INVALID_ARGUMENT);
}

Test(tensor, negative_dim_is_refused) {
  weft_tensor* t = NULL;
  WT_EXPECT_CODE(weft_tensor_create(WEFT_FLOAT32, WT_SHAPE(2, -1), &t),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_tensor_create(WEFT_FLOAT32, WT_SHAPE(INT64_MIN), &t),
                 WEFT_INVALID_ARGUMENT);
}

Test(tensor, bad_rank_is_refused) {
  int64_t dims[WEFT_MAX_RANK + 1];
  for (int i = 0; i <= WEFT_MAX_RANK; ++i) dims[i] = 1;
  weft_tensor* t = NULL;
  WT_EXPECT_CODE(weft_tensor_create(WEFT_FLOAT32, dims, WEFT_MAX_RANK + 1, &t),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_tensor_create(WEFT_FLOAT32, dims, -1, &t),
                 WEFT_INVALID_ARGUMENT);
}

Test(tensor, size_overflow_is_refused) {
  weft_tensor* t = NULL;
  /* The element count itself overflows int64. */
  WT_EXPECT_CODE(weft_tensor_create(WEFT_UINT8, WT_SHAPE(INT64_MAX, 2), &t),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(
      weft_tensor_create(WEFT_UINT8, WT_SHAPE(1ll << 32, 1ll << 32, 4), &t),
      WEFT_INVALID_ARGUMENT);
  /* The count fits but count × element size does not. */
  WT_EXPECT_CODE(weft_tensor_create(WEFT_FLOAT64, WT_SHAPE(1ll << 62), &t),
                 WEFT_INVALID_ARGUMENT);
}

Test(tensor, impossible_allocation_is_resource_exhausted) {
  /* 2^50 bytes: no overflow, but beyond any address space we run in. */
  weft_tensor* t = NULL;
  WT_EXPECT_CODE(weft_tensor_create(WEFT_UINT8, WT_SHAPE(1ll << 40, 1ll << 10),
                                    &t),
                 WEFT_RESOURCE_EXHAUSTED);
}

/* ---- copies ------------------------------------------------------------ */

Test(tensor, create_copy_copies) {
  int32_t source[6] = {1, -2, 3, -4, 5, -6};
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create_copy(WEFT_INT32, WT_SHAPE(3, 2), source,
                                sizeof source, &t));
  wt_expect_shape(t, WEFT_INT32, WT_SHAPE(3, 2));
  int32_t* data = weft_tensor_data(t);
  cr_assert_neq((void*)data, (void*)source);
  memset(source, 0, sizeof source);
  cr_expect_eq(data[0], 1);
  cr_expect_eq(data[3], -4);
  cr_expect_eq(data[5], -6);
  weft_tensor_destroy(t);
}

Test(tensor, create_copy_checks_byte_size) {
  float source[6] = {0};
  weft_tensor* t = NULL;
  WT_EXPECT_CODE(weft_tensor_create_copy(WEFT_FLOAT32, WT_SHAPE(2, 3), source,
                                         sizeof source - 4, &t),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_tensor_create_copy(WEFT_FLOAT32, WT_SHAPE(2, 3), source,
                                         sizeof source + 4, &t),
                 WEFT_INVALID_ARGUMENT);
}

Test(tensor, data_is_writable) {
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_SHAPE(4), NULL);
  float* data = weft_tensor_data(t);
  data[2] = 7.5f;
  cr_expect_eq(((float*)weft_tensor_data(t))[2], 7.5f);
  weft_tensor_destroy(t);
}

/* ---- zero-copy wrapping ------------------------------------------------- */

struct deleter_record {
  atomic_int calls;
  void* data;
  size_t byte_size;
};

static void counting_deleter(void* data, size_t byte_size, void* arg) {
  struct deleter_record* record = arg;
  record->data = data;
  record->byte_size = byte_size;
  atomic_fetch_add(&record->calls, 1);
  /* Poison before freeing so a late reader sees garbage, not old values. */
  memset(data, 0xEE, byte_size);
  free(data);
}

static float* fresh_buffer(size_t count) {
  float* buffer = malloc(count * sizeof(float));
  cr_assert_not_null(buffer);
  for (size_t i = 0; i < count; ++i) buffer[i] = (float)i + 0.5f;
  return buffer;
}

Test(tensor, from_data_shares_memory) {
  struct deleter_record record = {0};
  float* buffer = fresh_buffer(6);
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(2, 3), buffer,
                                     6 * sizeof(float), counting_deleter,
                                     &record, &t));
  cr_assert_eq(weft_tensor_data(t), (void*)buffer);
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(2, 3));
  buffer[4] = 42.0f;
  cr_expect_eq(((float*)weft_tensor_data(t))[4], 42.0f);
  ((float*)weft_tensor_data(t))[1] = -1.0f;
  cr_expect_eq(buffer[1], -1.0f);
  cr_expect_eq(atomic_load(&record.calls), 0);

  weft_tensor_destroy(t);
  cr_expect_eq(atomic_load(&record.calls), 1);
  cr_expect_eq(record.data, (void*)buffer);
  cr_expect_eq(record.byte_size, 6 * sizeof(float));
}

Test(tensor, from_data_without_deleter) {
  float buffer[3] = {1, 2, 3};
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(3), buffer,
                                     sizeof buffer, NULL, NULL, &t));
  cr_expect_eq(weft_tensor_data(t), (void*)buffer);
  weft_tensor_destroy(t);
  cr_expect_eq(buffer[2], 3.0f);
}

Test(tensor, from_data_error_keeps_ownership) {
  struct deleter_record record = {0};
  float* buffer = fresh_buffer(6);
  weft_tensor* t = NULL;
  WT_EXPECT_CODE(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(2, 3),
                                              buffer, 5 * sizeof(float),
                                              counting_deleter, &record, &t),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(2, -3),
                                              buffer, 6 * sizeof(float),
                                              counting_deleter, &record, &t),
                 WEFT_INVALID_ARGUMENT);
  cr_expect_eq(atomic_load(&record.calls), 0);
  cr_expect_eq(buffer[5], 5.5f, "the caller's memory was touched");
  free(buffer);
}

/* Kernels read wrapped memory as typed elements, so it must be aligned. */
Test(tensor, from_data_refuses_misaligned_memory) {
  struct deleter_record record = {0};
  double* storage = calloc(4, sizeof(double));
  cr_assert_not_null(storage);
  char* odd = (char*)storage + 1;
  weft_tensor* t = NULL;
  WT_EXPECT_ERROR(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(2, 3),
                                               odd, 6 * sizeof(float),
                                               counting_deleter, &record, &t),
                  WEFT_INVALID_ARGUMENT, "aligned");
  WT_EXPECT_ERROR(weft_tensor_create_from_data(WEFT_INT64, WT_SHAPE(2),
                                               (char*)storage + 4,
                                               2 * sizeof(int64_t),
                                               counting_deleter, &record, &t),
                  WEFT_INVALID_ARGUMENT, "aligned");
  cr_expect_null(t);
  /* Bytes need no alignment. */
  WT_OK(weft_tensor_create_from_data(WEFT_UINT8, WT_SHAPE(3), odd, 3, NULL,
                                     NULL, &t));
  weft_tensor_destroy(t);
  cr_expect_eq(atomic_load(&record.calls), 0);
  free(storage);
}

/* The deleter must wait for every user, including the tensor a session
 * derives from a feed when Identity forwards it without a copy. */
Test(tensor, from_data_lives_through_a_session) {
  struct deleter_record record = {0};
  float* buffer = fresh_buffer(4);
  weft_tensor* fed = NULL;
  WT_OK(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(4), buffer,
                                     4 * sizeof(float), counting_deleter,
                                     &record, &fed));

  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(4));
  weft_output y = wt_apply1(graph, "Identity", "y", x);
  weft_session* session = wt_session_new(graph, NULL);

  weft_tensor* out = wt_run1(session, &x, &fed, 1, y);
  cr_expect_eq(atomic_load(&record.calls), 0, "deleter ran during the run");
  weft_tensor_destroy(fed);

  const float* values = weft_tensor_data(out);
  const unsigned char* begin = (const unsigned char*)buffer;
  const unsigned char* at = (const unsigned char*)values;
  int shares = at >= begin && at < begin + 4 * sizeof(float);
  cr_log_info("the fetched Identity output %s the fed buffer",
              shares ? "shares" : "copies");
  if (shares) {
    cr_expect_eq(atomic_load(&record.calls), 0,
                 "deleter ran while the fetched Identity output still "
                 "points into the buffer");
  }
  for (int i = 0; i < 4; ++i)
    cr_expect_eq(values[i], (float)i + 0.5f, "element %d", i);

  weft_session_destroy(session);
  weft_graph_destroy(graph);
  if (shares) cr_expect_eq(atomic_load(&record.calls), 0);
  cr_expect_eq(((const float*)weft_tensor_data(out))[3], 3.5f);

  weft_tensor_destroy(out);
  cr_expect_eq(atomic_load(&record.calls), 1,
               "deleter called %d times once every user let go",
               atomic_load(&record.calls));
}

Test(tensor, from_data_fed_twice_deleted_once) {
  struct deleter_record record = {0};
  float* buffer = fresh_buffer(2);
  weft_tensor* fed = NULL;
  WT_OK(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(2), buffer,
                                     2 * sizeof(float), counting_deleter,
                                     &record, &fed));
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(2));
  weft_output y = wt_apply1(graph, "Identity", "y", x);
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* a = wt_run1(session, &x, &fed, 1, y);
  weft_tensor* b = wt_run1(session, &x, &fed, 1, y);
  weft_tensor_destroy(fed);
  weft_tensor_destroy(a);
  cr_expect_eq(((const float*)weft_tensor_data(b))[1], 1.5f);
  weft_tensor_destroy(b);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  cr_expect_eq(atomic_load(&record.calls), 1);
}

/* ---- DLPack -------------------------------------------------------------- */

#ifndef WEFT_TEST_HAVE_DLPACK
Test(dlpack, exchange) { WT_SKIP("dlpack/dlpack.h was not found at build time"); }
#else
#include <dlpack/dlpack.h>

static void expect_refused(weft_status* status, const char* what) {
  cr_assert_not_null(status, "%s was accepted", what);
  weft_code code = weft_status_code(status);
  cr_expect(code == WEFT_INVALID_ARGUMENT || code == WEFT_UNIMPLEMENTED,
            "%s refused with %s", what, weft_code_name(code));
  cr_expect_gt(strlen(weft_status_message(status)), 0,
               "%s refused without a reason", what);
  weft_status_destroy(status);
}

Test(dlpack, export_shares_memory) {
  float values[6] = {1, 2, 3, 4, 5, 6};
  weft_tensor* t = wt_tensor(WEFT_FLOAT32, WT_SHAPE(2, 3), values);
  DLManagedTensor* managed = NULL;
  WT_OK(weft_tensor_to_dlpack(t, &managed));
  cr_assert_not_null(managed);
  DLTensor* dl = &managed->dl_tensor;
  cr_expect_eq(dl->device.device_type, kDLCPU);
  cr_expect_eq(dl->ndim, 2);
  cr_assert_not_null(dl->shape);
  cr_expect_eq(dl->shape[0], 2);
  cr_expect_eq(dl->shape[1], 3);
  if (dl->strides != NULL) {
    cr_expect_eq(dl->strides[0], 3);
    cr_expect_eq(dl->strides[1], 1);
  }
  cr_expect_eq(dl->dtype.code, kDLFloat);
  cr_expect_eq(dl->dtype.bits, 32);
  cr_expect_eq(dl->dtype.lanes, 1);
  float* shared = (float*)((char*)dl->data + dl->byte_offset);
  cr_expect_eq((void*)shared, weft_tensor_data(t));
  shared[5] = -6.0f;
  cr_expect_eq(((float*)weft_tensor_data(t))[5], -6.0f);

  cr_assert_not_null(managed->deleter);
  managed->deleter(managed);
  /* The tensor is still the caller's. */
  cr_expect_eq(((float*)weft_tensor_data(t))[0], 1.0f);
  weft_tensor_destroy(t);
}

Test(dlpack, export_outlives_the_tensor) {
  struct deleter_record record = {0};
  float* buffer = fresh_buffer(3);
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(3), buffer,
                                     3 * sizeof(float), counting_deleter,
                                     &record, &t));
  DLManagedTensor* managed = NULL;
  WT_OK(weft_tensor_to_dlpack(t, &managed));
  weft_tensor_destroy(t);
  cr_expect_eq(atomic_load(&record.calls), 0, "export lost its reference");
  const float* shared = (const float*)((char*)managed->dl_tensor.data +
                                       managed->dl_tensor.byte_offset);
  cr_expect_eq(shared[2], 2.5f);
  managed->deleter(managed);
  cr_expect_eq(atomic_load(&record.calls), 1);
}

Test(dlpack, export_dtypes) {
  static const struct {
    weft_dtype dtype;
    uint8_t code, bits;
  } expected[] = {{WEFT_FLOAT32, kDLFloat, 32}, {WEFT_FLOAT64, kDLFloat, 64},
                  {WEFT_FLOAT16, kDLFloat, 16}, {WEFT_BFLOAT16, kDLBfloat, 16},
                  {WEFT_INT8, kDLInt, 8},       {WEFT_INT16, kDLInt, 16},
                  {WEFT_INT32, kDLInt, 32},     {WEFT_INT64, kDLInt, 64},
                  {WEFT_UINT8, kDLUInt, 8},     {WEFT_UINT16, kDLUInt, 16},
                  {WEFT_UINT32, kDLUInt, 32},   {WEFT_UINT64, kDLUInt, 64}};
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; ++i) {
    weft_tensor* t = wt_tensor(expected[i].dtype, WT_SHAPE(2), NULL);
    DLManagedTensor* managed = NULL;
    WT_OK(weft_tensor_to_dlpack(t, &managed));
    cr_expect_eq(managed->dl_tensor.dtype.code, expected[i].code, "%s",
                 weft_dtype_name(expected[i].dtype));
    cr_expect_eq(managed->dl_tensor.dtype.bits, expected[i].bits, "%s",
                 weft_dtype_name(expected[i].dtype));
    cr_expect_eq(managed->dl_tensor.dtype.lanes, 1);
    managed->deleter(managed);
    weft_tensor_destroy(t);
  }
}

Test(dlpack, export_scalar) {
  weft_tensor* t = wt_scalar_f32(3.25f);
  DLManagedTensor* managed = NULL;
  WT_OK(weft_tensor_to_dlpack(t, &managed));
  cr_expect_eq(managed->dl_tensor.ndim, 0);
  cr_expect_eq(*(const float*)((char*)managed->dl_tensor.data +
                               managed->dl_tensor.byte_offset),
               3.25f);
  managed->deleter(managed);
  weft_tensor_destroy(t);
}

/* A DLManagedTensor made the way another framework would. */
struct foreign {
  DLManagedTensor managed;
  int64_t shape[3];
  int64_t strides[3];
  float* storage;
  int deleted;
};

static void foreign_deleter(DLManagedTensor* self) {
  struct foreign* f = self->manager_ctx;
  f->deleted++;
  free(f->storage);
  f->storage = NULL;
}

/* A [2,3] float32 CPU tensor at byte offset 16 of its storage. */
static void foreign_init(struct foreign* f) {
  memset(f, 0, sizeof *f);
  f->storage = malloc(16 + 6 * sizeof(float));
  cr_assert_not_null(f->storage);
  for (int i = 0; i < 6; ++i) f->storage[4 + i] = 10.0f + (float)i;
  f->shape[0] = 2;
  f->shape[1] = 3;
  DLTensor* dl = &f->managed.dl_tensor;
  dl->data = f->storage;
  dl->device.device_type = kDLCPU;
  dl->device.device_id = 0;
  dl->ndim = 2;
  dl->dtype.code = kDLFloat;
  dl->dtype.bits = 32;
  dl->dtype.lanes = 1;
  dl->shape = f->shape;
  dl->strides = NULL;
  dl->byte_offset = 16;
  f->managed.manager_ctx = f;
  f->managed.deleter = foreign_deleter;
}

Test(dlpack, import_shares_memory) {
  struct foreign f;
  foreign_init(&f);
  float* first = f.storage + 4;
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_from_dlpack(&f.managed, &t));
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(2, 3));
  cr_expect_eq(weft_tensor_data(t), (void*)first);
  cr_expect_eq(((float*)weft_tensor_data(t))[5], 15.0f);
  first[0] = -1.0f;
  cr_expect_eq(((float*)weft_tensor_data(t))[0], -1.0f);
  cr_expect_eq(f.deleted, 0);
  weft_tensor_destroy(t);
  cr_expect_eq(f.deleted, 1);
}

Test(dlpack, import_accepts_explicit_compact_strides) {
  struct foreign f;
  foreign_init(&f);
  f.strides[0] = 3;
  f.strides[1] = 1;
  f.managed.dl_tensor.strides = f.strides;
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_from_dlpack(&f.managed, &t));
  cr_expect_eq(((float*)weft_tensor_data(t))[4], 14.0f);
  weft_tensor_destroy(t);
  cr_expect_eq(f.deleted, 1);
}

Test(dlpack, import_feeds_a_session) {
  struct foreign f;
  foreign_init(&f);
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_from_dlpack(&f.managed, &t));
  weft_graph* graph = wt_graph_new();
  weft_output x = wt_placeholder(graph, "x", WEFT_FLOAT32, WT_SHAPE(2, 3));
  weft_output y = wt_apply1(graph, "Neg", "y", x);
  weft_session* session = wt_session_new(graph, NULL);
  weft_tensor* out = wt_run1(session, &x, &t, 1, y);
  double expected[6];
  for (int i = 0; i < 6; ++i) expected[i] = -(10.0 + i);
  wt_expect_f32(out, expected, 6, 0, 0);
  weft_tensor_destroy(out);
  weft_tensor_destroy(t);
  weft_session_destroy(session);
  weft_graph_destroy(graph);
  cr_expect_eq(f.deleted, 1);
}

Test(dlpack, round_trip) {
  struct deleter_record record = {0};
  float* buffer = fresh_buffer(6);
  weft_tensor* original = NULL;
  WT_OK(weft_tensor_create_from_data(WEFT_FLOAT32, WT_SHAPE(3, 2), buffer,
                                     6 * sizeof(float), counting_deleter,
                                     &record, &original));
  DLManagedTensor* managed = NULL;
  WT_OK(weft_tensor_to_dlpack(original, &managed));
  weft_tensor* back = NULL;
  WT_OK(weft_tensor_from_dlpack(managed, &back));
  wt_expect_shape(back, WEFT_FLOAT32, WT_SHAPE(3, 2));
  cr_expect_eq(weft_tensor_data(back), (void*)buffer);

  weft_tensor_destroy(original);
  cr_expect_eq(atomic_load(&record.calls), 0);
  cr_expect_eq(((float*)weft_tensor_data(back))[5], 5.5f);
  weft_tensor_destroy(back);
  cr_expect_eq(atomic_load(&record.calls), 1);
}

Test(dlpack, import_refuses_non_cpu_device) {
  static const DLDeviceType devices[] = {kDLCUDA, kDLOpenCL, kDLVulkan,
                                         kDLROCM};
  for (size_t i = 0; i < sizeof devices / sizeof devices[0]; ++i) {
    struct foreign f;
    foreign_init(&f);
    f.managed.dl_tensor.device.device_type = devices[i];
    weft_tensor* t = NULL;
    expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "a device tensor");
    cr_expect_eq(f.deleted, 0, "refusal must leave ownership with the caller");
    f.managed.deleter(&f.managed);
  }
}

Test(dlpack, import_refuses_non_compact_layouts) {
  /* Column-major [2,3]. */
  struct foreign f;
  foreign_init(&f);
  f.strides[0] = 1;
  f.strides[1] = 2;
  f.managed.dl_tensor.strides = f.strides;
  weft_tensor* t = NULL;
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "column-major");
  cr_expect_eq(f.deleted, 0);
  f.managed.deleter(&f.managed);

  /* Padded rows: a [2,3] view into a [2,4] buffer. */
  foreign_init(&f);
  f.strides[0] = 4;
  f.strides[1] = 1;
  f.managed.dl_tensor.strides = f.strides;
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "padded rows");
  cr_expect_eq(f.deleted, 0);
  f.managed.deleter(&f.managed);
}

Test(dlpack, import_refuses_unsupported_types) {
  struct foreign f;
  foreign_init(&f);
  f.managed.dl_tensor.dtype.lanes = 4;
  weft_tensor* t = NULL;
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "vector lanes");
  f.managed.deleter(&f.managed);

  foreign_init(&f);
  f.managed.dl_tensor.dtype.code = kDLComplex;
  f.managed.dl_tensor.dtype.bits = 64;
  f.shape[1] = 1; /* keep the byte size within the storage */
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "complex64");
  f.managed.deleter(&f.managed);

  foreign_init(&f);
  f.managed.dl_tensor.dtype.code = kDLFloat;
  f.managed.dl_tensor.dtype.bits = 24;
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "float24");
  cr_expect_eq(f.deleted, 0);
  f.managed.deleter(&f.managed);
}

Test(dlpack, import_refuses_bad_shapes) {
  struct foreign f;
  foreign_init(&f);
  f.shape[1] = -3;
  weft_tensor* t = NULL;
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "a negative dim");
  f.managed.deleter(&f.managed);

  foreign_init(&f);
  int64_t many[WEFT_MAX_RANK + 1];
  for (int i = 0; i <= WEFT_MAX_RANK; ++i) many[i] = 1;
  f.managed.dl_tensor.shape = many;
  f.managed.dl_tensor.ndim = WEFT_MAX_RANK + 1;
  expect_refused(weft_tensor_from_dlpack(&f.managed, &t), "rank 33");
  cr_expect_eq(f.deleted, 0);
  f.managed.deleter(&f.managed);
}

/* Expects the import of f to be refused and f to stay the caller's. */
static void expect_import_refused(struct foreign* f, const char* what) {
  weft_tensor* t = NULL;
  expect_refused(weft_tensor_from_dlpack(&f->managed, &t), what);
  cr_expect_null(t, "%s left a tensor behind", what);
  cr_expect_eq(f->deleted, 0, "%s: refusal must leave ownership with the "
               "caller", what);
  f->managed.deleter(&f->managed);
}

/* DLDeviceType is an enum, but a producer in another language can store
 * any 32-bit value there; the library must read it as an integer. */
Test(dlpack, import_refuses_out_of_range_device_types) {
  static const int32_t types[] = {-1, 0, 12345, INT32_MAX, INT32_MIN};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
    struct foreign f;
    foreign_init(&f);
    memcpy(&f.managed.dl_tensor.device.device_type, &types[i],
           sizeof types[i]);
    expect_import_refused(&f, "an out-of-range device type");
  }
  /* A CPU tensor has device id 0. */
  static const int32_t ids[] = {1, -1, INT32_MAX};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; ++i) {
    struct foreign f;
    foreign_init(&f);
    f.managed.dl_tensor.device.device_id = ids[i];
    expect_import_refused(&f, "a CPU tensor with a nonzero device id");
  }
}

/* byte_offset is added to the data pointer: values that wrap around the
 * address space would make the tensor point before its buffer, and kernels
 * read elements through typed pointers, which must be aligned. */
Test(dlpack, import_refuses_bad_offsets) {
  static const char* const what[] = {
      "a byte_offset of -16", "a byte_offset of UINT64_MAX",
      "data that ends past the address space",
      "float32 data at an odd address"};
  struct foreign f;
  for (size_t i = 0; i < sizeof what / sizeof what[0]; ++i) {
    foreign_init(&f);
    /* The third is in range for the pointer, but its data is not. */
    const uint64_t offsets[] = {
        (uint64_t)0 - 16, UINT64_MAX,
        (uint64_t)(UINTPTR_MAX - (uintptr_t)f.storage) - 8, 17};
    f.managed.dl_tensor.byte_offset = offsets[i];
    f.shape[1] = 2; /* keeps an offset of 17 within the storage */
    expect_import_refused(&f, what[i]);
  }
  foreign_init(&f);
  f.managed.dl_tensor.data = NULL;
  expect_import_refused(&f, "NULL data with byte_offset 16");
}

Test(dlpack, import_refuses_hostile_dtypes_and_ranks) {
  static const struct {
    uint8_t code, bits;
    uint16_t lanes;
    const char* what;
  } dtypes[] = {{kDLFloat, 32, 0, "zero lanes"},
                {kDLFloat, 0, 1, "zero bits"},
                {255, 32, 1, "type code 255"}};
  struct foreign f;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    foreign_init(&f);
    f.managed.dl_tensor.dtype.code = dtypes[i].code;
    f.managed.dl_tensor.dtype.bits = dtypes[i].bits;
    f.managed.dl_tensor.dtype.lanes = dtypes[i].lanes;
    expect_import_refused(&f, dtypes[i].what);
  }
  foreign_init(&f);
  f.managed.dl_tensor.ndim = -1;
  expect_import_refused(&f, "ndim -1");
  foreign_init(&f);
  f.managed.dl_tensor.shape = NULL;
  expect_import_refused(&f, "a NULL shape");
}

/* Shapes whose element count overflows, with strides that would be
 * compact if the products fit. */
Test(dlpack, import_refuses_shapes_that_overflow) {
  struct foreign f;
  foreign_init(&f);
  f.shape[0] = INT64_MAX;
  f.shape[1] = 4;
  f.strides[0] = 4;
  f.strides[1] = 1;
  f.managed.dl_tensor.strides = f.strides;
  expect_import_refused(&f, "shape [INT64_MAX, 4]");

  foreign_init(&f);
  f.shape[0] = (int64_t)1 << 40;
  f.shape[1] = (int64_t)1 << 40;
  expect_import_refused(&f, "shape [2^40, 2^40]");
}

/* An empty tensor has no elements to lay out: PyTorch gives [3, 0] the
 * strides [1, 1], which are as good as any. */
Test(dlpack, import_accepts_any_strides_of_an_empty_tensor) {
  struct foreign f;
  foreign_init(&f);
  f.shape[0] = 3;
  f.shape[1] = 0;
  f.strides[0] = 1;
  f.strides[1] = 1;
  f.managed.dl_tensor.strides = f.strides;
  weft_tensor* t = NULL;
  WT_OK(weft_tensor_from_dlpack(&f.managed, &t));
  wt_expect_shape(t, WEFT_FLOAT32, WT_SHAPE(3, 0));
  weft_tensor_destroy(t);
  cr_expect_eq(f.deleted, 1);
}
#endif /* WEFT_TEST_HAVE_DLPACK */
