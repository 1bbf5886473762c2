# Sessions: running (parts of) a graph, and what a run did.

const PLACEMENTS = Dict(:soft => 0, :strict => 1)
const TRANSFER_PRECISIONS = Dict(:exact => 0, :bfloat16 => 1, :float16 => 2)
const RECOMPUTES = Dict(:off => 0, :cheap => 1)
"""Bits of `optimizations`: merge identical ops (CSE); memory-aware order;
fuse Conv2D + BiasAdd + Relu."""
const OPTIMIZE_CSE = 0x00000001
const OPTIMIZE_MEMORY_SCHEDULE = 0x00000002
const OPTIMIZE_FUSION = 0x00000004
const OPTIMIZE_ALL = 0xffffffff

"""
    Session(graph; devices = "", inter_op_threads = 0, intra_op_threads = 0,
            placement = :soft, transfer_precision = :exact,
            optimizations = Weft.OPTIMIZE_ALL, device_gflops = "",
            recompute = :off, cluster = "", serving_jobs = "")

Opens a session on `graph`.  `devices`: names or patterns such as
"/device:CPU:0", "CPU" or "/device:OPENCL:*", comma-separated ("" means the
WEFT_DEVICES environment variable, else every device).  Threads: 0 picks
the core count (inter-op threads: 1 when kernels may use several).
`placement`: `:soft` or `:strict` for nodes constrained to
a device without a kernel.  `transfer_precision`: `:exact`, `:bfloat16` or
`:float16` for float32 values crossing devices.  `device_gflops`: compute
estimates ("OPENCL=500,CPU=50").  `recompute`: `:off` (or the
WEFT_RECOMPUTE environment variable) or `:cheap`, to compute cheap values
the gradient reads again in the backward pass instead of keeping them.
`cluster`: under mpirun, the jobs of the MPI job ("ps:1,worker:3", one task
per rank; "worker" is every rank): device constraints may then name tasks
("/job:ps/task:0", see `set_device`), each rank runs its task's nodes and
values crossing tasks go over MPI.  `serving_jobs` (with `cluster`): the
jobs whose tasks serve (`serve`), as parameter servers do, while every
other task runs on its own, at its own pace (asynchronous training).
`close(s)` releases it at once.
"""
mutable struct Session <: Handle
    ptr::Ptr{Cvoid}
    graph::Graph
    function Session(g::Graph; options...)
        out = Ref{Ptr{Cvoid}}(C_NULL)
        with_session_options(; options...) do options_c
            check(@ccall libweft.weft_session_create(
                g::Ptr{Cvoid}, options_c::Ptr{SessionOptionsC},
                out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        end
        return finalizer(release, new(out[], g))
    end
end

# Calls f(options) with a Ref{SessionOptionsC} of the keyword arguments
# Session documents, its strings kept alive for the call (Session and
# load_model).
function with_session_options(f; devices::AbstractString = "",
                              inter_op_threads::Integer = 0,
                              intra_op_threads::Integer = 0,
                              placement::Symbol = :soft,
                              transfer_precision::Symbol = :exact,
                              optimizations::Integer = OPTIMIZE_ALL,
                              device_gflops::AbstractString = "",
                              recompute::Symbol = :off,
                              cluster::AbstractString = "",
                              serving_jobs::AbstractString = "")
    haskey(PLACEMENTS, placement) ||
        throw(ArgumentError("placement is :soft or :strict, not :$placement"))
    haskey(TRANSFER_PRECISIONS, transfer_precision) ||
        throw(ArgumentError("transfer_precision is :exact, :bfloat16 or " *
                            ":float16, not :$transfer_precision"))
    haskey(RECOMPUTES, recompute) ||
        throw(ArgumentError("recompute is :off or :cheap, not :$recompute"))
    devices_c = String(devices)
    gflops_c = String(device_gflops)
    cluster_c = String(cluster)
    serving_c = String(serving_jobs)
    GC.@preserve devices_c gflops_c cluster_c serving_c begin
        options = Ref(SessionOptionsC(
            sizeof(SessionOptionsC),
            isempty(devices_c) ? C_NULL : pointer(devices_c),
            Int32(inter_op_threads), Int32(intra_op_threads),
            Int32(PLACEMENTS[placement]),
            Int32(TRANSFER_PRECISIONS[transfer_precision]),
            UInt32(optimizations),
            isempty(gflops_c) ? C_NULL : pointer(gflops_c),
            Int32(RECOMPUTES[recompute]),
            isempty(cluster_c) ? C_NULL : pointer(cluster_c),
            isempty(serving_c) ? C_NULL : pointer(serving_c)))
        return f(options)
    end
end

"""The library's default session options (for inspection)."""
function default_session_options()
    options = Ref{SessionOptionsC}()
    # The sized form: the library fills exactly the struct this binding
    # declares (the unsized symbol fills only 1.0's fields).
    @ccall libweft.weft_session_options_init_sized(
        options::Ptr{SessionOptionsC}, sizeof(SessionOptionsC)::Csize_t)::Cvoid
    return options[]
end

release(s::Session) =
    @ccall libweft.weft_session_destroy(take_pointer!(s)::Ptr{Cvoid})::Cvoid

"""
    RunMetadata()

What a run did: each node's device and why, the transfers between devices,
the nodes CSE merged and the peak memory per device.  Fill it with
`run(...; metadata = m)`; `string(m)` prints it all.
"""
mutable struct RunMetadata <: Handle
    ptr::Ptr{Cvoid}
    function RunMetadata()
        p = @ccall libweft.weft_run_metadata_create()::Ptr{Cvoid}
        p == C_NULL && throw(OutOfMemoryError())
        return finalizer(release, new(p))
    end
end

release(m::RunMetadata) =
    @ccall libweft.weft_run_metadata_destroy(take_pointer!(m)::Ptr{Cvoid})::Cvoid

# A value to feed: a Tensor as is, anything else through Tensor() (a Julia
# array is shared without a copy).  The second value says whether the
# tensor is a temporary to close after the run.
feed_tensor(v::Tensor) = (v, false)
feed_tensor(v) = (Tensor(v), true)

"""
    run(session, fetches; feeds = (), targets = Node[], metadata = nothing,
        timeout_ms = 0)

Runs what `fetches` and `targets` need.  `fetches`: an `Output` (returns
one `Tensor`), a vector of them (returns a `Vector{Tensor}`) or `nothing`.
`feeds`: pairs or a dictionary `Output => value`, the value a `Tensor` or a
Julia array (shared, not copied).  `targets`: nodes run for their effect.
The returned tensors are owned by the caller (`close` them, or leave them to
the garbage collector).  Safe to call on one session from several tasks or
threads at once.  A run still going after `timeout_ms` milliseconds (0: no
deadline) throws a `WeftError` with code DEADLINE_EXCEEDED; `cancel(session)`
from another task ends runs in flight with CANCELLED.
"""
function Base.run(s::Session, fetches::Union{Output,AbstractVector{Output},Nothing} = nothing;
                  feeds = (), targets = Node[], metadata::Union{RunMetadata,Nothing} = nothing,
                  timeout_ms::Integer = 0)
    timeout_ms >= 0 || throw(ArgumentError("timeout_ms is $timeout_ms"))
    g = s.graph
    fetch_list = fetches === nothing ? Output[] :
        fetches isa Output ? [fetches] : collect(Output, fetches)
    return with_feeds(feeds, Output, identity) do feed_keys, feed_values
        for o in Iterators.flatten((feed_keys, fetch_list))
            check_graph(g, o.node)
        end
        foreach(n -> check_graph(g, n), targets)
        results = run_raw(s, feed_keys, feed_values, fetch_list,
                          collect(Node, targets), metadata, Int64(timeout_ms))
        fetches isa Output ? results[1] : results
    end
end

# Calls f(keys, tensors) with the pairs of `feeds` (key => Tensor or Julia
# array) split apart, each key as key_of(key) in a Vector{K}, and closes the
# tensors made for arrays afterwards (Session and Model runs).
function with_feeds(f, feeds, ::Type{K}, key_of) where {K}
    keys = K[]
    values = Tensor[]
    temporaries = Tensor[]
    try
        for (key, value) in feeds
            tensor, temporary = feed_tensor(value)
            temporary && push!(temporaries, tensor)
            push!(keys, key_of(key))
            push!(values, tensor)
        end
        return f(keys, values)
    finally
        foreach(close, temporaries)
    end
end

# weft_run_options (abi/weft/session.h).
# C: weft_run_options
struct RunOptionsC
    struct_size::Csize_t
    timeout_ms::Int64
    trace_level::Int32
end

"""
    cancel(session) -> Int

Ends every run of `session` in flight on other tasks or threads with a
`WeftError` of code CANCELLED; returns how many runs it reached.
"""
cancel(s::Session) = Int(GC.@preserve s @ccall libweft.weft_session_cancel(
    s::Ptr{Cvoid})::Int32)

"""
    serve(session)

On a serving task of an asynchronous cluster (`Session(g; cluster,
serving_jobs)`): executes this task's part of the other tasks' runs until
each has closed its session.  Initialize what this task holds first, with
runs of its own.  Throws a `WeftError` (UNAVAILABLE) naming tasks that
stopped answering without closing theirs.
"""
serve(s::Session) = GC.@preserve s check(@ccall libweft.weft_session_serve(
    s::Ptr{Cvoid})::Ptr{Cvoid})

function run_raw(s::Session, feed_keys::Vector{Output}, feed_values::Vector{Tensor},
                 fetch_list::Vector{Output}, targets::Vector{Node},
                 metadata::Union{RunMetadata,Nothing}, timeout_ms::Int64 = Int64(0))
    g = s.graph
    out = fill(C_NULL, length(fetch_list))
    GC.@preserve s g feed_values targets metadata begin
        feeds_c = c_outputs(feed_keys)
        values_c = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in feed_values]
        fetches_c = c_outputs(fetch_list)
        targets_c = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, n) for n in targets]
        metadata_c = metadata === nothing ? C_NULL :
            Base.unsafe_convert(Ptr{Cvoid}, metadata)
        options = Ref(RunOptionsC(sizeof(RunOptionsC), timeout_ms, 0))
        check(@ccall libweft.weft_session_run_with_options(
            s::Ptr{Cvoid}, options::Ref{RunOptionsC},
            feeds_c::Ptr{WeftOutput}, values_c::Ptr{Ptr{Cvoid}},
            Int32(length(feeds_c))::Int32, fetches_c::Ptr{WeftOutput},
            Int32(length(fetches_c))::Int32, targets_c::Ptr{Ptr{Cvoid}},
            Int32(length(targets_c))::Int32, out::Ptr{Ptr{Cvoid}},
            metadata_c::Ptr{Cvoid})::Ptr{Cvoid})
    end
    return Tensor[Tensor(p) for p in out]
