/* weft run — runs a model file's signature on NumPy arrays.
 *
 *   weft run MODEL --feed x=batch.npy --fetch probabilities=out.npy
 *
 * Inputs are fed by signature key from .npy files (tools/npy.h); each
 * fetched output is written as .npy when a file is named, else printed
 * (dtype, shape, the first values).  Without --fetch every output of the
 * signature is fetched.  Keys, dtypes and the shapes the graph knows are
 * checked before anything runs, so a mistake names the key and the file.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/model_open.h"
#include "tools/npy.h"
#include "weft/weft.h"

enum { EXIT_USAGE = 2, kMaxArgs = 256, kPrintedValues = 48 };

typedef struct key_file {
  const char* key;  /* points into a copy of the argument */
  const char* file; /* NULL: print (fetches only) */
} key_file;

typedef struct run_args {
  model_open model;
  const char* devices;
  key_file feeds[kMaxArgs];
  int32_t num_feeds;
  key_file fetches[kMaxArgs];
  int32_t num_fetches;
  char* copies[2 * kMaxArgs]; /* the KEY=FILE texts split in place */
  int32_t num_copies;
} run_args;

static void print_usage_error(void) {
  fprintf(stderr, "usage: weft run MODEL [--signature NAME] --feed "
          "KEY=FILE.npy ... [--fetch KEY[=OUT.npy] ...] [--format "
          "weft|onnx|graphdef] [--graphdef-output NODE ...] "
          "[--devices LIST]\n");
}

/* "KEY=FILE" into *out; `file_required` for feeds. */
static int split_key_file(run_args* a, const char* flag, const char* text,
                          int file_required, key_file* out) {
  char* copy = strdup(text);
  if (copy == NULL) return 0;
  a->copies[a->num_copies++] = copy;
  char* equals = strchr(copy, '=');
  if (equals != NULL) *equals = '\0';
  out->key = copy;
  out->file = equals != NULL ? equals + 1 : NULL;
  if (copy[0] == '\0' || (file_required && equals == NULL) ||
      (equals != NULL && equals[1] == '\0')) {
    fprintf(stderr, "weft run: %s wants %s, got '%s'\n", flag,
            file_required ? "KEY=FILE.npy" : "KEY or KEY=OUT.npy", text);
    return 0;
  }
  return 1;
}

static int parse_args(int argc, char** argv, run_args* a) {
  for (int i = 1; i < argc; ++i) {
    int taken = model_open_option(&a->model, "run", argc, argv, &i);
    if (taken < 0) return 0;
    if (taken) continue;
    const char* arg = argv[i];
    int is_feed = strcmp(arg, "--feed") == 0;
    int is_fetch = strcmp(arg, "--fetch") == 0;
    int is_devices = strcmp(arg, "--devices") == 0;
    if (is_feed || is_fetch || is_devices) {
      if (i + 1 >= argc) {
        fprintf(stderr, "weft run: %s needs a value\n", arg);
        return 0;
      }
      const char* value = argv[++i];
      if (is_devices) {
        a->devices = value;
        continue;
      }
      if ((is_feed ? a->num_feeds : a->num_fetches) == kMaxArgs) {
        fprintf(stderr, "weft run: more than %d %s\n", kMaxArgs, arg);
        return 0;
      }
      key_file* slot = is_feed ? &a->feeds[a->num_feeds++]
                               : &a->fetches[a->num_fetches++];
      if (!split_key_file(a, arg, value, is_feed, slot)) return 0;
    } else if (arg[0] == '-') {
      fprintf(stderr, "weft run: unknown option '%s'\n", arg);
      print_usage_error();
      return 0;
    } else if (a->model.path != NULL) {
      fprintf(stderr, "weft run: one model at a time ('%s', then '%s')\n",
              a->model.path, arg);
      return 0;
    } else {
      a->model.path = arg;
    }
  }
  if (a->model.path == NULL) {
    print_usage_error();
    return 0;
  }
  for (int32_t i = 0; i < a->num_feeds; ++i)
    for (int32_t j = 0; j < i; ++j)
      if (strcmp(a->feeds[i].key, a->feeds[j].key) == 0) {
        fprintf(stderr, "weft run: input '%s' is fed twice\n",
                a->feeds[i].key);
        return 0;
      }
  return 1;
}

