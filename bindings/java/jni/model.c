/* Model files: org.weft.Model's native methods over weft/model.h. */
#include <stdlib.h>

#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define MODEL(h) WEFT_JNI_PTR(weft_model, h)

static jobjectArray new_string_array(JNIEnv* env, int32_t n,
                                     const char* (*get)(void*, int32_t),
                                     void* arg) {
  jclass string_class = (*env)->FindClass(env, "java/lang/String");
  if (string_class == NULL) return NULL;
  jobjectArray out = (*env)->NewObjectArray(env, n, string_class, NULL);
  for (int32_t i = 0; out != NULL && i < n; ++i) {
    jstring s = weft_jni_new_string(env, get(arg, i));
    if (s == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, out, i, s);
    (*env)->DeleteLocalRef(env, s);
  }
  return out;
}

JNIEXPORT jlong NATIVE(modelLoad)(JNIEnv* env, jclass c, jstring path,
                                  jstring format, jobjectArray outputs,
                                  jstring devices, jint inter_op,
                                  jint intra_op, jint placement,
                                  jint transfer_precision, jint optimizations,
                                  jstring device_gflops, jint recompute) {
  (void)c;
  weft_jni_string p, f, d, g;
  weft_jni_strings outs;
  weft_session_options so;
  jlong result = 0;
  if (!weft_jni_string_get(env, path, &p)) return 0;
  if (!weft_jni_string_get(env, format, &f)) goto no_format;
  if (!weft_jni_strings_get(env, outputs, &outs)) goto no_outputs;
  if (!weft_jni_session_options(env, devices, inter_op, intra_op, placement,
                                transfer_precision, optimizations,
                                device_gflops, recompute, &so, &d, &g))
    goto no_options;
  weft_model_load_options lo;
  weft_model_load_options_init(&lo);
  lo.format = f.utf;
  lo.session_options = &so;
  lo.graphdef_outputs = outs.items;
  lo.num_graphdef_outputs = outs.count;
  weft_model* m = NULL;
  if (p.utf == NULL) {
    weft_jni_throw(env, "java/lang/NullPointerException", "path is null");
  } else if (!weft_jni_check(env, weft_model_load(p.utf, &lo, &m))) {
    result = WEFT_JNI_HANDLE(m);
  }
  weft_jni_string_release(env, &g);
  weft_jni_string_release(env, &d);
no_options:
  weft_jni_strings_release(env, &outs);
no_outputs:
  weft_jni_string_release(env, &f);
no_format:
  weft_jni_string_release(env, &p);
  return result;
}

JNIEXPORT jlong NATIVE(modelCreate)(JNIEnv* env, jclass c, jlong graph,
                                    jlong session, jobjectArray names,
                                    jintArray counts, jobjectArray keys,
                                    jlongArray nodes, jintArray indices) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_strings n, k;
  weft_jni_outputs outs;
  jlong result = 0;
  if (!weft_jni_strings_get(env, names, &n)) return 0;
  if (!weft_jni_strings_get(env, keys, &k)) goto no_keys;
  if (!weft_jni_outputs_get(env, nodes, indices, &outs)) goto no_outputs;
  jsize num_counts = (*env)->GetArrayLength(env, counts);
  jint* cv = (*env)->GetIntArrayElements(env, counts, NULL);
  weft_signature_def* sigs = calloc((size_t)n.count + 1, sizeof *sigs);
  if (cv == NULL || sigs == NULL) {
    if (cv == NULL) {
      free(sigs);
      goto no_counts;
    }
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI signatures");
    goto done;
  }
  if (num_counts != 2 * n.count) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "signature counts do not match the names");
    goto done;
  }
  int64_t at = 0;
  for (int32_t i = 0; i < n.count; ++i) {
    int64_t need = at + (int64_t)cv[2 * i] + cv[2 * i + 1];
    if (cv[2 * i] < 0 || cv[2 * i + 1] < 0 || need > k.count ||
        need > outs.count) {
      weft_jni_throw(env, "java/lang/IllegalArgumentException",
                     "signature counts exceed the keys given");
      goto done;
    }
    weft_signature_def* s = &sigs[i];
    s->struct_size = sizeof *s;
    s->name = n.items[i];
    s->num_inputs = cv[2 * i];
    s->input_keys = k.items + at;
    s->inputs = outs.items + at;
    at += cv[2 * i];
    s->num_outputs = cv[2 * i + 1];
    s->output_keys = k.items + at;
    s->outputs = outs.items + at;
    at += cv[2 * i + 1];
  }
  weft_model* m = NULL;
  if (!weft_jni_check(env, weft_model_create(
                               WEFT_JNI_PTR(weft_graph, graph),
                               WEFT_JNI_PTR(weft_session, session), sigs,
                               n.count, &m)))
    result = WEFT_JNI_HANDLE(m);
done:
  free(sigs);
  (*env)->ReleaseIntArrayElements(env, counts, cv, JNI_ABORT);
no_counts:
  weft_jni_outputs_release(&outs);
no_outputs:
  weft_jni_strings_release(env, &k);
no_keys:
  weft_jni_strings_release(env, &n);
  return result;
}

