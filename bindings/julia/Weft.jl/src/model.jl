# Model files: a graph with its variables and named signatures, saved by any
# program that uses Weft (C, Java, Julia) and served here (weft/model.h).

# C: weft_signature_def
struct SignatureDefC
    struct_size::Csize_t
    name::Ptr{UInt8}
    num_inputs::Int32
    input_keys::Ptr{Ptr{UInt8}}
    inputs::Ptr{WeftOutput}
    num_outputs::Int32
    output_keys::Ptr{Ptr{UInt8}}
    outputs::Ptr{WeftOutput}
end

# C: weft_model_load_options
struct ModelLoadOptionsC
    struct_size::Csize_t
    format::Ptr{UInt8}
    session_options::Ptr{SessionOptionsC}
    graphdef_outputs::Ptr{Ptr{UInt8}}
    num_graphdef_outputs::Int32
end

# Pointers to the bytes of `strings`, valid while the caller preserves
# `strings` (the C calls below take arrays of C strings).
function string_pointers(strings::Vector{String})
    ptrs = Ptr{UInt8}[]
    for str in strings
        GC.@preserve str push!(ptrs, pointer(str))
    end
    return ptrs
end

"""
    Signature(name; inputs = ["x" => x], outputs = ["y" => y])

A named way to call a model: input keys with the outputs they feed and
output keys with the outputs they fetch (in order).
"""
struct Signature
    name::String
    inputs::Vector{Pair{String,Output}}
    outputs::Vector{Pair{String,Output}}
end
Signature(name::AbstractString; inputs = Pair{String,Output}[],
          outputs = Pair{String,Output}[]) =
    Signature(String(name), collect(Pair{String,Output}, inputs),
              collect(Pair{String,Output}, outputs))

"""
    Model

A graph, a session holding its variables, and signatures.  Made by
[`load_model`](@ref) (a bundle directory, a Weft graph file, an `.onnx`
model or a frozen TensorFlow `.pb`) or by `Model(graph, session,
signatures...)` for a graph built here, which [`save_model`](@ref) writes.
`close(m)` releases it at once.
"""
mutable struct Model <: Handle
    ptr::Ptr{Cvoid}
    # A model made here borrows these: kept alive as long as it is.
    graph::Union{Graph,Nothing}
    session::Union{Session,Nothing}
end

release(m::Model) =
    @ccall libweft.weft_model_destroy(take_pointer!(m)::Ptr{Cvoid})::Cvoid