/* ---- printing values ----------------------------------------------------- */

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else if (exponent != 0) {
    bits = sign | (exponent + 112) << 23 | mantissa << 13;
  } else if (mantissa == 0) {
    bits = sign;
  } else { /* subnormal: normalize */
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t)(113 - shift) << 23 | (mantissa & 0x3ff) << 13;
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void print_value(weft_dtype dtype, const void* data, int64_t i) {
  const char* p = (const char*)data;
  switch (dtype) {
    case WEFT_FLOAT32: printf("%.7g", ((const float*)data)[i]); break;
    case WEFT_FLOAT64: printf("%.15g", ((const double*)data)[i]); break;
    case WEFT_FLOAT16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      printf("%.4g", half_to_float(h));
      break;
    }
    case WEFT_BFLOAT16: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      uint32_t bits = (uint32_t)h << 16;
      float f;
      memcpy(&f, &bits, sizeof f);
      printf("%.3g", f);
      break;
    }
    case WEFT_INT8: printf("%d", ((const int8_t*)data)[i]); break;
    case WEFT_INT16: printf("%d", ((const int16_t*)data)[i]); break;
    case WEFT_INT32: printf("%d", ((const int32_t*)data)[i]); break;
    case WEFT_INT64:
      printf("%lld", (long long)((const int64_t*)data)[i]);
      break;
    case WEFT_UINT8: printf("%u", ((const uint8_t*)data)[i]); break;
    case WEFT_UINT16: printf("%u", ((const uint16_t*)data)[i]); break;
    case WEFT_UINT32: printf("%u", ((const uint32_t*)data)[i]); break;
    case WEFT_UINT64:
      printf("%llu", (unsigned long long)((const uint64_t*)data)[i]);
      break;
    case WEFT_BOOL:
      printf("%s", ((const uint8_t*)data)[i] ? "true" : "false");
      break;
    default: printf("?"); break;
  }
}

static void print_dims(const weft_tensor* t) {
  printf("[");
  for (int32_t i = 0; i < weft_tensor_rank(t); ++i)
    printf("%s%lld", i ? ", " : "", (long long)weft_tensor_dim(t, i));
  printf("]");
}

/* "key: float32 [2, 3]" and the first values, eight to a line. */
static void print_tensor(const char* key, const weft_tensor* t) {
  weft_dtype dtype = weft_tensor_dtype(t);
  int64_t count = weft_tensor_element_count(t);
  printf("%s: %s ", key, weft_dtype_name(dtype));
  print_dims(t);
  printf("\n");
  const void* data = weft_tensor_data(t);
  int64_t shown = count < kPrintedValues ? count : kPrintedValues;
  for (int64_t i = 0; i < shown; ++i) {
    printf("%s", i % 8 == 0 ? "  " : " ");
    print_value(dtype, data, i);
    if (i % 8 == 7 || i + 1 == shown) printf("\n");
  }
  if (count > shown)
    printf("  ... (%lld values in all)\n", (long long)count);
}

/* ---- checking feeds ------------------------------------------------------ */

/* Looks `key` up among the signature's inputs or outputs; prints the keys
 * there are when it is missing. */
