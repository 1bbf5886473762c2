/* Training: gradients, trainable variables, optimizers, checkpoints. */
#include <stdlib.h>

#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define GRAPH(h) WEFT_JNI_PTR(weft_graph, h)
#define NODE(h) WEFT_JNI_PTR(weft_node, h)

JNIEXPORT jlongArray NATIVE(gradients)(JNIEnv* env, jclass c, jlong graph,
                                       jlongArray y_nodes, jintArray y_indices,
                                       jlongArray x_nodes, jintArray x_indices,
                                       jlongArray gy_nodes,
                                       jintArray gy_indices) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return NULL;
  weft_jni_outputs ys, xs, gys;
  if (!weft_jni_outputs_get(env, y_nodes, y_indices, &ys)) return NULL;
  if (!weft_jni_outputs_get(env, x_nodes, x_indices, &xs)) {
    weft_jni_outputs_release(&ys);
    return NULL;
  }
  if (!weft_jni_outputs_get(env, gy_nodes, gy_indices, &gys)) {
    weft_jni_outputs_release(&xs);
    weft_jni_outputs_release(&ys);
    return NULL;
  }
  weft_jni_outputs grads;
  jlongArray result = NULL;
  /* The gradients go where the xs were read: same count, same storage. */
  if (weft_jni_outputs_get(env, x_nodes, x_indices, &grads)) {
    weft_status* st = weft_gradients(GRAPH(graph), ys.items, ys.count,
                                     xs.items, xs.count,
                                     gy_nodes == NULL ? NULL : gys.items,
                                     grads.items);
    if (!weft_jni_check(env, st)) {
      result = (*env)->NewLongArray(env, 2 * grads.count);
      for (int32_t i = 0; result != NULL && i < grads.count; ++i) {
        jlong pair[2] = {WEFT_JNI_HANDLE(grads.items[i].node),
                         grads.items[i].index};
        (*env)->SetLongArrayRegion(env, result, 2 * i, 2, pair);
      }
    }
    weft_jni_outputs_release(&grads);
  }
  weft_jni_outputs_release(&gys);
  weft_jni_outputs_release(&xs);
  weft_jni_outputs_release(&ys);
  return result;
}

JNIEXPORT jint NATIVE(opGradientStatus)(JNIEnv* env, jclass c,
                                        jstring op_type) {
  (void)c;
  weft_jni_string op;
  if (!weft_jni_string_get(env, op_type, &op)) return -1;
  int32_t status = op.utf ? weft_op_gradient_status(op.utf) : -1;
  weft_jni_string_release(env, &op);
  return status;
}

JNIEXPORT void NATIVE(variableSetTrainable)(JNIEnv* env, jclass c, jlong graph,
                                            jlong node, jboolean trainable) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return;
  weft_jni_check(env, weft_variable_set_trainable(GRAPH(graph), NODE(node),
                                                  trainable ? 1 : 0));
}

JNIEXPORT jlongArray NATIVE(graphTrainableVariables)(JNIEnv* env, jclass c,
                                                     jlong graph) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return NULL;
  int32_t count = 0;
  if (weft_jni_check(env, weft_graph_trainable_variables(GRAPH(graph), NULL, 0,
                                                         &count)))
    return NULL;
  /* The graph may grow between the two calls: ask again until it fits. */
  for (;;) {
    weft_node** nodes = count > 0 ? malloc(sizeof *nodes * (size_t)count) : NULL;
    if (count > 0 && nodes == NULL) {
      weft_jni_throw(env, "java/lang/OutOfMemoryError", "trainable variables");
      return NULL;
    }
    int32_t total = 0;
    weft_status* st =
        weft_graph_trainable_variables(GRAPH(graph), nodes, count, &total);
    jlongArray result = NULL;
    if (!weft_jni_check(env, st) && total <= count) {
      result = (*env)->NewLongArray(env, total);
      for (int32_t i = 0; result != NULL && i < total; ++i) {
        jlong h = WEFT_JNI_HANDLE(nodes[i]);
        (*env)->SetLongArrayRegion(env, result, i, 1, &h);
      }
    }
    free(nodes);
    if (result != NULL || (*env)->ExceptionCheck(env)) return result;
    count = total;
  }
}

