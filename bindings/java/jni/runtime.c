/* The runtime as a whole: versions, plugins, devices, the op library. */
#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name

JNIEXPORT jstring NATIVE(versionString)(JNIEnv* env, jclass c) {
  (void)c;
  return weft_jni_new_string(env, weft_version_string());
}

JNIEXPORT jint NATIVE(abiVersion)(JNIEnv* env, jclass c) {
  (void)env;
  (void)c;
  return (jint)weft_abi_version();
}

JNIEXPORT jintArray NATIVE(pluginInterfaceRange)(JNIEnv* env, jclass c) {
  (void)c;
  uint32_t lo = 0, hi = 0;
  weft_plugin_interface_range(&lo, &hi);
  jint v[2] = {(jint)lo, (jint)hi};
  jintArray out = (*env)->NewIntArray(env, 2);
  if (out != NULL) (*env)->SetIntArrayRegion(env, out, 0, 2, v);
  return out;
}

JNIEXPORT jintArray NATIVE(clusterWorld)(JNIEnv* env, jclass c) {
  (void)c;
  int32_t rank = 0, size = 1;
  if (weft_jni_check(env, weft_cluster_world(&rank, &size))) return NULL;
  jint v[2] = {rank, size};
  jintArray out = (*env)->NewIntArray(env, 2);
  if (out != NULL) (*env)->SetIntArrayRegion(env, out, 0, 2, v);
  return out;
}

JNIEXPORT void NATIVE(clusterAbort)(JNIEnv* env, jclass c, jint code) {
  (void)c;
  weft_jni_check(env, weft_cluster_abort(code));
}

JNIEXPORT void NATIVE(pluginsDiscover)(JNIEnv* env, jclass c) {
  (void)c;
  weft_jni_check(env, weft_plugins_discover());
}

JNIEXPORT void NATIVE(pluginLoad)(JNIEnv* env, jclass c, jstring path) {
  (void)c;
  weft_jni_string p;
  if (!weft_jni_string_get(env, path, &p)) return;
  weft_jni_check(env, p.utf ? weft_plugin_load(p.utf)
                            : weft_status_create(WEFT_INVALID_ARGUMENT,
                                                 "plugin path is null"));
  weft_jni_string_release(env, &p);
}

JNIEXPORT jint NATIVE(pluginCount)(JNIEnv* env, jclass c) {
  (void)env;
  (void)c;
  return weft_plugin_count();
}

JNIEXPORT jint NATIVE(pluginRefusalCount)(JNIEnv* env, jclass c) {
  (void)env;
  (void)c;
  return weft_plugin_refusal_count();
}

JNIEXPORT jint NATIVE(deviceCount)(JNIEnv* env, jclass c) {
  (void)env;
  (void)c;
  return weft_device_count();
}

JNIEXPORT jint NATIVE(opCount)(JNIEnv* env, jclass c) {
  (void)env;
  (void)c;
  return weft_op_count();
}

/* A new org.weft record `class_name` through the constructor `signature`;
 * the string arguments are turned into Java strings first. */
static jobject record(JNIEnv* env, const char* class_name,
                      const char* signature, const jvalue* args) {
  jclass cls = (*env)->FindClass(env, class_name);
  if (cls == NULL) return NULL;
  jmethodID init = (*env)->GetMethodID(env, cls, "<init>", signature);
  if (init == NULL) return NULL;
  return (*env)->NewObjectA(env, cls, init, args);
}

#define STR(s) ((jvalue){.l = weft_jni_new_string(env, (s))})

JNIEXPORT jobject NATIVE(pluginDescribe)(JNIEnv* env, jclass c, jint i) {
  (void)c;
  weft_plugin_description d = {.struct_size = sizeof d};
  if (weft_jni_check(env, weft_plugin_describe(i, &d))) return NULL;
  jvalue args[7] = {STR(d.name), STR(d.version), STR(d.path),
                    {.i = (jint)d.interface_version}, STR(d.device_type),
                    {.i = d.device_count}, STR(d.no_device_reason)};
  return record(env, "org/weft/PluginInfo",
                "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;I"
                "Ljava/lang/String;ILjava/lang/String;)V", args);
}

JNIEXPORT jobject NATIVE(pluginRefusal)(JNIEnv* env, jclass c, jint i) {
  (void)c;
  const char* path = NULL;
  const char* reason = NULL;
  if (weft_jni_check(env, weft_plugin_refusal(i, &path, &reason))) return NULL;
  jvalue args[2] = {STR(path), STR(reason)};
  return record(env, "org/weft/PluginRefusal",
                "(Ljava/lang/String;Ljava/lang/String;)V", args);
}

JNIEXPORT jobject NATIVE(deviceDescribe)(JNIEnv* env, jclass c, jint i) {
  (void)c;
  weft_device_description d = {.struct_size = sizeof d};
  if (weft_jni_check(env, weft_device_describe(i, &d))) return NULL;
  jvalue args[10] = {STR(d.name), STR(d.type), {.i = d.index},
                     STR(d.description), STR(d.vendor), STR(d.plugin),
                     {.j = (jlong)d.memory_bytes}, {.d = d.compute_gflops},
                     {.i = (jint)d.flags}, {.j = (jlong)d.unsupported_dtypes}};
  return record(env, "org/weft/DeviceInfo",
                "(Ljava/lang/String;Ljava/lang/String;ILjava/lang/String;"
                "Ljava/lang/String;Ljava/lang/String;JDIJ)V", args);
}

JNIEXPORT jobject NATIVE(opDescribe)(JNIEnv* env, jclass c, jint i) {
  (void)c;
  weft_op_description d = {.struct_size = sizeof d};
  if (weft_jni_check(env, weft_op_describe(i, &d))) return NULL;
  jvalue args[10] = {STR(d.name), STR(d.summary), STR(d.inputs),
                     STR(d.outputs), STR(d.attributes), {.i = d.num_inputs},
                     {.z = d.variadic != 0}, {.z = d.stateful != 0},
                     {.z = d.runs_in_runtime != 0}, STR(d.origin)};
  return record(env, "org/weft/OpInfo",
                "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;"
                "Ljava/lang/String;Ljava/lang/String;IZZZLjava/lang/String;)V",
                args);
}
