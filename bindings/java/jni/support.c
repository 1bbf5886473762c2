/* Shared helpers of the JNI glue, and the library's load hook. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft_jni.h"

JavaVM* weft_jni_vm;

static jclass exception_class;   /* org.weft.WeftException, global ref */
static jmethodID exception_init; /* WeftException(int, String) */
static jmethodID exception_code; /* int WeftException.statusCode() */
static jmethodID exception_message; /* String statusMessage() */

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env = NULL;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK)
    return JNI_ERR;
  weft_jni_vm = vm;
  jclass local = (*env)->FindClass(env, "org/weft/WeftException");
  if (local == NULL) return JNI_ERR;
  exception_class = (*env)->NewGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  if (exception_class == NULL) return JNI_ERR;
  exception_init = (*env)->GetMethodID(env, exception_class, "<init>",
                                       "(ILjava/lang/String;)V");
  exception_code =
      (*env)->GetMethodID(env, exception_class, "statusCode", "()I");
  exception_message = (*env)->GetMethodID(env, exception_class,
                                          "statusMessage",
                                          "()Ljava/lang/String;");
  return exception_init == NULL || exception_code == NULL ||
                 exception_message == NULL
             ? JNI_ERR
             : JNI_VERSION_1_8;
}

JNIEnv* weft_jni_thread_env(int* attached) {
  JavaVM* vm = weft_jni_vm;
  JNIEnv* env = NULL;
  if (attached) *attached = 0;
  jint r = (*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8);
  if (r == JNI_OK) return env;
  if (r != JNI_EDETACHED ||
      (*vm)->AttachCurrentThreadAsDaemon(vm, (void**)&env, NULL) != JNI_OK)
    return NULL;
  if (attached) *attached = 1;
  return env;
}

weft_status* weft_jni_exception_status(JNIEnv* env, const char* what) {
  jthrowable t = (*env)->ExceptionOccurred(env);
  if (t == NULL) return NULL;
  (*env)->ExceptionClear(env);
  weft_code code = WEFT_INTERNAL;
  jstring text = NULL;
  if ((*env)->IsInstanceOf(env, t, exception_class)) {
    code = (weft_code)(*env)->CallIntMethod(env, t, exception_code);
    text = (jstring)(*env)->CallObjectMethod(env, t, exception_message);
  } else {
    jclass k = (*env)->GetObjectClass(env, t);
    jmethodID to_string =
        (*env)->GetMethodID(env, k, "toString", "()Ljava/lang/String;");
    if (to_string != NULL)
      text = (jstring)(*env)->CallObjectMethod(env, t, to_string);
    (*env)->DeleteLocalRef(env, k);
  }
  (*env)->ExceptionClear(env);
  weft_jni_string s = {NULL, NULL};
  char message[1024];
  if (text != NULL && weft_jni_string_get(env, text, &s) && s.utf != NULL)
    snprintf(message, sizeof message, "%s: %s", what, s.utf);
  else
    snprintf(message, sizeof message, "%s: a Java exception", what);
  (*env)->ExceptionClear(env);
  weft_jni_string_release(env, &s);
  if (text != NULL) (*env)->DeleteLocalRef(env, text);
  (*env)->DeleteLocalRef(env, t);
  return weft_status_create(code == WEFT_OK ? WEFT_UNKNOWN : code, message);
}

void weft_jni_throw(JNIEnv* env, const char* class_name, const char* message) {
  jclass c = (*env)->FindClass(env, class_name);
  if (c != NULL) (*env)->ThrowNew(env, c, message);
}

jthrowable weft_jni_exception(JNIEnv* env, weft_status* status) {
  if (status == NULL) return NULL;
  jint code = (jint)weft_status_code(status);
  jstring message = (*env)->NewStringUTF(env, weft_status_message(status));
  weft_status_destroy(status);
  if (message == NULL) return NULL; /* OutOfMemoryError pending */
  return (jthrowable)(*env)->NewObject(env, exception_class, exception_init,
                                       code, message);
}

int weft_jni_check(JNIEnv* env, weft_status* status) {
  if (status == NULL) return 0;
  jthrowable e = weft_jni_exception(env, status);
  if (e != NULL) (*env)->Throw(env, e);
  return 1;
}

int weft_jni_null_handle(JNIEnv* env, jlong handle) {
  if (handle != 0) return 0;
  weft_jni_throw(env, "java/lang/IllegalStateException", "null native handle");
  return 1;
}

int weft_jni_string_get(JNIEnv* env, jstring java, weft_jni_string* out) {
  out->java = java;
  out->utf = NULL;
  if (java == NULL) return 1;
  out->utf = (*env)->GetStringUTFChars(env, java, NULL);
  return out->utf != NULL;
}

void weft_jni_string_release(JNIEnv* env, weft_jni_string* s) {
  if (s->utf != NULL) (*env)->ReleaseStringUTFChars(env, s->java, s->utf);
  s->utf = NULL;
}

jstring weft_jni_new_string(JNIEnv* env, const char* s) {
  return s == NULL ? NULL : (*env)->NewStringUTF(env, s);
}

