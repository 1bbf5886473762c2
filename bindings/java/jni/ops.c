/* Ops defined in Java (org.weft.OpDefinition): the schema goes to
 * weft_op_register, and the kernel and gradient are Java methods that C
 * functions here call back.  The kernel runs on the runtime's threads,
 * which attach to the JVM as daemons the first time and stay attached (a
 * pool thread runs many kernels).  A Java exception becomes the kernel's
 * or gradient's error status (weft_jni_exception_status).  Ops live for
 * the process, so the OpDefinition's global reference is never dropped. */
#include <stdlib.h>
#include <string.h>

#include "weft/plugin.h"
#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define CALL(h) WEFT_JNI_PTR(weft_kernel_context, h)
#define TENSOR(h) WEFT_JNI_PTR(weft_tensor, h)

enum { JAVA_OP_MAX_PORTS = 32 };

typedef struct java_op {
  jobject definition; /* global reference to the OpDefinition */
  int32_t num_outputs;
  int32_t like[JAVA_OP_MAX_PORTS]; /* per output: input whose shape it has,
                                    * -1 unknown */
} java_op;

static weft_status* java_shape(void* arg, weft_shape_context* ctx) {
  const java_op* op = arg;
  for (int32_t o = 0; o < op->num_outputs; ++o) {
    int32_t k = op->like[o];
    if (k < 0) continue;
    int32_t rank = weft_shape_input_rank(ctx, k);
    int64_t dims[WEFT_MAX_RANK];
    for (int32_t i = 0; i < rank && i < WEFT_MAX_RANK; ++i)
      dims[i] = weft_shape_input_dim(ctx, k, i);
    weft_status* st = weft_shape_set_output(ctx, o, dims, rank);
    if (st) return st;
  }
  return NULL;
}

/* Calls OpDefinition.runKernel(long call, long[] inputs): the inputs are
 * copies the Java side owns from then on; it sets the outputs through
 * Native.kernelSetOutput. */
static weft_status* java_kernel(void* arg, weft_kernel_context* ctx) {
  const java_op* op = arg;
  const weft_host_api* host = weft_kernel_host();
  JNIEnv* env = weft_jni_thread_env(NULL);
  if (env == NULL)
    return weft_status_create(WEFT_UNAVAILABLE,
                              "the JVM refused this runtime thread");
  if ((*env)->PushLocalFrame(env, 8) != 0)
    return weft_jni_exception_status(env, "Java kernel");
  int32_t n = host->kernel_num_inputs(ctx);
  jlongArray inputs = (*env)->NewLongArray(env, n);
  weft_status* st =
      inputs ? NULL : weft_jni_exception_status(env, "Java kernel");
  for (int32_t i = 0; st == NULL && i < n; ++i) {
    weft_kernel_tensor in;
    in.struct_size = sizeof in;
    weft_tensor* copy = NULL;
    st = host->kernel_input(ctx, i, &in);
    /* Kernels of Java ops run on the CPU, whose memory is host memory. */
    if (st == NULL)
      st = weft_tensor_create_copy((weft_dtype)in.dtype, in.dims, in.rank,
                                   (const char*)in.data + in.offset,
                                   (size_t)in.byte_size, &copy);
    if (st == NULL) {
      jlong h = WEFT_JNI_HANDLE(copy);
      (*env)->SetLongArrayRegion(env, inputs, i, 1, &h);
    }
  }
  if (st == NULL) {
    jclass k = (*env)->GetObjectClass(env, op->definition);
    jmethodID run = (*env)->GetMethodID(env, k, "runKernel", "(J[J)V");
    if (run != NULL)
      (*env)->CallVoidMethod(env, op->definition, run, WEFT_JNI_HANDLE(ctx),
                             inputs);
    st = weft_jni_exception_status(env, host->kernel_node_name(ctx));
  } else if (inputs != NULL) {
    /* Free the copies made before the failure. */
    jlong* h = (*env)->GetLongArrayElements(env, inputs, NULL);
    for (int32_t i = 0; h != NULL && i < n; ++i)
      weft_tensor_destroy(TENSOR(h[i]));
    if (h) (*env)->ReleaseLongArrayElements(env, inputs, h, JNI_ABORT);
  }
  (*env)->PopLocalFrame(env, NULL);
  return st;
}

