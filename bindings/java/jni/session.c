/* Sessions: creation with options, run() with feeds, fetches, targets and
 * optional metadata, and the metadata's accessors. */
#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define METADATA(h) WEFT_JNI_PTR(weft_run_metadata, h)

int weft_jni_session_options(JNIEnv* env, jstring devices, jint inter_op,
                             jint intra_op, jint placement,
                             jint transfer_precision, jint optimizations,
                             jstring device_gflops, jint recompute,
                             weft_session_options* o, weft_jni_string* d,
                             weft_jni_string* g) {
  if (!weft_jni_string_get(env, devices, d)) return 0;
  if (!weft_jni_string_get(env, device_gflops, g)) {
    weft_jni_string_release(env, d);
    return 0;
  }
  weft_session_options_init(o);
  o->devices = d->utf;
  o->inter_op_threads = inter_op;
  o->intra_op_threads = intra_op;
  o->placement = placement;
  o->transfer_precision = transfer_precision;
  o->optimizations = (uint32_t)optimizations;
  o->device_gflops = g->utf;
  o->recompute = recompute;
  return 1;
}

JNIEXPORT jlong NATIVE(sessionCreate)(JNIEnv* env, jclass c, jlong graph,
                                      jstring devices, jint inter_op,
                                      jint intra_op, jint placement,
                                      jint transfer_precision,
                                      jint optimizations,
                                      jstring device_gflops,
                                      jint recompute, jstring cluster,
                                      jstring serving_jobs) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_string d, g, k, j;
  weft_session_options o;
  if (!weft_jni_session_options(env, devices, inter_op, intra_op, placement,
                                transfer_precision, optimizations,
                                device_gflops, recompute, &o, &d, &g))
    return 0;
  if (!weft_jni_string_get(env, cluster, &k)) {
    weft_jni_string_release(env, &g);
    weft_jni_string_release(env, &d);
    return 0;
  }
  if (!weft_jni_string_get(env, serving_jobs, &j)) {
    weft_jni_string_release(env, &k);
    weft_jni_string_release(env, &g);
    weft_jni_string_release(env, &d);
    return 0;
  }
  o.cluster = k.utf;
  o.serving_jobs = j.utf;
  weft_session* s = NULL;
  weft_status* st =
      weft_session_create(WEFT_JNI_PTR(weft_graph, graph), &o, &s);
  weft_jni_string_release(env, &j);
  weft_jni_string_release(env, &k);
  weft_jni_string_release(env, &g);
  weft_jni_string_release(env, &d);
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(s);
}

JNIEXPORT void NATIVE(sessionDestroy)(JNIEnv* env, jclass c, jlong session) {
  (void)env;
  (void)c;
  weft_session_destroy(WEFT_JNI_PTR(weft_session, session));
}

JNIEXPORT jlongArray NATIVE(sessionRun)(JNIEnv* env, jclass c, jlong session,
                                        jlongArray feed_nodes,
                                        jintArray feed_indices,
                                        jlongArray feed_tensors,
                                        jlongArray fetch_nodes,
                                        jintArray fetch_indices,
                                        jlongArray targets, jlong metadata,
                                        jlong timeout_ms) {
  (void)c;
  if (weft_jni_null_handle(env, session)) return NULL;
  weft_jni_outputs feeds, fetches;
  weft_jni_pointers values, target_nodes, results;
  jlongArray out = NULL;
  if (!weft_jni_outputs_get(env, feed_nodes, feed_indices, &feeds))
    return NULL;
  if (!weft_jni_pointers_get(env, feed_tensors, &values)) goto no_values;
  if (values.count != feeds.count) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "feeds and feed values differ in length");
    goto no_fetches;
  }
  if (!weft_jni_outputs_get(env, fetch_nodes, fetch_indices, &fetches))
    goto no_fetches;
  if (!weft_jni_pointers_get(env, targets, &target_nodes)) goto no_targets;
  /* Room for the fetched tensors: `results` is read from the fetch list
   * only for its storage. */
  if (!weft_jni_pointers_get(env, fetch_nodes, &results)) goto no_results;

  weft_run_options options;
  weft_run_options_init(&options);
  options.timeout_ms = timeout_ms;
  weft_status* st = weft_session_run_with_options(
      WEFT_JNI_PTR(weft_session, session), &options, feeds.items,
      (weft_tensor* const*)values.items, feeds.count, fetches.items,
      fetches.count, (weft_node* const*)target_nodes.items,
      target_nodes.count, (weft_tensor**)results.items, METADATA(metadata));
  if (!weft_jni_check(env, st)) {
    out = (*env)->NewLongArray(env, results.count);
    if (out == NULL) {
      for (int32_t i = 0; i < results.count; ++i)
        weft_tensor_destroy((weft_tensor*)results.items[i]);
    } else {
      for (int32_t i = 0; i < results.count; ++i) {
        jlong handle = WEFT_JNI_HANDLE(results.items[i]);
        (*env)->SetLongArrayRegion(env, out, i, 1, &handle);
      }
    }
  }
  weft_jni_pointers_release(&results);
no_results:
  weft_jni_pointers_release(&target_nodes);
no_targets:
  weft_jni_outputs_release(&fetches);
no_fetches:
  weft_jni_pointers_release(&values);
no_values:
  weft_jni_outputs_release(&feeds);
  return out;
}

