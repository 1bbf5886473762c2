/* weft conformance: the op recipes, each op family's cases as text (the
 * grammar: tools/conformance_recipes.h).  Data only, with the lookup by op
 * name; conformance_ops.c parses and runs them. */
#include <stddef.h>
#include <string.h>

#include "tools/conformance_recipes.h"

#define UNARY_CASES                                                    \
  "normal: T[3,5] | scalar: T[] | empty: T[0,4] | large: T[512,512]"
#define BINARY_CASES                                                   \
  "same: T[3,5] T[3,5] | scalar: T[3,5] T[] | row broadcast: T[3,5] "  \
  "T[5] | broadcast: T[4,1] T[1,6] | empty: T[0,5] T[0,5] | large: "   \
  "T[512,512] T[512,512]"
#define DIVISION_CASES                                                 \
  "same: T[3,5] T[3,5]! | scalar: T[3,5] T[]! | row broadcast: T[3,5] " \
  "T[5]! | broadcast: T[4,1] T[1,6]! | empty: T[0,5] T[0,5]! | large: " \
  "T[512,512] T[512,512]!"
#define SAME_SHAPE2_CASES                                              \
  "same: T[3,5] T[3,5] | empty: T[0,5] T[0,5] | large: T[512,512] "    \
  "T[512,512]"
#define REDUCE_CASES                                                   \
  "rows: T[3,5] l.axes=[1] | columns kept: T[3,5] l.axes=[0] "         \
  "b.keep_dims=1 | all: T[3,5] | two axes: T[2,3,4] l.axes=[0,-1] | "  \
  "empty: T[0,4] l.axes=[1] | large: T[512,512] l.axes=[1]"
#define REDUCE_GRAD_CASES                                              \
  "rows: T[3] T[3,5] l.axes=[1] | kept: T[3,1] T[3,5] l.axes=[1] "     \
  "b.keep_dims=1 | all: T[] T[3,5] | empty: T[0] T[0,5] l.axes=[1] | " \
  "large: T[512] T[512,512] l.axes=[1]"

#define SAME_1 "l.strides=[1,1,1,1] s.padding=SAME"
#define VALID_2 "l.strides=[1,2,2,1] s.padding=VALID"
/* Conv2D's cases; FusedConv2D's add a bias input: B4 " T[4]" and B64
 * " T[64]" for the cases of four and 64 output channels. */
#define CONV_CASES(B4, B64)                                             \
  "same: T[2,5,5,3] T[3,3,3,4]" B4 " " SAME_1 " | valid strided: "       \
  "T[2,7,6,3] T[3,2,3,4]" B4 " " VALID_2 " | dilated: T[1,7,7,2] "       \
  "T[2,2,2,4]" B4 " " SAME_1 " l.dilations=[1,2,2,1] | empty: "          \
  "T[0,5,5,3] T[3,3,3,4]" B4 " " SAME_1 " | no channels: T[2,5,5,0] "    \
  "T[3,3,0,4]" B4 " " SAME_1 " | large: T[4,14,14,32] T[5,5,32,64]"      \
  B64 " " SAME_1
#define POOL_2 "l.ksize=[1,2,2,1] l.strides=[1,2,2,1]"
#define POOL_3 "l.ksize=[1,3,3,1] l.strides=[1,2,1,1]"

/* The optimizers' inputs for variables of dims D: var, alpha, delta. */
#define DESCENT(D) "T" D "& T[]=0.1 T" D
/* var, accum, lr, grad, momentum. */
#define MOMENTUM(D) "T" D "& T" D "& T[]=0.05 T" D " T[]=0.9"
#define NESTEROV "b.use_nesterov=1"
/* var, m and v (MV), beta1_power and beta2_power (P), lr, beta1, beta2,
 * epsilon, grad; ADAM: random moments (v not negative), a third step's
 * beta powers, which differ from the betas. */
#define ADAM_WITH(D, MV, P) \
  "T" D "& " MV " " P " T[]=0.01 T[]=0.9 T[]=0.999 T[]=1e-8 T" D
