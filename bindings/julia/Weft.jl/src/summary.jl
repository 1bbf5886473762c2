# TensorBoard output (the weft_summary_writer_ functions of weft/summary.h):
# event files in a log directory that `tensorboard --logdir DIR` shows.
# The summary ops (ScalarSummary, HistogramSummary, ImageSummary,
# TextSummary, MergeSummary) are ordinary ops, built with `op`; fetch their
# output and pass it to `add_summary`.

"""
    SummaryWriter(logdir; suffix = "")

A new event file `events.out.tfevents.<seconds>.<host><suffix>` in
`logdir` (made with its parents when missing).  Each addition is written
and flushed at once, so TensorBoard shows it while the program runs.
`close(w)` flushes and closes it (the finalizer does too, losing errors).
"""
mutable struct SummaryWriter <: Handle
    ptr::Ptr{Cvoid}
    function SummaryWriter(logdir::AbstractString; suffix::AbstractString = "")
        out = Ref{Ptr{Cvoid}}(C_NULL)
        check(@ccall libweft.weft_summary_writer_create(logdir::Cstring,
            suffix::Cstring, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        return finalizer(release, new(out[]))
    end
end

release(w::SummaryWriter) =
    @ccall libweft.weft_summary_writer_destroy(take_pointer!(w)::Ptr{Cvoid})::Cvoid

"""The event file's path."""
event_file(w::SummaryWriter) =
    unsafe_string(@ccall libweft.weft_summary_writer_path(w::Ptr{Cvoid})::Cstring)

"""
    add_scalar(w, tag, step, value)

A scalar for TensorBoard's scalar dashboard (stored as Float32).  Tags are
non-empty UTF-8 without control characters, at most 1024 bytes.
"""
add_scalar(w::SummaryWriter, tag::AbstractString, step::Integer, value::Real) =
    check(@ccall libweft.weft_summary_writer_add_scalar(w::Ptr{Cvoid},
        tag::Cstring, Int64(step)::Int64, Float64(value)::Cdouble)::Ptr{Cvoid})

"""
    add_histogram(w, tag, step, values)

The distribution of `values` (an array of real numbers or a `Tensor`);
NaN or infinite values throw a `WeftError`.
"""
add_histogram(w::SummaryWriter, tag::AbstractString, step::Integer,
              values::Tensor) =
    check(@ccall libweft.weft_summary_writer_add_histogram(w::Ptr{Cvoid},
        tag::Cstring, Int64(step)::Int64, values::Ptr{Cvoid})::Ptr{Cvoid})
add_histogram(w::SummaryWriter, tag::AbstractString, step::Integer,
              values::AbstractArray{<:Real}) =
    add_histogram(w, tag, step, Tensor(values; copy = true))

"""
    add_image(w, tag, step, images; max_images = 3)

Images as a `Tensor` of Weft shape `[N, H, W, C]` or `[H, W, C]` (a Julia
array of size `(C, W, H, N)` or `(C, W, H)`), UInt8 or Float32 in [0, 1];
C is 1, 2, 3 or 4.  The first `max_images` are written as PNG, tagged
`tag` for one, `"tag/0"`, `"tag/1"`, ... for several.
"""
add_image(w::SummaryWriter, tag::AbstractString, step::Integer, images::Tensor;
          max_images::Integer = 3) =
    check(@ccall libweft.weft_summary_writer_add_image(w::Ptr{Cvoid},
        tag::Cstring, Int64(step)::Int64, images::Ptr{Cvoid},
        Int64(max_images)::Int64)::Ptr{Cvoid})

"""
    add_text(w, tag, step, text)

Text (Markdown) for TensorBoard's text dashboard.
"""
add_text(w::SummaryWriter, tag::AbstractString, step::Integer,
         text::AbstractString) =
    check(@ccall libweft.weft_summary_writer_add_text(w::Ptr{Cvoid},
        tag::Cstring, Int64(step)::Int64, text::Cstring)::Ptr{Cvoid})

"""
    add_summary(w, step, summary)

A summary op's output (a UInt8 `Tensor` holding a serialized `Summary`).
"""
add_summary(w::SummaryWriter, step::Integer, summary::Tensor) =
    check(@ccall libweft.weft_summary_writer_add_summary(w::Ptr{Cvoid},
        Int64(step)::Int64, summary::Ptr{Cvoid})::Ptr{Cvoid})

"""
    add_graph(w, graph; placement = nothing)

The graph for TensorBoard's graph dashboard; with `placement` (the
`RunMetadata` of a run) each node shows the device it ran on.
"""
function add_graph(w::SummaryWriter, g::Graph;
                   placement::Union{RunMetadata,Nothing} = nothing)
    md = placement === nothing ? C_NULL : Base.unsafe_convert(Ptr{Cvoid}, placement)
    GC.@preserve placement check(@ccall libweft.weft_summary_writer_add_graph(
        w::Ptr{Cvoid}, g::Ptr{Cvoid}, md::Ptr{Cvoid})::Ptr{Cvoid})
end

"""
    add_restart(w, step; checkpoint = nothing)

Records that the program restarted at `step` (from `checkpoint`):
TensorBoard drops what earlier files of the directory recorded from `step`
on.
"""
function add_restart(w::SummaryWriter, step::Integer;
                     checkpoint::Union{AbstractString,Nothing} = nothing)
    path = checkpoint === nothing ? nothing : String(checkpoint)
    GC.@preserve path check(@ccall libweft.weft_summary_writer_add_restart(
        w::Ptr{Cvoid}, Int64(step)::Int64,
        (path === nothing ? Ptr{UInt8}(C_NULL) : pointer(path))::Ptr{UInt8})::Ptr{Cvoid})
end

"""Flushes the event file to disk (each addition is already written)."""
flush_summaries(w::SummaryWriter) =
    check(@ccall libweft.weft_summary_writer_flush(w::Ptr{Cvoid})::Ptr{Cvoid})

"""Closes the event file, throwing a `WeftError` if that fails."""
function Base.close(w::SummaryWriter)
    w.ptr == C_NULL && return nothing
    try
        check(@ccall libweft.weft_summary_writer_close(w::Ptr{Cvoid})::Ptr{Cvoid})
    finally
        release(w)
    end
    return nothing
end
