# Weft.jl's tests.  Run with WEFT_LIBRARY naming a built libweft and
# WEFT_PLUGIN_PATH its plugins, e.g. from the repository root:
#
#   WEFT_LIBRARY=$PWD/build/runtime/libweft.so.1 \
#   WEFT_PLUGIN_PATH=$PWD/build/plugins/cpu \
#   julia --project=bindings/julia/Weft.jl -e 'using Pkg; Pkg.test()'
#
# No Julia runtime exists on the machines that build Weft: these tests have
# not been run there (tests/check_julia_ffi.py is what runs; see README.md).

using Test
using Weft

const CPU = "CPU"

@testset "Weft.jl" begin

@testset "library" begin
    @test Weft.abi_version() >= v"1.1"
    @test !isempty(Weft.version_string())
    @test first(Weft.plugin_interface_range()) <= last(Weft.plugin_interface_range())
    cpus = filter(d -> d.type == "CPU", devices())
    @test !isempty(cpus)
    @test cpus[1].name == "/device:CPU:0"
    @test cpus[1].unsupported_dtypes == 0
    @test cluster_world() == (0, 1)
    @test any(p -> p.device_type == "CPU", plugins())
    ops = op_descriptions()
    @test any(o -> o.name == "MatMul" && o.num_inputs == 2, ops)
    @test any(k -> k.device_type == "CPU" && Weft.FLOAT32 in k.dtypes, kernels("MatMul"))
end

@testset "dtypes round-trip" begin
    for T in (Float32, Float64, Int32, Int64, UInt8, Bool, Float16, BFloat16,
              Int8, Int16, UInt16, UInt32, UInt64)
        A = T <: Bool ? rand(Bool, 3, 4) :
            T == BFloat16 ? BFloat16.(rand(Float32, 3, 4)) :
            T <: AbstractFloat ? rand(T, 3, 4) : rand(T, 3, 4)
        for copy in (false, true)
            t = Tensor(A; copy = copy)
            @test eltype(t) == T
            @test dtype(t) == DType(T)
            @test Weft.dtype_size(dtype(t)) == sizeof(T)
            @test weft_shape(t) == [4, 3]          # row-major: Julia size reversed
            @test size(t) == (3, 4)
            @test length(t) == 12 && sizeof(t) == 12 * sizeof(T)
            @test Array(t) == A
            @test array(t) == A
            close(t)
        end
        # Through a graph and back: Identity on the CPU plugin.
        g = Graph()
        x = placeholder(g, T, [4, 3])
        y = identity_op(x)
        s = Session(g; devices = CPU)
        r = run(s, y; feeds = [x => A])
        @test eltype(r) == T && Array(r) == A
        close(r); close(s); close(g)
    end
    @test Tensor(2.5)[] == 2.5
    @test ndims(Tensor(Int32(7))) == 0
    z = Tensor(Float32, 3, 2)
    @test weft_shape(z) == [2, 3] && all(iszero, Array(z))
    @test Float32(BFloat16(1.5f0)) == 1.5f0
    @test_throws ArgumentError DType(ComplexF64)
end

@testset "layout without copies" begin
    A = Float32[1 2 3; 4 5 6]                      # Julia 2×3
    t = Tensor(A)
    @test weft_shape(t) == [3, 2]
    @test julia_dims(weft_shape(t)) == size(A)
    @test weft_dims(A) == [3, 2]
    @test weft_axis(1, 2) == 1 && weft_axis(2, 2) == 0
    @test julia_axis(0, 2) == 2 && julia_axis(-1, 2) == 1
    B = to_row_major(A)                            # a copy: Weft shape (2, 3)
    u = Tensor(B)
    @test weft_shape(u) == [2, 3]
    @test from_row_major(Array(u)) == A
    if zero_copy_supported()
        # A write through the Julia array is visible in the tensor, and
        # a write through the tensor's array in the Julia array.
        A[1, 1] = 42
        @test array(t)[1, 1] == 42
        array(t)[2, 3] = -1
        @test A[2, 3] == -1
        # The array stays alive while Weft uses it, and is let go after.
        before = Weft.pinned_count()
        v = Tensor(zeros(Int64, 1000))
        @test Weft.pinned_count() == before + 1
        close(v)
        @test Weft.pinned_count() == before
    end
    close(t); close(u)
