/* Queue runners: org.weft.QueueRunner's native methods over the
 * weft_queue_runner_* functions of weft/session.h. */
#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define RUNNER(h) WEFT_JNI_PTR(weft_queue_runner, h)
#define NODE(h) WEFT_JNI_PTR(weft_node, h)

JNIEXPORT jlong NATIVE(queueRunnerStart)(JNIEnv* env, jclass c, jlong session,
                                         jlong enqueue, jint num_threads,
                                         jlong close) {
  (void)c;
  if (weft_jni_null_handle(env, session)) return 0;
  weft_queue_runner* r = NULL;
  if (weft_jni_check(env, weft_queue_runner_start(
                              WEFT_JNI_PTR(weft_session, session),
                              NODE(enqueue), num_threads, NODE(close), &r)))
    return 0;
  return WEFT_JNI_HANDLE(r);
}

/* The first error a thread met as a WeftException (returned, not thrown),
 * or null. */
JNIEXPORT jthrowable NATIVE(queueRunnerError)(JNIEnv* env, jclass c,
                                              jlong runner) {
  (void)c;
  if (weft_jni_null_handle(env, runner)) return NULL;
  return weft_jni_exception(env, weft_queue_runner_error(RUNNER(runner)));
}

/* Stops and destroys the runner; throws the first error a thread met. */
JNIEXPORT void NATIVE(queueRunnerStop)(JNIEnv* env, jclass c, jlong runner,
                                       jlong cancel) {
  (void)c;
  weft_jni_check(env, weft_queue_runner_stop(RUNNER(runner), NODE(cancel)));
}
