# Training: symbolic gradients, optimizers, variables and checkpoints.

"""
    gradients(ys, xs; grad_ys = nothing) -> Vector{Union{Output,Nothing}}

Adds nodes computing d(sum of ys)/d(x) for each x in `xs`.  `grad_ys`:
the gradient flowing into each y (default ones).  An x no y depends on gets
`nothing` (treat as zeros).  Throws a `WeftError` (UNIMPLEMENTED naming the
op) when a path crosses an op without a gradient.
"""
function gradients(ys::AbstractVector{Output}, xs::AbstractVector{Output};
                   grad_ys::Union{AbstractVector{Output},Nothing} = nothing)
    isempty(xs) && return Union{Output,Nothing}[]
    g = graph(first(xs))
    for o in Iterators.flatten((ys, xs, something(grad_ys, Output[])))
        check_graph(g, o.node)
    end
    grad_ys === nothing || length(grad_ys) == length(ys) ||
        throw(ArgumentError("$(length(grad_ys)) grad_ys for $(length(ys)) ys"))
    out = Vector{WeftOutput}(undef, length(xs))
    GC.@preserve g begin
        ys_c = c_outputs(ys)
        xs_c = c_outputs(xs)
        grad_ys_c = grad_ys === nothing ? C_NULL : c_outputs(grad_ys)
        differentiating(g) do
            check(@ccall libweft.weft_gradients(
                g::Ptr{Cvoid}, ys_c::Ptr{WeftOutput}, Int32(length(ys_c))::Int32,
                xs_c::Ptr{WeftOutput}, Int32(length(xs_c))::Int32,
                grad_ys_c::Ptr{WeftOutput}, out::Ptr{WeftOutput})::Ptr{Cvoid})
        end
    end
    return Union{Output,Nothing}[julia_output(g, o) for o in out]
end
gradients(y::Output, xs::AbstractVector{Output}; kwargs...) = gradients([y], xs; kwargs...)
gradients(y::Output, x::Output; kwargs...) = gradients([y], [x]; kwargs...)[1]

"""
    gradient_status(op_type) -> Int

1 when the op has a gradient function, 0 when it is declared not
differentiable, -1 when it has neither.
"""
gradient_status(op_type::AbstractString) =
    Int(@ccall libweft.weft_op_gradient_status(op_type::Cstring)::Int32)

"""Whether `minimize` updates the variable (variables are trainable when made)."""
function set_trainable(variable::Node, trainable::Bool)
    g = graph(variable)
    GC.@preserve g check(@ccall libweft.weft_variable_set_trainable(
        g::Ptr{Cvoid}, variable::Ptr{Cvoid}, Int32(trainable)::Int32)::Ptr{Cvoid})
end
set_trainable(variable::Output, trainable::Bool) = set_trainable(variable.node, trainable)

"""The graph's trainable Variable nodes, in creation order."""
function trainable_variables(g::Graph)
    count = Ref{Int32}(0)
    GC.@preserve g begin
        check(@ccall libweft.weft_graph_trainable_variables(
            g::Ptr{Cvoid}, C_NULL::Ptr{Ptr{Cvoid}}, Int32(0)::Int32,
            count::Ptr{Int32})::Ptr{Cvoid})
        found = fill(C_NULL, Int(count[]))
        check(@ccall libweft.weft_graph_trainable_variables(
            g::Ptr{Cvoid}, found::Ptr{Ptr{Cvoid}}, Int32(length(found))::Int32,
            count::Ptr{Int32})::Ptr{Cvoid})
    end
    return [Node(p, g) for p in found[1:min(length(found), Int(count[]))]]
end

