/* Writes a known set of summaries into the log directory argv[1], for
 * tests/test_tensorboard.py to read back with TensorBoard's own reader
 * and compare with values it computes itself from the same formulas:
 *
 *   direct/scalar      steps 0-9: 0.5 * step - 1.25
 *   direct/hist        step 3: -1e-13, 0, 1e-3, 5, 5, 1e6, -2.5 (float64)
 *   direct/image       step 4: a 3 x 2 grey float32 image, pixel (r, c) =
 *                      (r * 2 + c) * 0.25 - 0.25 (clamped to [0, 1])
 *   direct/text        step 5: "plain text \u2713"
 *   op/scalar          step 7: ScalarSummary of 3.5
 *   op/hist            step 7: HistogramSummary of int32 [-3 .. 8]
 *   op/image/0, /1     step 7: ImageSummary of uint8 [3, 4, 5, 3] with
 *                      pixel (n, h, w, c) = (n * 60 + h * 5 + w * 3 + c * 7)
 *                      % 256, max_images 2
 *   op/text            step 7: TextSummary of "**hello** weft"
 *   the graph          those ops, placed by a run (devices shown)
 * The op summaries are merged by MergeSummary and added at step 7. */
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

static int ok(weft_status* st, const char* what) {
  if (st == NULL) return 1;
  fprintf(stderr, "summary_demo: %s: %s\n", what, weft_status_message(st));
  weft_status_destroy(st);
  return 0;
}

static weft_output constant(weft_graph* g, const char* name, weft_dtype t,
                            const int64_t* dims, int32_t rank,
                            const void* data, size_t bytes, int* good) {
  weft_tensor* v = NULL;
  weft_output out = {NULL, 0};
  *good = *good && ok(weft_tensor_create_copy(t, dims, rank, data, bytes, &v),
                      name) &&
          ok(weft_graph_constant(g, name, v, &out), name);
  weft_tensor_destroy(v);
  return out;
}

static weft_output summary(weft_graph* g, const char* op, const char* tag,
                           weft_output in, int* good) {
  weft_op_builder* b = weft_op_begin(g, op, tag);
  weft_op_add_input(b, in);
  weft_op_set_attr_string(b, "tag", tag);
  if (strcmp(op, "ImageSummary") == 0)
    weft_op_set_attr_int(b, "max_images", 2);
  weft_node* n = NULL;
  *good = *good && ok(weft_op_finish(b, &n), tag);
  return (weft_output){n, 0};
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: summary_demo LOGDIR\n");
    return 2;
  }
  weft_summary_writer* w = NULL;
  if (!ok(weft_summary_writer_create(argv[1], NULL, &w), "create")) return 1;
  int good = 1;
  for (int64_t step = 0; step < 10 && good; ++step)
    good = ok(weft_summary_writer_add_scalar(w, "direct/scalar", step,
                                             0.5 * (double)step - 1.25),
              "scalar");
  double hist[7] = {-1e-13, 0, 1e-3, 5, 5, 1e6, -2.5};
  int64_t seven = 7;
  weft_tensor* t = NULL;
  good = good &&
         ok(weft_tensor_create_copy(WEFT_FLOAT64, &seven, 1, hist, sizeof hist,
                                    &t), "hist") &&
         ok(weft_summary_writer_add_histogram(w, "direct/hist", 3, t), "hist");
  weft_tensor_destroy(t);
  t = NULL;
  float image[6];
  for (int i = 0; i < 6; ++i) image[i] = (float)i * 0.25f - 0.25f;
  int64_t idims[3] = {3, 2, 1};
  good = good &&
         ok(weft_tensor_create_copy(WEFT_FLOAT32, idims, 3, image,
                                    sizeof image, &t), "image") &&
         ok(weft_summary_writer_add_image(w, "direct/image", 4, t, 1),
            "image");
  weft_tensor_destroy(t);
  good = good && ok(weft_summary_writer_add_text(w, "direct/text", 5,
                                                 "plain text \xe2\x9c\x93"),
                    "text");

  weft_graph* g = NULL;
  good = good && ok(weft_graph_create(&g), "graph");
  float three_and_half = 3.5f;
  int32_t ints[12];
  for (int i = 0; i < 12; ++i) ints[i] = i - 3;
  int64_t twelve = 12;
  unsigned char pixels[3 * 4 * 5 * 3];
  for (int n = 0; n < 3; ++n)
    for (int h = 0; h < 4; ++h)
      for (int x = 0; x < 5; ++x)
        for (int c = 0; c < 3; ++c)
          pixels[((n * 4 + h) * 5 + x) * 3 + c] =
              (unsigned char)((n * 60 + h * 5 + x * 3 + c * 7) % 256);
  int64_t pdims[4] = {3, 4, 5, 3};
  const char* text = "**hello** weft";
  int64_t tlen = (int64_t)strlen(text);
  weft_output parts[4];
  if (good) {
    parts[0] = summary(g, "ScalarSummary", "op/scalar",
                       constant(g, "half", WEFT_FLOAT32, NULL, 0,
                                &three_and_half, sizeof three_and_half, &good),
                       &good);
    parts[1] = summary(g, "HistogramSummary", "op/hist",
                       constant(g, "ints", WEFT_INT32, &twelve, 1, ints,
                                sizeof ints, &good), &good);
    parts[2] = summary(g, "ImageSummary", "op/image",
                       constant(g, "pixels", WEFT_UINT8, pdims, 4, pixels,
                                sizeof pixels, &good), &good);
    parts[3] = summary(g, "TextSummary", "op/text",
                       constant(g, "text", WEFT_UINT8, &tlen, 1, text,
                                (size_t)tlen, &good), &good);
  }
  weft_node* merged = NULL;
  if (good) {
    weft_op_builder* b = weft_op_begin(g, "MergeSummary", "merged");
    weft_op_add_input_list(b, parts, 4);
    good = ok(weft_op_finish(b, &merged), "merge");
  }
  weft_session* s = NULL;
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor* out = NULL;
  weft_output fetch = {merged, 0};
  good = good && ok(weft_session_create(g, NULL, &s), "session") &&
         ok(weft_session_run_with_metadata(s, NULL, NULL, 0, &fetch, 1, NULL,
                                           0, &out, md), "run") &&
         ok(weft_summary_writer_add_summary(w, 7, out), "add_summary") &&
         ok(weft_summary_writer_add_graph(w, g, md), "add_graph") &&
         ok(weft_summary_writer_close(w), "close");
  weft_tensor_destroy(out);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  weft_graph_destroy(g);
  weft_summary_writer_destroy(w);
  if (good) printf("%s\n", argv[1]);
  return good ? 0 : 1;
}
