/* Graphs: the generic op builder, the shortcuts, and inspection. */
#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define BUILDER(h) WEFT_JNI_PTR(weft_op_builder, h)
#define GRAPH(h) WEFT_JNI_PTR(weft_graph, h)
#define NODE(h) WEFT_JNI_PTR(weft_node, h)

JNIEXPORT jlong NATIVE(graphCreate)(JNIEnv* env, jclass c) {
  (void)c;
  weft_graph* g = NULL;
  if (weft_jni_check(env, weft_graph_create(&g))) return 0;
  return WEFT_JNI_HANDLE(g);
}

JNIEXPORT void NATIVE(graphDestroy)(JNIEnv* env, jclass c, jlong graph) {
  (void)env;
  (void)c;
  weft_graph_destroy(GRAPH(graph));
}

/* ---- the op builder (every setter accepts a NULL builder) ---- */

JNIEXPORT jlong NATIVE(opBegin)(JNIEnv* env, jclass c, jlong graph,
                                jstring op_type, jstring name) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_string op, n;
  if (!weft_jni_string_get(env, op_type, &op)) return 0;
  if (!weft_jni_string_get(env, name, &n)) {
    weft_jni_string_release(env, &op);
    return 0;
  }
  weft_op_builder* b = weft_op_begin(GRAPH(graph), op.utf, n.utf);
  weft_jni_string_release(env, &n);
  weft_jni_string_release(env, &op);
  if (b == NULL)
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "weft_op_begin");
  return WEFT_JNI_HANDLE(b);
}

JNIEXPORT void NATIVE(opAbandon)(JNIEnv* env, jclass c, jlong builder) {
  (void)env;
  (void)c;
  weft_op_abandon(BUILDER(builder));
}

JNIEXPORT void NATIVE(opAddInput)(JNIEnv* env, jclass c, jlong builder,
                                  jlong node, jint index) {
  (void)env;
  (void)c;
  weft_op_add_input(BUILDER(builder), (weft_output){NODE(node), index});
}

JNIEXPORT void NATIVE(opAddInputList)(JNIEnv* env, jclass c, jlong builder,
                                      jlongArray nodes, jintArray indices) {
  (void)c;
  weft_jni_outputs list;
  if (!weft_jni_outputs_get(env, nodes, indices, &list)) return;
  weft_op_add_input_list(BUILDER(builder), list.items, list.count);
  weft_jni_outputs_release(&list);
}

JNIEXPORT void NATIVE(opAddControlInput)(JNIEnv* env, jclass c, jlong builder,
                                         jlong node) {
  (void)env;
  (void)c;
  weft_op_add_control_input(BUILDER(builder), NODE(node));
}

JNIEXPORT void NATIVE(opSetDevice)(JNIEnv* env, jclass c, jlong builder,
                                   jstring device) {
  (void)c;
  weft_jni_string d;
  if (!weft_jni_string_get(env, device, &d)) return;
  weft_op_set_device(BUILDER(builder), d.utf);
  weft_jni_string_release(env, &d);
}

JNIEXPORT void NATIVE(graphSetDevice)(JNIEnv* env, jclass c, jlong graph,
                                      jstring device) {
  (void)c;
  weft_jni_string d;
  if (!weft_jni_string_get(env, device, &d)) return;
  weft_graph_set_device(GRAPH(graph), d.utf);
  weft_jni_string_release(env, &d);
}

/* Attribute setters: the name as C string `n` around one statement. */
#define WITH_NAME(statement)                             \
  do {                                                   \
    weft_jni_string n;                                   \
    if (!weft_jni_string_get(env, name, &n)) return;     \
    statement;                                           \
    weft_jni_string_release(env, &n);                    \
  } while (0)

JNIEXPORT void NATIVE(opSetAttrInt)(JNIEnv* env, jclass c, jlong builder,
                                    jstring name, jlong value) {
  (void)c;
  WITH_NAME(weft_op_set_attr_int(BUILDER(builder), n.utf, value));
}

JNIEXPORT void NATIVE(opSetAttrFloat)(JNIEnv* env, jclass c, jlong builder,
                                      jstring name, jdouble value) {
  (void)c;
  WITH_NAME(weft_op_set_attr_float(BUILDER(builder), n.utf, value));
}

JNIEXPORT void NATIVE(opSetAttrBool)(JNIEnv* env, jclass c, jlong builder,
                                     jstring name, jboolean value) {
  (void)c;
  WITH_NAME(weft_op_set_attr_bool(BUILDER(builder), n.utf, value ? 1 : 0));
}

JNIEXPORT void NATIVE(opSetAttrDtype)(JNIEnv* env, jclass c, jlong builder,
                                      jstring name, jint value) {
  (void)c;
  WITH_NAME(weft_op_set_attr_dtype(BUILDER(builder), n.utf,
                                   (weft_dtype)value));
}

