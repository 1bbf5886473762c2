# Shortcuts for common ops, over the generic `op`.  Each returns the node's
# output 0 (or its outputs), in the graph of its first input.  Axes and
# shapes are in Weft (row-major) order; see `weft_axis`.

first_output(n::Node) = Output(n, 0)

# Element-wise arithmetic reads like Julia.
Base.:+(a::Output, b::Output) = apply(graph(a), "Add", a, b)
Base.:-(a::Output, b::Output) = apply(graph(a), "Sub", a, b)
Base.:-(a::Output) = apply(graph(a), "Neg", a)
"""Element-wise product (op Mul, broadcasting as NumPy)."""
multiply(a::Output, b::Output; name = "") = apply(graph(a), "Mul", a, b; name = name)
"""Element-wise quotient (op Div)."""
divide(a::Output, b::Output; name = "") = apply(graph(a), "Div", a, b; name = name)
for (f, name) in ((:exp, "Exp"), (:log, "Log"), (:tanh, "Tanh"), (:sqrt, "Sqrt"),
                  (:abs, "Abs"), (:sign, "Sign"))
    @eval Base.$f(x::Output) = apply(graph(x), $name, x)
end

"""`a · b` (op MatMul), rank 2."""
matmul(a::Output, b::Output; transpose_a = false, transpose_b = false, name = "") =
    first_output(op(graph(a), "MatMul", a, b; name = name,
                    transpose_a = transpose_a, transpose_b = transpose_b))
"""`value + bias` along the last Weft axis (op BiasAdd)."""
bias_add(value::Output, bias::Output; name = "") =
    apply(graph(value), "BiasAdd", value, bias; name = name)
relu(x::Output; name = "") = apply(graph(x), "Relu", x; name = name)
sigmoid(x::Output; name = "") = apply(graph(x), "Sigmoid", x; name = name)
"""Softmax over the last Weft axis."""
softmax(x::Output; name = "") = apply(graph(x), "Softmax", x; name = name)
log_softmax(x::Output; name = "") = apply(graph(x), "LogSoftmax", x; name = name)
"""Op Identity (named so to leave `Base.identity` alone)."""
identity_op(x::Output; name = "") = apply(graph(x), "Identity", x; name = name)

# Reductions: `axes` nothing means every axis.
function reduction(op_type, x::Output, axes, keep_dims, name)
    attrs = axes === nothing ? (keep_dims = keep_dims,) :
        (axes = Int64[axes...], keep_dims = keep_dims)
    return first_output(op(graph(x), op_type, x; name = name, attrs...))
end
"""Sum over Weft `axes` (all when `nothing`)."""
reduce_sum(x::Output; axes = nothing, keep_dims = false, name = "") =
    reduction("Sum", x, axes, keep_dims, name)
"""Mean over Weft `axes` (all when `nothing`)."""
reduce_mean(x::Output; axes = nothing, keep_dims = false, name = "") =
    reduction("Mean", x, axes, keep_dims, name)
reduce_max(x::Output; axes = nothing, keep_dims = false, name = "") =
    reduction("Max", x, axes, keep_dims, name)

"""`x` converted to dtype `to` (op Cast)."""
cast(x::Output, to; name = "") = first_output(op(graph(x), "Cast", x; name = name,
                                                  DstT = DType(to)))
"""Index of the largest value along Weft `axis` (op ArgMax)."""
arg_max(x::Output, axis::Integer; output_type = INT64, name = "") =
    first_output(op(graph(x), "ArgMax", x; name = name, axis = axis,
                    output_type = DType(output_type)))
"""Element-wise `a == b` (op Equal, bool output)."""
equal(a::Output, b::Output; name = "") = apply(graph(a), "Equal", a, b; name = name)
"""`x` with Weft shape `shape` (one -1 allowed; op Reshape, no copy)."""
reshape_op(x::Output, shape; name = "") =
    first_output(op(graph(x), "Reshape", x; name = name, shape = Int64[shape...]))
"""`x` with its Weft axes permuted by `perm` (0-based; op Transpose)."""
transpose_op(x::Output, perm; name = "") =
    first_output(op(graph(x), "Transpose", x; name = name, perm = Int64[perm...]))
"""`values` joined along Weft `axis` (op Concat)."""
concat(values::AbstractVector{Output}, axis::Integer; name = "") =
    first_output(op(graph(first(values)), "Concat", values; name = name, axis = axis))
"""One-hot rows of `depth` for integer `indices` (op OneHot)."""
one_hot(indices::Output, depth::Integer; dtype = FLOAT32, name = "") =
    first_output(op(graph(indices), "OneHot", indices; name = name, depth = depth,
                    dtype = DType(dtype)))

"""Writes `value` into the variable `var` when run (op Assign)."""
assign(var::Output, value::Output; name = "") =
    first_output(op(graph(var), "Assign", var, value; name = name))
"""Adds `value` to the variable `var` when run (op AssignAdd)."""
assign_add(var::Output, value::Output; name = "") =
    first_output(op(graph(var), "AssignAdd", var, value; name = name))
"""A NoOp waiting for `control_inputs`: a target that runs them all."""
no_op(g::Graph, control_inputs::AbstractVector{Node}; name = "") =
    op(g, "NoOp"; name = name, control_inputs = control_inputs)

"""Uniform values in [0, 1) of Weft shape `shape`."""
random_uniform(g::Graph, shape; dtype = FLOAT32, seed = 0, seed2 = 0, name = "") =
    first_output(op(g, "RandomUniform"; name = name, shape = Int64[shape...],
                    dtype = DType(dtype), seed = seed, seed2 = seed2))
"""Normal values of Weft shape `shape`."""
random_normal(g::Graph, shape; dtype = FLOAT32, mean = 0.0, stddev = 1.0,
              seed = 0, seed2 = 0, name = "") =
    first_output(op(g, "RandomNormal"; name = name, shape = Int64[shape...],
                    dtype = DType(dtype), mean = Float64(mean),
                    stddev = Float64(stddev), seed = seed, seed2 = seed2))

"""
    sparse_softmax_cross_entropy(logits, labels; name = "") -> Output

Per-example loss of `logits` [B, C] against integer class `labels` [B]
(op SparseSoftmaxCrossEntropyWithLogits, output 0).
"""
sparse_softmax_cross_entropy(logits::Output, labels::Output; name = "") =
    first_output(op(graph(logits), "SparseSoftmaxCrossEntropyWithLogits",
                    logits, labels; name = name))