JNIEXPORT void NATIVE(sessionServe)(JNIEnv* env, jclass c, jlong session) {
  (void)c;
  if (weft_jni_null_handle(env, session)) return;
  weft_jni_check(env, weft_session_serve(WEFT_JNI_PTR(weft_session, session)));
}

JNIEXPORT jint NATIVE(sessionCancel)(JNIEnv* env, jclass c, jlong session) {
  (void)c;
  if (weft_jni_null_handle(env, session)) return 0;
  return weft_session_cancel(WEFT_JNI_PTR(weft_session, session));
}

/* ---- run metadata ---- */

JNIEXPORT jlong NATIVE(metadataCreate)(JNIEnv* env, jclass c) {
  (void)env;
  (void)c;
  return WEFT_JNI_HANDLE(weft_run_metadata_create());
}

JNIEXPORT void NATIVE(metadataDestroy)(JNIEnv* env, jclass c, jlong m) {
  (void)env;
  (void)c;
  weft_run_metadata_destroy(METADATA(m));
}

JNIEXPORT jint NATIVE(metadataNumNodes)(JNIEnv* env, jclass c, jlong m) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return 0;
  return weft_run_metadata_num_nodes(METADATA(m));
}

/* A String[] of `count` C strings (NULL ones become null). */
static jobjectArray strings(JNIEnv* env, const char* const* values,
                            int count) {
  jclass string_class = (*env)->FindClass(env, "java/lang/String");
  if (string_class == NULL) return NULL;
  jobjectArray out = (*env)->NewObjectArray(env, count, string_class, NULL);
  for (int i = 0; out != NULL && i < count; ++i) {
    jstring s = weft_jni_new_string(env, values[i]);
    if (values[i] != NULL && s == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, out, i, s);
    (*env)->DeleteLocalRef(env, s);
  }
  return out;
}

JNIEXPORT jobjectArray NATIVE(metadataNode)(JNIEnv* env, jclass c, jlong m,
                                            jint i) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  const weft_run_metadata* md = METADATA(m);
  const char* v[4] = {weft_run_metadata_node_name(md, i),
                      weft_run_metadata_node_op(md, i),
                      weft_run_metadata_node_device(md, i),
                      weft_run_metadata_node_reason(md, i)};
  return strings(env, v, 4);
}

JNIEXPORT jstring NATIVE(metadataDeviceOf)(JNIEnv* env, jclass c, jlong m,
                                           jstring node_name) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  weft_jni_string n;
  if (!weft_jni_string_get(env, node_name, &n)) return NULL;
  const char* device =
      n.utf ? weft_run_metadata_device_of(METADATA(m), n.utf) : NULL;
  weft_jni_string_release(env, &n);
  return weft_jni_new_string(env, device);
}

JNIEXPORT jint NATIVE(metadataNumTransfers)(JNIEnv* env, jclass c, jlong m) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return 0;
  return weft_run_metadata_num_transfers(METADATA(m));
}

JNIEXPORT jobjectArray NATIVE(metadataTransfer)(JNIEnv* env, jclass c, jlong m,
                                                jint i) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  const char* v[3] = {NULL, NULL, NULL};
  int32_t wire = 0;
  uint64_t bytes = 0;
  if (weft_jni_check(env, weft_run_metadata_transfer(METADATA(m), i, &v[0],
                                                     &v[1], &v[2], &wire,
                                                     &bytes)))
    return NULL;
  return strings(env, v, 3);
}

JNIEXPORT jlongArray NATIVE(metadataTransferSize)(JNIEnv* env, jclass c,
                                                  jlong m, jint i) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  const char *value, *src, *dst;
  int32_t wire = 0;
  uint64_t bytes = 0;
  if (weft_jni_check(env, weft_run_metadata_transfer(METADATA(m), i, &value,
                                                     &src, &dst, &wire,
                                                     &bytes)))
    return NULL;
  jlong v[2] = {wire, (jlong)bytes};
  jlongArray out = (*env)->NewLongArray(env, 2);
  if (out != NULL) (*env)->SetLongArrayRegion(env, out, 0, 2, v);
  return out;
}

JNIEXPORT jint NATIVE(metadataNumMerged)(JNIEnv* env, jclass c, jlong m) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return 0;
  return weft_run_metadata_num_merged(METADATA(m));
}

JNIEXPORT jobjectArray NATIVE(metadataMerged)(JNIEnv* env, jclass c, jlong m,
                                              jint i) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  const char* v[2] = {NULL, NULL};
  if (weft_jni_check(env,
                     weft_run_metadata_merged(METADATA(m), i, &v[0], &v[1])))
    return NULL;
  return strings(env, v, 2);
}

JNIEXPORT jint NATIVE(metadataNumDevices)(JNIEnv* env, jclass c, jlong m) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return 0;
  return weft_run_metadata_num_devices(METADATA(m));
}

JNIEXPORT jstring NATIVE(metadataDeviceName)(JNIEnv* env, jclass c, jlong m,
                                             jint i) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  return weft_jni_new_string(env, weft_run_metadata_device_name(METADATA(m), i));
}

JNIEXPORT jlong NATIVE(metadataPeakBytes)(JNIEnv* env, jclass c, jlong m,
                                          jint i) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return 0;
  return (jlong)weft_run_metadata_peak_bytes(METADATA(m), i);
}

JNIEXPORT jstring NATIVE(metadataToString)(JNIEnv* env, jclass c, jlong m) {
  (void)c;
  if (weft_jni_null_handle(env, m)) return NULL;
  return weft_jni_new_string(env, weft_run_metadata_to_string(METADATA(m)));
}