JNIEXPORT void NATIVE(modelDestroy)(JNIEnv* env, jclass c, jlong model) {
  (void)env;
  (void)c;
  weft_model_destroy(MODEL(model));
}

JNIEXPORT void NATIVE(modelSave)(JNIEnv* env, jclass c, jlong model,
                                 jstring dir) {
  (void)c;
  if (weft_jni_null_handle(env, model)) return;
  weft_jni_string d;
  if (!weft_jni_string_get(env, dir, &d)) return;
  if (d.utf == NULL)
    weft_jni_throw(env, "java/lang/NullPointerException", "dir is null");
  else
    weft_jni_check(env, weft_model_save(MODEL(model), d.utf));
  weft_jni_string_release(env, &d);
}

JNIEXPORT void NATIVE(modelExportOnnx)(JNIEnv* env, jclass c, jlong model,
                                       jstring signature, jstring path) {
  (void)c;
  if (weft_jni_null_handle(env, model)) return;
  weft_jni_string s, p;
  if (!weft_jni_string_get(env, signature, &s)) return;
  if (weft_jni_string_get(env, path, &p)) {
    if (p.utf == NULL)
      weft_jni_throw(env, "java/lang/NullPointerException", "path is null");
    else
      weft_jni_check(env, weft_model_export_onnx(MODEL(model), s.utf, p.utf));
    weft_jni_string_release(env, &p);
  }
  weft_jni_string_release(env, &s);
}

static const char* signature_name(void* model, int32_t i) {
  return weft_model_signature_name((const weft_model*)model, i);
}

JNIEXPORT jobjectArray NATIVE(modelSignatures)(JNIEnv* env, jclass c,
                                               jlong model) {
  (void)c;
  if (weft_jni_null_handle(env, model)) return NULL;
  return new_string_array(env, weft_model_num_signatures(MODEL(model)),
                          signature_name, MODEL(model));
}

typedef struct key_source {
  const weft_model* model;
  const char* signature;
  int32_t outputs;
} key_source;

static const char* signature_key(void* arg, int32_t i) {
  key_source* k = arg;
  const char* key = NULL;
  weft_status* st = weft_model_signature_entry(k->model, k->signature,
                                               k->outputs, i, &key, NULL);
  weft_status_destroy(st);
  return key;
}

JNIEXPORT jobjectArray NATIVE(modelSignatureKeys)(JNIEnv* env, jclass c,
                                                  jlong model,
                                                  jstring signature,
                                                  jboolean outputs) {
  (void)c;
  if (weft_jni_null_handle(env, model)) return NULL;
  weft_jni_string s;
  if (!weft_jni_string_get(env, signature, &s)) return NULL;
  jobjectArray out = NULL;
  int32_t n = weft_model_signature_size(MODEL(model), s.utf, outputs ? 1 : 0);
  if (n < 0) {
    /* The C API's own message names the signature and those there are. */
    weft_jni_check(env, weft_model_signature_entry(MODEL(model), s.utf, 0, 0,
                                                   NULL, NULL));
  } else {
    key_source k = {MODEL(model), s.utf, outputs ? 1 : 0};
    out = new_string_array(env, n, signature_key, &k);
  }
  weft_jni_string_release(env, &s);
  return out;
}

JNIEXPORT jlongArray NATIVE(modelRun)(JNIEnv* env, jclass c, jlong model,
                                      jstring signature,
                                      jobjectArray input_keys,
                                      jlongArray tensors,
                                      jobjectArray output_keys) {
  (void)c;
  if (weft_jni_null_handle(env, model)) return NULL;
  weft_jni_string s;
  weft_jni_strings in_keys, out_keys;
  weft_jni_pointers values;
  jlongArray out = NULL;
  if (!weft_jni_string_get(env, signature, &s)) return NULL;
  if (!weft_jni_strings_get(env, input_keys, &in_keys)) goto no_inputs;
  if (!weft_jni_strings_get(env, output_keys, &out_keys)) goto no_outputs;
  if (!weft_jni_pointers_get(env, tensors, &values)) goto no_values;
  if (values.count != in_keys.count) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "input keys and tensors differ in length");
    goto done;
  }
  weft_tensor** results = calloc((size_t)out_keys.count + 1, sizeof *results);
  if (results == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "JNI results");
    goto done;
  }
  if (!weft_jni_check(env, weft_model_run(
                               MODEL(model), s.utf, in_keys.items,
                               (const weft_tensor* const*)values.items,
                               in_keys.count, out_keys.items, results,
                               out_keys.count))) {
    out = (*env)->NewLongArray(env, out_keys.count);
    for (int32_t i = 0; i < out_keys.count; ++i) {
      if (out == NULL) {
        weft_tensor_destroy(results[i]);
        continue;
      }
      jlong handle = WEFT_JNI_HANDLE(results[i]);
      (*env)->SetLongArrayRegion(env, out, i, 1, &handle);
    }
  }
  free(results);
done:
  weft_jni_pointers_release(&values);
no_values:
  weft_jni_strings_release(env, &out_keys);
no_outputs:
  weft_jni_strings_release(env, &in_keys);
no_inputs:
  weft_jni_string_release(env, &s);
  return out;
}
