"""
    Weft

Julia binding of Weft, a dataflow runtime for machine learning, over its C
API (`abi/weft/weft.h`).  Build a [`Graph`](@ref), open a [`Session`](@ref)
on it and `run` it with feeds and fetches.

Layout: a Weft tensor is row-major, a Julia array column-major.  A Weft
tensor of shape `(a, b, c)` is shared, without a copy, as a Julia array of
size `(c, b, a)` over the same memory.  Graph building (attributes such as
`axes`, `perm`, `shape`) speaks Weft's order; [`julia_dims`](@ref),
[`weft_dims`](@ref), [`julia_axis`](@ref) and [`weft_axis`](@ref)
translate, and [`to_row_major`](@ref) / [`from_row_major`](@ref) copy to
the other order when a program wants the same indices on both sides.

The library is `libweft.so.1`, or the file named by the environment
variable `WEFT_LIBRARY` (read when the package is loaded).
"""
module Weft

using Libdl
import Random: shuffle

export WeftError, DType, BFloat16,
    Tensor, TensorArray, array, dtype, weft_shape, julia_dims, weft_dims,
    julia_axis, weft_axis, to_row_major, from_row_major, zero_copy_supported,
    Graph, Node, Output, Shape, op, outputs, constant, placeholder, variable,
    apply, node_by_name, nodes, op_type, device, inputs, num_outputs, shape,
    with_device,
    matmul, bias_add, relu, sigmoid, softmax, log_softmax, identity_op,
    multiply, divide, reduce_sum, reduce_mean, reduce_max, cast, arg_max,
    equal, reshape_op, transpose_op, concat, one_hot, assign, assign_add,
    no_op, random_uniform, random_normal, sparse_softmax_cross_entropy,
    Session, RunMetadata, cancel, serve, placement, transfers, merged, peak_bytes, device_of,
    gradients, minimize, initialize_all, trainable_variables, set_trainable,
    broadcast_variables, cluster_world, cluster_abort,
    gradient_status, save_checkpoint, restore_checkpoint,
    devices, plugins, plugin_refusals, plugin_shadowed, load_plugin,
    op_descriptions, kernels,
    version_string, abi_version, cond, while_loop, ControlFlowError,
    register_op, KernelCall, kernel_attr,
    Model, Signature, load_model, save_model, export_onnx, signatures,
    input_keys, output_keys,
    Dataset, tensor_slices, range_dataset, tfrecord_dataset, text_line_dataset,
    idx_dataset, fixed_length_record_dataset, map_graph, filter_graph, shuffle,
    batch, padded_batch, take, prefetch, iterator, num_components,
    component_dtypes, write_tfrecord, QueueRunner, runner_error, stop,
    SummaryWriter, event_file, add_scalar, add_histogram, add_image, add_text,
    add_summary, add_graph, add_restart, flush_summaries

include("capi.jl")
include("bfloat16.jl")
include("tensor.jl")
include("graph.jl")
include("ops.jl")
include("session.jl")
include("train.jl")
include("control.jl")
include("devices.jl")
include("defined_ops.jl")
include("model.jl")
include("dataset.jl")
include("queue_runner.jl")
include("summary.jl")

function __init__()
    load_library()
    init_deleter()
end

end # module
