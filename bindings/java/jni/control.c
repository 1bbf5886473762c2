/* Control flow: weft_cond and weft_while_loop with Java lambdas.  The C
 * builder calls back into org.weft.ControlCallbacks on the calling thread,
 * so the JNIEnv of the native call is the right one inside the callbacks.
 * A lambda's exception is kept on the Java side; here it becomes the
 * callback's error status, which the builder returns naming the branch or
 * loop, and Graph attaches the original exception as the cause. */
#include <stdlib.h>

#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define GRAPH(h) WEFT_JNI_PTR(weft_graph, h)
#define NODE(h) WEFT_JNI_PTR(weft_node, h)

typedef struct callbacks {
  JNIEnv* env;
  jobject java; /* a ControlCallbacks */
} callbacks;

/* The kept Java failure as a status (or a generic one if even asking for
 * it fails). */
static weft_status* failure(callbacks* cb, const char* what) {
  JNIEnv* env = cb->env;
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    return weft_status_create(WEFT_INTERNAL, what);
  }
  jclass k = (*env)->GetObjectClass(env, cb->java);
  jmethodID code_id = (*env)->GetMethodID(env, k, "failureCode", "()I");
  jmethodID msg_id =
      (*env)->GetMethodID(env, k, "failureMessage", "()Ljava/lang/String;");
  (*env)->DeleteLocalRef(env, k);
  if (code_id == NULL || msg_id == NULL) {
    (*env)->ExceptionClear(env);
    return weft_status_create(WEFT_INTERNAL, what);
  }
  jint code = (*env)->CallIntMethod(env, cb->java, code_id);
  jstring msg = (jstring)(*env)->CallObjectMethod(env, cb->java, msg_id);
  weft_jni_string m = {NULL, NULL};
  if ((*env)->ExceptionCheck(env) || !weft_jni_string_get(env, msg, &m)) {
    (*env)->ExceptionClear(env);
    return weft_status_create(WEFT_INTERNAL, what);
  }
  weft_status* st =
      weft_status_create((weft_code)code, m.utf ? m.utf : what);
  weft_jni_string_release(env, &m);
  if (msg) (*env)->DeleteLocalRef(env, msg);
  return st;
}

/* Reads a (node, index) pair array of `count` outputs returned by Java;
 * NULL means the lambda failed. */
static weft_status* unpack(callbacks* cb, jlongArray pairs, int32_t count,
                           weft_output* out, const char* what) {
  JNIEnv* env = cb->env;
  if (pairs == NULL) return failure(cb, what);
  jsize n = (*env)->GetArrayLength(env, pairs);
  if (n != 2 * count) {
    (*env)->DeleteLocalRef(env, pairs);
    return weft_status_create(WEFT_INTERNAL, what);
  }
  jlong* v = (*env)->GetLongArrayElements(env, pairs, NULL);
  if (v == NULL) {
    (*env)->ExceptionClear(env);
    (*env)->DeleteLocalRef(env, pairs);
    return weft_status_create(WEFT_RESOURCE_EXHAUSTED, what);
  }
  for (int32_t i = 0; i < count; ++i)
    out[i] = (weft_output){NODE(v[2 * i]), (int32_t)v[2 * i + 1]};
  (*env)->ReleaseLongArrayElements(env, pairs, v, JNI_ABORT);
  (*env)->DeleteLocalRef(env, pairs);
  return NULL;
}

static weft_status* call_branch(callbacks* cb, int which, weft_output* out,
                                int32_t n) {
  JNIEnv* env = cb->env;
  jclass k = (*env)->GetObjectClass(env, cb->java);
  jmethodID id = (*env)->GetMethodID(env, k, "branch", "(II)[J");
  (*env)->DeleteLocalRef(env, k);
  if (id == NULL) return failure(cb, "ControlCallbacks.branch missing");
  jlongArray r = (jlongArray)(*env)->CallObjectMethod(env, cb->java, id,
                                                      (jint)which, (jint)n);
  return unpack(cb, r, n, out, "branch failed");
}

static weft_status* then_branch(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)g;
  return call_branch(user, 1, out, n);
}

static weft_status* else_branch(weft_graph* g, void* user, weft_output* out,
                                int32_t n) {
  (void)g;
  return call_branch(user, 0, out, n);
}

/* Calls `method` (long[], int[]) -> long[] with the loop variables. */
static weft_status* call_loop(callbacks* cb, const char* method,
                              const weft_output* vars, int32_t n,
                              weft_output* out, int32_t count) {
  JNIEnv* env = cb->env;
  jlongArray nodes = (*env)->NewLongArray(env, n);
  jintArray indices = (*env)->NewIntArray(env, n);
  if (nodes == NULL || indices == NULL) {
    (*env)->ExceptionClear(env);
    return weft_status_create(WEFT_RESOURCE_EXHAUSTED, method);
  }
  for (int32_t i = 0; i < n; ++i) {
    jlong h = WEFT_JNI_HANDLE(vars[i].node);
    jint x = vars[i].index;
    (*env)->SetLongArrayRegion(env, nodes, i, 1, &h);
    (*env)->SetIntArrayRegion(env, indices, i, 1, &x);
  }
  jclass k = (*env)->GetObjectClass(env, cb->java);
  jmethodID id = (*env)->GetMethodID(env, k, method, "([J[I)[J");
  (*env)->DeleteLocalRef(env, k);
  jlongArray r = NULL;
  if (id != NULL)
    r = (jlongArray)(*env)->CallObjectMethod(env, cb->java, id, nodes,
                                             indices);
  (*env)->DeleteLocalRef(env, nodes);
  (*env)->DeleteLocalRef(env, indices);
  return unpack(cb, r, count, out, method);
}