JNIEXPORT void NATIVE(opSetAttrString)(JNIEnv* env, jclass c, jlong builder,
                                       jstring name, jstring value) {
  (void)c;
  weft_jni_string v;
  if (!weft_jni_string_get(env, value, &v)) return;
  WITH_NAME(weft_op_set_attr_string(BUILDER(builder), n.utf, v.utf));
  weft_jni_string_release(env, &v);
}

JNIEXPORT void NATIVE(opSetAttrIntList)(JNIEnv* env, jclass c, jlong builder,
                                        jstring name, jlongArray values) {
  (void)c;
  jsize count = values == NULL ? 0 : (*env)->GetArrayLength(env, values);
  jlong* v = count ? (*env)->GetLongArrayElements(env, values, NULL) : NULL;
  if (count && v == NULL) return;
  WITH_NAME(weft_op_set_attr_int_list(BUILDER(builder), n.utf,
                                      (const int64_t*)v, count));
  if (v) (*env)->ReleaseLongArrayElements(env, values, v, JNI_ABORT);
}

JNIEXPORT void NATIVE(opSetAttrFloatList)(JNIEnv* env, jclass c, jlong builder,
                                          jstring name, jdoubleArray values) {
  (void)c;
  jsize count = values == NULL ? 0 : (*env)->GetArrayLength(env, values);
  jdouble* v = count ? (*env)->GetDoubleArrayElements(env, values, NULL) : NULL;
  if (count && v == NULL) return;
  WITH_NAME(weft_op_set_attr_float_list(BUILDER(builder), n.utf, v, count));
  if (v) (*env)->ReleaseDoubleArrayElements(env, values, v, JNI_ABORT);
}

JNIEXPORT void NATIVE(opSetAttrShape)(JNIEnv* env, jclass c, jlong builder,
                                      jstring name, jlongArray dims,
                                      jint rank) {
  (void)c;
  int64_t d[WEFT_MAX_RANK];
  int32_t length = 0;
  if (!weft_jni_dims_get(env, dims, d, &length)) return;
  WITH_NAME(weft_op_set_attr_shape(BUILDER(builder), n.utf, d,
                                   rank < 0 ? -1 : length));
}

JNIEXPORT void NATIVE(opSetAttrTensor)(JNIEnv* env, jclass c, jlong builder,
                                       jstring name, jlong tensor) {
  (void)c;
  WITH_NAME(weft_op_set_attr_tensor(BUILDER(builder), n.utf,
                                    WEFT_JNI_PTR(weft_tensor, tensor)));
}

JNIEXPORT jlong NATIVE(opFinish)(JNIEnv* env, jclass c, jlong builder) {
  (void)c;
  weft_node* node = NULL;
  if (weft_jni_check(env, weft_op_finish(BUILDER(builder), &node))) return 0;
  return WEFT_JNI_HANDLE(node);
}

/* ---- shortcuts ---- */

JNIEXPORT jlong NATIVE(graphConstant)(JNIEnv* env, jclass c, jlong graph,
                                      jstring name, jlong tensor) {
  (void)c;
  if (weft_jni_null_handle(env, graph) || weft_jni_null_handle(env, tensor))
    return 0;
  weft_output out = {NULL, 0};
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return 0;
  weft_status* st = weft_graph_constant(
      GRAPH(graph), n.utf, WEFT_JNI_PTR(weft_tensor, tensor), &out);
  weft_jni_string_release(env, &n);
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(out.node);
}

JNIEXPORT jlong NATIVE(graphPlaceholder)(JNIEnv* env, jclass c, jlong graph,
                                         jstring name, jint dtype,
                                         jlongArray dims, jint rank) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  int64_t d[WEFT_MAX_RANK];
  int32_t length = 0;
  if (!weft_jni_dims_get(env, dims, d, &length)) return 0;
  weft_output out = {NULL, 0};
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return 0;
  weft_status* st = weft_graph_placeholder(
      GRAPH(graph), n.utf, (weft_dtype)dtype, d, rank < 0 ? -1 : length, &out);
  weft_jni_string_release(env, &n);
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(out.node);
}

JNIEXPORT jlong NATIVE(graphApply)(JNIEnv* env, jclass c, jlong graph,
                                   jstring op_type, jstring name,
                                   jlongArray nodes, jintArray indices) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_outputs inputs;
  weft_jni_string op;
  if (!weft_jni_outputs_get(env, nodes, indices, &inputs)) return 0;
  if (!weft_jni_string_get(env, op_type, &op)) {
    weft_jni_outputs_release(&inputs);
    return 0;
  }
  weft_output out = {NULL, 0};
  weft_status* st = NULL;
  weft_jni_string n;
  if (weft_jni_string_get(env, name, &n)) {
    st = weft_graph_apply(GRAPH(graph), op.utf, n.utf, inputs.items,
                          inputs.count, &out);
    weft_jni_string_release(env, &n);
  }
  weft_jni_string_release(env, &op);
  weft_jni_outputs_release(&inputs);
  if ((*env)->ExceptionCheck(env)) {
    weft_status_destroy(st);
    return 0;
  }
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(out.node);
}

