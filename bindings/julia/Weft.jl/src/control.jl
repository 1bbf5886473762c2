# Control flow: weft_cond and weft_while_loop built from Julia closures.
#
# The C builder calls back on the calling thread while it runs.  A closure
# cannot be handed to C as a function pointer portably (closure
# `@cfunction`s need trampolines some platforms lack), so fixed C-callable
# functions receive the `user` pointer, an object holding the closures, and
# call them.  A Julia exception must not unwind through the C frames: the
# callback keeps it, returns an error status (which the builder returns
# naming the branch or loop), and the builder's WeftError is then thrown as a
# ControlFlowError carrying the closure's exception.

"""
    ControlFlowError(error, cause)

A `cond` or `while_loop` build ended by an exception of one of its
closures: `error` is the builder's [`WeftError`](@ref) (it names the branch
or loop; its code is the closure's when that threw a `WeftError`, else
UNKNOWN), `cause` the closure's exception.
"""
struct ControlFlowError <: Exception
    error::WeftError
    cause::Any
end

function Base.showerror(io::IO, e::ControlFlowError)
    showerror(io, e.error)
    print(io, "\ncaused by: ")
    showerror(io, e.cause)
end

# What one builder call's callbacks need.
mutable struct ControlCall
    graph::Graph
    then_fn::Any
    else_fn::Any
    cond_fn::Any
    body_fn::Any
    failure::Any
end

# Keeps the closure's exception and makes the status C returns from the
# callback; C owns (and destroys) it.
function callback_failure(call::ControlCall, e)
    call.failure === nothing && (call.failure = e)
    code = e isa WeftError ? e.code : UNKNOWN
    message = e isa WeftError ? e.message : sprint(showerror, e)
    # The status goes to C, which destroys it: not into check().
    return @ccall libweft.weft_status_create(Int32(code)::Int32,
                                             message::Cstring)::Ptr{Cvoid}
end

# Writes a closure's outputs (one Output or a collection) to C's array.
function store_outputs(call::ControlCall, result, out::Ptr{WeftOutput},
                       n::Integer, what::String)
    outs = result isa Output ? [result] : collect(result)
    length(outs) == n || throw(ArgumentError(
        "the $what returned $(length(outs)) outputs, expected $n"))
    for (i, o) in enumerate(outs)
        o isa Output || throw(ArgumentError(
            "the $what's output $(i - 1) is a $(typeof(o)), not an Output"))
        check_graph(call.graph, o.node)
        unsafe_store!(out, WeftOutput(o), i)
    end
    return C_NULL
end

function run_branch(user::Ptr{Cvoid}, out::Ptr{WeftOutput}, n::Int32,
                    taken::Bool)
    call = unsafe_pointer_to_objref(user)::ControlCall
    try
        return store_outputs(call, (taken ? call.then_fn : call.else_fn)(),
                             out, n, "branch")
    catch e
        return callback_failure(call, e)
    end
end

then_callback(g::Ptr{Cvoid}, user::Ptr{Cvoid}, out::Ptr{WeftOutput}, n::Int32) =
    run_branch(user, out, n, true)
else_callback(g::Ptr{Cvoid}, user::Ptr{Cvoid}, out::Ptr{WeftOutput}, n::Int32) =
    run_branch(user, out, n, false)

loop_vars(call::ControlCall, vars::Ptr{WeftOutput}, n::Int32) =
    Output[julia_output(call.graph, unsafe_load(vars, i)) for i in 1:n]

function run_loop(user::Ptr{Cvoid}, vars::Ptr{WeftOutput}, n::Int32,
                  out::Ptr{WeftOutput}, is_body::Bool)
    call = unsafe_pointer_to_objref(user)::ControlCall
    try
        fn = is_body ? call.body_fn : call.cond_fn
        return store_outputs(call, fn(loop_vars(call, vars, n)...), out,
                             is_body ? n : 1,
                             is_body ? "loop body" : "loop condition")
    catch e
        return callback_failure(call, e)
    end
end

loop_cond_callback(g::Ptr{Cvoid}, user::Ptr{Cvoid}, vars::Ptr{WeftOutput},
                   n::Int32, pred::Ptr{WeftOutput}) =
    run_loop(user, vars, n, pred, false)
loop_body_callback(g::Ptr{Cvoid}, user::Ptr{Cvoid}, vars::Ptr{WeftOutput},
                   n::Int32, next::Ptr{WeftOutput}) =
    run_loop(user, vars, n, next, true)

# Runs a builder call (a closure doing the @ccall into check), turning a
# failure a closure caused into a ControlFlowError.
function with_callbacks(build, call::ControlCall)
    try
        GC.@preserve call build(pointer_from_objref(call))
    catch e
        (e isa WeftError && call.failure !== nothing) || rethrow()
        throw(ControlFlowError(e, call.failure))
    end
end