#define ADAM(D) ADAM_WITH(D, "T" D "& T" D "&+", "T[]=0.729 T[]=0.997003")

static const recipe kRecipes[] = {
    {"Identity Neg Abs Sign Square Relu ZerosLike OnesLike", UNARY_CASES, -3,
     3, 0, TOL_EXACT},
    {"Sqrt Rsqrt Log", UNARY_CASES, 0.1, 4, 0, TOL_TRANSC},
    {"Exp Sigmoid Tanh", UNARY_CASES, -4, 4, 0, TOL_TRANSC},
    {"Add Sub Mul Maximum Minimum", BINARY_CASES, -3, 3, 0, TOL_EXACT},
    {"Div RealDiv FloorDiv FloorMod", DIVISION_CASES, -9, 9, 0, TOL_EXACT},
    {"Pow", "same: T[3,5] T[3,5] | scalar: T[3,5] T[] | broadcast: T[4,1] "
     "T[1,6] | empty: T[0,5] T[0,5] | large: T[512,512] T[512,512]",
     0, 3, 1, TOL_TRANSC},
    {"Greater GreaterEqual Less LessEqual Equal NotEqual", BINARY_CASES, -3,
     3, 1, TOL_EXACT},
    {"LogicalAnd LogicalOr", BINARY_CASES, 0, 1, 1, TOL_EXACT},
    {"LogicalNot", UNARY_CASES, 0, 1, 1, TOL_EXACT},
    {"Select", "same: bool[3,5] T[3,5] T[3,5] | broadcast: bool[3,1] T[3,5] "
     "T[5] | empty: bool[0,5] T[0,5] T[0,5] | large: bool[512,512] "
     "T[512,512] T[512,512]", -3, 3, 0, TOL_EXACT},
    {"Cast", "normal: T[3,5] d.DstT=U | empty: T[0,3] d.DstT=U | large: "
     "T[512,512] d.DstT=U", -100, 100, 0, TOL_EXACT},
    {"Reshape", "normal: T[3,4] l.shape=[4,3] | inferred: T[3,4] "
     "l.shape=[2,-1] | empty: T[0,4] l.shape=[4,0] | large: T[512,512] "
     "l.shape=[262144]", -3, 3, 0, TOL_EXACT},
    {"ExpandDims", "middle: T[3,4] i.axis=1 | last: T[3,4] i.axis=-1 | "
     "scalar: T[] i.axis=0 | empty: T[0,3] i.axis=0", -3, 3, 0, TOL_EXACT},
    {"Squeeze", "named: T[3,1,4] l.squeeze_dims=[1] | all: T[1,3,1] | "
     "empty: T[0,1] l.squeeze_dims=[1]", -3, 3, 0, TOL_EXACT},
    {"Transpose", "matrix: T[3,4] l.perm=[1,0] | rank 3: T[2,3,4] "
     "l.perm=[2,0,1] | empty: T[0,3] l.perm=[1,0] | large: T[512,512] "
     "l.perm=[1,0]", -3, 3, 0, TOL_EXACT},
    {"Concat", "rows: { T[2,3] T[4,3] } i.axis=0 | columns: { T[3,2] T[3,5] "
     "T[3,1] } i.axis=-1 | empty: { T[0,3] T[2,3] } i.axis=0 | large: { "
     "T[256,512] T[256,512] } i.axis=0", -3, 3, 0, TOL_EXACT},
    {"Split", "rows: T[6,4] i.axis=0 i.num_split=3 | columns: T[4,6] "
     "i.axis=1 i.num_split=2 | empty: T[0,4] i.axis=1 i.num_split=2 | "
     "large: T[512,512] i.axis=1 i.num_split=4", -3, 3, 0, TOL_EXACT},
    {"Fill", "normal: T[] l.shape=[3,4] | empty: T[] l.shape=[0,3] | large: "
     "T[] l.shape=[512,512]", -3, 3, 0, TOL_EXACT},
    {"Gather", "rows: T[5,3] i32[4]<5 | columns: T[3,5] i64[2,2]<5 i.axis=1 "
     "| empty: T[5,3] i32[0]<5 | large: T[512,512] i32[300]<512", -3, 3, 0,
     TOL_EXACT},
    {"Sum Mean Max Min", REDUCE_CASES, -3, 3, 0, TOL_ACCUMULATE},
    {"Prod", REDUCE_CASES, 0.9, 1.1, 0, TOL_ACCUMULATE},
    /* Seeded generators: the same stream on every device (the device's
     * log, sin and cos may differ from the host's by an ulp). */
    {"RandomUniform RandomNormal TruncatedNormal", "matrix: l.shape=[3,4] "
     "d.dtype=T i.seed=7 i.seed2=3 | vector: l.shape=[5] d.dtype=T i.seed=1 "
     "| empty: l.shape=[0,4] d.dtype=T i.seed=2 | large: l.shape=[512,512] "
     "d.dtype=T i.seed=5 i.seed2=9", 0, 1, 0, TOL_TRANSC},
    /* Whole numbers in a small range: ties, where the first must win. */
    {"ArgMax ArgMin", "rows: T[3,5] i.axis=1 | columns: T[3,5] i.axis=0 | "
     "middle: T[2,6,4] i.axis=1 | last: T[2,3,4] i.axis=-1 | vector: T[7] "
     "| large: T[512,512] i.axis=0", -3, 3, 1, TOL_EXACT},
    {"MatMul", "normal: T[3,4] T[4,5] | transpose a: T[4,3] T[4,5] "
     "b.transpose_a=1 | transpose b: T[3,4] T[5,4] b.transpose_b=1 | empty: "
     "T[0,4] T[4,5] | zero inner: T[3,0] T[0,5] | large: T[256,256] "
     "T[256,256]", -1, 1, 0, TOL_ACCUMULATE},
    {"BatchMatMul", "batch: T[2,3,4] T[2,4,5] | broadcast: T[2,1,3,4] "
     "T[3,4,5] | rank 2 against 3: T[3,4] T[2,4,5] | adjoint x: T[2,4,3] "
     "T[2,4,5] b.adj_x=1 | adjoint y: T[2,3,4] T[1,5,4] b.adj_y=1 | empty: "
     "T[0,3,4] T[0,4,5] | zero inner: T[2,3,0] T[2,0,5] | large: T[8,64,64] "
     "T[8,64,64]", -1, 1, 0, TOL_ACCUMULATE},
    {"MatrixInverse", "matrix: T[3,3] | batch: T[4,3,3] | adjoint: T[2,4,4] "
     "b.adjoint=1 | one: T[1,1] | empty: T[0,3,3] | none: T[2,0,0] | large: "
     "T[64,8,8]", -1, 1, 0, TOL_ACCUMULATE},
    {"MatrixDeterminant", "matrix: T[3,3] | batch: T[2,2,4,4] | one: T[1,1] "
     "| empty: T[0,3,3] | none: T[3,0,0] | large: T[64,16,16]", -1, 1, 0,
     TOL_ACCUMULATE},
    /* Stateful, seeded: each node's first run on either device draws the
     * same stream (a seed is set, so none is drawn at build time). */
    {"Dropout", "half: T[3,5] f.rate=0.5 i.seed=7 | light: T[4,33] "
     "f.rate=0.1 i.seed=3 i.seed2=11 | empty: T[0,4] f.rate=0.5 i.seed=1 | "
     "large: T[512,512] f.rate=0.3 i.seed=5", -3, 3, 0, TOL_EXACT},
    {"RandomShuffle", "rows: T[7,3] i.seed=5 | vector: T[10] i.seed=2 "
     "i.seed2=9 | one row: T[1,4] i.seed=1 | empty: T[0,4] i.seed=1 | no "
     "columns: T[5,0] i.seed=3 | large: T[1000,64] i.seed=9", -100, 100, 0,
     TOL_EXACT},
    {"BiasAdd", "matrix: T[3,5] T[5] | rank 4: T[2,3,4,5] T[5] | empty: "
     "T[0,5] T[5] | large: T[512,512] T[512]", -3, 3, 0, TOL_EXACT},
    {"Softmax LogSoftmax", "rows: T[3,5] | rank 3: T[2,3,4] | empty: T[0,5] "
     "| large: T[512,512]", -5, 5, 0, TOL_TRANSC},
    {"SoftmaxCrossEntropyWithLogits", "rows: T[4,5] T[4,5]p | empty: T[0,5] "
     "T[0,5]p | large: T[512,512] T[512,512]p", -3, 3, 0, TOL_ACCUMULATE},
    {"SparseSoftmaxCrossEntropyWithLogits", "int32 labels: T[4,5] i32[4]<5 "
     "| int64 labels: T[4,5] i64[4]<5 | empty: T[0,5] i32[0]<5 | large: "
     "T[512,512] i32[512]<512", -3, 3, 0, TOL_ACCUMULATE},
    {"SumToShapeOf", "leading: T[4,3,5] T[3,5] | ones: T[3,5] T[1,5] | "
     "multiple: T[6,4] T[3,4] | empty: T[0,5] T[5] | large: T[512,512] "
     "T[512]", -3, 3, 0, TOL_ACCUMULATE},
    {"ReshapeLike", "matrix: T[3,4] T[4,3] | flat: T[12] T[2,6] | empty: "
     "T[0,4] T[4,0] | large: T[512,512] T[262144]", -3, 3, 0, TOL_EXACT},
    {"SliceGrad", "box: T[2,3] T[4,5] l.begin=[1,2] | empty: T[0,3] T[2,5] "
     "l.begin=[1,1] | large: T[256,256] T[512,512] l.begin=[10,20]", -3, 3,
     0, TOL_EXACT},
    {"PadGrad", "box: T[4,5] T[2,3] l.begin=[1,2] | empty: T[2,3] T[0,3] "
     "l.begin=[1,0] | large: T[512,512] T[256,256] l.begin=[3,4]", -3, 3, 0,
     TOL_EXACT},
    {"GatherGrad", "rows: T[4,3] i32[4]<5 T[5,3] | columns: T[3,2] i32[2]<5 "
     "T[3,5] i.axis=1 | empty: T[0,3] i32[0]<5 T[5,3] | large: T[1000,512] "
     "i32[1000]<512 T[512,512]", -3, 3, 0, TOL_ACCUMULATE},
    {"Conv2D", CONV_CASES("", ""), -1, 1, 0, TOL_ACCUMULATE},
    {"FusedConv2D", CONV_CASES(" T[4]", " T[64]"), -1, 1, 0, TOL_ACCUMULATE},
    {"Conv2DBackpropInput", "same: T[3,3,3,4] T[2,5,5,4] "
     "l.input_sizes=[2,5,5,3] " SAME_1 " | valid strided: T[3,2,3,5] "
     "T[2,3,3,5] l.input_sizes=[2,7,6,3] " VALID_2 " | dilated: T[2,2,2,3] "
     "T[1,7,7,3] l.input_sizes=[1,7,7,2] " SAME_1 " l.dilations=[1,2,2,1] | "
     "empty: T[3,3,3,4] T[0,5,5,4] l.input_sizes=[0,5,5,3] " SAME_1 " | "
     "large: T[5,5,32,64] T[4,14,14,64] l.input_sizes=[4,14,14,32] " SAME_1,
     -1, 1, 0, TOL_ACCUMULATE},
    {"Conv2DBackpropFilter", "same: T[2,5,5,3] T[2,5,5,4] "
     "l.filter_sizes=[3,3,3,4] " SAME_1 " | valid strided: T[2,7,6,3] "
     "T[2,3,3,5] l.filter_sizes=[3,2,3,5] " VALID_2 " | dilated: T[1,7,7,2] "
     "T[1,7,7,3] l.filter_sizes=[2,2,2,3] " SAME_1 " l.dilations=[1,2,2,1] | "
     "empty: T[0,5,5,3] T[0,5,5,4] l.filter_sizes=[3,3,3,4] " SAME_1 " | "
     "large: T[4,14,14,32] T[4,14,14,64] l.filter_sizes=[5,5,32,64] " SAME_1,
     -1, 1, 0, TOL_ACCUMULATE},
    {"MaxPool AvgPool MaxPoolWithWindowIndex", "tiled: T[2,6,6,3] " POOL_2
     " s.padding=VALID | same: T[2,5,5,3] " POOL_2 " s.padding=SAME | "
     "overlapping: T[2,6,7,3] " POOL_3 " s.padding=SAME | empty: "
     "T[0,6,6,3] " POOL_2 " s.padding=VALID | large: T[16,28,28,32] "
     POOL_2 " s.padding=SAME", -3, 3, 0, TOL_ACCUMULATE},
    {"MaxPoolGrad MaxPoolReluGrad", "tiled: T[2,6,6,3] T[2,3,3,3] " POOL_2
     " s.padding=VALID | same: T[2,5,5,3] T[2,3,3,3] " POOL_2
     " s.padding=SAME | overlapping: T[2,6,7,3] T[2,3,7,3] " POOL_3
     " s.padding=SAME | empty: T[0,6,6,3] T[0,3,3,3] " POOL_2
     " s.padding=VALID | large: T[16,28,28,32] T[16,14,14,32] " POOL_2
     " s.padding=SAME", -3, 3, 0, TOL_ACCUMULATE},
    {"AvgPoolGrad", "tiled: T[2,3,3,3] l.input_sizes=[2,6,6,3] " POOL_2
     " s.padding=VALID | same: T[2,3,3,3] l.input_sizes=[2,5,5,3] " POOL_2
     " s.padding=SAME | overlapping: T[2,3,7,3] l.input_sizes=[2,6,7,3] "
     POOL_3 " s.padding=SAME | large: T[16,14,14,32] "
     "l.input_sizes=[16,28,28,32] " POOL_2 " s.padding=SAME", -3, 3, 0,
     TOL_ACCUMULATE},
    /* VALID windows lie whole on the input, so any position is one. */
    {"MaxPoolGradFromWindowIndex", "tiled: u8[2,3,3,3]<4 T[2,3,3,3] "
     "l.input_sizes=[2,6,6,3] " POOL_2 " s.padding=VALID | overlapping: "
     "u8[2,2,5,3]<9 T[2,2,5,3] l.input_sizes=[2,6,7,3] " POOL_3
     " s.padding=VALID | large: u8[16,14,14,32]<4 T[16,14,14,32] "
     "l.input_sizes=[16,28,28,32] " POOL_2 " s.padding=VALID", -3, 3, 0,
     TOL_ACCUMULATE},
    {"MaxPoolReluGradFromWindowIndex", "tiled: T[2,3,3,3] u8[2,3,3,3]<4 "
     "T[2,3,3,3] l.input_sizes=[2,6,6,3] " POOL_2 " s.padding=VALID | "
     "overlapping: T[2,2,5,3] u8[2,2,5,3]<9 T[2,2,5,3] "
     "l.input_sizes=[2,6,7,3] " POOL_3 " s.padding=VALID | large: "
     "T[16,14,14,32] u8[16,14,14,32]<4 T[16,14,14,32] "
     "l.input_sizes=[16,28,28,32] " POOL_2 " s.padding=VALID", -3, 3, 0,
     TOL_ACCUMULATE},
    {"BatchNormWithGlobalNormalization", "channels: T[2,3,4] T[4] T[4] T[4] "
     "T[4] f.variance_epsilon=0.001 | scaled: T[5,3] T[3] T[3] T[3] T[3] "
     "f.variance_epsilon=0.01 b.scale_after_normalization=1 | empty: "
     "T[0,4] T[4] T[4] T[4] T[4] f.variance_epsilon=0.001 | large: "
     "T[256,512] T[512] T[512] T[512] T[512] f.variance_epsilon=0.001",
     0.1, 3, 0, TOL_TRANSC},
    {"Slice", "box: T[4,5] l.begin=[1,2] l.size=[2,3] | to the end: "
     "T[3,4,5] l.begin=[0,1,2] l.size=[-1,2,-1] | rows: T[6,4] "
     "l.begin=[2,0] l.size=[3,4] | whole: T[3,4] l.begin=[0,0] "
     "l.size=[-1,-1] | empty: T[0,4] l.begin=[0,1] l.size=[0,2] | empty "
     "box: T[3,4] l.begin=[1,1] l.size=[0,2] | large: T[512,512] "
     "l.begin=[10,20] l.size=[400,300]", -3, 3, 0, TOL_EXACT},
    {"Tile", "rows: T[2,3] l.multiples=[3,1] | both: T[2,3] "
     "l.multiples=[2,3] | rank 3: T[2,1,3] l.multiples=[1,4,2] | scalar: "
     "T[] l.multiples=[] | zero: T[2,3] l.multiples=[0,2] | empty: T[0,3] "
     "l.multiples=[2,2] | large: T[256,256] l.multiples=[2,2]", -3, 3, 0,
     TOL_EXACT},
    /* -2 and 0.1 do not fit every dtype: those cases skip the rest. */
    {"Pad", "sides: T[3,4] l.paddings=[1,2,2,1] | constant: T[3,4] "
     "l.paddings=[0,2,1,0] f.constant_value=-2 | rounded: T[3,4] "
     "l.paddings=[1,1,1,1] f.constant_value=0.1 | vector: T[5] "
     "l.paddings=[2,3] f.constant_value=1 | scalar: T[] l.paddings=[] | "
     "empty: T[0,4] l.paddings=[1,1,0,2] f.constant_value=1 | large: "
     "T[512,512] l.paddings=[3,4,5,6]", -3, 3, 0, TOL_EXACT},
    {"Pack", "rows: { T[3,4] T[3,4] } | middle: { T[2,3] T[2,3] T[2,3] } "
     "i.axis=1 | last: { T[2,3] T[2,3] } i.axis=-1 | scalars: { T[] T[] "
     "T[] } | empty: { T[0,3] T[0,3] } i.axis=1 | large: { T[256,512] "
     "T[256,512] } i.axis=1", -3, 3, 0, TOL_EXACT},
    {"Unpack", "rows: T[3,4] | columns: T[3,4] i.axis=1 | last: T[2,3,4] "
     "i.axis=-1 | empty: T[2,0,3] i.axis=0 | large: T[4,512,512] i.axis=0",
     -3, 3, 0, TOL_EXACT},
    /* T is the indices' dtype, U the output's; indices past depth give
     * rows of off_value. */
    {"OneHot", "vector: T[6]<5 i.depth=5 d.dtype=U | middle axis: "
     "T[3,4]<6 i.depth=6 i.axis=1 d.dtype=U | first axis: T[3,4]<5 "
     "i.depth=5 i.axis=0 d.dtype=U | values: T[5]<4 i.depth=4 "
     "f.on_value=5 f.off_value=2 d.dtype=U | out of range: T[8]<9 "
     "i.depth=6 d.dtype=U | rounded: T[5]<4 i.depth=4 f.on_value=0.1 "
     "f.off_value=-0.7 d.dtype=U | empty: T[0,3]<4 i.depth=4 d.dtype=U | "
     "large: T[2048]<600 i.depth=512 d.dtype=U", -3, 3, 0, TOL_EXACT},
    /* U is out_type. */
    {"Shape Size", "matrix: T[3,4] d.out_type=U | rank 4: T[2,3,4,5] "
     "d.out_type=U | scalar: T[] d.out_type=U | empty: T[0,4] "
     "d.out_type=U | large: T[512,512] d.out_type=U", -3, 3, 0, TOL_EXACT},
    {"Rank", "matrix: T[3,4] | rank 4: T[2,3,4,5] | scalar: T[] | empty: "
     "T[0,4] | large: T[512,512]", -3, 3, 0, TOL_EXACT},
    {"ReluGrad", SAME_SHAPE2_CASES, -3, 3, 0, TOL_EXACT},
    {"SigmoidGrad TanhGrad", SAME_SHAPE2_CASES, -1, 1, 0, TOL_TRANSC},
    {"SqrtGrad RsqrtGrad", SAME_SHAPE2_CASES, 0.2, 3, 0, TOL_TRANSC},
    {"SumGrad MeanGrad", REDUCE_GRAD_CASES, -3, 3, 0, TOL_EXACT},
    /* Whole numbers from -2 to 2: groups with no zero, one and several. */
    {"ProdGrad", REDUCE_GRAD_CASES, -2, 2, 1, TOL_TRANSC},
    /* The optimizers' updates, with the usual hyperparameters and random
     * variables and gradients.  Momentum's accumulator is a product plus
     * a sum, which a device may fuse into one rounding (FMA) and the CPU
     * may not: the error scales with the terms, not with a result near
     * zero, and piles up over the three steps (a CUDA H200 run: 2.4e-7 on
     * terms near 1), so it gets the class of Sqrt, like Adam. */
    {"ApplyGradientDescent", "normal: " DESCENT("[3,5]") " | scalar: "
     DESCENT("[]") " | empty: " DESCENT("[0,4]") " | large: "
     DESCENT("[512,512]"), -1, 1, 0, TOL_EXACT},
    /* The update by a product (the planner's fusion of MatMul into
     * ApplyGradientDescent): the product's sums, then one rounding. */
    {"MatMulApplyGradientDescent", "normal: T[3,5]& T[]=0.1 T[3,4] T[4,5] "
     "| transpose a: T[3,5]& T[]=0.1 T[4,3] T[4,5] b.transpose_a=1 | "
     "transpose b: T[3,5]& T[]=0.1 T[3,4] T[5,4] b.transpose_b=1 | empty: "
     "T[0,5]& T[]=0.1 T[0,4] T[4,5] | zero inner: T[3,5]& T[]=0.1 T[3,0] "
     "T[0,5] | large: T[256,256]& T[]=0.1 T[256,256] T[256,256]", -1, 1, 0,
     TOL_ACCUMULATE},
    {"ApplyMomentum", "normal: " MOMENTUM("[3,5]") " | nesterov: "
     MOMENTUM("[3,5]") " " NESTEROV " | scalar: " MOMENTUM("[]") " | scalar "
     "nesterov: " MOMENTUM("[]") " " NESTEROV " | empty: " MOMENTUM("[0,4]")
     " | large: " MOMENTUM("[512,512]") " | large nesterov: "
     MOMENTUM("[512,512]") " " NESTEROV, -1, 1, 0, TOL_TRANSC},
    /* Square roots: the class of Sqrt.  From zero moments: a first step. */
    {"ApplyAdam", "normal: " ADAM("[3,5]") " | from zero moments: "
     ADAM_WITH("[3,5]", "T[3,5]&=0 T[3,5]&=0", "T[]=0.9 T[]=0.999") " | "
     "scalar: " ADAM("[]") " | empty: " ADAM("[0,4]") " | large: "
     ADAM("[512,512]"), -1, 1, 0, TOL_TRANSC},
};

const recipe kSameShapeRecipe = {
    "", "normal: * | empty: * | large: *", -2, 2, 0, TOL_TRANSC};

static int word_in(const char* list, const char* word) {
  size_t n = strlen(word);
  for (const char* p = list; *p;) {
    size_t len = strcspn(p, " ");
    if (len == n && strncmp(p, word, n) == 0) return 1;
    p += len;
    while (*p == ' ') ++p;
  }
  return 0;
}

const recipe* find_recipe(const char* op) {
  for (size_t i = 0; i < sizeof kRecipes / sizeof kRecipes[0]; ++i)
    if (word_in(kRecipes[i].ops, op)) return &kRecipes[i];
  return NULL;
}
