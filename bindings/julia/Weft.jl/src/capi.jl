# The C library, its errors, and the C structs the binding shares with it.
#
# Every foreign call of the package is an `@ccall libweft.<function>` with
# the argument types spelled out; tests/check_julia_ffi.py reads them all and
# checks them against abi/weft/*.h and the built library.  Mirrors of C
# structs are marked `# C: <struct name>` on the line before `struct`; the
# same check compares them field by field with the header.

"""The soname of libweft (runtime/meson.build: soversion 1)."""
const libweft = "libweft.so.1"

# The user-API version this binding is written against (abi/weft/version.h).
const ABI_MAJOR = 1
const ABI_MINOR = 8  # the newest functions it calls: datasets (1.7, 1.8)

# Loads libweft: the file named by WEFT_LIBRARY when set, else the soname
# through the dynamic loader's search path.  Every @ccall names the soname;
# once a file with that soname is loaded, the loader answers the soname with
# it, so loading WEFT_LIBRARY first is enough (the JLL packages' approach).
function load_library()
    path = get(ENV, "WEFT_LIBRARY", "")
    if !isempty(path)
        Libdl.dlopen(path, Libdl.RTLD_NOW | Libdl.RTLD_GLOBAL)
    end
    packed = @ccall libweft.weft_abi_version()::UInt32
    major, minor = Int(packed >> 16), Int(packed & 0xffff)
    if major != ABI_MAJOR || minor < ABI_MINOR
        error("Weft.jl needs the Weft user API $ABI_MAJOR.$ABI_MINOR or a " *
              "later $ABI_MAJOR.x; the loaded libweft implements $major.$minor")
    end
    return nothing
end

# ---- Errors -----------------------------------------------------------------

"""Error codes (absl numbering), as in `abi/weft/status.h`."""
@enum Code::Int32 begin
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16
end

"""
    WeftError(code, message)

A failed Weft call: `code` is a [`Weft.Code`](@ref) (`Weft.INVALID_ARGUMENT`,
`Weft.NOT_FOUND`, ...), `message` the library's explanation.
"""
struct WeftError <: Exception
    code::Code
    message::String
end

function Base.showerror(io::IO, e::WeftError)
    print(io, "WeftError(", e.code, "): ", e.message)
end

"""The constant name of an error code, e.g. "INVALID_ARGUMENT"."""
code_name(code::Code) =
    unsafe_string(@ccall libweft.weft_code_name(Int32(code)::Int32)::Ptr{UInt8})

# Turns a weft_status* into nothing (NULL: success) or a thrown WeftError.
# The status is always destroyed, also when reading it fails.
function check(status::Ptr{Cvoid})
    status == C_NULL && return nothing
    local code, message
    try
        raw = @ccall libweft.weft_status_code(status::Ptr{Cvoid})::Int32
        code = raw in 0:16 ? Code(raw) : UNKNOWN
        message = unsafe_string(
            @ccall libweft.weft_status_message(status::Ptr{Cvoid})::Ptr{UInt8})
    finally
        @ccall libweft.weft_status_destroy(status::Ptr{Cvoid})::Cvoid
    end
    throw(WeftError(code, message))
end

# A borrowed C string, or `nothing` for NULL.
c_string(p::Ptr{UInt8}) = p == C_NULL ? nothing : unsafe_string(p)

"""Thrown when a closed tensor, graph, session or metadata object is used."""
struct ClosedError <: Exception
    what::String
end
Base.showerror(io::IO, e::ClosedError) =
    print(io, "ClosedError: this ", e.what, " was closed")

# ---- Handles ------------------------------------------------------------------
#
# Tensor, Graph, Session and RunMetadata each own one C object, in a field
# `ptr` (C_NULL once released).  `release(h)` is both the finalizer and what
# `close` calls; it only calls the C release function.

abstract type Handle end

# The pointer, handed over once: a second release passes NULL to C, where
# destroying NULL is a no-op, so closing twice is harmless.
function take_pointer!(h::Handle)
    p = h.ptr
    h.ptr = C_NULL
    return p
end

Base.close(h::Handle) = (release(h); nothing)
Base.isopen(h::Handle) = h.ptr != C_NULL

# Passing a handle where C wants its object: ccall keeps `h` rooted for the
# call, so the finalizer cannot run while C uses the pointer.
function Base.unsafe_convert(::Type{Ptr{Cvoid}}, h::Handle)
    h.ptr == C_NULL && throw(ClosedError(string(nameof(typeof(h)))))
    return h.ptr
end

# ---- C structs --------------------------------------------------------------

"""One output of a node, as C passes it: `{weft_node* node; int32_t index}`."""
# C: weft_output
struct WeftOutput
    node::Ptr{Cvoid}
    index::Int32
end

# C: weft_shape
struct ShapeC
    rank::Int32
    dims::Ptr{Int64}
end

# C: weft_while_options
struct WhileOptionsC
    struct_size::Csize_t
    name::Ptr{UInt8}
    parallel_iterations::Int32
    maximum_iterations::Int64
    shape_invariants::Ptr{ShapeC}
end

# C: weft_session_options
struct SessionOptionsC
    struct_size::Csize_t
    devices::Ptr{UInt8}
    inter_op_threads::Int32
    intra_op_threads::Int32
    placement::Int32
    transfer_precision::Int32
    optimizations::UInt32
    device_gflops::Ptr{UInt8}
    recompute::Int32
    cluster::Ptr{UInt8}
    serving_jobs::Ptr{UInt8}
end

# C: weft_optimizer_options
struct OptimizerOptionsC
    struct_size::Csize_t
    kind::Int32
    learning_rate::Cdouble
    momentum::Cdouble
    use_nesterov::Int32
    beta1::Cdouble
    beta2::Cdouble
    epsilon::Cdouble
    data_parallel::Int32
    bucket_bytes::Int64
end

# C: weft_device_description
struct DeviceDescriptionC
    struct_size::Csize_t
    name::Ptr{UInt8}
    type::Ptr{UInt8}
    index::Int32
    description::Ptr{UInt8}
    vendor::Ptr{UInt8}
    plugin::Ptr{UInt8}
    memory_bytes::UInt64
    compute_gflops::Cdouble
    flags::UInt32
    unsupported_dtypes::UInt64
end

# C: weft_plugin_description
struct PluginDescriptionC
    struct_size::Csize_t
    name::Ptr{UInt8}
    version::Ptr{UInt8}
    path::Ptr{UInt8}
    interface_version::UInt32
    device_type::Ptr{UInt8}
    device_count::Int32
    no_device_reason::Ptr{UInt8}
end

# C: weft_op_description
struct OpDescriptionC
    struct_size::Csize_t
    name::Ptr{UInt8}
    summary::Ptr{UInt8}
    inputs::Ptr{UInt8}
    outputs::Ptr{UInt8}
    attributes::Ptr{UInt8}
    num_inputs::Int32
    variadic::Int32
    stateful::Int32
    runs_in_runtime::Int32
    origin::Ptr{UInt8}
end

# C: weft_kernel_type_constraint
struct KernelTypeConstraintC
    attr::Ptr{UInt8}
    dtypes::Ptr{Int32}
    num_dtypes::Int32
end

# C: weft_kernel_description
struct KernelDescriptionC
    struct_size::Csize_t
    op::Ptr{UInt8}
    device_type::Ptr{UInt8}
    plugin::Ptr{UInt8}
    dtype_attr::Ptr{UInt8}
    dtypes::Ptr{Int32}
    num_dtypes::Int32
    priority::Int32
    type_constraints::Ptr{KernelTypeConstraintC}
    num_type_constraints::Int32
end
