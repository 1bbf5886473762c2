# Graphs: nodes, outputs and the generic op builder.

"""
    Graph()

An empty graph, owned by the program.  Nodes are only ever added.
`close(g)` releases the handle (sessions on it keep working); the garbage
collector releases it otherwise.
"""
mutable struct Graph <: Handle
    ptr::Ptr{Cvoid}
    function Graph()
        out = Ref{Ptr{Cvoid}}(C_NULL)
        check(@ccall libweft.weft_graph_create(out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        return finalizer(release, new(out[]))
    end
end

release(g::Graph) =
    @ccall libweft.weft_graph_destroy(take_pointer!(g)::Ptr{Cvoid})::Cvoid

"""A node of a graph (borrowed from it; keeps the `Graph` object alive)."""
struct Node
    ptr::Ptr{Cvoid}
    graph::Graph
end

# The raw weft_node*; callers keep `n.graph` preserved while C uses it.
function Base.unsafe_convert(::Type{Ptr{Cvoid}}, n::Node)
    isopen(n.graph) || throw(ClosedError("Graph"))
    return n.ptr
end

"""`Output(node, index)`: output `index` (0-based, as in Weft) of a node."""
struct Output
    node::Node
    index::Int
end
Output(n::Node) = Output(n, 0)

graph(n::Node) = n.graph
graph(o::Output) = o.node.graph

WeftOutput(o::Output) = WeftOutput(Base.unsafe_convert(Ptr{Cvoid}, o.node),
                                   Int32(o.index))
c_outputs(os) = WeftOutput[WeftOutput(o) for o in os]

# An output C returned; `nothing` for {NULL, i} ("no gradient", no input).
julia_output(g::Graph, o::WeftOutput) =
    o.node == C_NULL ? nothing : Output(Node(o.node, g), Int(o.index))

Base.:(==)(a::Node, b::Node) = a.ptr == b.ptr && a.graph === b.graph
Base.hash(n::Node, h::UInt) = hash(n.ptr, hash(objectid(n.graph), h))

# ---- Inspecting ---------------------------------------------------------------------

"""The node's name."""
Base.nameof(n::Node) = GC.@preserve n unsafe_string(
    @ccall libweft.weft_node_name(n::Ptr{Cvoid})::Ptr{UInt8})
"""The node's op type, e.g. "MatMul"."""
op_type(n::Node) = GC.@preserve n unsafe_string(
    @ccall libweft.weft_node_op_type(n::Ptr{Cvoid})::Ptr{UInt8})
"""The device constraint given at build time ("" when none)."""
device(n::Node) = GC.@preserve n unsafe_string(
    @ccall libweft.weft_node_device(n::Ptr{Cvoid})::Ptr{UInt8})
num_outputs(n::Node) =
    Int(@ccall libweft.weft_node_num_outputs(n::Ptr{Cvoid})::Int32)
num_control_inputs(n::Node) =
    Int(@ccall libweft.weft_node_num_control_inputs(n::Ptr{Cvoid})::Int32)
"""The node's outputs."""
outputs(n::Node) = [Output(n, i) for i in 0:num_outputs(n)-1]

"""The node's data inputs, as the outputs they read."""
function inputs(n::Node)
    count = Int(@ccall libweft.weft_node_num_inputs(n::Ptr{Cvoid})::Int32)
    return [julia_output(n.graph,
                         @ccall libweft.weft_node_input(n::Ptr{Cvoid},
                                                        Int32(i)::Int32)::WeftOutput)
            for i in 0:count-1]
end

"""The node called `name`, or `nothing`."""
function node_by_name(g::Graph, name::AbstractString)
    p = @ccall libweft.weft_graph_node_by_name(g::Ptr{Cvoid}, name::Cstring)::Ptr{Cvoid}
    return p == C_NULL ? nothing : Node(p, g)
end

"""Every node of the graph, in creation order."""
function nodes(g::Graph)
    count = Int(@ccall libweft.weft_graph_node_count(g::Ptr{Cvoid})::Int32)
    return [Node(@ccall(libweft.weft_graph_node_at(g::Ptr{Cvoid},
                                                   Int32(i)::Int32)::Ptr{Cvoid}), g)
            for i in 0:count-1]
end

"""The dtype of an output."""
function dtype(o::Output)
    g = graph(o)
    GC.@preserve g DType(@ccall libweft.weft_output_dtype(
        WeftOutput(o)::WeftOutput)::Int32)
end

"""
    shape(o) -> Union{Vector{Int64}, Nothing}

The inferred shape of an output in Weft order (-1 where unknown);
`nothing` when even the rank is unknown.
"""
function shape(o::Output)
    g = graph(o)
    dims = zeros(Int64, WEFT_MAX_RANK)
    rank = Ref{Int32}(0)
    GC.@preserve g check(@ccall libweft.weft_output_shape(
        WeftOutput(o)::WeftOutput, dims::Ptr{Int64}, Int32(WEFT_MAX_RANK)::Int32,
        rank::Ptr{Int32})::Ptr{Cvoid})
    return rank[] < 0 ? nothing : dims[1:rank[]]
end

const WEFT_MAX_RANK = 32

Base.show(io::IO, n::Node) = isopen(n.graph) ?
    print(io, "Node(", repr(nameof(n)), ", ", op_type(n), ")") :
    print(io, "Node(closed graph)")
Base.show(io::IO, o::Output) = isopen(graph(o)) ?
    print(io, "Output(", repr(nameof(o.node)), ", ", o.index, ")") :
    print(io, "Output(closed graph)")

# ---- Building -------------------------------------------------------------------------

"""
    Shape(dims)

A value for a shape attribute (Placeholder's `shape`), in Weft order;
-1 marks an unknown dimension.  `Shape(nothing)`: unknown rank.
"""
struct Shape
    dims::Union{Vector{Int64},Nothing}
end
Shape(dims::Tuple) = Shape(Int64[dims...])

# One attribute, by the Julia type of its value.
function set_attr!(b::Ptr{Cvoid}, name::String, v::Bool)
    @ccall libweft.weft_op_set_attr_bool(b::Ptr{Cvoid}, name::Cstring,
                                         Int32(v)::Int32)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::Integer)
    @ccall libweft.weft_op_set_attr_int(b::Ptr{Cvoid}, name::Cstring,
                                        Int64(v)::Int64)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::AbstractFloat)
    @ccall libweft.weft_op_set_attr_float(b::Ptr{Cvoid}, name::Cstring,
                                          Float64(v)::Cdouble)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::Union{DType,Type})
    @ccall libweft.weft_op_set_attr_dtype(b::Ptr{Cvoid}, name::Cstring,
                                          Int32(DType(v))::Int32)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::AbstractString)
    @ccall libweft.weft_op_set_attr_string(b::Ptr{Cvoid}, name::Cstring,
                                           v::Cstring)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::AbstractVector{<:Integer})
    values = Int64.(v)
    @ccall libweft.weft_op_set_attr_int_list(b::Ptr{Cvoid}, name::Cstring,
        values::Ptr{Int64}, Int32(length(values))::Int32)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::AbstractVector{<:AbstractFloat})
    values = Float64.(v)
    @ccall libweft.weft_op_set_attr_float_list(b::Ptr{Cvoid}, name::Cstring,
        values::Ptr{Cdouble}, Int32(length(values))::Int32)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::Shape)
    dims = v.dims === nothing ? Int64[] : v.dims
    rank = v.dims === nothing ? -1 : length(dims)
    @ccall libweft.weft_op_set_attr_shape(b::Ptr{Cvoid}, name::Cstring,
        dims::Ptr{Int64}, Int32(rank)::Int32)::Cvoid
