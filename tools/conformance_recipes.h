/* weft conformance: the op recipes (conformance_recipes.c), the cases
 * conformance_ops.c builds and runs for each op x dtype.  Internal to
 * the tool. */
#ifndef WEFT_TOOLS_CONFORMANCE_RECIPES_H_
#define WEFT_TOOLS_CONFORMANCE_RECIPES_H_

/* A recipe gives the cases of an op family as text, one case per '|':
 *
 *   "label: INPUT INPUT ... ATTR ATTR"
 *
 * INPUT is DTYPE[dims] with DTYPE T (the dtype under test), i32, i64, u8
 * or bool, and a suffix: <N indices in [0, N); ! values away from zero
 * (for divisors); p rows of probabilities (labels); + values in [0, hi]
 * (Adam's second moments); =V every element V (a learning rate).  & at the
 * start of the suffix makes the input a variable, taken by reference (the
 * optimizers' updates): each node gets its own, on its own device, holding
 * the input's values.  Inputs between { and } form one list input
 * (Concat).  ATTR is K.name=value with K i (int), l (list of ints), b
 * (bool), f (float), s (string) or d (dtype: U, the row's second dtype, or
 * T written out: the row's dtype). */

typedef enum tolerance_class {
  TOL_EXACT,      /* correctly rounded ops: Add, Mul, Relu, copies */
  TOL_TRANSC,     /* exp, log, sqrt, tanh, pow, softmax */
  TOL_ACCUMULATE  /* sums: reductions, MatMul, cross-entropy */
} tolerance_class;

typedef struct recipe {
  const char* ops;   /* space-separated op names */
  const char* cases;
  double lo, hi;     /* range of T inputs */
  int integral;      /* T values are whole numbers (comparisons) */
  tolerance_class tol;
} recipe;

/* The recipe that names `op`, or NULL. */
const recipe* find_recipe(const char* op);

/* For ops without a recipe (ops the plugin defines): every input of the
 * dtype under test and one shape. */
extern const recipe kSameShapeRecipe;

#endif /* WEFT_TOOLS_CONFORMANCE_RECIPES_H_ */
