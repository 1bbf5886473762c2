# IDX files (the MNIST format) as Julia arrays, for the Fashion-MNIST
# examples: gzip-compressed files are read through the `gzip` program.

function read_idx(dir::AbstractString, name::AbstractString, rank::Integer)
    plain = joinpath(dir, name)
    path = isfile(plain) ? plain : plain * ".gz"
    isfile(path) || error("$plain(.gz): no such file (install Debian's " *
                          "dataset-fashion-mnist, or name the directory)")
    bytes = endswith(path, ".gz") ? read(pipeline(`gzip -dc $path`)) : read(path)
    length(bytes) >= 4 + 4rank || error("$path: truncated IDX header")
    bytes[1] == 0 && bytes[2] == 0 || error("$path: not an IDX file (bad magic)")
    bytes[3] == 0x08 || error("$path: IDX element type $(bytes[3]), expected 0x08")
    bytes[4] == rank || error("$path: $(bytes[4]) dimensions, expected $rank")
    dims = [Int(ntoh(reinterpret(UInt32, bytes[5+4k:8+4k])[1])) for k in 0:rank-1]
    body = @view bytes[5+4rank:end]
    length(body) == prod(dims) ||
        error("$path: $(length(body)) data bytes for dimensions $dims")
    # Row-major [n, ...] read as a Julia array of the reversed size.
    return reshape(collect(body), reverse(dims)...)
end