end
function set_attr!(b::Ptr{Cvoid}, name::String, v::Tensor)
    @ccall libweft.weft_op_set_attr_tensor(b::Ptr{Cvoid}, name::Cstring,
                                           v::Ptr{Cvoid})::Cvoid
end
# A Julia array as a tensor attribute: copied (the node keeps its own).
function set_attr!(b::Ptr{Cvoid}, name::String, v::AbstractArray)
    t = Tensor(collect(v); copy = true)
    try
        set_attr!(b, name, t)
    finally
        close(t)
    end
end

"""
    op(g, op_type, inputs...; name = "", device = "", control_inputs = [],
       attrs...) -> Node

Adds a node of any op of the library (`weft ops` lists them).  Each input
is an `Output` (a data input) or a vector of `Output`s (a list input, as
Concat's).  Attributes are keyword arguments typed by their value: `Bool`,
`Integer`, `AbstractFloat`, `DType` (or a Julia element type), `String`,
vectors of integers or floats, [`Shape`](@ref), a `Tensor` or an array
(copied).  Attributes speak Weft's axis order.  Every problem is a
`WeftError` naming the node, op and offending dtype or shape.
"""
function op(g::Graph, op_type::AbstractString, inputs...;
            name::AbstractString = "", device::AbstractString = "",
            control_inputs = Node[], attrs...)
    GC.@preserve g inputs control_inputs begin
        b = @ccall libweft.weft_op_begin(g::Ptr{Cvoid}, op_type::Cstring,
                                         name::Cstring)::Ptr{Cvoid}
        node = Ref{Ptr{Cvoid}}(C_NULL)
        try
            for input in inputs
                add_input!(b, g, input)
            end
            for c in control_inputs
                check_graph(g, c)
                @ccall libweft.weft_op_add_control_input(b::Ptr{Cvoid},
                                                         c::Ptr{Cvoid})::Cvoid
            end
            isempty(device) || @ccall libweft.weft_op_set_device(
                b::Ptr{Cvoid}, device::Cstring)::Cvoid
            for (key, value) in attrs
                set_attr!(b, String(key), value)
            end
        catch
            @ccall libweft.weft_op_abandon(b::Ptr{Cvoid})::Cvoid
            rethrow()
        end
        check(@ccall libweft.weft_op_finish(b::Ptr{Cvoid},
                                            node::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        return Node(node[], g)
    end
end

"""
    with_device(f, g::Graph, device::AbstractString)

Runs `f()` with `device` as the constraint of every node it makes that
sets none of its own (`weft_graph_set_device`), as TensorFlow's
`with tf.device(...)`; the scope ends when `f` returns or throws.  In a
cluster session `device` may name a task: `with_device(g, "/job:ps/task:0")
do ... end`.
"""
function with_device(f, g::Graph, device::AbstractString)
    GC.@preserve g begin
        @ccall libweft.weft_graph_set_device(g::Ptr{Cvoid},
                                             device::Cstring)::Cvoid
        try
            return f()
        finally
            @ccall libweft.weft_graph_set_device(g::Ptr{Cvoid},
                                                 C_NULL::Cstring)::Cvoid
        end
    end
end

function check_graph(g::Graph, n::Node)
    n.graph === g || throw(ArgumentError("node $(nameof(n)) is of another graph"))
end

function add_input!(b::Ptr{Cvoid}, g::Graph, o::Output)
    check_graph(g, o.node)
    @ccall libweft.weft_op_add_input(b::Ptr{Cvoid}, WeftOutput(o)::WeftOutput)::Cvoid
end
function add_input!(b::Ptr{Cvoid}, g::Graph, os::AbstractVector{Output})
    foreach(o -> check_graph(g, o.node), os)
    list = c_outputs(os)
    @ccall libweft.weft_op_add_input_list(b::Ptr{Cvoid}, list::Ptr{WeftOutput},
                                          Int32(length(list))::Int32)::Cvoid
end
add_input!(b::Ptr{Cvoid}, g::Graph, n::Node) = add_input!(b, g, Output(n))

# ---- Shortcuts ---------------------------------------------------------------------------

"""
    constant(g, value; name = "") -> Output

A Const node holding `value`: a `Tensor` (Weft takes its own reference), a
Julia array (shared as by `Tensor(A)`: Julia size reversed) or a number.
"""
function constant(g::Graph, value::Tensor; name::AbstractString = "")
    out = Ref{WeftOutput}()
    GC.@preserve g check(@ccall libweft.weft_graph_constant(
        g::Ptr{Cvoid}, name::Cstring, value::Ptr{Cvoid},
        out::Ptr{WeftOutput})::Ptr{Cvoid})
    return julia_output(g, out[])
end
function constant(g::Graph, value::Union{AbstractArray,Number}; name::AbstractString = "")
    t = Tensor(value)
    try
        return constant(g, t; name = name)
    finally
        close(t)
    end
end

"""
    placeholder(g, dtype, shape = nothing; name = "") -> Output

An input fed at run time.  `shape` in Weft order, -1 for an unknown
dimension (the batch); `nothing` for an unknown rank.
"""
function placeholder(g::Graph, dt, shape = nothing; name::AbstractString = "")
    dims = shape === nothing ? Int64[] : Int64[shape...]
    rank = shape === nothing ? -1 : length(dims)
    out = Ref{WeftOutput}()
    GC.@preserve g check(@ccall libweft.weft_graph_placeholder(
        g::Ptr{Cvoid}, name::Cstring, Int32(DType(dt))::Int32, dims::Ptr{Int64},
        Int32(rank)::Int32, out::Ptr{WeftOutput})::Ptr{Cvoid})
    return julia_output(g, out[])
end

"""
    apply(g, op_type, inputs...; name = "") -> Output

A node of an op with only data inputs and default attributes (Add, Relu,
MatMul, ...); its output 0.
"""
function apply(g::Graph, op_type::AbstractString, inputs::Output...;
               name::AbstractString = "")
    foreach(o -> check_graph(g, o.node), inputs)
    list = c_outputs(inputs)
    out = Ref{WeftOutput}()
    GC.@preserve g check(@ccall libweft.weft_graph_apply(
        g::Ptr{Cvoid}, op_type::Cstring, name::Cstring, list::Ptr{WeftOutput},
        Int32(length(list))::Int32, out::Ptr{WeftOutput})::Ptr{Cvoid})
    return julia_output(g, out[])
end

"""
    variable(g, initial_value; name) -> (value::Output, initializer::Node)

A trainable Variable of the dtype and shape of `initial_value` (an
`Output`, a `Tensor` or a Julia array), and the Assign node to run once
before reading it ([`initialize_all`](@ref) runs them all).
"""
function variable(g::Graph, initial::Output; name::AbstractString)
    check_graph(g, initial.node)
    value = Ref{WeftOutput}()
    init = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve g check(@ccall libweft.weft_graph_variable(
        g::Ptr{Cvoid}, name::Cstring, WeftOutput(initial)::WeftOutput,
        value::Ptr{WeftOutput}, init::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return julia_output(g, value[]), Node(init[], g)
end
variable(g::Graph, initial; name::AbstractString) =
    variable(g, constant(g, initial; name = name * "/initial_value"); name = name)