end

# ---- Reading run metadata ------------------------------------------------------

# [f(i) for i in 0:count-1], with `m` (whose strings f reads) kept alive.
each_entry(f, m::RunMetadata, count::Integer) =
    GC.@preserve m [f(i) for i in Int32(0):Int32(count)-Int32(1)]

"""`placement(m)`: one `(name, op, device, reason)` per node the run needed."""
function placement(m::RunMetadata)
    count = @ccall libweft.weft_run_metadata_num_nodes(m::Ptr{Cvoid})::Int32
    return each_entry(m, count) do i
        (name = c_string(@ccall libweft.weft_run_metadata_node_name(
             m::Ptr{Cvoid}, i::Int32)::Ptr{UInt8}),
         op = c_string(@ccall libweft.weft_run_metadata_node_op(
             m::Ptr{Cvoid}, i::Int32)::Ptr{UInt8}),
         device = c_string(@ccall libweft.weft_run_metadata_node_device(
             m::Ptr{Cvoid}, i::Int32)::Ptr{UInt8}),
         reason = c_string(@ccall libweft.weft_run_metadata_node_reason(
             m::Ptr{Cvoid}, i::Int32)::Ptr{UInt8}))
    end
end

"""The device node `name` ran on, or `nothing` (not needed, fed or merged)."""
device_of(m::RunMetadata, name::AbstractString) = GC.@preserve m c_string(
    @ccall libweft.weft_run_metadata_device_of(m::Ptr{Cvoid}, name::Cstring)::Ptr{UInt8})

