# Tensors: Weft's dense row-major arrays in host memory, shared with Julia
# arrays without copies.

"""Element types, as in `abi/weft/dtype.h` (the values are the ABI's)."""
@enum DType::Int32 begin
    DTYPE_INVALID = 0
    FLOAT32 = 1
    FLOAT64 = 2
    INT32 = 3
    INT64 = 4
    UINT8 = 5
    BOOL = 6
    FLOAT16 = 7
    BFLOAT16 = 8
    INT8 = 9
    INT16 = 10
    UINT16 = 11
    UINT32 = 12
    UINT64 = 13
end

# Julia element type of each dtype; Bool is one byte holding 0 or 1, as
# WEFT_BOOL.
const JULIA_TYPES = Dict{DType,DataType}(
    FLOAT32 => Float32, FLOAT64 => Float64, INT32 => Int32, INT64 => Int64,
    UINT8 => UInt8, BOOL => Bool, FLOAT16 => Float16, BFLOAT16 => BFloat16,
    INT8 => Int8, INT16 => Int16, UINT16 => UInt16, UINT32 => UInt32,
    UINT64 => UInt64)
const DTYPES = Dict{DataType,DType}(T => d for (d, T) in JULIA_TYPES)

"""`DType(T)`: the dtype of Julia element type `T`."""
function DType(::Type{T}) where {T}
    haskey(DTYPES, T) || throw(ArgumentError("Weft has no dtype for $T"))
    return DTYPES[T]
end
DType(d::DType) = d

"""The Julia element type of a dtype."""
julia_type(d::DType) = JULIA_TYPES[d]

"""Bytes per element, from the library."""
dtype_size(d::DType) = Int(@ccall libweft.weft_dtype_size(Int32(d)::Int32)::Csize_t)

"""The library's name of a dtype, e.g. "float32"."""
dtype_name(d::DType) =
    unsafe_string(@ccall libweft.weft_dtype_name(Int32(d)::Int32)::Ptr{UInt8})

# ---- Axes ---------------------------------------------------------------------

"""
    julia_dims(weft_shape) -> Tuple

The Julia array size that shares memory with a Weft tensor of shape
`weft_shape` (row-major): the same dimensions in reverse order.
"""
julia_dims(shape) = Tuple(Int(d) for d in Iterators.reverse(shape))

"""
    weft_dims(A) -> Vector{Int64}

The Weft (row-major) shape of a tensor sharing `A`'s memory: `size(A)`
reversed.  Also takes a size tuple.
"""
weft_dims(A::AbstractArray) = weft_dims(size(A))
weft_dims(dims::Tuple) = Int64[d for d in Iterators.reverse(dims)]

"""
    weft_axis(julia_axis, n) -> Int

The 0-based Weft axis of the 1-based Julia axis `julia_axis` of an
`n`-dimensional array sharing memory with the tensor.
"""
weft_axis(axis::Integer, n::Integer) = (1 <= axis <= n ||
    throw(ArgumentError("axis $axis of a $n-dimensional array"));
    Int(n - axis))

"""
    julia_axis(weft_axis, n) -> Int

The 1-based Julia axis of Weft axis `weft_axis` (negative counts from the
end, as in Weft) of an `n`-dimensional tensor.
"""
function julia_axis(axis::Integer, n::Integer)
    a = axis < 0 ? axis + n : axis
    0 <= a < n || throw(ArgumentError("Weft axis $axis of a rank-$n tensor"))
    return Int(n - a)
end

"""
    to_row_major(A) -> Array

A copy of `A` laid out so that a tensor sharing it (`Tensor(to_row_major(A))`)
has Weft shape `size(A)` and the same indices: `T[i, j, k] == A[i, j, k]`.
"""
to_row_major(A::AbstractArray) = permutedims(A, ndims(A):-1:1)

"""
    from_row_major(A) -> Array

The inverse of [`to_row_major`](@ref): a copy of an array sharing a tensor's
memory (Julia size reversed) with the tensor's shape and indices.
"""
from_row_major(A::AbstractArray) = permutedims(A, ndims(A):-1:1)

