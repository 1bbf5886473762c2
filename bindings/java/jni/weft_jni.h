/* The JNI glue's shared helpers: turning statuses into exceptions, reading
 * Java strings and arrays of outputs.  Each glue file implements the native
 * methods of org.weft.Native for one part of the C API. */
#ifndef WEFT_JNI_H_
#define WEFT_JNI_H_

#include <jni.h>
#include <stdint.h>

#include "weft/weft.h"

/* The JVM, for the tensor deleter, which may run on a runtime thread. */
extern JavaVM* weft_jni_vm;

/* The JNIEnv of the calling thread, attaching it as a daemon when the JVM
 * does not know it (a runtime thread); *attached (may be NULL) says so.
 * NULL when the JVM refuses the thread (it is going away). */
JNIEnv* weft_jni_thread_env(int* attached);

/* Throws a WeftException for `status` and destroys it.  Returns 1 when it
 * threw (status was an error), 0 for the OK status. */
int weft_jni_check(JNIEnv* env, weft_status* status);

/* A WeftException for `status`, not thrown (a value to return), and
 * destroys the status.  NULL for the OK status, and when out of memory
 * (an exception is then pending). */
jthrowable weft_jni_exception(JNIEnv* env, weft_status* status);

/* The pending Java exception as a status, cleared; NULL when none is
 * pending.  The message is "what: " and the exception's toString(); a
 * WeftException keeps its code and gives its status message, anything
 * else is INTERNAL.  For C callbacks into Java. */
weft_status* weft_jni_exception_status(JNIEnv* env, const char* what);

/* Throws a Java exception of class `class_name` ("java/lang/...").  */
void weft_jni_throw(JNIEnv* env, const char* class_name, const char* message);

/* Throws IllegalStateException and returns 1 when `handle` is 0: the Java
 * classes never pass 0, but a native method must not crash if one does. */
int weft_jni_null_handle(JNIEnv* env, jlong handle);

/* A Java string as modified UTF-8; `utf` is NULL for a null string. */
typedef struct weft_jni_string {
  jstring java;
  const char* utf;
} weft_jni_string;

/* Returns 0 when out of memory (an exception is pending). */
int weft_jni_string_get(JNIEnv* env, jstring java, weft_jni_string* out);
void weft_jni_string_release(JNIEnv* env, weft_jni_string* s);

/* A Java string for a C string; null for NULL. */
jstring weft_jni_new_string(JNIEnv* env, const char* s);

/* The (node, index) pairs of two parallel Java arrays; small lists live in
 * `local`, larger ones on the heap. */
enum { WEFT_JNI_LOCAL_OUTPUTS = 8 };
typedef struct weft_jni_outputs {
  weft_output* items;
  int32_t count;
  weft_output local[WEFT_JNI_LOCAL_OUTPUTS];
} weft_jni_outputs;

/* Reads `nodes` and `indices` (both may be null: an empty list).  Returns 0
 * with an exception pending on a length mismatch or out of memory. */
int weft_jni_outputs_get(JNIEnv* env, jlongArray nodes, jintArray indices,
                         weft_jni_outputs* out);
void weft_jni_outputs_release(weft_jni_outputs* outputs);

/* A Java long[] as C pointers (nodes, tensors); like the outputs above. */
typedef struct weft_jni_pointers {
  void** items;
  int32_t count;
  void* local[WEFT_JNI_LOCAL_OUTPUTS];
} weft_jni_pointers;

int weft_jni_pointers_get(JNIEnv* env, jlongArray handles,
                          weft_jni_pointers* out);
void weft_jni_pointers_release(weft_jni_pointers* pointers);

/* A Java String[] as C strings: `items` has `count` entries (NULL for a
 * null element) and a NULL after them.  A null array is an empty list. */
typedef struct weft_jni_strings {
  int32_t count;
  const char** items;
  jstring* java;
} weft_jni_strings;

/* Returns 0 with an exception pending when out of memory. */
int weft_jni_strings_get(JNIEnv* env, jobjectArray array,
                         weft_jni_strings* out);
void weft_jni_strings_release(JNIEnv* env, weft_jni_strings* strings);

/* Dimensions from a Java long[]; 0 with an exception pending on a rank
 * above WEFT_MAX_RANK. */
int weft_jni_dims_get(JNIEnv* env, jlongArray dims, int64_t out[WEFT_MAX_RANK],
                      int32_t* out_rank);

/* Session options from SessionOptions' fields; the two strings stay held
 * in *d and *g (release both) while the options are used.  Returns 0 with
 * an exception pending when a string cannot be read. */
int weft_jni_session_options(JNIEnv* env, jstring devices, jint inter_op,
                             jint intra_op, jint placement,
                             jint transfer_precision, jint optimizations,
                             jstring device_gflops, jint recompute,
                             weft_session_options* o, weft_jni_string* d,
                             weft_jni_string* g);

#define WEFT_JNI_PTR(type, handle) ((type*)(intptr_t)(handle))
#define WEFT_JNI_HANDLE(pointer) ((jlong)(intptr_t)(pointer))

#endif /* WEFT_JNI_H_ */