static int find_key(weft_model* model, const char* signature,
                    int32_t is_output, const char* key, weft_output* out) {
  int32_t count = weft_model_signature_size(model, signature, is_output);
  for (int32_t i = 0; i < count; ++i) {
    const char* k = NULL;
    weft_output o;
    weft_status* st =
        weft_model_signature_entry(model, signature, is_output, i, &k, &o);
    if (st == NULL && strcmp(k, key) == 0) {
      *out = o;
      return 1;
    }
    weft_status_destroy(st);
  }
  fprintf(stderr, "weft run: signature '%s' has no %s '%s'; its %ss:",
          signature, is_output ? "output" : "input", key,
          is_output ? "output" : "input");
  for (int32_t i = 0; i < count; ++i) {
    const char* k = NULL;
    weft_output o;
    weft_status* st =
        weft_model_signature_entry(model, signature, is_output, i, &k, &o);
    if (st == NULL) fprintf(stderr, "%s %s", i ? "," : "", k);
    weft_status_destroy(st);
  }
  fprintf(stderr, "%s\n", count > 0 ? "" : " none");
  return 0;
}

/* The array's dtype and shape against what the graph knows of `input`. */
static int check_feed(const key_file* feed, weft_output input,
                      const npy_array* a) {
  weft_dtype want = weft_output_dtype(input);
  if (a->dtype != want) {
    fprintf(stderr, "weft run: %s holds %s, but input '%s' takes %s\n",
            feed->file, weft_dtype_name(a->dtype), feed->key,
            weft_dtype_name(want));
    return 0;
  }
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* st = weft_output_shape(input, dims, WEFT_MAX_RANK, &rank);
  weft_status_destroy(st);
  if (st != NULL || rank < 0) return 1;
  int fits = rank == a->rank;
  for (int32_t i = 0; fits && i < rank; ++i)
    fits = dims[i] < 0 || dims[i] == a->dims[i];
  if (!fits) {
    char want_text[WEFT_MAX_RANK * 22 + 16];
    model_open_shape_text(input, want_text, sizeof want_text);
    fprintf(stderr, "weft run: %s has shape [", feed->file);
    for (int32_t i = 0; i < a->rank; ++i)
      fprintf(stderr, "%s%lld", i ? ", " : "", (long long)a->dims[i]);
    fprintf(stderr, "], but input '%s' takes %s\n", feed->key, want_text);
    return 0;
  }
  return 1;
}

/* ---- the command --------------------------------------------------------- */

typedef struct run_state {
  weft_model* model;
  const char* keys[kMaxArgs];
  weft_tensor* inputs[kMaxArgs];
  int32_t num_inputs;
  const char* fetch_keys[kMaxArgs];
  const char* fetch_files[kMaxArgs];
  weft_tensor* outputs[kMaxArgs];
  int32_t num_outputs;
} run_state;

static int fail_status(const char* what, weft_status* status) {
  fprintf(stderr, "weft run: %s%s%s\n", what ? what : "", what ? ": " : "",
          weft_status_message(status));
  weft_status_destroy(status);
  return 1;
}

/* Every fetch the user named, or every output of the signature. */
static int plan_fetches(const run_args* a, const char* signature,
                        run_state* s) {
  if (a->num_fetches > 0) {
    for (int32_t i = 0; i < a->num_fetches; ++i) {
      weft_output o;
      if (!find_key(s->model, signature, 1, a->fetches[i].key, &o)) return 0;
      s->fetch_keys[i] = a->fetches[i].key;
      s->fetch_files[i] = a->fetches[i].file;
    }
    s->num_outputs = a->num_fetches;
    return 1;
  }
  int32_t count = weft_model_signature_size(s->model, signature, 1);
  if (count > kMaxArgs) {
    fprintf(stderr, "weft run: the signature has %d outputs; name at most "
            "%d with --fetch\n", count, kMaxArgs);
    return 0;
  }
  for (int32_t i = 0; i < count; ++i) {
    weft_output o;
    weft_status* st = weft_model_signature_entry(s->model, signature, 1, i,
                                                 &s->fetch_keys[i], &o);
    if (st != NULL) return !fail_status(NULL, st);
    s->fetch_files[i] = NULL;
  }
  s->num_outputs = count;
  return 1;
}

