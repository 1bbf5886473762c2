/* Tensors: from and to Java arrays (copies) and direct buffers (zero-copy,
 * the buffer held by a global reference until the runtime's deleter). */
#include <string.h>

#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name

/* The deleter of a tensor over a direct buffer: drops the global reference
 * that kept the buffer (and so its memory) alive.  The runtime may call it
 * from one of its own threads, which the JVM may not know yet. */
static void release_buffer(void* data, size_t byte_size, void* global_ref) {
  (void)data;
  (void)byte_size;
  int attached = 0;
  JNIEnv* env = weft_jni_thread_env(&attached);
  if (env == NULL) return; /* the JVM is going away: nothing to release */
  (*env)->DeleteGlobalRef(env, (jobject)global_ref);
  if (attached) (*weft_jni_vm)->DetachCurrentThread(weft_jni_vm);
}

JNIEXPORT jlong NATIVE(tensorCreate)(JNIEnv* env, jclass c, jint dtype,
                                     jlongArray dims) {
  (void)c;
  int64_t d[WEFT_MAX_RANK];
  int32_t rank = 0;
  if (!weft_jni_dims_get(env, dims, d, &rank)) return 0;
  weft_tensor* t = NULL;
  if (weft_jni_check(env, weft_tensor_create((weft_dtype)dtype, d, rank, &t)))
    return 0;
  return WEFT_JNI_HANDLE(t);
}

JNIEXPORT jlong NATIVE(tensorFromArray)(JNIEnv* env, jclass c, jint dtype,
                                        jlongArray dims, jobject array,
                                        jlong byte_size) {
  (void)c;
  int64_t d[WEFT_MAX_RANK];
  int32_t rank = 0;
  if (!weft_jni_dims_get(env, dims, d, &rank)) return 0;
  /* Copied straight from the array: one pass over the bytes, no zero fill. */
  void* src = NULL;
  if (byte_size > 0) {
    src = (*env)->GetPrimitiveArrayCritical(env, array, NULL);
    if (src == NULL) return 0;
  }
  weft_tensor* t = NULL;
  weft_status* st = weft_tensor_create_copy((weft_dtype)dtype, d, rank, src,
                                            (size_t)byte_size, &t);
  if (src != NULL)
    (*env)->ReleasePrimitiveArrayCritical(env, array, src, JNI_ABORT);
  if (weft_jni_check(env, st)) return 0;
  return WEFT_JNI_HANDLE(t);
}

/* The address of `byte_size` bytes at `offset` in a direct buffer; NULL
 * with an exception pending when the buffer is too small or not direct. */
static char* buffer_bytes(JNIEnv* env, jobject buffer, jlong offset,
                          jlong byte_size) {
  char* base = (*env)->GetDirectBufferAddress(env, buffer);
  jlong capacity = (*env)->GetDirectBufferCapacity(env, buffer);
  if (base == NULL || capacity < 0) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "not a direct buffer");
    return NULL;
  }
  if (offset < 0 || byte_size < 0 || offset > capacity ||
      byte_size > capacity - offset) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "the buffer is smaller than the tensor");
    return NULL;
  }
  return base + offset;
}

/* A tensor over (zero_copy) or copied from the bytes of a direct buffer. */
static jlong from_buffer(JNIEnv* env, jint dtype, jlongArray dims,
                         jobject buffer, jlong offset, jlong byte_size,
                         int zero_copy) {
  int64_t d[WEFT_MAX_RANK];
  int32_t rank = 0;
  if (!weft_jni_dims_get(env, dims, d, &rank)) return 0;
  char* data = buffer_bytes(env, buffer, offset, byte_size);
  if (data == NULL) return 0;
  weft_tensor* t = NULL;
  if (!zero_copy) {
    if (weft_jni_check(env, weft_tensor_create_copy((weft_dtype)dtype, d, rank,
                                                    data, (size_t)byte_size,
                                                    &t)))
      return 0;
    return WEFT_JNI_HANDLE(t);
  }
  jobject keep = (*env)->NewGlobalRef(env, buffer);
  if (keep == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI global reference");
    return 0;
  }
  weft_status* st = weft_tensor_create_from_data(
      (weft_dtype)dtype, d, rank, data, (size_t)byte_size, release_buffer,
      keep, &t);
  if (st != NULL) {
    /* On error the deleter is not called: the reference is still ours. */
    (*env)->DeleteGlobalRef(env, keep);
    weft_jni_check(env, st);
    return 0;
  }
  return WEFT_JNI_HANDLE(t);
}