"""
    cond(pred, then_fn, else_fn; num_outputs = 1, name = "") -> Output or Vector{Output}

`pred ? then_fn() : else_fn()` built into the graph: only the taken branch
runs.  `pred` is a bool scalar; each closure returns an `Output` (or
`num_outputs` of them, of matching dtypes).  The closures run during the
call; values from outside a branch that it reads are brought in
automatically (see `weft/control.h`).  A closure's exception becomes a
[`ControlFlowError`](@ref); nodes added before the failure stay, unused.
"""
function cond(pred::Output, then_fn, else_fn; num_outputs::Integer = 1,
              name::AbstractString = "")
    g = graph(pred)
    num_outputs >= 1 || throw(ArgumentError("num_outputs must be >= 1"))
    call = ControlCall(g, then_fn, else_fn, nothing, nothing, nothing)
    out = Vector{WeftOutput}(undef, num_outputs)
    # C: weft_branch_fn
    then_c = @cfunction(then_callback, Ptr{Cvoid},
                        (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{WeftOutput}, Int32))
    # C: weft_branch_fn
    else_c = @cfunction(else_callback, Ptr{Cvoid},
                        (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{WeftOutput}, Int32))
    name_c = isempty(name) ? C_NULL : String(name)
    with_callbacks(call) do user
        GC.@preserve g pred name_c check(@ccall libweft.weft_cond(
            g::Ptr{Cvoid}, name_c::Cstring, WeftOutput(pred)::WeftOutput,
            then_c::Ptr{Cvoid}, else_c::Ptr{Cvoid}, user::Ptr{Cvoid},
            Int32(num_outputs)::Int32, out::Ptr{WeftOutput})::Ptr{Cvoid})
    end
    outs = Output[julia_output(g, o) for o in out]
    return num_outputs == 1 ? outs[1] : outs
end

"""
    while_loop(cond_fn, body_fn, vars; name = "", parallel_iterations = 0,
               maximum_iterations = 0, shape_invariants = nothing) -> Vector{Output}

`while cond_fn(vars...) vars = body_fn(vars...)` built into the graph as one
loop that runs inside a session run; returns the final values.  `cond_fn`
returns a bool scalar `Output`, `body_fn` one `Output` per variable.
`parallel_iterations` (0: 10) iterations may overlap; a
`maximum_iterations` above 0 stops the loop after that many;
`shape_invariants`, one [`Shape`](@ref) per variable, lets a variable's
shape change across iterations.  Errors as for [`cond`](@ref).
"""
function while_loop(cond_fn, body_fn, vars::AbstractVector{Output};
                    name::AbstractString = "", parallel_iterations::Integer = 0,
                    maximum_iterations::Integer = 0,
                    shape_invariants::Union{AbstractVector{Shape},Nothing} = nothing)
    isempty(vars) && throw(ArgumentError("while_loop needs a loop variable"))
    g = graph(first(vars))
    foreach(v -> check_graph(g, v.node), vars)
    shape_invariants === nothing || length(shape_invariants) == length(vars) ||
        throw(ArgumentError("$(length(shape_invariants)) shape invariants for " *
                            "$(length(vars)) loop variables"))
    call = ControlCall(g, nothing, nothing, cond_fn, body_fn, nothing)
    out = Vector{WeftOutput}(undef, length(vars))
    # C: weft_loop_cond_fn
    cond_c = @cfunction(loop_cond_callback, Ptr{Cvoid},
                        (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{WeftOutput}, Int32,
                         Ptr{WeftOutput}))
    # C: weft_loop_body_fn
    body_c = @cfunction(loop_body_callback, Ptr{Cvoid},
                        (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{WeftOutput}, Int32,
                         Ptr{WeftOutput}))
    # Every invariant's dims in one array, each ShapeC pointing into it.
    invariants = something(shape_invariants, Shape[])
    flat = Int64[d for s in invariants for d in something(s.dims, Int64[])]
    starts = cumsum([0; [length(something(s.dims, Int64[])) for s in invariants]])
    name_c = String(name)
    with_callbacks(call) do user
        GC.@preserve g vars flat name_c begin
            shapes = [ShapeC(s.dims === nothing ? Int32(-1) : Int32(length(s.dims)),
                             pointer(flat) + sizeof(Int64) * starts[i])
                      for (i, s) in enumerate(invariants)]
            GC.@preserve shapes begin
                options = Ref(WhileOptionsC(
                    sizeof(WhileOptionsC),
                    isempty(name_c) ? C_NULL : pointer(name_c),
                    Int32(parallel_iterations), Int64(maximum_iterations),
                    isempty(shapes) ? C_NULL : pointer(shapes)))
                vars_c = c_outputs(vars)
                check(@ccall libweft.weft_while_loop(
                    g::Ptr{Cvoid}, cond_c::Ptr{Cvoid}, body_c::Ptr{Cvoid},
                    user::Ptr{Cvoid}, vars_c::Ptr{WeftOutput},
                    Int32(length(vars_c))::Int32,
                    options::Ptr{WhileOptionsC}, out::Ptr{WeftOutput})::Ptr{Cvoid})
            end
        end
    end
    return Output[julia_output(g, o) for o in out]
end