JNIEXPORT jlongArray NATIVE(graphVariable)(JNIEnv* env, jclass c, jlong graph,
                                           jstring name, jlong node,
                                           jint index) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return NULL;
  weft_output value = {NULL, 0};
  weft_node* init = NULL;
  weft_status* st = NULL;
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return NULL;
  st = weft_graph_variable(GRAPH(graph), n.utf, (weft_output){NODE(node), index},
                           &value, &init);
  weft_jni_string_release(env, &n);
  if (weft_jni_check(env, st)) return NULL;
  jlong out[3] = {WEFT_JNI_HANDLE(value.node), value.index,
                  WEFT_JNI_HANDLE(init)};
  jlongArray result = (*env)->NewLongArray(env, 3);
  if (result != NULL) (*env)->SetLongArrayRegion(env, result, 0, 3, out);
  return result;
}

/* ---- inspection ---- */

JNIEXPORT jlong NATIVE(graphNodeByName)(JNIEnv* env, jclass c, jlong graph,
                                        jstring name) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return 0;
  weft_node* node = n.utf ? weft_graph_node_by_name(GRAPH(graph), n.utf) : NULL;
  weft_jni_string_release(env, &n);
  return WEFT_JNI_HANDLE(node);
}

JNIEXPORT jint NATIVE(graphNodeCount)(JNIEnv* env, jclass c, jlong graph) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  return weft_graph_node_count(GRAPH(graph));
}

JNIEXPORT jlong NATIVE(graphNodeAt)(JNIEnv* env, jclass c, jlong graph,
                                    jint index) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  return WEFT_JNI_HANDLE(weft_graph_node_at(GRAPH(graph), index));
}

JNIEXPORT jstring NATIVE(nodeName)(JNIEnv* env, jclass c, jlong node) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return NULL;
  return weft_jni_new_string(env, weft_node_name(NODE(node)));
}

JNIEXPORT jstring NATIVE(nodeOpType)(JNIEnv* env, jclass c, jlong node) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return NULL;
  return weft_jni_new_string(env, weft_node_op_type(NODE(node)));
}

JNIEXPORT jstring NATIVE(nodeDevice)(JNIEnv* env, jclass c, jlong node) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return NULL;
  return weft_jni_new_string(env, weft_node_device(NODE(node)));
}

JNIEXPORT jint NATIVE(nodeNumInputs)(JNIEnv* env, jclass c, jlong node) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return 0;
  return weft_node_num_inputs(NODE(node));
}

JNIEXPORT jlongArray NATIVE(nodeInput)(JNIEnv* env, jclass c, jlong node,
                                       jint index) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return NULL;
  weft_output in = weft_node_input(NODE(node), index);
  if (in.node == NULL) {
    weft_jni_throw(env, "java/lang/IndexOutOfBoundsException",
                   "no such input");
    return NULL;
  }
  jlong out[2] = {WEFT_JNI_HANDLE(in.node), in.index};
  jlongArray result = (*env)->NewLongArray(env, 2);
  if (result != NULL) (*env)->SetLongArrayRegion(env, result, 0, 2, out);
  return result;
}

JNIEXPORT jint NATIVE(nodeNumControlInputs)(JNIEnv* env, jclass c,
                                            jlong node) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return 0;
  return weft_node_num_control_inputs(NODE(node));
}

JNIEXPORT jint NATIVE(nodeNumOutputs)(JNIEnv* env, jclass c, jlong node) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return 0;
  return weft_node_num_outputs(NODE(node));
}

JNIEXPORT jint NATIVE(outputDtype)(JNIEnv* env, jclass c, jlong node,
                                   jint index) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return 0;
  return weft_output_dtype((weft_output){NODE(node), index});
}

JNIEXPORT jlongArray NATIVE(outputShape)(JNIEnv* env, jclass c, jlong node,
                                         jint index) {
  (void)c;
  if (weft_jni_null_handle(env, node)) return NULL;
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  if (weft_jni_check(env, weft_output_shape((weft_output){NODE(node), index},
                                            dims, WEFT_MAX_RANK, &rank)) ||
      rank < 0)
    return NULL;
  jlong out[WEFT_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) out[i] = dims[i];
  jlongArray result = (*env)->NewLongArray(env, rank);
  if (result != NULL) (*env)->SetLongArrayRegion(env, result, 0, rank, out);
  return result;
}
