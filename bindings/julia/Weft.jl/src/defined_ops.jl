# Ops defined from Julia: the schema goes to weft_op_register; the kernel is
# a Julia function over Tensors, run on the CPU devices through
# weft_kernel_register_host; the gradient is a Julia function building the
# inputs' gradients in the graph being differentiated.
#
# Kernels run on the runtime's threads, which Julia adopts for @cfunction
# callbacks from 1.9 on (the same condition as zero-copy tensors): before
# 1.9 `register_op` refuses a kernel.  A Julia exception must not unwind
# through C: each callback returns it as an error status.

# C: weft_op_def
struct OpDefC
    struct_size::Csize_t
    name::Ptr{UInt8}
    summary::Ptr{UInt8}
    inputs::Ptr{Ptr{UInt8}}
    num_inputs::Int32
    outputs::Ptr{Ptr{UInt8}}
    num_outputs::Int32
    attrs::Ptr{Ptr{UInt8}}
    num_attrs::Int32
    stateful::Int32
    shape_fn::Ptr{Cvoid}
    shape_arg::Ptr{Cvoid}
    gradient::Ptr{Cvoid}
    gradient_arg::Ptr{Cvoid}
end

# C: weft_attr_value
struct AttrValueC
    struct_size::Csize_t
    type::Int32
    count::Int32
    i::Int64
    f::Cdouble
    s::Ptr{UInt8}
    ints::Ptr{Int64}
    floats::Ptr{Cdouble}
end

# What an op's callbacks need; kept in DEFINED_OPS for the process (ops are
# never removed, so C may call back at any time).
mutable struct DefinedOp
    name::String
    kernel::Any
    gradient::Any
    shape_like::Vector{Int}
end

const DEFINED_OPS = Dict{String,DefinedOp}()
const DEFINED_LOCK = ReentrantLock()

# Runs f() with `g` as the graph this task differentiates (gradients and
# minimize), for Julia gradient functions.
differentiating(f, g::Graph) = task_local_storage(f, :weft_differentiating, g)
differentiated_graph() = get(task_local_storage(), :weft_differentiating, nothing)

# A Julia exception as a status for C, which destroys it.
function status_for(e)
    code = e isa WeftError ? e.code : UNKNOWN
    message = e isa WeftError ? e.message : sprint(showerror, e)
    return @ccall libweft.weft_status_create(Int32(code)::Int32,
                                             message::Cstring)::Ptr{Cvoid}
end

"""
    KernelCall

One run of a Julia kernel: `kernel_attr(call, name)` reads the node's
attributes.
"""
struct KernelCall
    ptr::Ptr{Cvoid}
end

"""`kernel_attr(call, name)`: the node's int, float, bool, string or list
attribute."""
function kernel_attr(call::KernelCall, name::AbstractString)
    v = Ref(AttrValueC(sizeof(AttrValueC), 0, 0, 0, 0.0, C_NULL, C_NULL, C_NULL))
    check(@ccall libweft.weft_kernel_attr(call.ptr::Ptr{Cvoid}, name::Cstring,
                                          v::Ptr{AttrValueC})::Ptr{Cvoid})
    x = v[]
    x.type == 0 && return x.i
    x.type == 1 && return x.f
    x.type == 2 && return x.i != 0
    x.type == 4 && return unsafe_string(x.s)
    x.type == 5 && return Int64[unsafe_load(x.ints, k) for k in 1:x.count]
    x.type == 6 && return Float64[unsafe_load(x.floats, k) for k in 1:x.count]
    throw(ArgumentError("attribute $name: kind $(x.type) is not read here"))
end