static int feed_all(const run_args* a, const char* signature, run_state* s) {
  weft_output inputs[kMaxArgs];
  for (int32_t f = 0; f < a->num_feeds; ++f)
    if (!find_key(s->model, signature, 0, a->feeds[f].key, &inputs[f]))
      return 0;
  /* Every input needs a feed: say which is missing before reading files. */
  int32_t count = weft_model_signature_size(s->model, signature, 0);
  for (int32_t i = 0; i < count; ++i) {
    const char* key = NULL;
    weft_output o;
    weft_status* st =
        weft_model_signature_entry(s->model, signature, 0, i, &key, &o);
    if (st != NULL) return !fail_status(NULL, st);
    int fed = 0;
    for (int32_t f = 0; f < a->num_feeds && !fed; ++f)
      fed = strcmp(a->feeds[f].key, key) == 0;
    if (!fed) {
      fprintf(stderr, "weft run: input '%s' is not fed (--feed %s=FILE.npy)"
              "\n", key, key);
      return 0;
    }
  }
  for (int32_t f = 0; f < a->num_feeds; ++f) {
    weft_output input = inputs[f];
    npy_array array;
    char err[512];
    if (npy_read(a->feeds[f].file, &array, err, sizeof err) != 0) {
      fprintf(stderr, "weft run: %s\n", err);
      return 0;
    }
    if (!check_feed(&a->feeds[f], input, &array)) {
      npy_free(&array);
      return 0;
    }
    weft_status* st = npy_to_tensor(&array, &s->inputs[s->num_inputs]);
    if (st != NULL) {
      npy_free(&array);
      return !fail_status(a->feeds[f].file, st);
    }
    s->keys[s->num_inputs++] = a->feeds[f].key;
  }
  return 1;
}

static int run_and_report(run_args* a) {
  run_state s;
  memset(&s, 0, sizeof s);
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = a->devices;
  weft_status* st = model_open_load(&a->model, &options, &s.model);
  if (st != NULL) return fail_status(NULL, st);
  int rc = 1;
  const char* signature = model_open_signature(&a->model, "run", s.model);
  if (signature != NULL && plan_fetches(a, signature, &s) &&
      feed_all(a, signature, &s)) {
    st = weft_model_run(s.model, signature, s.keys,
                        (const weft_tensor* const*)s.inputs, s.num_inputs,
                        s.fetch_keys, s.outputs, s.num_outputs);
    rc = st != NULL ? fail_status(NULL, st) : 0;
  }
  for (int32_t i = 0; rc == 0 && i < s.num_outputs; ++i) {
    if (s.fetch_files[i] == NULL) {
      print_tensor(s.fetch_keys[i], s.outputs[i]);
      continue;
    }
    char err[512];
    if (npy_write_tensor(s.fetch_files[i], s.outputs[i], err, sizeof err)) {
      fprintf(stderr, "weft run: %s\n", err);
      rc = 1;
      break;
    }
    printf("%s: %s ", s.fetch_keys[i],
           weft_dtype_name(weft_tensor_dtype(s.outputs[i])));
    print_dims(s.outputs[i]);
    printf(" -> %s\n", s.fetch_files[i]);
  }
  for (int32_t i = 0; i < s.num_inputs; ++i) weft_tensor_destroy(s.inputs[i]);
  for (int32_t i = 0; i < s.num_outputs; ++i)
    weft_tensor_destroy(s.outputs[i]);
  weft_model_destroy(s.model);
  return rc;
}

int weft_command_run(int argc, char** argv) {
  run_args* a = calloc(1, sizeof *a);
  if (a == NULL) {
    fprintf(stderr, "weft run: out of memory\n");
    return 1;
  }
  int rc = parse_args(argc, argv, a) ? run_and_report(a) : EXIT_USAGE;
  for (int32_t i = 0; i < a->num_copies; ++i) free(a->copies[i]);
  free(a);
  return rc;
}