static void* scratch(JNIEnv* env, void* local, size_t each, jsize count) {
  if (count <= WEFT_JNI_LOCAL_OUTPUTS) return local;
  void* p = malloc(each * (size_t)count);
  if (p == NULL) weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI scratch");
  return p;
}

int weft_jni_outputs_get(JNIEnv* env, jlongArray nodes, jintArray indices,
                         weft_jni_outputs* out) {
  out->items = out->local;
  out->count = 0;
  jsize n = nodes == NULL ? 0 : (*env)->GetArrayLength(env, nodes);
  jsize m = indices == NULL ? 0 : (*env)->GetArrayLength(env, indices);
  if (n != m) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "nodes and indices differ in length");
    return 0;
  }
  if (n == 0) return 1;
  jlong node_buf[WEFT_JNI_LOCAL_OUTPUTS];
  jint index_buf[WEFT_JNI_LOCAL_OUTPUTS];
  jlong* ns = scratch(env, node_buf, sizeof *ns, n);
  jint* is = ns ? scratch(env, index_buf, sizeof *is, n) : NULL;
  out->items = is ? scratch(env, out->local, sizeof *out->items, n) : NULL;
  int ok = out->items != NULL;
  if (ok) {
    (*env)->GetLongArrayRegion(env, nodes, 0, n, ns);
    (*env)->GetIntArrayRegion(env, indices, 0, n, is);
    for (jsize i = 0; i < n; ++i)
      out->items[i] = (weft_output){WEFT_JNI_PTR(weft_node, ns[i]), is[i]};
    out->count = n;
  }
  if (ns != node_buf) free(ns);
  if (is != index_buf) free(is);
  if (!ok) out->items = out->local;
  return ok;
}

void weft_jni_outputs_release(weft_jni_outputs* outputs) {
  if (outputs->items != outputs->local) free(outputs->items);
  outputs->items = outputs->local;
  outputs->count = 0;
}

int weft_jni_pointers_get(JNIEnv* env, jlongArray handles,
                          weft_jni_pointers* out) {
  out->items = out->local;
  out->count = 0;
  jsize n = handles == NULL ? 0 : (*env)->GetArrayLength(env, handles);
  if (n == 0) return 1;
  jlong buf[WEFT_JNI_LOCAL_OUTPUTS];
  jlong* hs = scratch(env, buf, sizeof *hs, n);
  out->items = hs ? scratch(env, out->local, sizeof *out->items, n) : NULL;
  int ok = out->items != NULL;
  if (ok) {
    (*env)->GetLongArrayRegion(env, handles, 0, n, hs);
    for (jsize i = 0; i < n; ++i) out->items[i] = WEFT_JNI_PTR(void, hs[i]);
    out->count = n;
  }
  if (hs != buf) free(hs);
  if (!ok) out->items = out->local;
  return ok;
}

void weft_jni_pointers_release(weft_jni_pointers* pointers) {
  if (pointers->items != pointers->local) free(pointers->items);
  pointers->items = pointers->local;
  pointers->count = 0;
}

void weft_jni_strings_release(JNIEnv* env, weft_jni_strings* a) {
  for (int32_t i = 0; i < a->count; ++i)
    if (a->items[i] != NULL)
      (*env)->ReleaseStringUTFChars(env, a->java[i], a->items[i]);
  free(a->items);
  free(a->java);
  a->items = NULL;
  a->java = NULL;
  a->count = 0;
}

int weft_jni_strings_get(JNIEnv* env, jobjectArray array,
                         weft_jni_strings* out) {
  out->count = 0;
  out->items = NULL;
  out->java = NULL;
  if (array == NULL) return 1;
  jsize n = (*env)->GetArrayLength(env, array);
  out->items = calloc((size_t)n + 1, sizeof *out->items);
  out->java = calloc((size_t)n + 1, sizeof *out->java);
  if (out->items == NULL || out->java == NULL) {
    weft_jni_strings_release(env, out);
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI strings");
    return 0;
  }
  for (jsize i = 0; i < n; ++i) {
    out->java[i] = (jstring)(*env)->GetObjectArrayElement(env, array, i);
    out->count = i + 1;
    if (out->java[i] == NULL) continue;
    out->items[i] = (*env)->GetStringUTFChars(env, out->java[i], NULL);
    if (out->items[i] == NULL) {
      weft_jni_strings_release(env, out);
      return 0;
    }
  }
  return 1;
}

int weft_jni_dims_get(JNIEnv* env, jlongArray dims, int64_t out[WEFT_MAX_RANK],
                      int32_t* out_rank) {
  jsize rank = dims == NULL ? 0 : (*env)->GetArrayLength(env, dims);
  if (rank > WEFT_MAX_RANK) {
    weft_jni_check(env, weft_status_create(WEFT_INVALID_ARGUMENT,
                                           "rank above WEFT_MAX_RANK (32)"));
    return 0;
  }
  if (rank > 0) {
    jlong buf[WEFT_MAX_RANK];
    (*env)->GetLongArrayRegion(env, dims, 0, rank, buf);
    for (jsize i = 0; i < rank; ++i) out[i] = buf[i];
  }
  *out_rank = rank;
  return 1;
}
