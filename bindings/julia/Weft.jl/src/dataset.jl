# Input pipelines (weft/dataset.h).
#
# A dataset is an immutable description of a stream of elements, each a
# tuple of tensors (its components), read inside a graph through an
# IteratorGetNext node.  Every function returns a new Dataset and leaves its
# input usable; the C objects share what they describe, so closing one
# never affects the datasets made from it or the graphs that read it.
#
# weft_dataset_interleave is not bound: its `make` callback runs on Weft's
# pipeline threads while the Julia thread that runs the session waits
# inside a ccall, outside any GC-safe region, so a collection the callback
# triggers would wait for that thread forever.

"""
    Dataset

An input pipeline: a source ([`tensor_slices`](@ref),
[`range_dataset`](@ref), [`tfrecord_dataset`](@ref),
[`text_line_dataset`](@ref), [`idx_dataset`](@ref),
[`fixed_length_record_dataset`](@ref)) followed by transformations
(`map`, `filter`, `zip`, [`shuffle`](@ref), [`batch`](@ref),
[`padded_batch`](@ref), `repeat`, [`take`](@ref), `skip`,
[`prefetch`](@ref)), read in a graph through [`iterator`](@ref):

```julia
ds = prefetch(batch(shuffle(tensor_slices(images, labels), 10_000; seed = 42), 32;
                    drop_remainder = true), 2)
it = iterator(ds, g; name = "train")   # it.components, it.init
```

A refused argument throws a `WeftError` when the dataset is made; errors of
the data (a missing file, a bad record, a map function that fails) come
from the run that reads the element, naming the dataset
("Batch(Map(TFRecord))").  `close(d)` releases the handle at once.
"""
mutable struct Dataset <: Handle
    ptr::Ptr{Cvoid}
    # Takes ownership of a weft_dataset*.
    function Dataset(ptr::Ptr{Cvoid})
        ptr == C_NULL && throw(ArgumentError("NULL dataset"))
        return finalizer(release, new(ptr))
    end
end

release(d::Dataset) =
    @ccall libweft.weft_dataset_destroy(take_pointer!(d)::Ptr{Cvoid})::Cvoid

"""Number of components of each element."""
num_components(d::Dataset) =
    Int(@ccall libweft.weft_dataset_num_components(d::Ptr{Cvoid})::Int32)

"""The dtype of each component, in order."""
component_dtypes(d::Dataset) =
    [DType(@ccall libweft.weft_dataset_component_dtype(d::Ptr{Cvoid},
                                                       Int32(i)::Int32)::Int32)
     for i in 0:num_components(d)-1]

"""What the dataset is made of, such as "Batch(Map(TFRecord))"."""
Base.nameof(d::Dataset) = GC.@preserve d unsafe_string(
    @ccall libweft.weft_dataset_name(d::Ptr{Cvoid})::Ptr{UInt8})

Base.show(io::IO, d::Dataset) =
    print(io, isopen(d) ? "Dataset($(nameof(d)))" : "Dataset(closed)")

# The new dataset a C function made through `out` (a Ref{Ptr{Cvoid}}).
made(out::Ref{Ptr{Cvoid}}) = Dataset(out[])

# ---- Sources ---------------------------------------------------------------------