"""
    initialize_all(g; name = "init_all") -> Node

A NoOp that runs the initializer of every variable the graph has now
(optimizer slots included): make it after [`minimize`](@ref) and run it as
a target once.
"""
function initialize_all(g::Graph; name::AbstractString = "init_all")
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve g check(@ccall libweft.weft_graph_initialize_all(
        g::Ptr{Cvoid}, name::Cstring, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return Node(out[], g)
end

"""
    broadcast_variables(g; root = 0, name = "broadcast_variables") -> Node

A NoOp that sets every variable of the graph to rank `root`'s value in the
program's MPI job (see [`cluster_world`](@ref)): run it once after
initializing, so that data-parallel ranks start alike.  Alone it changes
nothing.
"""
function broadcast_variables(g::Graph; root::Integer = 0,
                             name::AbstractString = "broadcast_variables")
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve g check(@ccall libweft.weft_broadcast_variables(
        g::Ptr{Cvoid}, Int32(root)::Int32, name::Cstring,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return Node(out[], g)
end

"""
    cluster_world() -> (rank, size)

This process's rank and the number of ranks of its MPI job: `(0, 1)` unless
started by an MPI launcher (mpirun), when the collective ops (`AllReduce`,
`Broadcast`, `AllGather`) run across the ranks.
"""
function cluster_world()
    rank = Ref{Int32}(0)
    size = Ref{Int32}(1)
    check(@ccall libweft.weft_cluster_world(rank::Ptr{Int32},
                                            size::Ptr{Int32})::Ptr{Cvoid})
    return (Int(rank[]), Int(size[]))
end

"""
    cluster_abort(code)

Ends every process of the program's MPI job at once with exit status `code`
(for a job a dead rank keeps from ending cleanly); throws a `WeftError`
(FAILED_PRECONDITION) in a process not started by an MPI launcher.
"""
cluster_abort(code::Integer) =
    check(@ccall libweft.weft_cluster_abort(Int32(code)::Int32)::Ptr{Cvoid})

const OPTIMIZERS = Dict(:gradient_descent => 0, :sgd => 0, :momentum => 1, :adam => 2)

"""
    minimize(loss; optimizer = :adam, learning_rate = nothing, momentum = nothing,
             use_nesterov = false, beta1 = nothing, beta2 = nothing,
             epsilon = nothing, name = "train") -> Node

Builds the gradients of `loss` with respect to every trainable variable it
depends on, one update per variable (`:gradient_descent`/`:sgd`,
`:momentum` or `:adam`), and a NoOp to run as a target once per step.
Options left `nothing` take the library's defaults (learning rate 0.01,
momentum 0.9, beta1 0.9, beta2 0.999, epsilon 1e-8).  `data_parallel = true`
averages each gradient over the ranks of the program's MPI job before its
update (see `broadcast_variables`); `bucket_bytes` > 0 packs the gradients
into buckets of at most that many bytes, one AllReduce each.
"""
function minimize(loss::Output; optimizer::Symbol = :adam, learning_rate = nothing,
                  momentum = nothing, use_nesterov::Bool = false, beta1 = nothing,
                  beta2 = nothing, epsilon = nothing, data_parallel::Bool = false,
                  bucket_bytes::Integer = 0, name::AbstractString = "train")
    haskey(OPTIMIZERS, optimizer) ||
        throw(ArgumentError("optimizer is one of $(sort(collect(keys(OPTIMIZERS))))"))
    kind = Int32(OPTIMIZERS[optimizer])
    defaults = Ref{OptimizerOptionsC}()
    @ccall libweft.weft_optimizer_options_init_sized(
        defaults::Ptr{OptimizerOptionsC}, sizeof(OptimizerOptionsC)::Csize_t,
        kind::Int32)::Cvoid
    d = defaults[]
    options = Ref(OptimizerOptionsC(
        sizeof(OptimizerOptionsC), kind,
        something(learning_rate, d.learning_rate), something(momentum, d.momentum),
        Int32(use_nesterov), something(beta1, d.beta1), something(beta2, d.beta2),
        something(epsilon, d.epsilon), Int32(data_parallel),
        Int64(bucket_bytes)))
    g = graph(loss)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    differentiating(g) do
        GC.@preserve g check(@ccall libweft.weft_minimize(
            g::Ptr{Cvoid}, WeftOutput(loss)::WeftOutput, options::Ptr{OptimizerOptionsC},
            name::Cstring, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    end
    return Node(out[], g)
end

# NULL with 0 (every variable), or the given Variable nodes.
variable_handles(g::Graph, ::Nothing) = Ptr{Cvoid}[]
function variable_handles(g::Graph, variables)
    handles = Ptr{Cvoid}[]
    for v in variables
        n = v isa Output ? v.node : v
        check_graph(g, n)
        push!(handles, Base.unsafe_convert(Ptr{Cvoid}, n))
    end
    return handles
end

# Calls f(handles, count) with the weft_node* array of `variables` (NULL
# and 0 for `nothing`: every variable), kept alive around the call.
function with_variable_handles(f, s::Session, variables)
    g = s.graph
    GC.@preserve s g begin
        handles = variable_handles(g, variables)
        GC.@preserve handles f(isempty(handles) ? C_NULL : pointer(handles),
                               Int32(length(handles)))
    end
end

"""
    save_checkpoint(session, path; variables = nothing)

Saves the session's values of `variables` (Variable nodes or their outputs;
`nothing`: every initialized variable) to `path`, atomically.
"""
save_checkpoint(s::Session, path::AbstractString; variables = nothing) =
    with_variable_handles(s, variables) do handles, count
        check(@ccall libweft.weft_checkpoint_save(s::Ptr{Cvoid}, path::Cstring,
            handles::Ptr{Ptr{Cvoid}}, count::Int32)::Ptr{Cvoid})
    end

"""
    restore_checkpoint(session, path; variables = nothing)

Restores `variables` (`nothing`: every variable of the graph the file
holds) by name from `path`, initializing them.  Changes nothing unless
every variable restores.
"""
restore_checkpoint(s::Session, path::AbstractString; variables = nothing) =
    with_variable_handles(s, variables) do handles, count
        check(@ccall libweft.weft_checkpoint_restore(s::Ptr{Cvoid}, path::Cstring,
            handles::Ptr{Ptr{Cvoid}}, count::Int32)::Ptr{Cvoid})
    end