end

@testset "cond and while_loop with closures" begin
    g = Graph()
    x = placeholder(g, Float32, Int[]; name = "x")
    pred = apply(g, "Greater", x, constant(g, 0.0f0))
    y = Weft.cond(pred, () -> multiply(x, constant(g, 2.0f0)),
                  () -> apply(g, "Neg", x))
    s = Session(g; devices = CPU)
    @test run(s, y; feeds = [x => Tensor(3.0f0)])[] == 6.0f0
    @test run(s, y; feeds = [x => Tensor(-4.0f0)])[] == 4.0f0
    # s = 0 + 1 + 2 + 3 + 4 over the loop variables (i, s)
    i, total = while_loop((i, t) -> apply(g, "Less", i, constant(g, Int32(5))),
                          (i, t) -> (i + constant(g, Int32(1)), t + i),
                          [constant(g, Int32(0)), constant(g, Int32(0))];
                          name = "sum")
    s2 = Session(g; devices = CPU)
    @test run(s2, total)[] == 10
    @test run(s2, i)[] == 5
    # a closure's exception: the builder's error with it as the cause
    err = try
        while_loop(i -> apply(g, "Less", i, constant(g, Int32(3))),
                   i -> error("boom"), [constant(g, Int32(0))])
        nothing
    catch e
        e
    end
    @test err isa ControlFlowError
    @test err.cause isa ErrorException && occursin("boom", err.error.message)
end

@testset "errors and closing" begin
    g = Graph()
    a = constant(g, Float32[1, 2, 3])
    b = constant(g, Float32[1, 2])
    err = try
        a + b
        nothing
    catch e
        e
    end
    @test err isa WeftError
    @test err.code == Weft.INVALID_ARGUMENT
    @test occursin("Add", err.message)
    e2 = try op(g, "NoSuchOp"); nothing catch e; e end
    @test e2 isa WeftError && e2.code == Weft.NOT_FOUND
    x = placeholder(g, Float32, [3]; name = "x")
    s = Session(g; devices = CPU)
    e3 = try run(s, relu(x)); nothing catch e; e end  # x not fed
    @test e3 isa WeftError && e3.code == Weft.INVALID_ARGUMENT
    @test occursin("x", e3.message)
    t = Tensor(Float32[1, 2])
    close(t)
    close(t)                                       # harmless
    @test_throws Weft.ClosedError dtype(t)
    close(s)
    @test_throws Weft.ClosedError run(s, a)
    close(g)
    g2 = Graph()
    c2 = constant(g2, 1.0f0)
    close(g2)
    @test_throws Weft.ClosedError op_type(c2.node)
    @test_throws Weft.ClosedError op_type(a.node)
    @test_throws WeftError Session(Graph(); devices = "/device:NOSUCH:0")
end

@testset "graph building" begin
    g = Graph()
    x = placeholder(g, Float32, [2, 3]; name = "x")
    @test shape(x) == [2, 3]
    @test dtype(x) == Weft.FLOAT32
    y = op(g, "Transpose", x; name = "t", perm = [1, 0], device = "/device:CPU:0")
    @test op_type(y) == "Transpose" && nameof(y) == "t"
    @test Weft.device(y) == "/device:CPU:0"
    @test shape(Output(y)) == [3, 2]
    c = concat([x, x], 0)
    @test shape(c) == [4, 3]
    m = reduce_sum(x; axes = [1], keep_dims = true)
    @test shape(m) == [2, 1]
    p = placeholder(g, Float32, nothing; name = "unknown")
    @test shape(p) === nothing
    noop = no_op(g, [y]; name = "after_t")
    @test Weft.num_control_inputs(noop) == 1
    @test node_by_name(g, "t") == y
    @test node_by_name(g, "nope") === nothing
    @test length(nodes(g)) >= 5
    @test inputs(y) == [x]
    s = Session(g; devices = CPU, inter_op_threads = 1, intra_op_threads = 1,
                placement = :strict, transfer_precision = :bfloat16)
    X = to_row_major(Float32[1 2 3; 4 5 6])        # Weft [2, 3] with the same indices
    r = run(s, [Output(y), m]; feeds = Dict(x => X), targets = [noop])
    @test from_row_major(Array(r[1])) == permutedims(Float32[1 2 3; 4 5 6])
    @test vec(Array(r[2])) == Float32[6, 15]
    meta = RunMetadata()
    run(s, Output(y); feeds = [x => X], metadata = meta)
    @test device_of(meta, "t") == "/device:CPU:0"
    @test any(n -> n.name == "t", placement(meta))
    @test transfers(meta) isa Vector
    @test haskey(peak_bytes(meta), "/device:CPU:0")
    @test occursin("t", string(meta))
    close(meta); close(s)