"""
    tensor_slices(components...) -> Dataset

Element i is slice i, along Weft dimension 0, of every component: a
`Tensor` or a Julia array.  A Julia array's Weft dimension 0 is its *last*
dimension (the layout is shared, sizes reversed): `tensor_slices(X)` with
`size(X) == (784, 60000)` gives 60000 elements of Weft shape `[784]`.  The
values are copied.
"""
function tensor_slices(components...)
    isempty(components) && throw(ArgumentError("tensor_slices needs a component"))
    tensors = Tensor[]
    temporaries = Tensor[]
    try
        for c in components
            tensor, temporary = feed_tensor(c)
            temporary && push!(temporaries, tensor)
            push!(tensors, tensor)
        end
        out = Ref{Ptr{Cvoid}}(C_NULL)
        GC.@preserve tensors begin
            handles = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in tensors]
            check(@ccall libweft.weft_dataset_from_tensor_slices(
                handles::Ptr{Ptr{Cvoid}}, Int32(length(handles))::Int32,
                out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        end
        return made(out)
    finally
        foreach(close, temporaries)
    end
end

"""
    range_dataset(start, stop, step = 1) -> Dataset
    range_dataset(r::AbstractRange{<:Integer}) -> Dataset

Int64 scalars `start, start + step, ...` up to, *not* including, `stop` (as
the C API counts); a Julia range gives its own elements (`range_dataset(0:9)`
is 0 to 9).
"""
function range_dataset(start::Integer, stop::Integer, step::Integer = 1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_range(
        Int64(start)::Int64, Int64(stop)::Int64, Int64(step)::Int64,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end
range_dataset(r::AbstractRange{<:Integer}) =
    isempty(r) ? range_dataset(first(r), first(r), 1) :
    range_dataset(first(r), last(r) + step(r), step(r))

# Calls f(pointers) with C strings of `paths`, kept alive for the call.
function with_paths(f, paths)
    strings = String[String(p) for p in paths]
    GC.@preserve strings begin
        pointers = string_pointers(strings)
        GC.@preserve pointers f(pointers)
    end
end

"""
    tfrecord_dataset(paths...; compression = "") -> Dataset

The records of TFRecord files, in order, as UInt8 vectors; `compression`
"", "GZIP" or "ZLIB".  A bad checksum is a `WeftError` DATA_LOSS naming the
file and the record's offset.
"""
function tfrecord_dataset(paths::AbstractString...; compression::AbstractString = "")
    compression_c = String(compression)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    with_paths(paths) do pointers
        check(@ccall libweft.weft_dataset_tfrecord(
            pointers::Ptr{Ptr{UInt8}}, Int32(length(pointers))::Int32,
            compression_c::Cstring, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    end
    return made(out)
end

"""
    text_line_dataset(paths...) -> Dataset

The lines of text files (without line ends) as UInt8 vectors.
"""
function text_line_dataset(paths::AbstractString...)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    with_paths(paths) do pointers
        check(@ccall libweft.weft_dataset_text_lines(
            pointers::Ptr{Ptr{UInt8}}, Int32(length(pointers))::Int32,
            out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    end
    return made(out)
end

"""
    idx_dataset(path) -> Dataset

The slices along dimension 0 of an IDX file (gzip-compressed or not), the
format of MNIST; its header is read now.
"""
function idx_dataset(path::AbstractString)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_idx(path::Cstring,
                                          out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""
    fixed_length_record_dataset(paths...; record_bytes, header_bytes = 0,
                                footer_bytes = 0, compression = "") -> Dataset

The records of files of fixed-size records (CIFAR-10's files, raw arrays),
in order, as UInt8 vectors of `record_bytes`: each file is `header_bytes`,
its records, then `footer_bytes`; `compression` ("", "GZIP", "ZLIB")
compresses the whole file.  A file whose records do not fill it is a
`WeftError` DATA_LOSS naming the file and the partial record's offset.
"""
function fixed_length_record_dataset(paths::AbstractString...; record_bytes::Integer,
                                     header_bytes::Integer = 0,
                                     footer_bytes::Integer = 0,
                                     compression::AbstractString = "")
    compression_c = String(compression)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    with_paths(paths) do pointers
        check(@ccall libweft.weft_dataset_fixed_length_records(
            pointers::Ptr{Ptr{UInt8}}, Int32(length(pointers))::Int32,
            Int64(header_bytes)::Int64, Int64(record_bytes)::Int64,
            Int64(footer_bytes)::Int64, compression_c::Cstring,
            out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    end
    return made(out)
end

# ---- Transformations ---------------------------------------------------------------

"""
    zip(datasets::Dataset...) -> Dataset

Elements side by side: element i has the components of every input's
element i, in order; it ends with the shortest input.
"""
function Base.zip(d::Dataset, more::Dataset...)
    inputs = Dataset[d, more...]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve inputs begin
        handles = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, d) for d in inputs]
        check(@ccall libweft.weft_dataset_zip(
            handles::Ptr{Ptr{Cvoid}}, Int32(length(handles))::Int32,
            out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    end
    return made(out)
end

function check_function_graph(fn::Graph, outputs)
    for o in outputs
        check_graph(fn, o.node)
    end
end

"""
    map_graph(d, fn, inputs, outputs; num_parallel_calls = 1) -> Dataset

Each element through the function graph `fn`: `inputs` are Placeholders of
`fn` (one per component, of its dtype), `outputs` the new element's
components.  Up to `num_parallel_calls` (1 to 64) elements are mapped at
once, in order.  The dataset keeps what it needs: `fn` may be closed
afterwards.  `map(f, d)` builds `fn` from a function.
"""
function map_graph(d::Dataset, fn::Graph, inputs::AbstractVector{Output},
                   outputs::AbstractVector{Output}; num_parallel_calls::Integer = 1)
    check_function_graph(fn, inputs)
    check_function_graph(fn, outputs)
    inputs_c = c_outputs(inputs)
    outputs_c = c_outputs(outputs)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve d fn check(@ccall libweft.weft_dataset_map(
        d::Ptr{Cvoid}, fn::Ptr{Cvoid}, inputs_c::Ptr{WeftOutput},
        Int32(length(inputs_c))::Int32, outputs_c::Ptr{WeftOutput},
        Int32(length(outputs_c))::Int32, Int32(num_parallel_calls)::Int32,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""
    filter_graph(d, fn, inputs, predicate) -> Dataset

The elements for which `predicate`, a Bool scalar of the function graph
`fn`, is true; `inputs` as for [`map_graph`](@ref).
"""
function filter_graph(d::Dataset, fn::Graph, inputs::AbstractVector{Output},
                      predicate::Output)
    check_function_graph(fn, inputs)
    check_function_graph(fn, (predicate,))
    inputs_c = c_outputs(inputs)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve d fn check(@ccall libweft.weft_dataset_filter(
        d::Ptr{Cvoid}, fn::Ptr{Cvoid}, inputs_c::Ptr{WeftOutput},
        Int32(length(inputs_c))::Int32, WeftOutput(predicate)::WeftOutput,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

# Calls build(fn, placeholders) on a new function graph with one
# Placeholder per component (its shape unknown: the C API does not say the
# components' shapes), closing the graph afterwards.
function with_function_graph(build, d::Dataset)
    fn = Graph()
    try
        inputs = Output[placeholder(fn, t; name = "component_$(i - 1)")
                        for (i, t) in enumerate(component_dtypes(d))]
        return build(fn, inputs)
    finally
        close(fn)
    end
end

"""
    map(f, d::Dataset; num_parallel_calls = 1) -> Dataset

Each element through `f`, called once now with one Placeholder `Output`
per component (of its dtype, shape unknown) to build the function graph;
it returns an `Output` or a collection of them, the new components:
`map(x -> x + x, range_dataset(0, 10))`.
"""
function Base.map(f, d::Dataset; num_parallel_calls::Integer = 1)
    with_function_graph(d) do fn, inputs
        result = f(inputs...)
        outputs = result isa Output ? Output[result] : collect(Output, result)
        return map_graph(d, fn, inputs, outputs; num_parallel_calls = num_parallel_calls)
    end
end

"""
    filter(f, d::Dataset) -> Dataset

The elements for which the Bool scalar `f(components...)` is true; `f`
builds it once, as for `map`.
"""
Base.filter(f, d::Dataset) =
    with_function_graph(d) do fn, inputs
        filter_graph(d, fn, inputs, f(inputs...))
    end

"""
    shuffle(d::Dataset, buffer_size; seed) -> Dataset

Elements drawn at random from a buffer of `buffer_size`; each pass
shuffles differently, and the same way for the same `seed`.  (A method of
`Random.shuffle`, so that `using Random` beside `using Weft` is no clash.)
"""
function shuffle(d::Dataset, buffer_size::Integer; seed::Integer)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_shuffle(
        d::Ptr{Cvoid}, Int64(buffer_size)::Int64, Int64(seed)::Int64,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""
    batch(d, batch_size; drop_remainder = false) -> Dataset

`batch_size` elements stacked along a new Weft dimension 0 (the *last*
Julia dimension); the last batch may be smaller unless `drop_remainder`.
Elements must agree in shape.
"""
function batch(d::Dataset, batch_size::Integer; drop_remainder::Bool = false)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_batch(
        d::Ptr{Cvoid}, Int64(batch_size)::Int64, Int32(drop_remainder)::Int32,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""
    padded_batch(d, batch_size; drop_remainder = false) -> Dataset

As [`batch`](@ref), padding each batch with zeros to its largest element
in every dimension.
"""
function padded_batch(d::Dataset, batch_size::Integer; drop_remainder::Bool = false)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_padded_batch(
        d::Ptr{Cvoid}, Int64(batch_size)::Int64, Int32(drop_remainder)::Int32,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""`repeat(d, count = -1)`: the elements `count` times over (-1: forever;
an empty input stays empty)."""
function Base.repeat(d::Dataset, count::Integer = -1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_repeat(
        d::Ptr{Cvoid}, Int64(count)::Int64, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""`take(d, count)`: the first `count` elements (-1: all)."""
function take(d::Dataset, count::Integer)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_take(
        d::Ptr{Cvoid}, Int64(count)::Int64, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""`skip(d, count)`: all but the first `count` elements (-1: none)."""
function Base.skip(d::Dataset, count::Integer)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_skip(
        d::Ptr{Cvoid}, Int64(count)::Int64, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

"""`prefetch(d, buffer_size)`: up to `buffer_size` elements made ahead on a
background thread."""
function prefetch(d::Dataset, buffer_size::Integer)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_dataset_prefetch(
        d::Ptr{Cvoid}, Int64(buffer_size)::Int64, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return made(out)
end

# ---- Reading it in a graph ---------------------------------------------------------------

"""
    iterator(d, g; name, init = true) -> (components = Vector{Output}, init = Node or nothing)

Adds node `name` (IteratorGetNext) to `g`: its outputs are the next
element's components.  With `init`, also an IteratorInit node
"`name`/init", a target that starts the pass again.  Each session keeps one
iterator per name, started on first use; a run past the end throws a
`WeftError` OUT_OF_RANGE.  The graph keeps the dataset (graph files do not
save it).
"""
function iterator(d::Dataset, g::Graph; name::AbstractString, init::Bool = true)
    components = Vector{WeftOutput}(undef, num_components(d))
    init_node = Ref{Ptr{Cvoid}}(C_NULL)
    init_c = init ? init_node : Ptr{Ptr{Cvoid}}(C_NULL)
    GC.@preserve d g init_node check(@ccall libweft.weft_dataset_iterator(
        g::Ptr{Cvoid}, name::Cstring, d::Ptr{Cvoid}, components::Ptr{WeftOutput},
        init_c::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return (components = Output[julia_output(g, c) for c in components],
            init = init ? Node(init_node[], g) : nothing)
end

# ---- Writing records -------------------------------------------------------------------

"""
    write_tfrecord(path, records; compression = "")

Writes `records` (each a `Tensor`, whose bytes are the record, a
`Vector{UInt8}` or a string) as a TFRecord file at `path`, TensorFlow's
format; `compression` "", "GZIP" or "ZLIB".  The file is written beside and
renamed in, so a reader sees the old file or the whole new one.
"""
function write_tfrecord(path::AbstractString, records; compression::AbstractString = "")
    compression_c = String(compression)
    tensors = Tensor[]
    temporaries = Tensor[]
    try
        for r in records
            if r isa Tensor
                push!(tensors, r)
                continue
            end
            bytes = r isa AbstractString ? Vector{UInt8}(codeunits(String(r))) :
                Vector{UInt8}(r)
            push!(temporaries, Tensor(bytes; copy = true))
            push!(tensors, temporaries[end])
        end
        GC.@preserve tensors begin
            handles = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in tensors]
            check(@ccall libweft.weft_tfrecord_write(
                path::Cstring, compression_c::Cstring, handles::Ptr{Ptr{Cvoid}},
                Int32(length(handles))::Int32)::Ptr{Cvoid})
        end
    finally
        foreach(close, temporaries)
    end
    return nothing
end