"""`transfers(m)`: one `(value, from, to, wire_dtype, bytes)` per Send/Recv pair."""
function transfers(m::RunMetadata)
    count = @ccall libweft.weft_run_metadata_num_transfers(m::Ptr{Cvoid})::Int32
    return each_entry(m, count) do i
        value, src, dst = (Ref{Ptr{UInt8}}(C_NULL) for _ in 1:3)
        wire = Ref{Int32}(0)
        bytes = Ref{UInt64}(0)
        check(@ccall libweft.weft_run_metadata_transfer(
            m::Ptr{Cvoid}, i::Int32, value::Ptr{Ptr{UInt8}}, src::Ptr{Ptr{UInt8}},
            dst::Ptr{Ptr{UInt8}}, wire::Ptr{Int32}, bytes::Ptr{UInt64})::Ptr{Cvoid})
        (value = c_string(value[]), from = c_string(src[]), to = c_string(dst[]),
         wire_dtype = DType(wire[]), bytes = Int(bytes[]))
    end
end

"""`merged(m)`: `removed => kept` for each node CSE merged into another."""
function merged(m::RunMetadata)
    count = @ccall libweft.weft_run_metadata_num_merged(m::Ptr{Cvoid})::Int32
    return each_entry(m, count) do i
        removed, kept = Ref{Ptr{UInt8}}(C_NULL), Ref{Ptr{UInt8}}(C_NULL)
        check(@ccall libweft.weft_run_metadata_merged(
            m::Ptr{Cvoid}, i::Int32, removed::Ptr{Ptr{UInt8}},
            kept::Ptr{Ptr{UInt8}})::Ptr{Cvoid})
        c_string(removed[]) => c_string(kept[])
    end
end

"""`peak_bytes(m)`: device name => the most bytes of values the run held there."""
function peak_bytes(m::RunMetadata)
    count = @ccall libweft.weft_run_metadata_num_devices(m::Ptr{Cvoid})::Int32
    return Dict(each_entry(m, count) do i
        c_string(@ccall libweft.weft_run_metadata_device_name(
            m::Ptr{Cvoid}, i::Int32)::Ptr{UInt8}) =>
        Int(@ccall libweft.weft_run_metadata_peak_bytes(
            m::Ptr{Cvoid}, i::Int32)::UInt64)
    end)
end

Base.string(m::RunMetadata) = GC.@preserve m unsafe_string(
    @ccall libweft.weft_run_metadata_to_string(m::Ptr{Cvoid})::Ptr{UInt8})
Base.show(io::IO, m::RunMetadata) =
    print(io, isopen(m) ? "RunMetadata(\n" * string(m) * ")" : "RunMetadata(closed)")