function Model(g::Graph, s::Union{Session,Nothing}, signatures::Signature...)
    s === nothing || s.graph === g ||
        throw(ArgumentError("the session runs another graph than the model's"))
    for sig in signatures, o in Iterators.flatten((last.(sig.inputs), last.(sig.outputs)))
        check_graph(g, o.node)
    end
    names = [sig.name for sig in signatures]
    keys_in = [String[first(p) for p in sig.inputs] for sig in signatures]
    keys_out = [String[first(p) for p in sig.outputs] for sig in signatures]
    outs_in = [c_outputs(last.(sig.inputs)) for sig in signatures]
    outs_out = [c_outputs(last.(sig.outputs)) for sig in signatures]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    session_c = s === nothing ? C_NULL : Base.unsafe_convert(Ptr{Cvoid}, s)
    GC.@preserve g s names keys_in keys_out outs_in outs_out begin
        key_ptrs_in = [string_pointers(ks) for ks in keys_in]
        key_ptrs_out = [string_pointers(ks) for ks in keys_out]
        GC.@preserve key_ptrs_in key_ptrs_out begin
            defs = SignatureDefC[SignatureDefC(
                sizeof(SignatureDefC), pointer(names[i]),
                Int32(length(outs_in[i])), pointer(key_ptrs_in[i]),
                pointer(outs_in[i]),
                Int32(length(outs_out[i])), pointer(key_ptrs_out[i]),
                pointer(outs_out[i])) for i in eachindex(names)]
            check(@ccall libweft.weft_model_create(
                g::Ptr{Cvoid}, session_c::Ptr{Cvoid}, defs::Ptr{SignatureDefC},
                Int32(length(defs))::Int32, out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        end
    end
    return finalizer(release, Model(out[], g, s))
end

"""
    load_model(path; format = "", graphdef_outputs = String[], options...)

Loads the model at `path` into a new graph and session: a bundle directory
(its variables restored), a Weft graph file, an ONNX model (`.onnx`) or a
frozen TensorFlow GraphDef (`.pb`, whose served outputs
`graphdef_outputs` names; none: every node nothing reads).  `format`
("weft", "onnx", "graphdef") overrides the guess from the path; the other
keywords are [`Session`](@ref)'s options.
"""
function load_model(path::AbstractString; format::AbstractString = "",
                    graphdef_outputs = String[], options...)
    path_c = String(path)
    format_c = String(format)
    outputs_c = String[String(o) for o in graphdef_outputs]
    out = Ref{Ptr{Cvoid}}(C_NULL)
    with_session_options(; options...) do session_options
        GC.@preserve path_c format_c outputs_c session_options begin
            output_ptrs = string_pointers(outputs_c)
            GC.@preserve output_ptrs begin
                load_options = Ref(ModelLoadOptionsC(
                    sizeof(ModelLoadOptionsC),
                    isempty(format_c) ? C_NULL : pointer(format_c),
                    Base.unsafe_convert(Ptr{SessionOptionsC}, session_options),
                    isempty(output_ptrs) ? C_NULL : pointer(output_ptrs),
                    Int32(length(output_ptrs))))
                check(@ccall libweft.weft_model_load(
                    path_c::Cstring, load_options::Ptr{ModelLoadOptionsC},
                    out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
            end
        end
    end
    return finalizer(release, Model(out[], nothing, nothing))
end

"""
    save_model(model, dir)

Writes the model as a bundle in directory `dir`: the whole graph, its
signatures and the session's variables, atomically (a bundle already there
is replaced).
"""
save_model(m::Model, dir::AbstractString) = GC.@preserve m begin
    check(@ccall libweft.weft_model_save(m::Ptr{Cvoid}, dir::Cstring)::Ptr{Cvoid})
    nothing
end

"""
    export_onnx(model, path; signature = nothing)

Writes `signature` (`nothing`: the default) as an ONNX model.
"""
function export_onnx(m::Model, path::AbstractString; signature = nothing)
    sig_c = signature === nothing ? nothing : String(signature)
    GC.@preserve m sig_c begin
        sig_p = sig_c === nothing ? C_NULL : pointer(sig_c)
        check(@ccall libweft.weft_model_export_onnx(
            m::Ptr{Cvoid}, sig_p::Ptr{UInt8}, path::Cstring)::Ptr{Cvoid})
    end
    return nothing
end

"""`signatures(model)`: the names of the model's signatures."""
function signatures(m::Model)
    GC.@preserve m begin
        n = @ccall libweft.weft_model_num_signatures(m::Ptr{Cvoid})::Int32
        return String[c_string(@ccall libweft.weft_model_signature_name(
            m::Ptr{Cvoid}, i::Int32)::Ptr{UInt8}) for i in Int32(0):n-Int32(1)]
    end
end

# The keys of a signature's inputs (is_output 0) or outputs (1).
function signature_keys(m::Model, signature, is_output::Integer)
    sig_c = signature === nothing ? nothing : String(signature)
    GC.@preserve m sig_c begin
        sig_p = sig_c === nothing ? C_NULL : pointer(sig_c)
        n = @ccall libweft.weft_model_signature_size(
            m::Ptr{Cvoid}, sig_p::Ptr{UInt8}, Int32(is_output)::Int32)::Int32
        keys = String[]
        # n < 0: no such signature; asking for entry 0 gets the library's
        # message naming the signatures there are.
        for i in Int32(0):(n < 0 ? Int32(0) : n - Int32(1))
            key = Ref{Ptr{UInt8}}(C_NULL)
            check(@ccall libweft.weft_model_signature_entry(
                m::Ptr{Cvoid}, sig_p::Ptr{UInt8}, Int32(is_output)::Int32, i::Int32,
                key::Ptr{Ptr{UInt8}}, C_NULL::Ptr{WeftOutput})::Ptr{Cvoid})
            push!(keys, c_string(key[]))
        end
        return keys
    end
end

"""`input_keys(model; signature = nothing)`: the signature's input keys, in order."""
input_keys(m::Model; signature = nothing) = signature_keys(m, signature, 0)
"""`output_keys(model; signature = nothing)`: the signature's output keys, in order."""
output_keys(m::Model; signature = nothing) = signature_keys(m, signature, 1)

"""
    run(model, inputs; signature = nothing, outputs = nothing)

Runs `signature` (`nothing`: the default) with `inputs`, pairs or a
dictionary `key => value` (a `Tensor` or a Julia array, shared without a
copy), and returns a `Dict` of the outputs keyed `outputs` (`nothing`:
every output of the signature), each a `Tensor` owned by the caller.
"""
function Base.run(m::Model, inputs; signature = nothing, outputs = nothing)
    out_keys = outputs === nothing ? output_keys(m; signature = signature) :
        String[String(k) for k in outputs]
    return with_feeds(inputs, String, String) do in_keys, values
        results = fill(C_NULL, length(out_keys))
        sig_c = signature === nothing ? nothing : String(signature)
        GC.@preserve m sig_c in_keys out_keys values begin
            sig_p = sig_c === nothing ? C_NULL : pointer(sig_c)
            in_ptrs = string_pointers(in_keys)
            out_ptrs = string_pointers(out_keys)
            values_c = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in values]
            check(@ccall libweft.weft_model_run(
                m::Ptr{Cvoid}, sig_p::Ptr{UInt8}, in_ptrs::Ptr{Ptr{UInt8}},
                values_c::Ptr{Ptr{Cvoid}}, Int32(length(values_c))::Int32,
                out_ptrs::Ptr{Ptr{UInt8}}, results::Ptr{Ptr{Cvoid}},
                Int32(length(out_ptrs))::Int32)::Ptr{Cvoid})
        end
        Dict{String,Tensor}(k => Tensor(p) for (k, p) in zip(out_keys, results))
    end
end
