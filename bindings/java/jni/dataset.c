/* Datasets: org.weft.Dataset's and TfRecord's native methods over
 * weft/dataset.h.  Every function that makes a dataset returns its handle,
 * or 0 with an exception pending. */
#include <stdlib.h>

#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define DATASET(h) WEFT_JNI_PTR(weft_dataset, h)
#define GRAPH(h) WEFT_JNI_PTR(weft_graph, h)

/* The handle of the dataset a call made, or 0 with its error thrown.
 * `out` is read here, after the call (an argument beside the call could
 * be read before it). */
static jlong made(JNIEnv* env, weft_status* status, weft_dataset** out) {
  return weft_jni_check(env, status) ? 0 : WEFT_JNI_HANDLE(*out);
}

JNIEXPORT void NATIVE(datasetDestroy)(JNIEnv* env, jclass c, jlong dataset) {
  (void)env;
  (void)c;
  weft_dataset_destroy(DATASET(dataset));
}

JNIEXPORT jint NATIVE(datasetNumComponents)(JNIEnv* env, jclass c,
                                            jlong dataset) {
  (void)c;
  if (weft_jni_null_handle(env, dataset)) return 0;
  return weft_dataset_num_components(DATASET(dataset));
}

JNIEXPORT jint NATIVE(datasetComponentDtype)(JNIEnv* env, jclass c,
                                             jlong dataset, jint index) {
  (void)c;
  if (weft_jni_null_handle(env, dataset)) return 0;
  return (jint)weft_dataset_component_dtype(DATASET(dataset), index);
}

JNIEXPORT jstring NATIVE(datasetName)(JNIEnv* env, jclass c, jlong dataset) {
  (void)c;
  if (weft_jni_null_handle(env, dataset)) return NULL;
  /* Valid until this thread's next call: copied at once. */
  return weft_jni_new_string(env, weft_dataset_name(DATASET(dataset)));
}

/* ---- sources ---- */

JNIEXPORT jlong NATIVE(datasetFromTensorSlices)(JNIEnv* env, jclass c,
                                                jlongArray tensors) {
  (void)c;
  weft_jni_pointers t;
  if (!weft_jni_pointers_get(env, tensors, &t)) return 0;
  weft_dataset* out = NULL;
  weft_status* st = weft_dataset_from_tensor_slices(
      (weft_tensor* const*)t.items, t.count, &out);
  weft_jni_pointers_release(&t);
  return made(env, st, &out);
}

JNIEXPORT jlong NATIVE(datasetRange)(JNIEnv* env, jclass c, jlong start,
                                     jlong stop, jlong step) {
  (void)c;
  weft_dataset* out = NULL;
  return made(env, weft_dataset_range(start, stop, step, &out), &out);
}

JNIEXPORT jlong NATIVE(datasetTfRecord)(JNIEnv* env, jclass c,
                                        jobjectArray paths,
                                        jstring compression) {
  (void)c;
  weft_jni_strings p;
  weft_jni_string z;
  if (!weft_jni_strings_get(env, paths, &p)) return 0;
  jlong result = 0;
  if (weft_jni_string_get(env, compression, &z)) {
    weft_dataset* out = NULL;
    result = made(env, weft_dataset_tfrecord(p.items, p.count, z.utf, &out),
                  &out);
    weft_jni_string_release(env, &z);
  }
  weft_jni_strings_release(env, &p);
  return result;
}

JNIEXPORT jlong NATIVE(datasetTextLines)(JNIEnv* env, jclass c,
                                         jobjectArray paths) {
  (void)c;
  weft_jni_strings p;
  if (!weft_jni_strings_get(env, paths, &p)) return 0;
  weft_dataset* out = NULL;
  jlong result =
      made(env, weft_dataset_text_lines(p.items, p.count, &out), &out);
  weft_jni_strings_release(env, &p);
  return result;
}