JNIEXPORT jlong NATIVE(tensorFromBuffer)(JNIEnv* env, jclass c, jint dtype,
                                         jlongArray dims, jobject buffer,
                                         jlong offset, jlong byte_size) {
  (void)c;
  return from_buffer(env, dtype, dims, buffer, offset, byte_size, 1);
}

JNIEXPORT jlong NATIVE(tensorCopyBuffer)(JNIEnv* env, jclass c, jint dtype,
                                         jlongArray dims, jobject buffer,
                                         jlong offset, jlong byte_size) {
  (void)c;
  return from_buffer(env, dtype, dims, buffer, offset, byte_size, 0);
}

JNIEXPORT void NATIVE(tensorDestroy)(JNIEnv* env, jclass c, jlong tensor) {
  (void)env;
  (void)c;
  weft_tensor_destroy(WEFT_JNI_PTR(weft_tensor, tensor));
}

JNIEXPORT jlongArray NATIVE(tensorInfo)(JNIEnv* env, jclass c, jlong tensor) {
  (void)c;
  if (weft_jni_null_handle(env, tensor)) return NULL;
  const weft_tensor* t = WEFT_JNI_PTR(weft_tensor, tensor);
  int32_t rank = weft_tensor_rank(t);
  jlong info[WEFT_MAX_RANK + 1];
  info[0] = weft_tensor_dtype(t);
  for (int32_t i = 0; i < rank && i < WEFT_MAX_RANK; ++i)
    info[i + 1] = weft_tensor_dim(t, i);
  jlongArray out = (*env)->NewLongArray(env, rank + 1);
  if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, rank + 1, info);
  return out;
}

static int same_size(JNIEnv* env, const weft_tensor* t, jlong byte_size) {
  if ((jlong)weft_tensor_byte_size(t) == byte_size) return 1;
  weft_jni_throw(env, "java/lang/IllegalArgumentException",
                 "destination size differs from the tensor's");
  return 0;
}

JNIEXPORT void NATIVE(tensorToArray)(JNIEnv* env, jclass c, jlong tensor,
                                     jobject array, jlong byte_size) {
  (void)c;
  if (weft_jni_null_handle(env, tensor)) return;
  const weft_tensor* t = WEFT_JNI_PTR(weft_tensor, tensor);
  if (!same_size(env, t, byte_size) || byte_size == 0) return;
  void* dst = (*env)->GetPrimitiveArrayCritical(env, array, NULL);
  if (dst == NULL) return;
  memcpy(dst, weft_tensor_data(t), (size_t)byte_size);
  (*env)->ReleasePrimitiveArrayCritical(env, array, dst, 0);
}

JNIEXPORT void NATIVE(tensorToBuffer)(JNIEnv* env, jclass c, jlong tensor,
                                      jobject buffer, jlong offset,
                                      jlong byte_size) {
  (void)c;
  if (weft_jni_null_handle(env, tensor)) return;
  const weft_tensor* t = WEFT_JNI_PTR(weft_tensor, tensor);
  if (!same_size(env, t, byte_size) || byte_size == 0) return;
  char* dst = buffer_bytes(env, buffer, offset, byte_size);
  if (dst != NULL) memcpy(dst, weft_tensor_data(t), (size_t)byte_size);
}