# A new weft_tensor* holding a copy of `t`, for C to own.
function tensor_copy_for_c(t::Tensor)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    shape = weft_shape(t)
    GC.@preserve t shape check(@ccall libweft.weft_tensor_create_copy(
        Int32(dtype(t))::Int32, shape::Ptr{Int64}, Int32(length(shape))::Int32,
        data_pointer(t)::Ptr{Cvoid}, Csize_t(sizeof(t))::Csize_t,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return out[]
end

# weft_host_kernel_fn: the inputs are C's (copied here before use), the
# outputs C's to own.
function host_kernel_callback(arg::Ptr{Cvoid}, call::Ptr{Cvoid},
                              inputs::Ptr{Ptr{Cvoid}}, num_inputs::Int32,
                              outputs::Ptr{Ptr{Cvoid}}, num_outputs::Int32)
    try
        d = unsafe_pointer_to_objref(arg)::DefinedOp
        ins = Tensor[]
        for k in 1:num_inputs
            p = unsafe_load(inputs, k)
            rank = @ccall libweft.weft_tensor_rank(p::Ptr{Cvoid})::Int32
            dims = @ccall libweft.weft_tensor_dims(p::Ptr{Cvoid})::Ptr{Int64}
            bytes = @ccall libweft.weft_tensor_byte_size(p::Ptr{Cvoid})::Csize_t
            dt = @ccall libweft.weft_tensor_dtype(p::Ptr{Cvoid})::Int32
            data = @ccall libweft.weft_tensor_data(p::Ptr{Cvoid})::Ptr{Cvoid}
            out = Ref{Ptr{Cvoid}}(C_NULL)
            check(@ccall libweft.weft_tensor_create_copy(
                dt::Int32, dims::Ptr{Int64}, rank::Int32, data::Ptr{Cvoid},
                bytes::Csize_t, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
            push!(ins, Tensor(out[]))
        end
        result = d.kernel(KernelCall(call), ins...)
        outs = result isa Tensor ? [result] : collect(result)
        length(outs) == num_outputs || throw(ArgumentError(
            "$(d.name): the kernel returned $(length(outs)) tensors for " *
            "$num_outputs outputs"))
        for (k, t) in enumerate(outs)
            unsafe_store!(outputs, tensor_copy_for_c(t), k)
        end
        return C_NULL
    catch e
        return status_for(e)
    end
end

# weft_shape_fn: each output with a rule takes that input's static shape.
function shape_like_callback(arg::Ptr{Cvoid}, ctx::Ptr{Cvoid})
    try
        d = unsafe_pointer_to_objref(arg)::DefinedOp
        for (o, k) in enumerate(d.shape_like)
            k < 0 && continue
            rank = @ccall libweft.weft_shape_input_rank(ctx::Ptr{Cvoid},
                                                        Int32(k)::Int32)::Int32
            dims = Int64[@ccall(libweft.weft_shape_input_dim(
                ctx::Ptr{Cvoid}, Int32(k)::Int32, Int32(a)::Int32)::Int64)
                for a in 0:rank-1]
            # A refusal becomes a WeftError, and the catch below its status.
            check(@ccall libweft.weft_shape_set_output(
                ctx::Ptr{Cvoid}, Int32(o - 1)::Int32, dims::Ptr{Int64},
                rank::Int32)::Ptr{Cvoid})
        end
        return C_NULL
    catch e
        return status_for(e)
    end
end

# weft_gradient_fn: the Julia gradient gets (graph, node inputs, output
# gradients) and returns one Output (or nothing) per input.
function gradient_callback(arg::Ptr{Cvoid}, ctx::Ptr{Cvoid})
    try
        d = unsafe_pointer_to_objref(arg)::DefinedOp
        g = differentiated_graph()
        g === nothing && throw(ArgumentError(
            "$(d.name): a Julia gradient runs only inside gradients or minimize"))
        node = Node(@ccall(libweft.weft_gradient_node(ctx::Ptr{Cvoid})::Ptr{Cvoid}), g)
        dys = Union{Output,Nothing}[]
        for o in 0:num_outputs(node)-1
            dy = @ccall libweft.weft_gradient_output_grad(ctx::Ptr{Cvoid},
                                                          Int32(o)::Int32)::WeftOutput
            push!(dys, dy.node == C_NULL ? nothing : julia_output(g, dy))
        end
        dxs = d.gradient(g, inputs(node), dys)
        length(dxs) == length(inputs(node)) || throw(ArgumentError(
            "$(d.name): the gradient returned $(length(dxs)) values for " *
            "$(length(inputs(node))) inputs"))
        for (k, dx) in enumerate(dxs)
            dx === nothing && continue
            GC.@preserve g check(@ccall libweft.weft_gradient_set_input_grad(
                ctx::Ptr{Cvoid}, Int32(k - 1)::Int32,
                WeftOutput(dx)::WeftOutput)::Ptr{Cvoid})
        end
        return C_NULL
    catch e
        return status_for(e)
    end
end

"""
    register_op(name; inputs, outputs, attrs = String[], summary = "",
                stateful = false, shape_like = nothing, kernel = nothing,
                gradient = nothing)

Defines op `name` ("Namespace>Name") for the process.  `inputs`,
`outputs` and `attrs` are the C API's schema strings ("x: T",
"T: {float32, float64}", "scale: float = 1.0").  `shape_like[i]`: the
input (0-based) whose static shape output i has, or -1 (default: every
output like input 0 when there is one).  `kernel(call, inputs...)` returns
a Tensor (or one per output) computed from the input Tensors on the CPU;
`kernel_attr(call, name)` reads attributes.  `gradient(graph, inputs, dys)` returns
one Output (or `nothing`) per input.  Throws a WeftError when the schema is
refused (see weft_op_register).
"""
function register_op(name::AbstractString; inputs, outputs, attrs = String[],
                     summary::AbstractString = "", stateful::Bool = false,
                     shape_like = nothing, kernel = nothing, gradient = nothing)
    kernel === nothing || zero_copy_supported() || throw(ArgumentError(
        "Julia kernels run on Weft's threads, which Julia adopts from 1.9 on"))
    like = shape_like === nothing ?
        fill(isempty(inputs) ? -1 : 0, length(outputs)) : collect(Int, shape_like)
    length(like) == length(outputs) ||
        throw(ArgumentError("one shape_like entry per output"))
    d = DefinedOp(String(name), kernel, gradient, like)
    strings = [String(s) for s in Iterators.flatten((inputs, outputs, attrs))]
    n_in, n_out = length(inputs), length(outputs)
    lock(DEFINED_LOCK) do
        GC.@preserve strings begin
        # Valid while `strings` is preserved (the outer block).
        ptrs = Ptr{UInt8}[]
        for str in strings
            GC.@preserve str push!(ptrs, pointer(str))
        end
        GC.@preserve d ptrs name summary begin
            arg = pointer_from_objref(d)
            # C: weft_shape_fn
            shape_c = @cfunction(shape_like_callback, Ptr{Cvoid},
                                 (Ptr{Cvoid}, Ptr{Cvoid}))
            # C: weft_gradient_fn
            gradient_c = @cfunction(gradient_callback, Ptr{Cvoid},
                                    (Ptr{Cvoid}, Ptr{Cvoid}))
            def = Ref(OpDefC(sizeof(OpDefC), pointer(name), pointer(summary),
                             pointer(ptrs), Int32(n_in), pointer(ptrs, n_in + 1),
                             Int32(n_out), pointer(ptrs, n_in + n_out + 1),
                             Int32(length(attrs)), Int32(stateful), shape_c, arg,
                             gradient === nothing ? C_NULL : gradient_c, arg))
            check(@ccall libweft.weft_op_register(def::Ptr{OpDefC})::Ptr{Cvoid})
            # Rooted before C can call back with `arg`.
            DEFINED_OPS[String(name)] = d
            if kernel !== nothing
                # C: weft_host_kernel_fn
                kernel_c = @cfunction(host_kernel_callback, Ptr{Cvoid},
                                      (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, Int32,
                                       Ptr{Ptr{Cvoid}}, Int32))
                check(@ccall libweft.weft_kernel_register_host(
                    name::Cstring, kernel_c::Ptr{Cvoid}, arg::Ptr{Cvoid})::Ptr{Cvoid})
            end
        end
        end
    end
    return nothing
end
