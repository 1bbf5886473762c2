/* Opening a model named on the command line, shared by `weft inspect`,
 * `weft run` and `weft place`: the options that say how to load it
 * (--format, --graphdef-output, --signature) and which signature to use. */
#ifndef WEFT_TOOLS_MODEL_OPEN_H_
#define WEFT_TOOLS_MODEL_OPEN_H_

#include <stdint.h>

#include "weft/weft.h"

enum { MODEL_OPEN_MAX_GRAPHDEF_OUTPUTS = 256 };

typedef struct model_open {
  const char* path;      /* NULL until the operand is seen */
  const char* format;    /* --format, or NULL: by the path */
  const char* signature; /* --signature, or NULL: the default */
  const char* graphdef_outputs[MODEL_OPEN_MAX_GRAPHDEF_OUTPUTS];
  int32_t num_graphdef_outputs;
} model_open;

/* Takes argv[*i] (and its value, advancing *i) when it is one of the
 * options above.  Returns 1 when taken, 0 when not one of them, -1 after
 * printing a usage error as "weft COMMAND: ...". */
int model_open_option(model_open* m, const char* command, int argc,
                      char** argv, int* i);

/* Loads m->path with the session options given (NULL: defaults). */
weft_status* model_open_load(const model_open* m,
                             const weft_session_options* session_options,
                             weft_model** out_model);

/* What the loader takes the file for: "weft bundle", "weft graph file",
 * "onnx" or "graphdef" (the model API does not report it, so this repeats
 * weft_model_load's rule: --format, else directory, .onnx, .pb, else a
 * graph file). */
const char* model_open_format(const model_open* m);

/* The signature m->signature names (NULL: serving_default, else the only
 * one), as the model spells it; NULL after printing "weft COMMAND: ..."
 * listing the signatures there are. */
const char* model_open_signature(const model_open* m, const char* command,
                                 weft_model* model);

/* An output's static shape as text ("[-1, 4]", "[]", "unknown rank") into
 * text (size bytes). */
void model_open_shape_text(weft_output output, char* text, size_t size);

#endif /* WEFT_TOOLS_MODEL_OPEN_H_ */