/* Calls OpDefinition.runGradient(long node, long[] dy pairs), which returns
 * one (node, index) pair per input, (0, 0) for none. */
static weft_status* java_gradient(void* arg, weft_gradient_context* ctx) {
  const java_op* op = arg;
  JNIEnv* env = weft_jni_thread_env(NULL);
  if (env == NULL)
    return weft_status_create(WEFT_UNAVAILABLE, "no JVM on this thread");
  weft_node* node = weft_gradient_node(ctx);
  int32_t outs = weft_node_num_outputs(node);
  int32_t ins = weft_node_num_inputs(node);
  if ((*env)->PushLocalFrame(env, 8) != 0)
    return weft_jni_exception_status(env, "Java gradient");
  weft_status* st = NULL;
  jlongArray dys = (*env)->NewLongArray(env, 2 * outs);
  for (int32_t o = 0; dys != NULL && o < outs; ++o) {
    weft_output dy = weft_gradient_output_grad(ctx, o);
    jlong pair[2] = {WEFT_JNI_HANDLE(dy.node), dy.index};
    (*env)->SetLongArrayRegion(env, dys, 2 * o, 2, pair);
  }
  jlongArray result = NULL;
  if (dys != NULL) {
    jclass k = (*env)->GetObjectClass(env, op->definition);
    jmethodID run = (*env)->GetMethodID(env, k, "runGradient", "(J[J)[J");
    if (run != NULL)
      result = (jlongArray)(*env)->CallObjectMethod(
          env, op->definition, run, WEFT_JNI_HANDLE(node), dys);
  }
  st = weft_jni_exception_status(env, weft_node_name(node));
  if (st == NULL && (result == NULL ||
                     (*env)->GetArrayLength(env, result) != 2 * ins))
    st = weft_status_create(WEFT_INTERNAL,
                            "Java gradient returned no list of input "
                            "gradients");
  for (int32_t i = 0; st == NULL && i < ins; ++i) {
    jlong pair[2];
    (*env)->GetLongArrayRegion(env, result, 2 * i, 2, pair);
    if (pair[0] == 0 || !weft_gradient_input_wanted(ctx, i)) continue;
    st = weft_gradient_set_input_grad(
        ctx, i,
        (weft_output){WEFT_JNI_PTR(weft_node, pair[0]), (int32_t)pair[1]});
  }
  (*env)->PopLocalFrame(env, NULL);
  return st;
}

/* A Java String[] as C strings in `out` (at most JAVA_OP_MAX_PORTS). */
typedef struct string_list {
  weft_jni_string items[JAVA_OP_MAX_PORTS];
  const char* utf[JAVA_OP_MAX_PORTS];
  int32_t count;
} string_list;

static int strings_get(JNIEnv* env, jobjectArray array, string_list* out) {
  out->count = 0;
  jsize n = array ? (*env)->GetArrayLength(env, array) : 0;
  if (n > JAVA_OP_MAX_PORTS) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "at most 32 inputs, outputs and attributes");
    return 0;
  }
  for (jsize i = 0; i < n; ++i) {
    jstring s = (jstring)(*env)->GetObjectArrayElement(env, array, i);
    if (!weft_jni_string_get(env, s, &out->items[i])) return 0;
    out->utf[i] = out->items[i].utf;
    out->count = i + 1;
  }
  return 1;
}

static void strings_release(JNIEnv* env, string_list* list) {
  for (int32_t i = 0; i < list->count; ++i)
    weft_jni_string_release(env, &list->items[i]);
}