JNIEXPORT jlong NATIVE(datasetIdx)(JNIEnv* env, jclass c, jstring path) {
  (void)c;
  weft_jni_string p;
  if (!weft_jni_string_get(env, path, &p)) return 0;
  weft_dataset* out = NULL;
  jlong result = made(env, weft_dataset_idx(p.utf, &out), &out);
  weft_jni_string_release(env, &p);
  return result;
}

/* ---- transformations ---- */

JNIEXPORT jlong NATIVE(datasetZip)(JNIEnv* env, jclass c,
                                   jlongArray datasets) {
  (void)c;
  weft_jni_pointers d;
  if (!weft_jni_pointers_get(env, datasets, &d)) return 0;
  weft_dataset* out = NULL;
  weft_status* st = weft_dataset_zip((const weft_dataset* const*)d.items,
                                     d.count, &out);
  weft_jni_pointers_release(&d);
  return made(env, st, &out);
}

JNIEXPORT jlong NATIVE(datasetMap)(JNIEnv* env, jclass c, jlong input,
                                   jlong fn, jlongArray in_nodes,
                                   jintArray in_indices, jlongArray out_nodes,
                                   jintArray out_indices,
                                   jint num_parallel_calls) {
  (void)c;
  if (weft_jni_null_handle(env, input)) return 0;
  weft_jni_outputs ins, outs;
  if (!weft_jni_outputs_get(env, in_nodes, in_indices, &ins)) return 0;
  jlong result = 0;
  if (weft_jni_outputs_get(env, out_nodes, out_indices, &outs)) {
    weft_dataset* out = NULL;
    result = made(env,
                  weft_dataset_map(DATASET(input), GRAPH(fn), ins.items,
                                   ins.count, outs.items, outs.count,
                                   num_parallel_calls, &out),
                  &out);
    weft_jni_outputs_release(&outs);
  }
  weft_jni_outputs_release(&ins);
  return result;
}

JNIEXPORT jlong NATIVE(datasetFilter)(JNIEnv* env, jclass c, jlong input,
                                      jlong fn, jlongArray in_nodes,
                                      jintArray in_indices, jlong pred_node,
                                      jint pred_index) {
  (void)c;
  if (weft_jni_null_handle(env, input)) return 0;
  weft_jni_outputs ins;
  if (!weft_jni_outputs_get(env, in_nodes, in_indices, &ins)) return 0;
  weft_dataset* out = NULL;
  weft_output predicate = {WEFT_JNI_PTR(weft_node, pred_node), pred_index};
  weft_status* st = weft_dataset_filter(DATASET(input), GRAPH(fn), ins.items,
                                        ins.count, predicate, &out);
  weft_jni_outputs_release(&ins);
  return made(env, st, &out);
}

JNIEXPORT jlong NATIVE(datasetShuffle)(JNIEnv* env, jclass c, jlong input,
                                       jlong buffer_size, jlong seed) {
  (void)c;
  if (weft_jni_null_handle(env, input)) return 0;
  weft_dataset* out = NULL;
  return made(env,
              weft_dataset_shuffle(DATASET(input), buffer_size, seed, &out),
              &out);
}

JNIEXPORT jlong NATIVE(datasetBatch)(JNIEnv* env, jclass c, jlong input,
                                     jlong batch_size,
                                     jboolean drop_remainder) {
  (void)c;
  if (weft_jni_null_handle(env, input)) return 0;
  weft_dataset* out = NULL;
  return made(env,
              weft_dataset_batch(DATASET(input), batch_size,
                                 drop_remainder ? 1 : 0, &out),
              &out);
}

JNIEXPORT jlong NATIVE(datasetPaddedBatch)(JNIEnv* env, jclass c,
                                           jlong input, jlong batch_size,
                                           jboolean drop_remainder) {
  (void)c;
  if (weft_jni_null_handle(env, input)) return 0;
  weft_dataset* out = NULL;
  return made(env,
              weft_dataset_padded_batch(DATASET(input), batch_size,
                                        drop_remainder ? 1 : 0, &out),
              &out);
}

