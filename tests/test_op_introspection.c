/* The op library as users see it through weft/ops.h: every op TensorFlow's
 * 2015 design lists is defined, each has a CPU kernel (or is run by the
 * runtime itself), and the descriptions honour the caller's struct_size. */
#include <string.h>

#include <criterion/criterion.h>

#include "test_support.h"

/* The list, written out here independently of the registry. */
static const char* const kRequiredOps[] = {
    "Add", "Sub", "Mul", "Div", "RealDiv", "FloorDiv", "FloorMod", "Pow",
    "Maximum", "Minimum", "Neg", "Abs", "Sign", "Square", "Sqrt", "Rsqrt",
    "Exp", "Log", "Tanh", "Sigmoid", "Relu", "Greater", "GreaterEqual",
    "Less", "LessEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr",
    "LogicalNot", "Select", "Cast",
    "Const", "Rank", "Shape", "Size", "Reshape", "Transpose", "Concat",
    "Slice", "Split", "Pack", "Unpack", "ExpandDims", "Squeeze", "Tile",
    "Fill", "ZerosLike", "OnesLike", "Gather", "OneHot", "Pad",
    "RandomShuffle", "RandomUniform", "RandomNormal", "TruncatedNormal",
    "Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin",
    "MatMul", "BatchMatMul", "MatrixInverse", "MatrixDeterminant",
    "BiasAdd", "Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits", "Conv2D", "MaxPool", "AvgPool",
    "BatchNormWithGlobalNormalization", "Dropout",
    "Placeholder", "Variable", "Assign", "AssignAdd", "Identity", "NoOp",
};
#define REQUIRED_COUNT (sizeof kRequiredOps / sizeof kRequiredOps[0])

static int find_op(const char* name, weft_op_description* out) {
  int32_t n = weft_op_count();
  for (int32_t i = 0; i < n; ++i) {
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    WT_OK(weft_op_describe(i, out));
    if (strcmp(out->name, name) == 0) return 1;
  }
  return 0;
}

/* Whether op `name` has a CPU kernel accepting `dtype` (any dtype when the
 * kernel has no constraint). */
static int cpu_kernel_accepts(const char* name, weft_dtype dtype) {
  int32_t n = weft_kernel_count(name);
  for (int32_t k = 0; k < n; ++k) {
    weft_kernel_description kd;
    memset(&kd, 0, sizeof kd);
    kd.struct_size = sizeof kd;
    WT_OK(weft_kernel_describe(name, k, &kd));
    if (strcmp(kd.device_type, "CPU") != 0) continue;
    if (kd.num_dtypes == 0 || kd.dtype_attr[0] == '\0') return 1;
    for (int32_t i = 0; i < kd.num_dtypes; ++i)
      if (kd.dtypes[i] == (int32_t)dtype) return 1;
  }
  return 0;
}

Test(op_introspection, every_listed_op_is_defined) {
  for (size_t i = 0; i < REQUIRED_COUNT; ++i) {
    weft_op_description d;
    cr_expect(find_op(kRequiredOps[i], &d), "op %s is not defined",
              kRequiredOps[i]);
  }
}

Test(op_introspection, every_listed_op_runs_on_the_cpu) {
  for (size_t i = 0; i < REQUIRED_COUNT; ++i) {
    weft_op_description d;
    if (!find_op(kRequiredOps[i], &d)) continue;  /* reported above */
    if (d.runs_in_runtime) continue;
    cr_expect(weft_kernel_count(d.name) > 0, "op %s has no kernel", d.name);
    int any = 0;
    for (int t = WEFT_FLOAT32; t <= WEFT_UINT64; ++t)
      any |= cpu_kernel_accepts(d.name, (weft_dtype)t);
    cr_expect(any, "op %s has no CPU kernel", d.name);
  }
}

Test(op_introspection, storage_types_cast_and_multiply) {
  const weft_dtype half_types[] = {WEFT_FLOAT16, WEFT_BFLOAT16};
  for (int i = 0; i < 2; ++i) {
    const char* name = weft_dtype_name(half_types[i]);
    cr_expect(cpu_kernel_accepts("Cast", half_types[i]),
              "no CPU Cast from %s", name);
    cr_expect(cpu_kernel_accepts("MatMul", half_types[i]),
              "no CPU MatMul for %s", name);
    cr_expect(cpu_kernel_accepts("Identity", half_types[i]),
              "no CPU Identity for %s", name);
  }
}

Test(op_introspection, descriptions_carry_inputs_and_attributes) {
  weft_op_description d;
  cr_assert(find_op("MatMul", &d));
  cr_expect_str_eq(d.inputs, "a, b");
  cr_expect(strstr(d.attributes, "transpose_a: bool = false") != NULL,
            "attributes: %s", d.attributes);
  cr_expect_eq(d.num_inputs, 2);
  cr_expect_eq(d.runs_in_runtime, 0);
  cr_assert(find_op("Variable", &d));
  cr_expect_eq(d.stateful, 1);
  cr_expect_eq(d.runs_in_runtime, 1);
  cr_assert(find_op("Concat", &d));
  cr_expect_eq(d.variadic, 1);
  cr_expect(strstr(d.inputs, "...") != NULL, "inputs: %s", d.inputs);
}

Test(op_introspection, struct_size_is_honoured) {
  /* A caller built against a struct that ended after `summary` must not
   * have anything beyond it written. */
  unsigned char raw[sizeof(weft_op_description) + 16];
  memset(raw, 0xAB, sizeof raw);
  weft_op_description* d = (weft_op_description*)raw;
  size_t small = offsetof(weft_op_description, summary) + sizeof(d->summary);
  d->struct_size = small;
  WT_OK(weft_op_describe(0, d));
  cr_expect(d->name != NULL && d->summary != NULL);
  for (size_t i = small; i < sizeof raw; ++i)
    cr_expect_eq(raw[i], 0xAB, "byte %zu beyond struct_size was written", i);
}

Test(op_introspection, bad_indices_and_names_are_errors) {
  weft_op_description d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  WT_EXPECT_CODE(weft_op_describe(-1, &d), WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_op_describe(weft_op_count(), &d),
                 WEFT_INVALID_ARGUMENT);
  cr_expect_eq(weft_kernel_count("NoSuchOp"), 0);
  cr_expect_eq(weft_kernel_count(NULL), 0);
  weft_kernel_description kd;
  memset(&kd, 0, sizeof kd);
  kd.struct_size = sizeof kd;
  WT_EXPECT_CODE(weft_kernel_describe("NoSuchOp", 0, &kd),
                 WEFT_INVALID_ARGUMENT);
  WT_EXPECT_CODE(weft_kernel_describe(NULL, 0, &kd), WEFT_INVALID_ARGUMENT);
}