end

@testset "gradients" begin
    g = Graph()
    x = placeholder(g, Float64, [3]; name = "x")
    y = reduce_sum(multiply(x, x))                 # d/dx sum(x²) = 2x
    dx = gradients(y, x)
    s = Session(g; devices = CPU)
    r = run(s, dx; feeds = [x => [1.0, -2.0, 3.0]])
    @test Array(r) ≈ [2.0, -4.0, 6.0]
    z = placeholder(g, Float64, [3]; name = "z")
    @test gradients(y, [z]) == [nothing]           # y does not depend on z
    @test gradient_status("MatMul") == 1
    @test gradient_status("Equal") == 0
    close(s)
end

@testset "an op defined in Julia: kernel, gradient, training" begin
    # y = scale * x^3 on the CPU; the gradient (for the default scale 1,
    # which the training below uses) 3 x^2 dy.
    register_op("JuliaTest>Cube";
        inputs = ["x: T"], outputs = ["y: T"],
        attrs = ["T: {float32, float64}", "scale: float = 1.0"],
        summary = "scale * x^3, computed in Julia",
        kernel = (call, x) -> begin
            k = kernel_attr(call, "scale")
            Tensor(k .* Array(x) .^ 3; copy = true)
        end,
        gradient = (g, ins, dys) -> begin
            x = ins[1]
            three = constant(g, 3.0)
            [multiply(multiply(multiply(x, x), three), dys[1])]
        end)
    @test any(d -> d.name == "JuliaTest>Cube" && d.origin == "program",
              op_descriptions())
    g = Graph()
    x = placeholder(g, Float64, [3]; name = "x")
    y = Weft.first_output(op(g, "JuliaTest>Cube", x; scale = 2.0))
    s = Session(g; devices = CPU)
    @test Array(run(s, y; feeds = [x => [1.0, -2.0, 0.5]])) ≈ [2.0, -16.0, 0.25]
    close(s)
    # Train w so that cube(w) meets [0.125, 0.512]: w -> [0.5, 0.8].
    g = Graph()
    w = variable(g, [0.6, 0.6]; name = "w")
    t = constant(g, [0.125, 0.512])
    d = Weft.first_output(op(g, "JuliaTest>Cube", w)) - t
    loss = reduce_sum(multiply(d, d))
    train = minimize(loss; optimizer = :gradient_descent, learning_rate = 0.1)
    s = Session(g; devices = CPU)
    run(s, initialize_all(g))
    for _ in 1:2000
        run(s, train)
    end
    @test Array(run(s, w)) ≈ [0.5, 0.8] atol = 1e-3
    close(s)
end

