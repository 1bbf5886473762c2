/* weft export MODEL OUT.onnx — writes a signature of a model (a bundle,
 * a graph file, an imported ONNX or GraphDef model) as an ONNX model:
 * the graph pruned to what the signature's outputs need, the variables'
 * current values as initializers (weft_model_export_onnx). */
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/model_open.h"
#include "weft/weft.h"

int weft_command_export(int argc, char** argv) {
  model_open m;
  memset(&m, 0, sizeof m);
  const char* out = NULL;
  for (int i = 1; i < argc; ++i) {
    int taken = model_open_option(&m, "export", argc, argv, &i);
    if (taken < 0) return 2;
    if (taken) continue;
    if (argv[i][0] == '-') {
      fprintf(stderr, "weft export: unknown option '%s'\n", argv[i]);
      return 2;
    }
    if (m.path == NULL) {
      m.path = argv[i];
    } else if (out == NULL) {
      out = argv[i];
    } else {
      fprintf(stderr, "weft export: one model and one output, not '%s'\n",
              argv[i]);
      return 2;
    }
  }
  if (m.path == NULL || out == NULL) {
    fprintf(stderr, "weft export: usage: weft export MODEL OUT.onnx "
            "[--signature NAME] [--format F] [--graphdef-output NODE]\n");
    return 2;
  }
  weft_model* model = NULL;
  weft_status* st = model_open_load(&m, NULL, &model);
  const char* signature = NULL;
  if (st == NULL) {
    signature = model_open_signature(&m, "export", model);
    if (signature == NULL) {
      weft_model_destroy(model);
      return 1;
    }
    st = weft_model_export_onnx(model, signature, out);
  }
  int rc = 0;
  if (st != NULL) {
    fprintf(stderr, "weft export: %s\n", weft_status_message(st));
    rc = 1;
  } else {
    printf("%s: signature '%s' of %s as ONNX (opset 13)\n", out, signature,
           m.path);
  }
  weft_status_destroy(st);
  weft_model_destroy(model);
  return rc;
}