/* repeat, take, skip and prefetch: one input and one count each. */
#define COUNTED(java_name, c_function)                                      \
  JNIEXPORT jlong NATIVE(java_name)(JNIEnv * env, jclass c, jlong input,    \
                                    jlong count) {                          \
    (void)c;                                                                \
    if (weft_jni_null_handle(env, input)) return 0;                         \
    weft_dataset* out = NULL;                                               \
    return made(env, c_function(DATASET(input), count, &out), &out);         \
  }

COUNTED(datasetRepeat, weft_dataset_repeat)
COUNTED(datasetTake, weft_dataset_take)
COUNTED(datasetSkip, weft_dataset_skip)
COUNTED(datasetPrefetch, weft_dataset_prefetch)

JNIEXPORT jlong NATIVE(datasetFixedLengthRecords)(
    JNIEnv* env, jclass c, jobjectArray paths, jlong header_bytes,
    jlong record_bytes, jlong footer_bytes, jstring compression) {
  (void)c;
  weft_jni_strings p;
  weft_jni_string z;
  if (!weft_jni_strings_get(env, paths, &p)) return 0;
  jlong result = 0;
  if (weft_jni_string_get(env, compression, &z)) {
    weft_dataset* out = NULL;
    weft_status* st = weft_dataset_fixed_length_records(
        p.items, p.count, header_bytes, record_bytes, footer_bytes, z.utf,
        &out);
    result = made(env, st, &out);
    weft_jni_string_release(env, &z);
  }
  weft_jni_strings_release(env, &p);
  return result;
}

/* ---- interleave: datasets made by Java, on the pipeline's threads ----
 *
 * `arg` is a global reference to an org.weft.InterleaveCallback.  make and
 * release run on Weft's pipeline threads, which come and go with passes,
 * so a thread the JVM did not know is detached again before returning. */

static weft_status* interleave_make(void* arg,
                                    const weft_tensor* const* element,
                                    int32_t num_components,
                                    weft_dataset** out) {
  int attached = 0;
  JNIEnv* env = weft_jni_thread_env(&attached);
  if (env == NULL)
    return weft_status_create(WEFT_UNAVAILABLE,
                              "the JVM refused this pipeline thread");
  weft_status* st = NULL;
  if ((*env)->PushLocalFrame(env, 8) != 0) {
    st = weft_jni_exception_status(env, "the interleave function");
    goto detach;
  }
  /* Copies, which the Java side owns from here on: the element is only
   * borrowed for this call. */
  jlongArray handles = (*env)->NewLongArray(env, num_components);
  if (handles == NULL)
    st = weft_jni_exception_status(env, "the interleave function");
  for (int32_t i = 0; st == NULL && i < num_components; ++i) {
    const weft_tensor* t = element[i];
    weft_tensor* copy = NULL;
    st = weft_tensor_create_copy(weft_tensor_dtype(t), weft_tensor_dims(t),
                                 weft_tensor_rank(t), weft_tensor_data(t),
                                 weft_tensor_byte_size(t), &copy);
    jlong h = WEFT_JNI_HANDLE(copy);
    if (st == NULL) (*env)->SetLongArrayRegion(env, handles, i, 1, &h);
    for (int32_t k = 0; st != NULL && k < i; ++k) {
      (*env)->GetLongArrayRegion(env, handles, k, 1, &h);
      weft_tensor_destroy(WEFT_JNI_PTR(weft_tensor, h));
    }
  }
  if (st == NULL) {
    jobject callback = (jobject)arg;
    jclass k = (*env)->GetObjectClass(env, callback);
    jmethodID make = (*env)->GetMethodID(env, k, "make", "([J)J");
    jlong dataset =
        make ? (*env)->CallLongMethod(env, callback, make, handles) : 0;
    st = weft_jni_exception_status(env, "the interleave function");
    if (st == NULL && dataset == 0)
      st = weft_status_create(WEFT_INTERNAL,
                              "the interleave function made no dataset");
    if (st == NULL) *out = DATASET(dataset);
  }
  (*env)->PopLocalFrame(env, NULL);
detach:
  if (attached) (*weft_jni_vm)->DetachCurrentThread(weft_jni_vm);
  return st;
}