static weft_status* loop_cond(weft_graph* g, void* user,
                              const weft_output* vars, int32_t n,
                              weft_output* pred) {
  (void)g;
  return call_loop(user, "loopCondition", vars, n, pred, 1);
}

static weft_status* loop_body(weft_graph* g, void* user,
                              const weft_output* vars, int32_t n,
                              weft_output* next) {
  (void)g;
  return call_loop(user, "loopBody", vars, n, next, n);
}

/* {node, index} per output as a Java long[]. */
static jlongArray pairs(JNIEnv* env, const weft_output* outs, int32_t n) {
  jlongArray r = (*env)->NewLongArray(env, 2 * n);
  for (int32_t i = 0; r != NULL && i < n; ++i) {
    jlong p[2] = {WEFT_JNI_HANDLE(outs[i].node), outs[i].index};
    (*env)->SetLongArrayRegion(env, r, 2 * i, 2, p);
  }
  return r;
}

JNIEXPORT jlongArray NATIVE(cond)(JNIEnv* env, jclass c, jlong graph,
                                  jstring name, jlong pred_node,
                                  jint pred_index, jobject java, jint n) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return NULL;
  if (n < 1) {
    weft_jni_check(env, weft_status_create(WEFT_INVALID_ARGUMENT,
                                           "cond: numOutputs must be >= 1"));
    return NULL;
  }
  weft_output* outs = calloc((size_t)n, sizeof *outs);
  if (outs == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "cond");
    return NULL;
  }
  weft_jni_string nm;
  jlongArray r = NULL;
  if (weft_jni_string_get(env, name, &nm)) {
    callbacks cb = {env, java};
    weft_status* st = weft_cond(GRAPH(graph), nm.utf,
                                (weft_output){NODE(pred_node), pred_index},
                                then_branch, else_branch, &cb, n, outs);
    weft_jni_string_release(env, &nm);
    if (!weft_jni_check(env, st)) r = pairs(env, outs, n);
  }
  free(outs);
  return r;
}

JNIEXPORT jlongArray NATIVE(whileLoop)(JNIEnv* env, jclass c, jlong graph,
                                       jobject java, jlongArray nodes,
                                       jintArray indices, jstring name,
                                       jint parallel, jlong max_iterations,
                                       jobjectArray shapes) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return NULL;
  weft_jni_outputs vars;
  if (!weft_jni_outputs_get(env, nodes, indices, &vars)) return NULL;
  int32_t n = vars.count;
  weft_output* outs = calloc((size_t)(n ? n : 1), sizeof *outs);
  weft_shape* inv = shapes ? calloc((size_t)(n ? n : 1), sizeof *inv) : NULL;
  int64_t* dims = shapes ? calloc((size_t)(n ? n : 1) * WEFT_MAX_RANK,
                                  sizeof *dims)
                         : NULL;
  jlongArray r = NULL;
  weft_jni_string nm = {NULL, NULL};
  if (outs == NULL || (shapes && (inv == NULL || dims == NULL))) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "whileLoop");
    goto done;
  }
  for (int32_t i = 0; shapes && i < n; ++i) {
    jlongArray d = (jlongArray)(*env)->GetObjectArrayElement(env, shapes, i);
    inv[i].dims = dims + (size_t)i * WEFT_MAX_RANK;
    if (d == NULL) {
      inv[i].rank = -1;
      continue;
    }
    int ok = weft_jni_dims_get(env, d, dims + (size_t)i * WEFT_MAX_RANK,
                               &inv[i].rank);
    (*env)->DeleteLocalRef(env, d);
    if (!ok) goto done;
  }
  if (!weft_jni_string_get(env, name, &nm)) goto done;
  weft_while_options o = {0};
  o.struct_size = sizeof o;
  o.name = nm.utf;
  o.parallel_iterations = parallel;
  o.maximum_iterations = max_iterations;
  o.shape_invariants = inv;
  callbacks cb = {env, java};
  weft_status* st = weft_while_loop(GRAPH(graph), loop_cond, loop_body, &cb,
                                    vars.items, n, &o, outs);
  if (!weft_jni_check(env, st)) r = pairs(env, outs, n);
done:
  weft_jni_string_release(env, &nm);
  free(dims);
  free(inv);
  free(outs);
  weft_jni_outputs_release(&vars);
  return r;
}