@testset "training a tiny model, checkpoint round trip" begin
    # y = 3x - 1 by gradient descent on one weight and one bias.
    g = Graph()
    x = placeholder(g, Float32, [-1, 1]; name = "x")
    y = placeholder(g, Float32, [-1, 1]; name = "y")
    w, _ = variable(g, zeros(Float32, 1, 1); name = "w")
    b, _ = variable(g, zeros(Float32, 1); name = "b")
    loss = reduce_mean(Weft.multiply(bias_add(matmul(x, w), b) - y,
                                     bias_add(matmul(x, w), b) - y))
    @test length(trainable_variables(g)) == 2
    train = minimize(loss; optimizer = :gradient_descent, learning_rate = 0.1)
    init = initialize_all(g)
    s = Session(g; devices = CPU)
    run(s; targets = [init])
    xs = reshape(Float32.(range(-1, 1; length = 16)), 1, 16)   # Weft [16, 1]
    ys = 3 .* xs .- 1
    for _ in 1:300
        run(s; feeds = [x => xs, y => ys], targets = [train])
    end
    @test run(s, loss; feeds = [x => xs, y => ys])[] < 1e-3
    @test run(s, w)[] ≈ 3 atol = 0.05
    @test run(s, b)[] ≈ -1 atol = 0.05

    path = tempname() * ".ckpt"
    save_checkpoint(s, path)
    trained_w = run(s, w)[]
    run(s; targets = [init])                       # back to zeros
    @test run(s, w)[] == 0
    restore_checkpoint(s, path)
    @test run(s, w)[] == trained_w
    # Only some variables, and errors naming the file.
    restore_checkpoint(s, path; variables = [w])
    e = try restore_checkpoint(s, path * ".missing"); nothing catch e; e end
    @test e isa WeftError && occursin(".missing", e.message)
    close(s); close(g)
    rm(path; force = true)

    # Adam and momentum build too, with their slot variables.
    for opt in (:adam, :momentum)
        g2 = Graph()
        v, _ = variable(g2, ones(Float32, 2); name = "v")
        l = reduce_sum(multiply(v, v))
        t = minimize(l; optimizer = opt, learning_rate = 0.05)
        s2 = Session(g2; devices = CPU)
        run(s2; targets = [initialize_all(g2)])
        for _ in 1:50
            run(s2; targets = [t])
        end
        @test run(s2, l)[] < 2
        close(s2)
    end
end

@testset "concurrent runs" begin
    g = Graph()
    x = placeholder(g, Float32, [100])
    y = reduce_sum(x)
    s = Session(g; devices = CPU)
    results = Vector{Float32}(undef, 8)
    Threads.@threads for i in 1:8
        results[i] = run(s, y; feeds = [x => fill(Float32(i), 100)])[]
    end
    @test results == Float32[100i for i in 1:8]
    close(s)
end

@testset "many tensors come and go" begin
    GC.gc()
    before = Weft.pinned_count()
    for _ in 1:10_000
        close(Tensor(rand(Float32, 16)))
    end
    for _ in 1:1_000
        Tensor(rand(Float32, 16))                  # left to the finalizers
    end
    GC.gc(); GC.gc()
    @test Weft.pinned_count() <= before + 1_000
end

