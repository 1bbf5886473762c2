/* weft conformance: each op x dtype a plugin registers, against the CPU
 * plugin (or, for ops it defines, by shape function and gradient), in the
 * cases of tools/conformance_recipes.c.  See tools/conformance.c. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/conformance.h"
#include "tools/conformance_recipes.h"
#include "tools/random.h"

/* MAX_IN: ApplyAdam's ten inputs. */
enum { MAX_IN = 10, MAX_OUT = 8, MAX_ATTRS = 4, MAX_CASES = 8 };

/* ---- Seeded random numbers --------------------------------------------- */

static uint64_t seed_of(const char* text, uint64_t salt) {
  uint64_t h = 1469598103934665603u ^ salt;
  for (const unsigned char* c = (const unsigned char*)text; *c; ++c)
    h = (h ^ *c) * 1099511628211u;
  return h;
}

/* ---- Element access for every dtype ------------------------------------ */

static uint16_t float_to_half(float value) {
  uint32_t x;
  memcpy(&x, &value, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t biased = (int32_t)((x >> 23) & 0xff);
  uint32_t mantissa = x & 0x7fffffu;
  if (biased == 0xff) return (uint16_t)(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  int32_t e = biased - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mantissa |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = mantissa >> shift, rest = mantissa & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) ++h;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
  return (uint16_t)(sign | h);
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (e == 0) return sign * ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * ldexp(m + 1024, e - 25);
}

static int is_float(weft_dtype t) {
  return t == WEFT_FLOAT32 || t == WEFT_FLOAT64 || t == WEFT_FLOAT16 ||
         t == WEFT_BFLOAT16;
}

static int is_unsigned(weft_dtype t) {
  return t == WEFT_UINT8 || t == WEFT_UINT16 || t == WEFT_UINT32 ||
         t == WEFT_UINT64 || t == WEFT_BOOL;
}

void store(weft_dtype t, void* data, int64_t i, double v) {
  switch (t) {
    case WEFT_FLOAT32: ((float*)data)[i] = (float)v; break;
    case WEFT_FLOAT64: ((double*)data)[i] = v; break;
    case WEFT_INT32: ((int32_t*)data)[i] = (int32_t)v; break;
    case WEFT_INT64: ((int64_t*)data)[i] = (int64_t)v; break;
    case WEFT_UINT8: ((uint8_t*)data)[i] = (uint8_t)v; break;
    case WEFT_BOOL: ((uint8_t*)data)[i] = v != 0; break;
    case WEFT_INT8: ((int8_t*)data)[i] = (int8_t)v; break;
    case WEFT_INT16: ((int16_t*)data)[i] = (int16_t)v; break;
    case WEFT_UINT16: ((uint16_t*)data)[i] = (uint16_t)v; break;
    case WEFT_UINT32: ((uint32_t*)data)[i] = (uint32_t)v; break;
    case WEFT_UINT64: ((uint64_t*)data)[i] = (uint64_t)v; break;
    case WEFT_FLOAT16: ((uint16_t*)data)[i] = float_to_half((float)v); break;
    case WEFT_BFLOAT16: {
      float f = (float)v;
      uint32_t x;
      memcpy(&x, &f, sizeof x);
      ((uint16_t*)data)[i] = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
      break;
    }
    default: break;
  }
}

double load(weft_dtype t, const void* data, int64_t i) {
  switch (t) {
    case WEFT_FLOAT32: return ((const float*)data)[i];
    case WEFT_FLOAT64: return ((const double*)data)[i];
    case WEFT_INT32: return ((const int32_t*)data)[i];
    case WEFT_INT64: return (double)((const int64_t*)data)[i];
    case WEFT_UINT8: case WEFT_BOOL: return ((const uint8_t*)data)[i];
    case WEFT_INT8: return ((const int8_t*)data)[i];
    case WEFT_INT16: return ((const int16_t*)data)[i];
    case WEFT_UINT16: return ((const uint16_t*)data)[i];
    case WEFT_UINT32: return ((const uint32_t*)data)[i];
    case WEFT_UINT64: return (double)((const uint64_t*)data)[i];
    case WEFT_FLOAT16: return half_to_double(((const uint16_t*)data)[i]);
    case WEFT_BFLOAT16: {
      uint32_t x = (uint32_t)((const uint16_t*)data)[i] << 16;
      float f;
      memcpy(&f, &x, sizeof f);
      return f;
    }
    default: return 0;
  }
}

static const weft_dtype kAllDtypes[] = {
    WEFT_FLOAT32, WEFT_FLOAT64, WEFT_INT32,  WEFT_INT64, WEFT_UINT8,
    WEFT_BOOL,    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_INT8, WEFT_INT16,
    WEFT_UINT16,  WEFT_UINT32,  WEFT_UINT64};
enum { ALL_DTYPES = sizeof kAllDtypes / sizeof kAllDtypes[0] };

/* ---- Cases, parsed from a recipe's text -------------------------------- */

typedef enum generator {
  GEN_RANGE,
  GEN_NONZERO,
  GEN_INDEX,
  GEN_PROB,
  GEN_NONNEGATIVE,
  GEN_VALUE
} generator;

typedef struct input_spec {
  weft_dtype dtype;
  int32_t rank;
  int64_t dims[4];
  generator gen;
  int64_t bound; /* GEN_INDEX: [0, bound) */
  double value;  /* GEN_VALUE */
  int in_list;
  int variable;  /* taken by reference: a variable holding the values */
} input_spec;

typedef struct attr_spec {
  char kind;
  char name[32];
  int64_t values[4];
  int32_t count;
  double real;   /* f */
  char text[16]; /* s */
} attr_spec;

typedef struct test_case {
  char label[32];
  input_spec in[MAX_IN];
  int num_in;
  attr_spec attrs[MAX_ATTRS];
  int num_attrs;
} test_case;

static int parse_ints(const char* text, int64_t* out, int max) {
  int n = 0;
  const char* p = text;
  while (*p && *p != ']' && n < max) {
    char* end = NULL;
    out[n++] = strtoll(p, &end, 10);
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* Parses recipe text into cases; `num_inputs` is used for '*' (the
 * same-shape recipe), `t` and `u` are the row's dtypes. */
static int parse_cases(const recipe* r, weft_dtype t, weft_dtype u,
                       int num_inputs, test_case* cases) {
  static const int64_t kStarDims[][2] = {{3, 4}, {0, 4}, {256, 256}};
  int count = 0;
  char text[2048];
  snprintf(text, sizeof text, "%s", r->cases);
  char* save_case = NULL;
  for (char* c = strtok_r(text, "|", &save_case); c && count < MAX_CASES;
       c = strtok_r(NULL, "|", &save_case)) {
    test_case* tc = &cases[count];
    memset(tc, 0, sizeof *tc);
    while (*c == ' ') ++c;
    char* colon = strchr(c, ':');
    if (colon == NULL) continue;
    snprintf(tc->label, sizeof tc->label, "%.*s", (int)(colon - c), c);
    int in_list = 0;
    char* save_token = NULL;
    for (char* tok = strtok_r(colon + 1, " ", &save_token); tok;
         tok = strtok_r(NULL, " ", &save_token)) {
      if (strcmp(tok, "{") == 0 || strcmp(tok, "}") == 0) {
        in_list = tok[0] == '{';
      } else if (strcmp(tok, "*") == 0) {
        for (int i = 0; i < num_inputs && i < MAX_IN; ++i) {
          input_spec* s = &tc->in[tc->num_in++];
          s->dtype = t;
          s->rank = 2;
          s->dims[0] = kStarDims[count % 3][0];
          s->dims[1] = kStarDims[count % 3][1];
        }
      } else if (tok[0] && tok[1] == '.' && strchr(tok, '=') != NULL &&
                 tc->num_attrs < MAX_ATTRS) {
        attr_spec* a = &tc->attrs[tc->num_attrs++];
        a->kind = tok[0];
        char* eq = strchr(tok, '=');
        snprintf(a->name, sizeof a->name, "%.*s", (int)(eq - tok - 2),
                 tok + 2);
        if (a->kind == 'd') {
          a->values[0] = strcmp(eq + 1, "T") == 0 ? t : u;
        } else if (a->kind == 's') {
          snprintf(a->text, sizeof a->text, "%s", eq + 1);
        } else if (a->kind == 'f') {
          a->real = strtod(eq + 1, NULL);
        } else if (eq[1] == '[') {
          a->count = parse_ints(eq + 2, a->values, 4);
        } else {
          a->values[0] = strtoll(eq + 1, NULL, 10);
        }
      } else if (tc->num_in < MAX_IN) {
        input_spec* s = &tc->in[tc->num_in++];
        char* bracket = strchr(tok, '[');
        if (bracket == NULL) continue;
        *bracket = '\0';
        s->dtype = strcmp(tok, "T") == 0      ? t
                   : strcmp(tok, "i32") == 0  ? WEFT_INT32
                   : strcmp(tok, "i64") == 0  ? WEFT_INT64
                   : strcmp(tok, "u8") == 0   ? WEFT_UINT8
                                              : WEFT_BOOL;
        s->rank = parse_ints(bracket + 1, s->dims, 4);
        char* suffix = strchr(bracket + 1, ']') + 1;
        s->in_list = in_list;
        if (*suffix == '&') {
          s->variable = 1;
          ++suffix;
        }
        if (*suffix == '<') {
          s->gen = GEN_INDEX;
          s->bound = strtoll(suffix + 1, NULL, 10);
        } else if (*suffix == '!') {
          s->gen = GEN_NONZERO;
        } else if (*suffix == 'p') {
          s->gen = GEN_PROB;
        } else if (*suffix == '+') {
          s->gen = GEN_NONNEGATIVE;
        } else if (*suffix == '=') {
          s->gen = GEN_VALUE;
          s->value = strtod(suffix + 1, NULL);
        }
      }
    }
    ++count;
  }
  return count;
}

static int64_t element_count(const int64_t* dims, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

/* A tensor of random values as the spec and recipe say. */
static weft_status* make_input(const input_spec* s, const recipe* r,
                               uint64_t* rng, weft_tensor** out) {
  weft_status* status = weft_tensor_create(s->dtype, s->dims, s->rank, out);
  if (status != NULL) return status;
  void* data = weft_tensor_data(*out);
  int64_t n = element_count(s->dims, s->rank);
  double lo = r->lo, hi = r->hi;
  int whole = r->integral || !is_float(s->dtype);
  if (!is_float(s->dtype) && is_unsigned(s->dtype) && lo < 0) lo = 0;
  if (s->dtype == WEFT_BOOL) hi = lo + 1;
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (s->gen == GEN_INDEX) {
      v = (double)(weft_tool_random(rng) % (uint64_t)s->bound);
    } else if (s->gen == GEN_NONZERO) {
      /* Divisors: magnitude 0.5..2 (floats) or 1..9 (integers). */
      v = whole ? (double)(1 + weft_tool_random(rng) % 9) : 0.5 + 1.5 * weft_tool_uniform(rng);
      if (!is_unsigned(s->dtype) && (weft_tool_random(rng) & 1)) v = -v;
    } else if (s->gen == GEN_PROB) {
      v = weft_tool_uniform(rng) + 0.01;
    } else if (s->gen == GEN_VALUE) {
      v = s->value;
    } else if (s->gen == GEN_NONNEGATIVE) {
      v = (hi > 0 ? hi : 0) * weft_tool_uniform(rng);
    } else if (whole) {
      int64_t span = (int64_t)floor(hi) - (int64_t)ceil(lo) + 1;
      v = (double)((int64_t)ceil(lo) + (int64_t)(weft_tool_random(rng) % (uint64_t)span));
    } else {
      v = lo + (hi - lo) * weft_tool_uniform(rng);
    }
    store(s->dtype, data, i, v);
  }
  if (s->gen == GEN_PROB && s->rank > 0 && s->dims[s->rank - 1] > 0) {
    int64_t width = s->dims[s->rank - 1];
    for (int64_t row = 0; row < n / width; ++row) {
      double total = 0;
      for (int64_t k = 0; k < width; ++k)
        total += load(s->dtype, data, row * width + k);
      for (int64_t k = 0; k < width; ++k)
        store(s->dtype, data, row * width + k,
              load(s->dtype, data, row * width + k) / total);
    }
  }
  return NULL;
}

/* ---- Building and running one case -------------------------------------- */

typedef struct built_case {
  weft_graph* graph;
  weft_output feeds[MAX_IN];
  weft_tensor* values[MAX_IN];
  int num_feeds;
  weft_node* nodes[2]; /* 0: under test, 1: reference (or NULL) */
  /* Each node's variables (its variable inputs, in order) and the Assign
   * nodes that write their initial values, the feeds. */
  weft_output variables[2][MAX_IN];
  weft_node* initializers[2][MAX_IN];
  int num_variables;
} built_case;

static const char* const kNodeNames[2] = {"under_test", "reference"};

static void release_case(built_case* b) {
  for (int i = 0; i < b->num_feeds; ++i) weft_tensor_destroy(b->values[i]);
  weft_graph_destroy(b->graph);
  memset(b, 0, sizeof *b);
}

static weft_status* add_op_node(weft_graph* g, const char* op,
                                const char* name, const char* device,
                                const test_case* tc, const weft_output* xs,
                                weft_node** out) {
  weft_op_builder* b = weft_op_begin(g, op, name);
  weft_output list[MAX_IN];
  int list_count = 0;
  for (int i = 0; i < tc->num_in; ++i) {
    if (tc->in[i].in_list) {
      list[list_count++] = xs[i];
      if (i + 1 == tc->num_in || !tc->in[i + 1].in_list)
        weft_op_add_input_list(b, list, list_count);
    } else {
      weft_op_add_input(b, xs[i]);
    }
  }
  for (int i = 0; i < tc->num_attrs; ++i) {
    const attr_spec* a = &tc->attrs[i];
    switch (a->kind) {
      case 'i': weft_op_set_attr_int(b, a->name, a->values[0]); break;
      case 'b': weft_op_set_attr_bool(b, a->name, (int32_t)a->values[0]); break;
      case 'f': weft_op_set_attr_float(b, a->name, a->real); break;
      case 's': weft_op_set_attr_string(b, a->name, a->text); break;
      case 'd':
        weft_op_set_attr_dtype(b, a->name, (weft_dtype)a->values[0]);
        break;
      default:
        weft_op_set_attr_int_list(b, a->name, a->values, a->count);
        break;
    }
  }
  weft_op_set_device(b, device);
  return weft_op_finish(b, out);
}

/* The inputs of node `side` (on `device`): the feeds, but for each
 * variable input a variable of that node's on the same device, which
 * the feed initializes. */
static weft_status* node_inputs(built_case* b, const test_case* tc, int side,
                                const char* device, weft_output* xs) {
  int k = 0;
  for (int i = 0; i < tc->num_in; ++i) {
    xs[i] = b->feeds[i];
    if (!tc->in[i].variable) continue;
    char name[48];
    snprintf(name, sizeof name, "%s_input%d", kNodeNames[side], i);
    weft_graph_set_device(b->graph, device);
    weft_status* status = weft_graph_variable(
        b->graph, name, b->feeds[i], &xs[i], &b->initializers[side][k]);
    weft_graph_set_device(b->graph, NULL);
    if (status != NULL) return status;
    b->variables[side][k++] = xs[i];
  }
  b->num_variables = k;
  return NULL;
}

/* Builds placeholders, random feeds, and the node under test on `device`
 * (and the reference on the CPU unless `reference` is 0).  With `dynamic`
 * the placeholders have unknown rank, so that no shape is known before the
 * run: a kernel with compute_described (interface 1.8) then gets its
 * `compute` call, which hosts older than 1.8 and graphs of unknown shapes
 * make. */
static weft_status* build_case_shaped(const char* op, const test_case* tc,
                                      const recipe* r, uint64_t seed,
                                      const char* device, int reference,
                                      int dynamic, built_case* b) {
  memset(b, 0, sizeof *b);
  weft_status* status = weft_graph_create(&b->graph);
  if (status != NULL) return status;
  uint64_t rng = seed;
  for (int i = 0; i < tc->num_in; ++i) {
    char name[32];
    snprintf(name, sizeof name, "input%d", i);
    status = weft_graph_placeholder(b->graph, name, tc->in[i].dtype,
                                    dynamic ? NULL : tc->in[i].dims,
                                    dynamic ? -1 : tc->in[i].rank,
                                    &b->feeds[i]);
    if (status == NULL) status = make_input(&tc->in[i], r, &rng, &b->values[i]);
    if (status != NULL) return status;
    b->num_feeds = i + 1;
  }
  for (int side = 0; side < (reference ? 2 : 1) && status == NULL; ++side) {
    const char* where = side ? "/device:CPU:0" : device;
    weft_output xs[MAX_IN];
    status = node_inputs(b, tc, side, where, xs);
    if (status == NULL)
      status = add_op_node(b->graph, op, kNodeNames[side], where, tc, xs,
                           &b->nodes[side]);
  }
  return status;
}

static weft_status* build_case(const char* op, const test_case* tc,
                               const recipe* r, uint64_t seed,
                               const char* device, int reference,
                               built_case* b) {
  return build_case_shaped(op, tc, r, seed, device, reference, 0, b);
}

weft_status* open_session(weft_graph* graph, const target* t,
                          weft_session** out) {
  char devices[256];
  snprintf(devices, sizeof devices, "/device:CPU:0%s%s%s%s",
           t->device[0] ? "," : "", t->device,
           t->second_device[0] ? "," : "", t->second_device);
  weft_session_options options;
  weft_session_options_init(&options);
  options.devices = devices;
  options.placement = WEFT_PLACEMENT_STRICT;
  options.optimizations = 0; /* no CSE: the two nodes stay two */
  options.inter_op_threads = 1;
  options.intra_op_threads = 1;
  return weft_session_create(graph, &options, out);
}

typedef struct compare_result {
  int ok;
  double max_err, tolerance;
  int64_t element;
  char why[200]; /* shape or dtype mismatch */
} compare_result;

static void tolerance_for(tolerance_class cls, weft_dtype t, double k,
                          double* atol, double* rtol) {
  *atol = 0;
  *rtol = 0;
  if (!is_float(t)) return; /* integers and bool: exact */
  if (t == WEFT_FLOAT16 || t == WEFT_BFLOAT16) {
    *rtol = t == WEFT_FLOAT16 ? 2e-3 : 1.6e-2;
    *atol = (cls == TOL_ACCUMULATE ? k : 1.0) * *rtol * 0.1;
    return;
  }
  int f64 = t == WEFT_FLOAT64;
  switch (cls) {
    case TOL_EXACT:
      *rtol = f64 ? 1e-14 : 1e-6;
      *atol = f64 ? 1e-15 : 1e-7;
      break;
    case TOL_TRANSC:
      *rtol = f64 ? 1e-12 : 2e-5;
      *atol = f64 ? 1e-13 : 1e-6;
      break;
    case TOL_ACCUMULATE:
      *rtol = f64 ? 1e-11 : 1e-4;
      *atol = (f64 ? 1e-13 : 1e-5) * k;
      break;
  }
}

void format_dims(const weft_tensor* t, char* out, size_t size) {
  size_t used = (size_t)snprintf(out, size, "[");
  for (int32_t i = 0; i < weft_tensor_rank(t) && used < size; ++i)
    used += (size_t)snprintf(out + used, size - used, i ? ",%lld" : "%lld",
                             (long long)weft_tensor_dim(t, i));
  if (used < size) snprintf(out + used, size - used, "]");
}

static void compare(const weft_tensor* got, const weft_tensor* want,
                    tolerance_class cls, double k, compare_result* r) {
  memset(r, 0, sizeof *r);
  r->ok = 1;
  r->element = -1;
  weft_dtype t = weft_tensor_dtype(want);
  char gs[96], ws[96];
  format_dims(got, gs, sizeof gs);
  format_dims(want, ws, sizeof ws);
  if (weft_tensor_dtype(got) != t || strcmp(gs, ws) != 0) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "output is %s%.60s, the CPU's %s%.60s",
             weft_dtype_name(weft_tensor_dtype(got)), gs, weft_dtype_name(t),
             ws);
    return;
  }
  double atol, rtol;
  tolerance_for(cls, t, k, &atol, &rtol);
  const void* a = weft_tensor_data(got);
  const void* b = weft_tensor_data(want);
  int64_t n = weft_tensor_element_count(want);
  double worst_excess = -1;
  int64_t worst = -1;
  for (int64_t i = 0; i < n; ++i) {
    double x = load(t, a, i), y = load(t, b, i);
    if (isnan(x) && isnan(y)) continue;
    double err = x == y ? 0 : fabs(x - y);
    if (isnan(err)) err = INFINITY;
    double tol = atol + rtol * fabs(y);
    if (err > r->max_err || (r->element < 0 && err > 0)) {
      r->max_err = err;
      r->element = i;
      r->tolerance = tol;
    }
    if (err > tol && err - tol > worst_excess) {
      worst_excess = err - tol;
      worst = i;
      r->ok = 0;
    }
  }
  if (!r->ok) {
    /* Report the element that broke its tolerance by the most (the
     * largest error may be within a larger tolerance). */
    r->element = worst;
    r->max_err = fabs(load(t, a, worst) - load(t, b, worst));
    if (isnan(r->max_err)) r->max_err = INFINITY;
    r->tolerance = atol + rtol * fabs(load(t, b, worst));
  }
}

/* How many terms each output element sums, for the accumulate class. */
static double accumulation(const char* op, const test_case* tc,
                           const weft_tensor* out) {
  int64_t in0 = element_count(tc->in[0].dims, tc->in[0].rank);
  if (strcmp(op, "MatMul") == 0)
    return tc->in[0].rank == 2 ? (double)(tc->in[0].dims[0] + tc->in[0].dims[1]) : 1;
  /* The convolutions sum a window (times channels) per element, whatever
   * the sizes of input and output. */
  if (tc->num_in >= 2 && tc->in[1].rank == 4) {
    const int64_t* f = tc->in[strcmp(op, "Conv2DBackpropInput") == 0 ? 0 : 1].dims;
    if (strcmp(op, "Conv2D") == 0 || strcmp(op, "FusedConv2D") == 0)
      return (double)(f[0] * f[1] * f[2]) + 1;
    if (strcmp(op, "Conv2DBackpropInput") == 0)
      return (double)(f[0] * f[1] * f[3]) + 1;
    if (strcmp(op, "Conv2DBackpropFilter") == 0)
      return (double)(f[0] * f[1] * f[2]) + 1;
  }
  int64_t n = weft_tensor_element_count(out);
  double k = n > 0 ? (double)in0 / (double)n : 1;
  return k < 1 ? 1 : k;
}

typedef struct row_state {
  int cases_run, cases_refused, cases_skipped;
  int failed;
  char refused[160];
  char skipped[200];
  row* fail_row;
} row_state;

static void note(char* buffer, size_t size, const char* label) {
  size_t used = strlen(buffer);
  snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", label);
}

/* Runs fetches of `node` (all its outputs); out must hold MAX_OUT. */
static weft_status* run_node(weft_session* s, built_case* b, weft_node* node,
                             weft_tensor** out, int* num_out,
                             weft_run_metadata* md) {
  weft_output fetches[MAX_OUT];
  int n = weft_node_num_outputs(node);
  if (n > MAX_OUT) n = MAX_OUT;
  for (int i = 0; i < n; ++i) fetches[i] = (weft_output){node, i};
  *num_out = n;
  return weft_session_run_with_metadata(s, b->feeds, b->values, b->num_feeds,
                                        fetches, n, NULL, 0, out, md);
}

static void destroy_all(weft_tensor** t, int n) {
  for (int i = 0; i < n; ++i) weft_tensor_destroy(t[i]);
}

/* The case could not be built, or the CPU refused it: a limit of the
 * recipe, not of the plugin. */
static void skip_case(row_state* st, const test_case* tc, weft_status* status) {
  ++st->cases_skipped;
  note(st->skipped, sizeof st->skipped, tc->label);
  weft_status_destroy(status);
}

/* The node under test failed where the CPU's ran: refused
 * (UNIMPLEMENTED), or a failure.  `where`: "case 'normal'". */
static void plugin_failed(row_state* st, const test_case* tc,
                          const char* where, weft_status* status, row* fail) {
  if (weft_status_code(status) == WEFT_UNIMPLEMENTED) {
    ++st->cases_refused;
    note(st->refused, sizeof st->refused, tc->label);
    weft_status_destroy(status);
    return;
  }
  char text[600];
  st->failed = 1;
  snprintf(fail->detail, sizeof fail->detail,
           "%.79s: the CPU ran it, the plugin's kernel failed: %.260s", where,
           status_text(status, text, sizeof text));
}

/* Whether the node under test ran on `device`; a failure otherwise. */
static int ran_on_device(const weft_run_metadata* md, const char* device,
                         const char* where, row_state* st, row* fail) {
  const char* ran_on = weft_run_metadata_device_of(md, kNodeNames[0]);
  if (ran_on != NULL && strcmp(ran_on, device) == 0) return 1;
  st->failed = 1;
  snprintf(fail->detail, sizeof fail->detail, "%s: the node ran on %s, not %s",
           where, ran_on ? ran_on : "no device", device);
  return 0;
}

/* Compares `got` with the CPU's `want`; a failure, with the largest
 * error, when they differ.  `what`: "output 0". */
static void expect_close(const weft_tensor* got, const weft_tensor* want,
                         tolerance_class cls, double k, const char* where,
                         const char* what, row_state* st, row* fail) {
  compare_result c;
  compare(got, want, cls, k, &c);
  if (c.ok) return;
  st->failed = 1;
  if (c.why[0]) {
    snprintf(fail->detail, sizeof fail->detail, "%s, %s: %s", where, what,
             c.why);
    return;
  }
  fail->has_error = 1;
  fail->max_err = c.max_err;
  fail->element = c.element;
  fail->tolerance = c.tolerance;
  snprintf(fail->detail, sizeof fail->detail,
           "max abs err %.3g at element %lld, tolerance %.3g; %s, %s: %.9g, "
           "CPU %.9g",
           c.max_err, (long long)c.element, c.tolerance, where, what,
           load(weft_tensor_dtype(got), weft_tensor_data(got), c.element),
           load(weft_tensor_dtype(want), weft_tensor_data(want), c.element));
}

/* One case against the CPU, with its shapes known at plan time, or with
 * `dynamic` only at run time (then not counted again, and a CPU that
 * cannot run it so is no failure of the plugin).  Updates `st`; a failure
 * fills `fail`. */
static void run_shaped_against_cpu(const target* t, const char* op,
                                   const char* device, const test_case* tc,
                                   const recipe* r, uint64_t seed,
                                   int dynamic, row_state* st, row* fail) {
  built_case b;
  char where[80];
  snprintf(where, sizeof where, "case '%s'%s", tc->label,
           dynamic ? " (shapes known only at run time)" : "");
  weft_status* status =
      build_case_shaped(op, tc, r, seed, device, 1, dynamic, &b);
  if (status != NULL) {
    if (dynamic) weft_status_destroy(status);
    else skip_case(st, tc, status);
    release_case(&b);
    return;
  }
  weft_session* s = NULL;
  weft_run_metadata* md = weft_run_metadata_create();
  weft_tensor *want[MAX_OUT] = {0}, *got[MAX_OUT] = {0};
  int n_want = 0, n_got = 0;
  status = open_session(b.graph, t, &s);
  if (status == NULL) status = run_node(s, &b, b.nodes[1], want, &n_want, NULL);
  if (status != NULL) {
    if (dynamic) weft_status_destroy(status);
    else skip_case(st, tc, status);
    goto done;
  }
  if (!dynamic) ++st->cases_run;
  status = run_node(s, &b, b.nodes[0], got, &n_got, md);
  if (status != NULL && dynamic &&
      weft_status_code(status) == WEFT_UNIMPLEMENTED) {
    /* It ran with the same shapes known at plan time. */
    char text[600];
    st->failed = 1;
    snprintf(fail->detail, sizeof fail->detail,
             "%.80s: refused what the kernel ran with the shapes known at "
             "plan time: %.240s", where, status_text(status, text, sizeof text));
    goto done;
  }
  if (status != NULL) {
    plugin_failed(st, tc, where, status, fail);
    goto done;
  }
  if (!ran_on_device(md, device, where, st, fail)) goto done;
  for (int i = 0; i < n_got && !st->failed; ++i) {
    char what[32];
    snprintf(what, sizeof what, "output %d", i);
    expect_close(got[i], want[i], r->tol, accumulation(op, tc, want[i]),
                 where, what, st, fail);
  }
done:
  destroy_all(want, n_want);
  destroy_all(got, n_got);
  weft_run_metadata_destroy(md);
  weft_session_destroy(s);
  release_case(&b);
}

/* A case both ways: the kernel's compute_described (shapes known at plan
 * time), then its compute (shapes known only at run time), each against
 * the CPU.  A refused case is not run again. */
static void run_against_cpu(const target* t, const char* op,
                            const char* device, const test_case* tc,
                            const recipe* r, uint64_t seed, row_state* st,
                            row* fail) {
  const int refused = st->cases_refused, skipped = st->cases_skipped;
  run_shaped_against_cpu(t, op, device, tc, r, seed, 0, st, fail);
  if (!st->failed && st->cases_refused == refused &&
      st->cases_skipped == skipped)
    run_shaped_against_cpu(t, op, device, tc, r, seed, 1, st, fail);
}

/* ---- Updates: an optimizer's variables, step by step ------------------- */

/* Each step starts from the state the last one left, and the steps take
 * turns running the update as a target (as training does: the kernel may
 * write over its variables) and fetching it (then compared too), so a
 * kernel wrong on one of those paths only, or on state it wrote itself (a
 * stale copy of a variable), shows. */
enum { UPDATE_STEPS = 3 };

static int has_variables(const test_case* tc) {
  for (int i = 0; i < tc->num_in; ++i)
    if (tc->in[i].variable) return 1;
  return 0;
}

/* Writes the initial values (the feeds) into node `side`'s variables. */
static weft_status* initialize_variables(weft_session* s, built_case* b,
                                         int side) {
  return weft_session_run(s, b->feeds, b->values, b->num_feeds, NULL, 0,
                          b->initializers[side], b->num_variables, NULL);
}

/* Runs update node `side`, fetching its outputs into `out` (MAX_OUT), or,
 * with `out` NULL, as a target only, the way training runs it (so the
 * kernel may write over its variables). */
static weft_status* run_update(weft_session* s, built_case* b, int side,
                               weft_tensor** out, int* num_out,
                               weft_run_metadata* md) {
  *num_out = 0;
  if (out != NULL) return run_node(s, b, b->nodes[side], out, num_out, md);
  return weft_session_run_with_metadata(s, b->feeds, b->values, b->num_feeds,
                                        NULL, 0, &b->nodes[side], 1, NULL, md);
}

/* New values for the data inputs (the gradient), as each training step
 * brings; the variables keep the values the updates left. */
static weft_status* next_data(built_case* b, const test_case* tc,
                              const recipe* r, uint64_t* rng) {
  for (int i = 0; i < tc->num_in; ++i) {
    if (tc->in[i].variable) continue;
    weft_tensor_destroy(b->values[i]);
    b->values[i] = NULL;
    weft_status* status = make_input(&tc->in[i], r, rng, &b->values[i]);
    if (status != NULL) return status;
  }
  return NULL;
}

/* Step `step` (from 1) of an update case: both updates (the CPU's first,
 * unless step 1's already ran), their outputs compared on the even steps,
 * which fetch them, then both nodes' variables read back and compared.
 * 1 when the step agrees. */
static int update_step(weft_session* s, built_case* b, const test_case* tc,
                       const recipe* r, const char* device, int step,
                       uint64_t* rng, row_state* st, row* fail) {
  char where[48], what[48], text[600];
  snprintf(where, sizeof where, "case '%s', step %d", tc->label, step);
  weft_tensor *want[MAX_OUT] = {0}, *got[MAX_OUT] = {0};
  weft_tensor* read[2 * MAX_IN] = {0};
  int n_want = 0, n_got = 0, fetch = step % 2 == 0, agreed = 0;
  weft_run_metadata* md = weft_run_metadata_create();
  weft_status* status = NULL;
  if (step > 1) {
    status = next_data(b, tc, r, rng);
    if (status == NULL)
      status = run_update(s, b, 1, fetch ? want : NULL, &n_want, NULL);
    if (status != NULL) {
      st->failed = 1;
      snprintf(fail->detail, sizeof fail->detail,
               "%.47s: the CPU's update failed: %.300s", where,
               status_text(status, text, sizeof text));
      goto done;
    }
  }
  status = run_update(s, b, 0, fetch ? got : NULL, &n_got, md);
  if (status != NULL) {
    plugin_failed(st, tc, where, status, fail);
    goto done;
  }
  if (!ran_on_device(md, device, where, st, fail)) goto done;
  for (int i = 0; i < n_got && !st->failed; ++i) {
    snprintf(what, sizeof what, "output %d", i);
    expect_close(got[i], want[i], r->tol, 1, where, what, st, fail);
  }
  const int n = b->num_variables;
  weft_output variables[2 * MAX_IN];
  memcpy(variables, b->variables[0], sizeof(weft_output) * (size_t)n);
  memcpy(variables + n, b->variables[1], sizeof(weft_output) * (size_t)n);
  if (!st->failed)
    status = weft_session_run(s, NULL, NULL, 0, variables, 2 * n, NULL, 0,
                              read);
  if (status != NULL) {
    st->failed = 1;
    snprintf(fail->detail, sizeof fail->detail,
             "%.47s: reading the variables back failed: %.300s", where,
             status_text(status, text, sizeof text));
    goto done;
  }
  for (int i = 0, k = 0; i < tc->num_in && !st->failed; ++i) {
    if (!tc->in[i].variable) continue;
    snprintf(what, sizeof what, "the variable of input %d", i);
    expect_close(read[k], read[n + k], r->tol, 1, where, what, st, fail);
    ++k;
  }
  agreed = !st->failed;
done:
  destroy_all(want, n_want);
  destroy_all(got, n_got);
  destroy_all(read, 2 * b->num_variables);
  weft_run_metadata_destroy(md);
  return agreed;
}

/* One case of an update op against the CPU: each node updates variables
 * of its own, on its own device, initialized alike, UPDATE_STEPS times
 * with new data inputs each time.  Step 1's update and initial values
 * decide, on the CPU, whether the case applies. */
static void run_update_against_cpu(const target* t, const char* op,
                                   const char* device, const test_case* tc,
                                   const recipe* r, uint64_t seed,
                                   row_state* st, row* fail) {
  built_case b;
  weft_status* status = build_case(op, tc, r, seed, device, 1, &b);
  weft_session* s = NULL;
  int no_outputs = 0;
  if (status == NULL) status = open_session(b.graph, t, &s);
  if (status == NULL) status = initialize_variables(s, &b, 1);
  if (status == NULL) status = run_update(s, &b, 1, NULL, &no_outputs, NULL);
  if (status != NULL) {
    skip_case(st, tc, status);
    goto done;
  }
  ++st->cases_run;
  status = initialize_variables(s, &b, 0);
  if (status != NULL) {
    char text[600];
    st->failed = 1;
    snprintf(fail->detail, sizeof fail->detail,
             "case '%s': writing the initial values into the variables on "
             "%s failed: %.300s", tc->label, device,
             status_text(status, text, sizeof text));
    goto done;
  }
  uint64_t rng = seed_of("next steps", seed);
  for (int step = 1; step <= UPDATE_STEPS; ++step)
    if (!update_step(s, &b, tc, r, device, step, &rng, st, fail)) break;
done:
  weft_session_destroy(s);
  release_case(&b);
}

/* ---- Checks without a reference: shape function and gradient ---------- */

static int shapes_agree(weft_output out, const weft_tensor* value,
                        char* why, size_t size) {
  int64_t dims[WEFT_MAX_RANK];
  int32_t rank = -1;
  weft_status* status = weft_output_shape(out, dims, WEFT_MAX_RANK, &rank);
  if (status != NULL) {
    status_text(status, why, size);
    return 0;
  }
  if (rank < 0) return 1;
  int ok = rank == weft_tensor_rank(value);
  for (int32_t i = 0; ok && i < rank; ++i)
    ok = dims[i] < 0 || dims[i] == weft_tensor_dim(value, i);
  if (!ok) {
    char got[96];
    format_dims(value, got, sizeof got);
    size_t used = (size_t)snprintf(why, size, "the shape function says [");
    for (int32_t i = 0; i < rank && used < size; ++i)
      used += (size_t)snprintf(why + used, size - used, i ? ",%lld" : "%lld",
                               (long long)dims[i]);
    if (used < size)
      snprintf(why + used, size - used, "], the kernel produced %s", got);
  }
  return ok;
}

static double weighted_sum(const weft_tensor* y, const weft_tensor* w) {
  double total = 0;
  weft_dtype t = weft_tensor_dtype(y);
  for (int64_t i = 0; i < weft_tensor_element_count(y); ++i)
    total += load(t, weft_tensor_data(y), i) * load(t, weft_tensor_data(w), i);
  return total;
}

/* d(sum(w * op(x...)))/dx against central differences, in the row's dtype
 * (float64 recommended); 1 when it agrees, 0 with `why` otherwise. */
static int check_gradient(const target* t, const char* op, const char* device,
                          weft_dtype dtype, int num_inputs, char* why,
                          size_t size) {
  const recipe* r = &kSameShapeRecipe;
  test_case tc;
  memset(&tc, 0, sizeof tc);
  snprintf(tc.label, sizeof tc.label, "gradient");
  tc.num_in = num_inputs > MAX_IN ? MAX_IN : num_inputs;
  for (int i = 0; i < tc.num_in; ++i)
    tc.in[i] = (input_spec){.dtype = dtype, .rank = 2, .dims = {2, 3}};
  built_case b;
  char text[400];
  weft_status* status =
      build_case(op, &tc, r, seed_of(op, 7), device, 0, &b);
  weft_output y = {b.nodes[0], 0}, w, grads[MAX_IN];
  int64_t ydims[WEFT_MAX_RANK];
  int32_t yrank = -1;
  if (status == NULL)
    status = weft_output_shape(y, ydims, WEFT_MAX_RANK, &yrank);
  if (status == NULL && yrank < 0)
    status = weft_status_create(WEFT_UNIMPLEMENTED,
                                "the output's static shape is unknown");
  if (status == NULL)
    status = weft_graph_placeholder(b.graph, "w", dtype, ydims, yrank, &w);
  if (status == NULL)
    status = weft_gradients(b.graph, &y, 1, b.feeds, tc.num_in, &w, grads);
  weft_session* s = NULL;
  if (status == NULL) status = open_session(b.graph, t, &s);
  weft_tensor* wv = NULL;
  input_spec ws = {.dtype = dtype, .rank = yrank};
  if (yrank > 0) memcpy(ws.dims, ydims, sizeof(int64_t) * (size_t)(yrank > 4 ? 4 : yrank));
  uint64_t rng = seed_of(op, 11);
  if (status == NULL) status = make_input(&ws, r, &rng, &wv);
  weft_output feeds[MAX_IN + 1];
  weft_tensor* values[MAX_IN + 1];
  for (int i = 0; i < tc.num_in; ++i) {
    feeds[i] = b.feeds[i];
    values[i] = b.values[i];
  }
  feeds[tc.num_in] = w;
  values[tc.num_in] = wv;
  weft_tensor* analytic[MAX_IN] = {0};
  int ok = 1;
  if (status == NULL)
    status = weft_session_run(s, feeds, values, tc.num_in + 1, grads,
                              tc.num_in, NULL, 0, analytic);
  const int f64 = dtype == WEFT_FLOAT64;
  const double h = f64 ? 1e-6 : 1e-2, atol = f64 ? 1e-7 : 1e-3,
               rtol = f64 ? 1e-5 : 1e-2;
  for (int i = 0; status == NULL && ok && i < tc.num_in; ++i) {
    void* x = weft_tensor_data(b.values[i]);
    for (int64_t e = 0; ok && e < weft_tensor_element_count(b.values[i]); ++e) {
      double saved = load(dtype, x, e), f[2];
      for (int side = 0; side < 2 && status == NULL; ++side) {
        store(dtype, x, e, saved + (side ? -h : h));
        weft_tensor* yv = NULL;
        status = weft_session_run(s, feeds, values, tc.num_in + 1, &y, 1,
                                  NULL, 0, &yv);
        if (status == NULL) f[side] = weighted_sum(yv, wv);
        weft_tensor_destroy(yv);
      }
      store(dtype, x, e, saved);
      if (status != NULL) break;
      double numeric = (f[0] - f[1]) / (2 * h);
      double symbolic = load(dtype, weft_tensor_data(analytic[i]), e);
      if (fabs(symbolic - numeric) > atol + rtol * fabs(numeric)) {
        ok = 0;
        snprintf(why, size,
                 "gradient of input %d, element %lld: %.9g, central "
                 "differences %.9g", i, (long long)e, symbolic, numeric);
      }
    }
  }
  if (status != NULL) {
    ok = 0;
    snprintf(why, size, "gradient check: %.360s",
             status_text(status, text, sizeof text));
  }
  destroy_all(analytic, tc.num_in);
  weft_tensor_destroy(wv);
  weft_session_destroy(s);
  release_case(&b);
  return ok;
}

/* An op with no reference kernel: runs the cases on the kernel's device,
 * checks the shapes, and the gradient when the op has one. */
static void check_without_reference(const target* t, const char* op,
                                    const char* device, weft_dtype dtype,
                                    const recipe* r, int num_inputs,
                                    row* out) {
  test_case cases[MAX_CASES];
  int n = parse_cases(r, dtype, WEFT_DTYPE_INVALID, num_inputs, cases);
  char why[400] = "";
  int ran = 0, failed = 0;
  for (int c = 0; c < n && !failed; ++c) {
    built_case b;
    weft_status* status = build_case(op, &cases[c], r,
                                     seed_of(op, (uint64_t)c), device, 0, &b);
    weft_session* s = NULL;
    weft_tensor* got[MAX_OUT] = {0};
    int n_got = 0;
    if (status == NULL) status = open_session(b.graph, t, &s);
    if (status == NULL) status = run_node(s, &b, b.nodes[0], got, &n_got, NULL);
    if (status != NULL) {
      failed = 1;
      char text[300];
      snprintf(why, sizeof why, "case '%.31s': %.300s", cases[c].label,
               status_text(status, text, sizeof text));
    }
    for (int i = 0; !failed && i < n_got; ++i) {
      if (!shapes_agree((weft_output){b.nodes[0], i}, got[i], why,
                        sizeof why))
        failed = 1;
    }
    ran += !failed;
    destroy_all(got, n_got);
    weft_session_destroy(s);
    release_case(&b);
  }
  int gradient = weft_op_gradient_status(op);
  if (!failed && gradient == 1 && is_float(dtype) &&
      dtype != WEFT_FLOAT16 && dtype != WEFT_BFLOAT16) {
    failed = !check_gradient(t, op, device, dtype, num_inputs, why,
                             sizeof why);
  }
  if (failed) {
    out->status = R_FAIL;
    snprintf(out->detail, sizeof out->detail, "no CPU reference; %s", why);
    return;
  }
  out->status = R_PASS;
  snprintf(out->detail, sizeof out->detail,
           "no CPU reference: shape function checked on %d case%s; %s", ran,
           ran == 1 ? "" : "s",
           gradient == 1 ? (is_float(dtype) && dtype != WEFT_FLOAT16 &&
                                    dtype != WEFT_BFLOAT16
                                ? "gradient checked against central "
                                  "differences"
                                : "gradient not checked in this dtype")
                         : "the op has no gradient to check");
}

/* ---- Kernels and rows ---------------------------------------------------- */

/* Whether kernel `kd` accepts `dtype` for type attribute `attr`. */
int kernel_accepts(const weft_kernel_description* kd, const char* attr,
                   weft_dtype dtype) {
  const int32_t* list = NULL;
  int32_t count = -1;
  if (kd->dtype_attr != NULL && strcmp(kd->dtype_attr, attr) == 0) {
    list = kd->dtypes;
    count = kd->num_dtypes;
  }
  for (int32_t c = 0; c < kd->num_type_constraints; ++c) {
    if (strcmp(kd->type_constraints[c].attr, attr) == 0) {
      list = kd->type_constraints[c].dtypes;
      count = kd->type_constraints[c].num_dtypes;
    }
  }
  if (count < 0) return 1; /* not constrained */
  for (int32_t i = 0; i < count; ++i)
    if (list[i] == (int32_t)dtype) return 1;
  return 0;
}

static const char* second_attr(const weft_kernel_description* kd) {
  return kd->num_type_constraints > 0 ? kd->type_constraints[0].attr : NULL;
}

int collect_kernels(const char* op, const char* plugin, op_kernels* k) {
  memset(k, 0, sizeof *k);
  int32_t n = weft_kernel_count(op);
  for (int32_t i = 0; i < n; ++i) {
    weft_kernel_description kd;
    memset(&kd, 0, sizeof kd);
    kd.struct_size = sizeof kd;
    weft_status* status = weft_kernel_describe(op, i, &kd);
    if (status != NULL) {
      weft_status_destroy(status);
      continue;
    }
    if (strcmp(kd.plugin, plugin) == 0) {
      if (k->num_tested < 8) k->tested[k->num_tested++] = kd;
    } else if (strcmp(kd.device_type, "CPU") == 0) {
      if (k->num_reference < 8) k->reference[k->num_reference++] = kd;
    }
  }
  return k->num_tested;
}

static int any_accepts(const weft_kernel_description* kds, int n,
                       const char* attr, weft_dtype t, const char* attr2,
                       weft_dtype u) {
  for (int i = 0; i < n; ++i)
    if (kernel_accepts(&kds[i], attr, t) &&
        (attr2 == NULL || kernel_accepts(&kds[i], attr2, u)))
      return 1;
  return 0;
}

static void dtype_label(weft_dtype t, weft_dtype u, char* out, size_t size) {
  if (u == WEFT_DTYPE_INVALID)
    snprintf(out, size, "%s", weft_dtype_name(t));
  else
    snprintf(out, size, "%s->%s", weft_dtype_name(t), weft_dtype_name(u));
}

/* One row: op x (t[, u]) on `device`. */
static void check_row(const target* t, const char* op, const char* device,
                      weft_dtype dt, weft_dtype du, int has_reference,
                      int num_inputs, int no_device, row_list* rows) {
  char label[40];
  dtype_label(dt, du, label, sizeof label);
  row* out = add_row(rows, op, label, R_PASS, "%s", "");
  if (no_device) {
    out->status = R_NO_DEVICE;
    snprintf(out->detail, sizeof out->detail, "%s",
             t->plugin.no_device_reason);
    return;
  }
  const recipe* r = find_recipe(op);
  if (!has_reference) {
    check_without_reference(t, op, device, dt, r ? r : &kSameShapeRecipe,
                            num_inputs, out);
    return;
  }
  if (r == NULL) {
    out->status = R_NOT_COVERED;
    snprintf(out->detail, sizeof out->detail, "no input recipe");
    return;
  }
  test_case cases[MAX_CASES];
  int n = parse_cases(r, dt, du, num_inputs, cases);
  row_state st;
  memset(&st, 0, sizeof st);
  for (int c = 0; c < n && !st.failed; ++c) {
    char key[160];
    snprintf(key, sizeof key, "%.80s/%.39s/%.31s", op, label, cases[c].label);
    (has_variables(&cases[c]) ? run_update_against_cpu : run_against_cpu)(
        t, op, device, &cases[c], r, seed_of(key, 0), &st, out);
  }
  if (st.failed) {
    out->status = R_FAIL;
    return;
  }
  if (st.cases_run == 0) {
    out->status = R_NOT_COVERED;
    snprintf(out->detail, sizeof out->detail,
             "no case of the recipe builds for this dtype (%s)", st.skipped);
    return;
  }
  if (st.cases_refused == st.cases_run) {
    out->status = R_FAIL;
    snprintf(out->detail, sizeof out->detail,
             "registered, but every case was refused (UNIMPLEMENTED): %s",
             st.refused);
    return;
  }
  size_t used = (size_t)snprintf(out->detail, sizeof out->detail,
                                 "%d case%s agree", st.cases_run - st.cases_refused,
                                 st.cases_run - st.cases_refused == 1 ? "" : "s");
  if (st.cases_refused)
    used += (size_t)snprintf(out->detail + used, sizeof out->detail - used,
                             "; refused as UNIMPLEMENTED: %s", st.refused);
  if (st.cases_skipped && used < sizeof out->detail)
    snprintf(out->detail + used, sizeof out->detail - used,
             "; not applicable to this dtype: %s", st.skipped);
}

/* A dtype the CPU has and the plugin does not: a node pinned to the
 * plugin's device must be refused when the run is planned (strict
 * placement), never run. */
static void check_not_provided(const target* t, const char* op,
                               const char* device, weft_dtype dt,
                               int num_inputs, row_list* rows) {
  row* out = add_row(rows, op, weft_dtype_name(dt), R_NOT_PROVIDED, "%s",
                     "no kernel registered");
  const recipe* r = find_recipe(op);
  if (r == NULL || t->device[0] == '\0') return;
  test_case cases[MAX_CASES];
  if (parse_cases(r, dt, WEFT_DTYPE_INVALID, num_inputs, cases) == 0) return;
  built_case b;
  weft_status* status = build_case(op, &cases[0], r, 1, device, 0, &b);
  weft_session* s = NULL;
  weft_tensor* got[MAX_OUT] = {0};
  int n_got = 0;
  if (status == NULL) status = open_session(b.graph, t, &s);
  if (status == NULL) {
    status = run_node(s, &b, b.nodes[0], got, &n_got, NULL);
    if (status == NULL) {
      out->status = R_FAIL;
      snprintf(out->detail, sizeof out->detail,
               "no kernel registered, yet a node pinned to %s ran under "
               "strict placement", device);
    } else {
      snprintf(out->detail, sizeof out->detail,
               "no kernel registered; refused when planned (%s)",
               weft_code_name(weft_status_code(status)));
    }
  }
  weft_status_destroy(status);
  destroy_all(got, n_got);
  weft_session_destroy(s);
  release_case(&b);
}

/* An op the CPU runs and a device plugin has no kernel for at all: a row
 * per dtype the CPU takes ("any" for a kernel of every dtype), each
 * checked to be refused when planned.  So an op added to the CPU plugin
 * and forgotten in a device plugin shows in that plugin's table. */
static void check_missing_op(const target* t, const weft_op_description* d,
                             const op_kernels* k, int no_device,
                             row_list* rows) {
  char device[96];
  snprintf(device, sizeof device, "/device:%s:0", t->plugin.device_type);
  const weft_kernel_description* ref = &k->reference[0];
  if (ref->dtype_attr == NULL || ref->dtype_attr[0] == '\0' ||
      ref->num_type_constraints > 0) {
    add_row(rows, d->name, "any", R_NOT_PROVIDED, "%s",
            "no kernel registered for the op (the CPU has one)");
    return;
  }
  for (size_t a = 0; a < ALL_DTYPES; ++a) {
    weft_dtype dt = kAllDtypes[a];
    if (!any_accepts(k->reference, k->num_reference, ref->dtype_attr, dt,
                     NULL, 0))
      continue;
    if (no_device)
      add_row(rows, d->name, weft_dtype_name(dt), R_NOT_PROVIDED, "%s",
              "no kernel registered for the op (the CPU has one)");
    else
      check_not_provided(t, d->name, device, dt, d->num_inputs, rows);
  }
}

void check_op(const target* t, const weft_op_description* d, int no_device,
              row_list* rows) {
  op_kernels k;
  if (collect_kernels(d->name, t->plugin.name, &k) == 0) {
    if (k.num_reference > 0 && t->plugin.device_type != NULL &&
        t->plugin.device_type[0] != '\0')
      check_missing_op(t, d, &k, no_device, rows);
    return;
  }
  weft_dtype provided[ALL_DTYPES];
  int num_provided = 0;
  /* Rows: every dtype (pair) the plugin's kernels take. */
  for (size_t a = 0; a < ALL_DTYPES; ++a) {
    weft_dtype dt = kAllDtypes[a];
    for (int i = 0; i < k.num_tested; ++i) {
      const weft_kernel_description* kd = &k.tested[i];
      const char* attr = kd->dtype_attr && kd->dtype_attr[0] ? kd->dtype_attr
                                                             : "T";
      const char* attr2 = second_attr(kd);
      if (!kernel_accepts(kd, attr, dt)) continue;
      /* "any dtype": the rows are the dtypes the reference kernel takes,
       * or, without one, every dtype. */
      if ((kd->dtype_attr == NULL || kd->dtype_attr[0] == '\0') &&
          k.num_reference > 0 &&
          !any_accepts(k.reference, k.num_reference, attr, dt, NULL, 0))
        continue;
      char device[96];
      snprintf(device, sizeof device, "/device:%s:0", kd->device_type);
      if (attr2 != NULL) {
        for (size_t b = 0; b < ALL_DTYPES; ++b) {
          weft_dtype du = kAllDtypes[b];
          if (!kernel_accepts(kd, attr2, du)) continue;
          int ref = any_accepts(k.reference, k.num_reference, attr, dt,
                                attr2, du);
          check_row(t, d->name, device, dt, du, ref, d->num_inputs,
                    no_device, rows);
        }
      } else {
        int ref = any_accepts(k.reference, k.num_reference, attr, dt, NULL, 0);
        check_row(t, d->name, device, dt, WEFT_DTYPE_INVALID, ref,
                  d->num_inputs, no_device, rows);
      }
      provided[num_provided++] = dt;
      break;
    }
  }
  /* Not provided: dtypes the CPU's kernels take for the same attribute. */
  if (k.tested[0].num_type_constraints > 0) return;
  const char* attr = k.tested[0].dtype_attr;
  if (attr == NULL || attr[0] == '\0') return;
  char device[96];
  snprintf(device, sizeof device, "/device:%s:0", k.tested[0].device_type);
  for (size_t a = 0; a < ALL_DTYPES; ++a) {
    weft_dtype dt = kAllDtypes[a];
    int have = 0;
    for (int i = 0; i < num_provided; ++i) have |= provided[i] == dt;
    if (have) continue;
    for (int i = 0; i < k.num_reference; ++i) {
      if (k.reference[i].dtype_attr && k.reference[i].dtype_attr[0] &&
          kernel_accepts(&k.reference[i], attr, dt)) {
        if (no_device)
          add_row(rows, d->name, weft_dtype_name(dt), R_NOT_PROVIDED, "%s",
                  "no kernel registered");
        else
          check_not_provided(t, d->name, device, dt, d->num_inputs, rows);
        break;
      }
    }
  }
}