static void interleave_release(void* arg) {
  int attached = 0;
  JNIEnv* env = weft_jni_thread_env(&attached);
  if (env == NULL) return; /* the JVM is going away */
  (*env)->DeleteGlobalRef(env, (jobject)arg);
  if (attached) (*weft_jni_vm)->DetachCurrentThread(weft_jni_vm);
}

JNIEXPORT jlong NATIVE(datasetInterleave)(JNIEnv* env, jclass c, jlong input,
                                          jobject callback, jintArray dtypes,
                                          jlong cycle_length,
                                          jlong block_length,
                                          jint num_parallel_calls) {
  (void)c;
  if (weft_jni_null_handle(env, input)) return 0;
  jsize n = dtypes == NULL ? 0 : (*env)->GetArrayLength(env, dtypes);
  weft_dtype* types = calloc((size_t)n + 1, sizeof *types);
  if (types == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI dtypes");
    return 0;
  }
  for (jsize i = 0; i < n; ++i) {
    jint t = 0;
    (*env)->GetIntArrayRegion(env, dtypes, i, 1, &t);
    types[i] = (weft_dtype)t;
  }
  jobject arg = (*env)->NewGlobalRef(env, callback);
  jlong result = 0;
  if (arg != NULL) {
    weft_dataset* out = NULL;
    /* On an error the C function has called interleave_release already. */
    weft_status* st = weft_dataset_interleave(
        DATASET(input), interleave_make, arg, interleave_release, types, n,
        cycle_length, block_length, num_parallel_calls, &out);
    result = made(env, st, &out);
  }
  free(types);
  return result;
}

/* ---- writing records ---- */

JNIEXPORT void NATIVE(tfRecordWrite)(JNIEnv* env, jclass c, jstring path,
                                     jstring compression,
                                     jlongArray records) {
  (void)c;
  weft_jni_string p, z;
  weft_jni_pointers r;
  if (!weft_jni_pointers_get(env, records, &r)) return;
  if (weft_jni_string_get(env, path, &p)) {
    if (weft_jni_string_get(env, compression, &z)) {
      weft_jni_check(env, weft_tfrecord_write(
                              p.utf, z.utf,
                              (const weft_tensor* const*)r.items, r.count));
      weft_jni_string_release(env, &z);
    }
    weft_jni_string_release(env, &p);
  }
  weft_jni_pointers_release(&r);
}

/* ---- reading it in a graph ---- */

/* {node, index} per component, then the init node (0 when not asked). */
JNIEXPORT jlongArray NATIVE(datasetIterator)(JNIEnv* env, jclass c,
                                             jlong graph, jstring name,
                                             jlong dataset,
                                             jboolean with_init) {
  (void)c;
  if (weft_jni_null_handle(env, graph) || weft_jni_null_handle(env, dataset))
    return NULL;
  const int32_t n = weft_dataset_num_components(DATASET(dataset));
  weft_output* components = calloc((size_t)n + 1, sizeof *components);
  if (components == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI components");
    return NULL;
  }
  jlongArray out = NULL;
  weft_jni_string s;
  if (weft_jni_string_get(env, name, &s)) {
    weft_node* init = NULL;
    weft_status* st =
        weft_dataset_iterator(GRAPH(graph), s.utf, DATASET(dataset),
                              components, with_init ? &init : NULL);
    weft_jni_string_release(env, &s);
    if (!weft_jni_check(env, st)) {
      out = (*env)->NewLongArray(env, 2 * n + 1);
      for (int32_t i = 0; out != NULL && i < n; ++i) {
        jlong pair[2] = {WEFT_JNI_HANDLE(components[i].node),
                         components[i].index};
        (*env)->SetLongArrayRegion(env, out, 2 * i, 2, pair);
      }
      if (out != NULL) {
        jlong init_handle = WEFT_JNI_HANDLE(init);
        (*env)->SetLongArrayRegion(env, out, 2 * n, 1, &init_handle);
      }
    }
  }
  free(components);
  return out;
}
