# bfloat16: the upper 16 bits of a binary32, Weft's WEFT_BFLOAT16.  Julia's
# standard library has no such type; this one is only what tensors of that
# dtype need (storage, and conversion to and from Float32).

"""
    BFloat16

Weft's `bfloat16` element type: the upper half of a `Float32`.  Convert with
`BFloat16(x)` (round to nearest even) and `Float32(b)`.
"""
primitive type BFloat16 <: AbstractFloat 16 end

function BFloat16(x::Float32)
    isnan(x) && return reinterpret(BFloat16, 0x7fc0)
    bits = reinterpret(UInt32, x)
    bits += 0x00007fff + ((bits >> 16) & 0x00000001)
    return reinterpret(BFloat16, UInt16(bits >> 16))
end
BFloat16(x::Real) = BFloat16(Float32(x))
BFloat16(x::BFloat16) = x

Base.Float32(x::BFloat16) =
    reinterpret(Float32, UInt32(reinterpret(UInt16, x)) << 16)
Base.Float64(x::BFloat16) = Float64(Float32(x))
Base.convert(::Type{BFloat16}, x::Real) = BFloat16(x)
Base.convert(::Type{BFloat16}, x::BFloat16) = x
Base.promote_rule(::Type{BFloat16}, ::Type{T}) where {T<:AbstractFloat} =
    promote_type(Float32, T)
Base.zero(::Type{BFloat16}) = reinterpret(BFloat16, 0x0000)
Base.one(::Type{BFloat16}) = reinterpret(BFloat16, 0x3f80)
Base.:(==)(a::BFloat16, b::BFloat16) = Float32(a) == Float32(b)
Base.isnan(x::BFloat16) = isnan(Float32(x))
Base.show(io::IO, x::BFloat16) = print(io, "BFloat16(", Float32(x), ")")