JNIEXPORT void NATIVE(opRegister)(JNIEnv* env, jclass c, jstring name,
                                  jstring summary, jobjectArray inputs,
                                  jobjectArray outputs, jobjectArray attrs,
                                  jboolean stateful, jintArray like,
                                  jobject definition, jboolean has_kernel,
                                  jboolean has_gradient) {
  (void)c;
  weft_jni_string n = {NULL, NULL}, s = {NULL, NULL};
  string_list in = {0}, out = {0}, at = {0};
  java_op* op = calloc(1, sizeof *op);
  if (op == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "java_op");
    return;
  }
  int ok = weft_jni_string_get(env, name, &n) &&
           weft_jni_string_get(env, summary, &s) &&
           strings_get(env, inputs, &in) && strings_get(env, outputs, &out) &&
           strings_get(env, attrs, &at);
  if (ok && (*env)->GetArrayLength(env, like) != out.count) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "one shape rule per output");
    ok = 0;
  }
  if (ok) {
    op->num_outputs = out.count;
    (*env)->GetIntArrayRegion(env, like, 0, out.count, op->like);
    op->definition = (*env)->NewGlobalRef(env, definition);
    weft_op_def d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = n.utf;
    d.summary = s.utf;
    d.inputs = in.utf;
    d.num_inputs = in.count;
    d.outputs = out.utf;
    d.num_outputs = out.count;
    d.attrs = at.utf;
    d.num_attrs = at.count;
    d.stateful = stateful;
    d.shape_fn = java_shape;
    d.shape_arg = op;
    d.gradient = has_gradient ? java_gradient : NULL;
    d.gradient_arg = op;
    weft_status* st = weft_op_register(&d);
    const int registered = st == NULL;
    if (st == NULL && has_kernel) {
      weft_kernel_def k;
      memset(&k, 0, sizeof k);
      k.struct_size = sizeof k;
      k.op = n.utf;
      k.compute = java_kernel;
      k.kernel_arg = op;
      st = weft_kernel_register("CPU", &k);
    }
    /* A refused op keeps nothing of ours, so no callback can reach `op`;
     * an accepted one (even if its kernel was then refused) keeps it for
     * the life of the process. */
    if (weft_jni_check(env, st) && !registered)
      (*env)->DeleteGlobalRef(env, op->definition);
    else
      op = NULL;
  }
  free(op);
  strings_release(env, &at);
  strings_release(env, &out);
  strings_release(env, &in);
  weft_jni_string_release(env, &s);
  weft_jni_string_release(env, &n);
}

JNIEXPORT void NATIVE(kernelSetOutput)(JNIEnv* env, jclass c, jlong call,
                                       jint index, jlong tensor) {
  (void)c;
  if (weft_jni_null_handle(env, call) || weft_jni_null_handle(env, tensor))
    return;
  const weft_host_api* host = weft_kernel_host();
  const weft_tensor* t = TENSOR(tensor);
  weft_kernel_tensor out;
  out.struct_size = sizeof out;
  weft_status* st = host->kernel_allocate_output(
      CALL(call), index, weft_tensor_dtype(t), weft_tensor_dims(t),
      weft_tensor_rank(t), &out);
  if (st == NULL && out.byte_size != weft_tensor_byte_size(t))
    st = weft_status_create(WEFT_INTERNAL, "output size mismatch");
  if (st == NULL && out.byte_size > 0)
    memcpy((char*)out.data + out.offset, weft_tensor_data(t),
           (size_t)out.byte_size);
  weft_jni_check(env, st);
}

JNIEXPORT jdouble NATIVE(kernelAttrFloat)(JNIEnv* env, jclass c, jlong call,
                                          jstring name) {
  (void)c;
  weft_jni_string n = {NULL, NULL};
  double v = 0;
  if (!weft_jni_null_handle(env, call) && weft_jni_string_get(env, name, &n))
    weft_jni_check(env, weft_kernel_host()->kernel_attr_float(CALL(call),
                                                              n.utf, &v));
  weft_jni_string_release(env, &n);
  return v;
}

JNIEXPORT jlong NATIVE(kernelAttrInt)(JNIEnv* env, jclass c, jlong call,
                                      jstring name) {
  (void)c;
  weft_jni_string n = {NULL, NULL};
  int64_t v = 0;
  if (!weft_jni_null_handle(env, call) && weft_jni_string_get(env, name, &n))
    weft_jni_check(env, weft_kernel_host()->kernel_attr_int(CALL(call),
                                                            n.utf, &v));
  weft_jni_string_release(env, &n);
  return v;
}