JNIEXPORT jlong NATIVE(graphInitializeAll)(JNIEnv* env, jclass c, jlong graph,
                                           jstring name) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return 0;
  weft_node* node = NULL;
  weft_status* st = weft_graph_initialize_all(GRAPH(graph), n.utf, &node);
  weft_jni_string_release(env, &n);
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(node);
}

JNIEXPORT jdoubleArray NATIVE(optimizerDefaults)(JNIEnv* env, jclass c,
                                                 jint kind) {
  (void)c;
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, kind);
  jdouble values[6] = {o.learning_rate, o.momentum, o.use_nesterov ? 1 : 0,
                       o.beta1, o.beta2, o.epsilon};
  jdoubleArray result = (*env)->NewDoubleArray(env, 6);
  if (result != NULL) (*env)->SetDoubleArrayRegion(env, result, 0, 6, values);
  return result;
}

JNIEXPORT jlong NATIVE(minimize)(JNIEnv* env, jclass c, jlong graph,
                                 jlong loss_node, jint loss_index, jint kind,
                                 jdouble learning_rate, jdouble momentum,
                                 jboolean nesterov, jdouble beta1,
                                 jdouble beta2, jdouble epsilon,
                                 jboolean data_parallel, jlong bucket_bytes,
                                 jstring name) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_optimizer_options o;
  weft_optimizer_options_init(&o, kind);
  o.learning_rate = learning_rate;
  o.momentum = momentum;
  o.use_nesterov = nesterov ? 1 : 0;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.epsilon = epsilon;
  o.data_parallel = data_parallel ? 1 : 0;
  o.bucket_bytes = bucket_bytes;
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return 0;
  weft_node* train = NULL;
  weft_status* st = weft_minimize(
      GRAPH(graph), (weft_output){NODE(loss_node), loss_index}, &o, n.utf,
      &train);
  weft_jni_string_release(env, &n);
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(train);
}

JNIEXPORT jlong NATIVE(broadcastVariables)(JNIEnv* env, jclass c,
                                           jlong graph, jint root,
                                           jstring name) {
  (void)c;
  if (weft_jni_null_handle(env, graph)) return 0;
  weft_jni_string n;
  if (!weft_jni_string_get(env, name, &n)) return 0;
  weft_node* op = NULL;
  weft_status* st = weft_broadcast_variables(GRAPH(graph), root, n.utf, &op);
  weft_jni_string_release(env, &n);
  return weft_jni_check(env, st) ? 0 : WEFT_JNI_HANDLE(op);
}

static void checkpoint(JNIEnv* env, jlong session, jstring path,
                       jlongArray variables, int save) {
  if (weft_jni_null_handle(env, session)) return;
  weft_jni_pointers vars;
  if (!weft_jni_pointers_get(env, variables, &vars)) return;
  weft_jni_string p;
  if (weft_jni_string_get(env, path, &p)) {
    weft_session* s = WEFT_JNI_PTR(weft_session, session);
    weft_node* const* v = (weft_node* const*)(vars.count ? vars.items : NULL);
    weft_status* st =
        p.utf == NULL
            ? weft_status_create(WEFT_INVALID_ARGUMENT, "checkpoint path is null")
        : save ? weft_checkpoint_save(s, p.utf, v, vars.count)
               : weft_checkpoint_restore(s, p.utf, v, vars.count);
    weft_jni_string_release(env, &p);
    weft_jni_check(env, st);
  }
  weft_jni_pointers_release(&vars);
}

JNIEXPORT void NATIVE(checkpointSave)(JNIEnv* env, jclass c, jlong session,
                                      jstring path, jlongArray variables) {
  (void)c;
  checkpoint(env, session, path, variables, 1);
}

JNIEXPORT void NATIVE(checkpointRestore)(JNIEnv* env, jclass c, jlong session,
                                         jstring path, jlongArray variables) {
  (void)c;
  checkpoint(env, session, path, variables, 0);
}