@testset "datasets" begin
    # Every element left of component 1, each as a Julia array; the run
    # after the last is OUT_OF_RANGE.
    function read_all(ds)
        g = Graph()
        it = iterator(ds, g; name = "it")
        s = Session(g; devices = CPU)
        got = Any[]
        while true
            t = try
                run(s, it.components[1])
            catch e
                @test e isa WeftError && e.code == Weft.OUT_OF_RANGE
                break
            end
            push!(got, Array(t))
            close(t)
        end
        close(s)
        return got
    end

    # range -> map(x * 2) -> batch(4): the last batch is smaller.
    doubled = map(x -> multiply(x, constant(Weft.graph(x), Int64(2))), range_dataset(0:9))
    batches = batch(doubled, 4)
    @test nameof(batches) == "Batch(Map(Range))"
    @test component_dtypes(batches) == [Weft.INT64]
    @test read_all(batches) == [Int64[0, 2, 4, 6], Int64[8, 10, 12, 14], Int64[16, 18]]
    @test read_all(batch(range_dataset(0, 10), 4; drop_remainder = true)) ==
          [Int64[0, 1, 2, 3], Int64[4, 5, 6, 7]]
    @test vec.(read_all(repeat(take(skip(range_dataset(0, 10, 3), 1), 2), 2))) ==
          [[3], [6], [3], [6]]
    @test vec.(read_all(filter(x -> equal(x, constant(Weft.graph(x), Int64(4))),
                               range_dataset(0, 10)))) == [[4]]

    # init starts the pass again.
    g = Graph()
    it = iterator(range_dataset(0, 3), g; name = "again")
    s = Session(g; devices = CPU)
    @test [run(s, it.components[1])[] for _ in 1:3] == [0, 1, 2]
    @test_throws WeftError run(s, it.components[1])
    run(s; targets = [it.init])
    @test run(s, it.components[1])[] == 0
    close(s)

    # Shuffles: the same for a seed, another for another seed, permutations.
    a = vec.(read_all(shuffle(range_dataset(0, 40), 16; seed = 11)))
    b = vec.(read_all(shuffle(range_dataset(0, 40), 16; seed = 11)))
    c = vec.(read_all(shuffle(range_dataset(0, 40), 16; seed = 12)))
    @test a == b && a != c
    @test sort(reduce(vcat, a)) == collect(0:39)

    # Slices along Weft dimension 0, the last Julia dimension; zip.
    images = Float32[i + 100j for j in 0:1, i in 0:9]      # Julia 2×10: 10 rows of 2
    slices = tensor_slices(images, Int32.(0:9))
    pairs = zip(slices, range_dataset(100, 103))
    @test component_dtypes(pairs) == [Weft.FLOAT32, Weft.INT32, Weft.INT64]
    @test read_all(slices)[3] == Float32[2, 102]

    # TFRecord files written, then read back byte for byte.
    dir = mktempdir()
    for compression in ("", "GZIP", "ZLIB")
        path = joinpath(dir, "r$compression.tfrecord")
        write_tfrecord(path, ["x", "hello", UInt8[], UInt8[0, 255, 7]];
                       compression = compression)
        got = read_all(tfrecord_dataset(path; compression = compression))
        @test got == [Vector{UInt8}("x"), Vector{UInt8}("hello"), UInt8[], UInt8[0, 255, 7]]
    end
    lines = joinpath(dir, "lines.txt")
    write(lines, "ab\r\nabcd\n\nz\n")
    padded = read_all(padded_batch(text_line_dataset(lines), 3))
    @test size(padded[1]) == (4, 3)                      # Weft [3, 4]
    @test vec(padded[1]) == Vector{UInt8}("ab\0\0abcd\0\0\0\0")
    raw = joinpath(dir, "raw.bin")
    write(raw, UInt8.(0:16))                              # 3 + 3 × 4 + 2 bytes
    @test read_all(fixed_length_record_dataset(raw; record_bytes = 4, header_bytes = 3,
                                               footer_bytes = 2)) ==
          [UInt8[3, 4, 5, 6], UInt8[7, 8, 9, 10], UInt8[11, 12, 13, 14]]

    # Errors carry the C message.
    err = try batch(range_dataset(0, 4), 0); nothing catch e; e end
    @test err isa WeftError && occursin("batch_size", err.message)
    absent = joinpath(dir, "absent.tfrecord")
    err = try read_all(tfrecord_dataset(absent)); nothing catch e; e end
    @test err isa WeftError && occursin("absent.tfrecord", err.message)
    err = try tfrecord_dataset(lines; compression = "LZMA"); nothing catch e; e end
    @test err isa WeftError && err.code == Weft.INVALID_ARGUMENT && occursin("LZMA", err.message)
    ds = range_dataset(0, 2)
    close(ds)
    @test_throws Weft.ClosedError batch(ds, 1)
end

@testset "queue runners" begin
    g = Graph()
    q = Output(op(g, "FIFOQueue"; name = "q", component_types = [Int32(Weft.INT64)],
                  shapes = [0], capacity = 2))
    source = iterator(range_dataset(0, 10), g; name = "source")
    enqueue = op(g, "QueueEnqueue", q, source.components[1]; name = "enqueue")
    dequeue = Output(op(g, "QueueDequeue", q; name = "dequeue"))
    close_q = op(g, "QueueClose", q; name = "close")
    s = Session(g; devices = CPU, inter_op_threads = 2)
    runner = QueueRunner(s, enqueue; num_threads = 2, close = close_q)
    got = Int64[]
    while true
        t = try
            run(s, dequeue; timeout_ms = 10_000)
        catch e
            @test e isa WeftError && e.code == Weft.OUT_OF_RANGE
            break
        end
        push!(got, t[])
    end
    @test sort(got) == collect(0:9)
    @test runner_error(runner) === nothing
    stop(runner)
    @test !isopen(runner)
    @test_throws Weft.ClosedError stop(runner)
    close(runner)                                   # harmless
    @test_throws WeftError QueueRunner(s, enqueue; num_threads = 0)
    close(s)
end

end
