#define _POSIX_C_SOURCE 200809L
#include "tools/model_open.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int model_open_option(model_open* m, const char* command, int argc,
                      char** argv, int* i) {
  const char* arg = argv[*i];
  int is_format = strcmp(arg, "--format") == 0;
  int is_output = strcmp(arg, "--graphdef-output") == 0;
  int is_signature = strcmp(arg, "--signature") == 0;
  if (!is_format && !is_output && !is_signature) return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "weft %s: %s needs a value\n", command, arg);
    return -1;
  }
  const char* value = argv[++*i];
  if (is_format) {
    if (strcmp(value, "weft") != 0 && strcmp(value, "onnx") != 0 &&
        strcmp(value, "graphdef") != 0) {
      fprintf(stderr, "weft %s: --format is weft, onnx or graphdef, not "
              "'%s'\n", command, value);
      return -1;
    }
    m->format = value;
  } else if (is_signature) {
    m->signature = value;
  } else {
    if (m->num_graphdef_outputs == MODEL_OPEN_MAX_GRAPHDEF_OUTPUTS) {
      fprintf(stderr, "weft %s: more than %d --graphdef-output\n", command,
              MODEL_OPEN_MAX_GRAPHDEF_OUTPUTS);
      return -1;
    }
    m->graphdef_outputs[m->num_graphdef_outputs++] = value;
  }
  return 1;
}

weft_status* model_open_load(const model_open* m,
                             const weft_session_options* session_options,
                             weft_model** out_model) {
  weft_model_load_options options;
  weft_model_load_options_init(&options);
  options.format = m->format;
  options.session_options = session_options;
  if (m->num_graphdef_outputs > 0) {
    options.graphdef_outputs = m->graphdef_outputs;
    options.num_graphdef_outputs = m->num_graphdef_outputs;
  }
  return weft_model_load(m->path, &options, out_model);
}

static int ends_with(const char* text, const char* suffix) {
  size_t n = strlen(text), k = strlen(suffix);
  return n >= k && strcmp(text + n - k, suffix) == 0;
}

const char* model_open_format(const model_open* m) {
  struct stat st;
  int is_dir = stat(m->path, &st) == 0 && S_ISDIR(st.st_mode);
  const char* format = m->format;
  if (format == NULL || format[0] == '\0') {
    format = is_dir                        ? "weft"
             : ends_with(m->path, ".onnx") ? "onnx"
             : ends_with(m->path, ".pb")   ? "graphdef"
                                           : "weft";
  }
  if (strcmp(format, "weft") == 0)
    return is_dir ? "weft bundle" : "weft graph file";
  return format;
}

const char* model_open_signature(const model_open* m, const char* command,
                                 weft_model* model) {
  int32_t count = weft_model_num_signatures(model);
  const char* wanted = m->signature;
  for (int32_t i = 0; i < count; ++i) {
    const char* name = weft_model_signature_name(model, i);
    if (wanted != NULL ? strcmp(name, wanted) == 0
                       : strcmp(name, WEFT_DEFAULT_SIGNATURE) == 0)
      return name;
  }
  if (wanted == NULL && count == 1) return weft_model_signature_name(model, 0);
  if (wanted != NULL)
    fprintf(stderr, "weft %s: %s has no signature '%s'; it has", command,
            m->path, wanted);
  else
    fprintf(stderr, "weft %s: %s has no '%s' signature; name one with "
            "--signature:", command, m->path, WEFT_DEFAULT_SIGNATURE);
  for (int32_t i = 0; i < count; ++i)
    fprintf(stderr, "%s '%s'", i ? "," : "",
            weft_model_signature_name(model, i));
  fprintf(stderr, "%s\n", count ? "" : " none");
  return NULL;
}

void model_open_shape_text(weft_output output, char* text, size_t size) {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* status = weft_output_shape(output, dims, WEFT_MAX_RANK, &rank);
  if (status != NULL || rank < 0) {
    weft_status_destroy(status);
    snprintf(text, size, "unknown rank");
    return;
  }
  size_t used = (size_t)snprintf(text, size, "[");
  for (int32_t i = 0; i < rank && used < size; ++i)
    used += (size_t)snprintf(text + used, size - used, "%s%lld",
                             i ? ", " : "", (long long)dims[i]);
  if (used < size) snprintf(text + used, size - used, "]");
}
