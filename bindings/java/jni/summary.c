/* TensorBoard output: org.weft.SummaryWriter's native methods over the
 * weft_summary_writer_* functions of weft/summary.h.  Tags, text and paths
 * arrive as UTF-8 byte arrays (String.getBytes(UTF_8)), not as JNI's
 * modified UTF-8, which writes a character outside the BMP as two
 * surrogates: TensorBoard would read that as invalid text. */
#include <stdlib.h>
#include <string.h>

#include "weft_jni.h"

#define NATIVE(name) JNICALL Java_org_weft_Native_##name
#define WRITER(h) WEFT_JNI_PTR(weft_summary_writer, h)
#define TENSOR(h) WEFT_JNI_PTR(weft_tensor, h)

/* `bytes` as a NUL-terminated string (malloc'ed; free it), NULL for a
 * null array.  Sets *ok to 0, with an exception pending, when out of memory
 * or when the text holds a NUL, which C would read as its end. */
static char* utf8(JNIEnv* env, jbyteArray bytes, int* ok) {
  if (!*ok || bytes == NULL) return NULL;
  jsize n = (*env)->GetArrayLength(env, bytes);
  char* s = malloc((size_t)n + 1);
  if (s == NULL) {
    weft_jni_throw(env, "java/lang/OutOfMemoryError", "a summary string");
    *ok = 0;
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, bytes, 0, n, (jbyte*)s);
  s[n] = '\0';
  if (memchr(s, '\0', (size_t)n) != NULL) {
    weft_jni_throw(env, "java/lang/IllegalArgumentException",
                   "a tag, text or path holds a NUL character");
    free(s);
    *ok = 0;
    return NULL;
  }
  return s;
}

JNIEXPORT jlong NATIVE(summaryWriterCreate)(JNIEnv* env, jclass c,
                                            jbyteArray logdir,
                                            jbyteArray suffix) {
  (void)c;
  int ok = 1;
  char* dir = utf8(env, logdir, &ok);
  char* end = utf8(env, suffix, &ok);
  weft_summary_writer* w = NULL;
  if (ok) weft_jni_check(env, weft_summary_writer_create(dir, end, &w));
  free(dir);
  free(end);
  return WEFT_JNI_HANDLE(w);
}

JNIEXPORT void NATIVE(summaryWriterDestroy)(JNIEnv* env, jclass c,
                                            jlong writer) {
  (void)env;
  (void)c;
  weft_summary_writer_destroy(WRITER(writer));
}

JNIEXPORT void NATIVE(summaryWriterClose)(JNIEnv* env, jclass c,
                                          jlong writer) {
  (void)c;
  if (weft_jni_null_handle(env, writer)) return;
  weft_jni_check(env, weft_summary_writer_close(WRITER(writer)));
}

JNIEXPORT void NATIVE(summaryWriterFlush)(JNIEnv* env, jclass c,
                                          jlong writer) {
  (void)c;
  if (weft_jni_null_handle(env, writer)) return;
  weft_jni_check(env, weft_summary_writer_flush(WRITER(writer)));
}

JNIEXPORT jstring NATIVE(summaryWriterPath)(JNIEnv* env, jclass c,
                                            jlong writer) {
  (void)c;
  if (weft_jni_null_handle(env, writer)) return NULL;
  return weft_jni_new_string(env, weft_summary_writer_path(WRITER(writer)));
}

JNIEXPORT void NATIVE(summaryWriterAddScalar)(JNIEnv* env, jclass c,
                                              jlong writer, jbyteArray tag,
                                              jlong step, jdouble value) {
  (void)c;
  if (weft_jni_null_handle(env, writer)) return;
  int ok = 1;
  char* t = utf8(env, tag, &ok);
  if (ok)
    weft_jni_check(env, weft_summary_writer_add_scalar(WRITER(writer), t,
                                                       step, value));
  free(t);
}

/* kind 0: a histogram, 1: images (max_images) */
JNIEXPORT void NATIVE(summaryWriterAddTensor)(JNIEnv* env, jclass c,
                                              jlong writer, jint kind,
                                              jbyteArray tag, jlong step,
                                              jlong tensor,
                                              jlong max_images) {
  (void)c;
  if (weft_jni_null_handle(env, writer) || weft_jni_null_handle(env, tensor))
    return;
  int ok = 1;
  char* t = utf8(env, tag, &ok);
  if (ok)
    weft_jni_check(env, kind == 0 ? weft_summary_writer_add_histogram(
                                        WRITER(writer), t, step,
                                        TENSOR(tensor))
                                  : weft_summary_writer_add_image(
                                        WRITER(writer), t, step,
                                        TENSOR(tensor), max_images));
  free(t);
}

JNIEXPORT void NATIVE(summaryWriterAddText)(JNIEnv* env, jclass c,
                                            jlong writer, jbyteArray tag,
                                            jlong step, jbyteArray text) {
  (void)c;
  if (weft_jni_null_handle(env, writer)) return;
  int ok = 1;
  char* t = utf8(env, tag, &ok);
  char* x = utf8(env, text, &ok);
  if (ok)
    weft_jni_check(env, weft_summary_writer_add_text(WRITER(writer), t, step,
                                                     x));
  free(t);
  free(x);
}

JNIEXPORT void NATIVE(summaryWriterAddSummary)(JNIEnv* env, jclass c,
                                               jlong writer, jlong step,
                                               jlong tensor) {
  (void)c;
  if (weft_jni_null_handle(env, writer) || weft_jni_null_handle(env, tensor))
    return;
  weft_jni_check(env, weft_summary_writer_add_summary(WRITER(writer), step,
                                                      TENSOR(tensor)));
}

JNIEXPORT void NATIVE(summaryWriterAddGraph)(JNIEnv* env, jclass c,
                                             jlong writer, jlong graph,
                                             jlong metadata) {
  (void)c;
  if (weft_jni_null_handle(env, writer) || weft_jni_null_handle(env, graph))
    return;
  weft_jni_check(env, weft_summary_writer_add_graph(
                          WRITER(writer), WEFT_JNI_PTR(weft_graph, graph),
                          WEFT_JNI_PTR(weft_run_metadata, metadata)));
}

JNIEXPORT void NATIVE(summaryWriterAddRestart)(JNIEnv* env, jclass c,
                                               jlong writer, jlong step,
                                               jbyteArray checkpoint) {
  (void)c;
  if (weft_jni_null_handle(env, writer)) return;
  int ok = 1;
  char* path = utf8(env, checkpoint, &ok);
  if (ok)
    weft_jni_check(env, weft_summary_writer_add_restart(WRITER(writer), step,
                                                        path));
  free(path);
}