# ---- Keeping Julia arrays alive while Weft uses them ------------------------------
#
# A tensor made from a Julia array without a copy hands Weft the array's
# memory.  The array is kept in PINNED under a token, passed to Weft as the
# deleter argument; Weft calls the deleter when its last user lets go, and
# the deleter drops the entry.  A token, not the data pointer, is the key:
# two tensors may share one array.
#
# The deleter may run on any thread, including a runtime worker thread Julia
# did not start.  Julia runs @cfunction callbacks on such threads from 1.9
# (it adopts the thread); before 1.9 that is not supported, so there tensors
# from Julia arrays are copies (see zero_copy_supported()).  The deleter
# may also run inside a finalizer (weft_tensor_destroy dropping the last
# reference), so the lock is a SpinLock, never held with finalizers enabled
# on the holding thread and never across an allocation-free deletion.

const PINNED = Dict{UInt,Any}()
const PIN_LOCK = Threads.SpinLock()
const NEXT_TOKEN = Threads.Atomic{UInt}(1)
const DELETER = Ref{Ptr{Cvoid}}(C_NULL)

"""Whether `Tensor(A)` shares `A`'s memory (Julia 1.9 and later)."""
zero_copy_supported() = VERSION >= v"1.9"

function pin(A)
    token = Threads.atomic_add!(NEXT_TOKEN, UInt(1))
    GC.enable_finalizers(false)
    lock(PIN_LOCK)
    try
        PINNED[token] = A
    finally
        unlock(PIN_LOCK)
        GC.enable_finalizers(true)
    end
    return token
end

function unpin(token::UInt)
    lock(PIN_LOCK)
    try
        delete!(PINNED, token)
    finally
        unlock(PIN_LOCK)
    end
    return nothing
end

# weft_deleter: void (*)(void* data, size_t byte_size, void* deleter_arg).
release_pinned(data::Ptr{Cvoid}, byte_size::Csize_t, token::Ptr{Cvoid}) =
    unpin(UInt(token))

function init_deleter()
    # C: weft_deleter
    DELETER[] = @cfunction(release_pinned, Cvoid,
                           (Ptr{Cvoid}, Csize_t, Ptr{Cvoid}))
    return nothing
end

"""Number of Julia arrays Weft still uses (for tests)."""
pinned_count() = (lock(PIN_LOCK); n = length(PINNED); unlock(PIN_LOCK); n)

# ---- Tensor -------------------------------------------------------------------------

"""
    Tensor

A Weft tensor handle (owned).  Made from a Julia array without a copy
(`Tensor(A)`), as a copy (`Tensor(A; copy = true)`), zero-filled
(`Tensor(Float32, 3, 2)`: Julia size `(3, 2)`, Weft shape `[2, 3]`) or from
a scalar (`Tensor(1.5f0)`).  Read it without a copy with [`array`](@ref),
or copy it out with `Array(t)`.  `close(t)` releases it at once (closing
twice is harmless; using a closed tensor throws); otherwise the garbage
collector does.
"""
mutable struct Tensor <: Handle
    ptr::Ptr{Cvoid}
    # Takes ownership of a weft_tensor*.
    function Tensor(ptr::Ptr{Cvoid})
        ptr == C_NULL && throw(ArgumentError("NULL tensor"))
        return finalizer(release, new(ptr))
    end
end

release(t::Tensor) =
    @ccall libweft.weft_tensor_destroy(take_pointer!(t)::Ptr{Cvoid})::Cvoid

function Tensor(A::Array{T,N}; copy::Bool = false) where {T,N}
    dt = DType(T)
    dims = weft_dims(A)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    if copy || !zero_copy_supported()
        GC.@preserve A check(@ccall libweft.weft_tensor_create_copy(
            Int32(dt)::Int32, dims::Ptr{Int64}, Int32(N)::Int32,
            pointer(A)::Ptr{Cvoid}, Csize_t(sizeof(A))::Csize_t,
            out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
        return Tensor(out[])
    end
    token = pin(A)
    try
        # On error the deleter is not called: the catch below unpins.
        GC.@preserve A check(@ccall libweft.weft_tensor_create_from_data(
            Int32(dt)::Int32, dims::Ptr{Int64}, Int32(N)::Int32,
            pointer(A)::Ptr{Cvoid}, Csize_t(sizeof(A))::Csize_t,
            DELETER[]::Ptr{Cvoid}, Ptr{Cvoid}(token)::Ptr{Cvoid},
            out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    catch
        unpin(token)
        rethrow()
    end
    return Tensor(out[])
end

# Any other array (a range, a view, a TensorArray) is copied into a new
# tensor of its Julia size.
Tensor(A::AbstractArray; copy::Bool = true) = Tensor(collect(A); copy = true)

"""A rank-0 tensor holding `x` (a copy)."""
Tensor(x::T) where {T<:Number} = Tensor(fill(x); copy = true)

"""`Tensor(T, dims...)`: zero-filled, Julia size `dims` (Weft shape reversed)."""
function Tensor(::Type{T}, dims::Integer...) where {T}
    shape = weft_dims(Tuple(Int.(dims)))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(@ccall libweft.weft_tensor_create(
        Int32(DType(T))::Int32, shape::Ptr{Int64}, Int32(length(dims))::Int32,
        out::Ptr{Ptr{Cvoid}})::Ptr{Cvoid})
    return Tensor(out[])
end

"""The tensor's dtype."""
dtype(t::Tensor) = DType(@ccall libweft.weft_tensor_dtype(t::Ptr{Cvoid})::Int32)
Base.eltype(t::Tensor) = julia_type(dtype(t))
Base.ndims(t::Tensor) = Int(@ccall libweft.weft_tensor_rank(t::Ptr{Cvoid})::Int32)

"""The tensor's shape in Weft (row-major) order."""
function weft_shape(t::Tensor)
    rank = ndims(t)
    GC.@preserve t begin
        dims = @ccall libweft.weft_tensor_dims(t::Ptr{Cvoid})::Ptr{Int64}
        return Int64[unsafe_load(dims, i) for i in 1:rank]
    end
end

"""Size of Weft axis `axis` (0-based); -1 when out of range."""
weft_dim(t::Tensor, axis::Integer) =
    @ccall libweft.weft_tensor_dim(t::Ptr{Cvoid}, Int32(axis)::Int32)::Int64

"""The Julia size of the array sharing the tensor's memory."""
Base.size(t::Tensor) = julia_dims(weft_shape(t))
Base.length(t::Tensor) =
    Int(@ccall libweft.weft_tensor_element_count(t::Ptr{Cvoid})::Int64)
Base.sizeof(t::Tensor) =
    Int(@ccall libweft.weft_tensor_byte_size(t::Ptr{Cvoid})::Csize_t)

data_pointer(t::Tensor) = @ccall libweft.weft_tensor_data(t::Ptr{Cvoid})::Ptr{Cvoid}

"""
    TensorArray{T,N}

A Julia array over a tensor's memory (no copy), of the tensor's shape
reversed.  It keeps the tensor alive; after `close(tensor)` indexing throws.
Writes are visible to Weft, and must not happen while a run reads the
tensor.
"""
struct TensorArray{T,N} <: DenseArray{T,N}
    tensor::Tensor
    data::Ptr{T}
    dims::NTuple{N,Int}
end

"""`array(t)`: the tensor's memory as a Julia array (no copy)."""
function array(t::Tensor)
    T = eltype(t)
    dims = size(t)
    return TensorArray{T,length(dims)}(t, Ptr{T}(data_pointer(t)), dims)
end

Base.size(A::TensorArray) = A.dims
Base.IndexStyle(::Type{<:TensorArray}) = IndexLinear()

function checked_data(A::TensorArray)
    isopen(A.tensor) || throw(ClosedError("Tensor"))
    return A.data
end

Base.@propagate_inbounds function Base.getindex(A::TensorArray, i::Int)
    @boundscheck checkbounds(A, i)
    GC.@preserve A unsafe_load(checked_data(A), i)
end

Base.@propagate_inbounds function Base.setindex!(A::TensorArray{T}, v, i::Int) where {T}
    @boundscheck checkbounds(A, i)
    GC.@preserve A unsafe_store!(checked_data(A), convert(T, v), i)
    return A
end

Base.unsafe_convert(::Type{Ptr{T}}, A::TensorArray{T}) where {T} = checked_data(A)
Base.elsize(::Type{<:TensorArray{T}}) where {T} = sizeof(T)
Base.strides(A::TensorArray) = Base.size_to_strides(1, size(A)...)

"""A copy of the tensor as a Julia `Array` (the tensor's shape reversed)."""
Base.Array(t::Tensor) = copy(array(t))
Base.collect(t::Tensor) = Array(t)

"""The single element of a one-element tensor (a scalar)."""
Base.getindex(t::Tensor) = (length(t) == 1 ||
    throw(ArgumentError("tensor of shape $(weft_shape(t)) is not a scalar"));
    array(t)[1])

function Base.show(io::IO, t::Tensor)
    if isopen(t)
        print(io, "Tensor(", dtype_name(dtype(t)), ", shape ", weft_shape(t), ")")
    else
        print(io, "Tensor(closed)")
    end
end
