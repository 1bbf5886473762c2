# Trains the Fashion-MNIST MLP from Julia: 784 -> 256 -> 10 with ReLU,
# sparse softmax cross-entropy, Adam (learning rate 0.001), batches of 100,
# 2 epochs: the model of `weft train fashion-mnist --model mlp`
# (tools/train.c), with the same initial weights and the same batch order
# for the same seed, so it should reach the same test accuracy (85-86%).
#
#   WEFT_LIBRARY=$PWD/build/runtime/libweft.so.1 \
#   WEFT_PLUGIN_PATH=$PWD/build/plugins/cpu \
#   julia --project=bindings/julia/Weft.jl \
#       bindings/julia/Weft.jl/examples/train_fashion_mnist.jl [DATA_DIR] [SEED]
#
# DATA_DIR holds the four IDX files of Debian's dataset-fashion-mnist
# (default /usr/share/datasets/fashion-mnist), gzip-compressed or not.  No
# package beyond Weft is needed: .gz files are read through the `gzip`
# program (`gzip -dc`), not a Julia zlib package.

using Weft

const PIXELS = 784
const HIDDEN = 256
const CLASSES = 10
const BATCH = 100
const EPOCHS = 2
const EVAL_BATCH = 1000

# ---- Data ---------------------------------------------------------------------------

include(joinpath(@__DIR__, "idx.jl"))

function read_set(dir, prefix)
    images = read_idx(dir, "$prefix-images-idx3-ubyte", 3)   # 28 × 28 × n
    labels = read_idx(dir, "$prefix-labels-idx1-ubyte", 1)   # n
    size(images, 3) == length(labels) || error("$prefix: images and labels disagree")
    return reshape(images, PIXELS, :), labels
end

# ---- The same random numbers as tools/train.c ---------------------------------------

function splitmix!(state::Ref{UInt64})
    state[] += 0x9e3779b97f4a7c15
    z = state[]
    z = (z ⊻ (z >> 30)) * 0xbf58476d1ce4e5b9
    z = (z ⊻ (z >> 27)) * 0x94d049bb133111eb
    return z ⊻ (z >> 31)
end
uniform01!(state) = Float64(splitmix!(state) >> 11) * (1.0 / 9007199254740992.0)

# A Weft [rows, cols] float32 variable (cols 0: a [rows] vector), Glorot
# uniform when `glorot`, else zeros, filled in row-major order as train.c.
function weights(g, name, rows, cols, glorot, state)
    values = zeros(Float32, cols > 0 ? (cols, rows) : (rows,))
    if glorot
        limit = sqrt(6.0 / (rows + cols))
        for i in eachindex(values)
            values[i] = Float32((uniform01!(state) * 2 - 1) * limit)
        end
    end
    value, _ = variable(g, values; name = name)
    return value
end

function epoch_order(seed::UInt64, epoch::Integer, n::Integer)
    state = Ref(seed * UInt64(1000003) + UInt64(epoch))
    order = collect(Int32(0):Int32(n - 1))
    for i in n-1:-1:1
        j = Int(splitmix!(state) % UInt64(i + 1))
        order[i+1], order[j+1] = order[j+1], order[i+1]
    end
    return order
end

# ---- Model and training ---------------------------------------------------------------

function main(data_dir = "/usr/share/datasets/fashion-mnist", seed = UInt64(1))
    train_x, train_y = read_set(data_dir, "train")
    test_x, test_y = read_set(data_dir, "t10k")
    println("fashion-mnist: $(length(train_y)) training and $(length(test_y)) " *
            "test images; model mlp")

    g = Graph()
    state = Ref(seed)
    x = placeholder(g, Float32, [-1, PIXELS]; name = "images")
    labels = placeholder(g, Int32, [-1]; name = "labels")
    w1 = weights(g, "hidden/weights", PIXELS, HIDDEN, true, state)
    b1 = weights(g, "hidden/bias", HIDDEN, 0, false, state)
    h = relu(bias_add(matmul(x, w1; name = "hidden/matmul"), b1;
                      name = "hidden/preactivation"); name = "hidden/relu")
    w2 = weights(g, "softmax/weights", HIDDEN, CLASSES, true, state)
    b2 = weights(g, "softmax/bias", CLASSES, 0, false, state)
    logits = bias_add(matmul(h, w2; name = "softmax/matmul"), b2; name = "logits")
    loss = reduce_mean(sparse_softmax_cross_entropy(logits, labels; name = "xent");
                       name = "loss")
    train = minimize(loss; optimizer = :adam, learning_rate = 0.001, name = "train")
    init = initialize_all(g; name = "init")

    session = Session(g)
    run(session; targets = [init])

    n = length(train_y)
    per_epoch = n ÷ BATCH
    total = per_epoch * EPOCHS
    batch_x = zeros(Float32, PIXELS, BATCH)        # Weft [BATCH, PIXELS]
    batch_y = zeros(Int32, BATCH)
    order = Int32[]
    started = time()
    for step in 0:total-1
        epoch = step ÷ per_epoch
        step % per_epoch == 0 && (order = epoch_order(seed, epoch, n))
        first = (step % per_epoch) * BATCH
        for i in 1:BATCH
            e = order[first+i] + 1
            @views batch_x[:, i] .= train_x[:, e] ./ 255.0f0
            batch_y[i] = train_y[e]
        end
        # The batch arrays are fed without a copy.
        value = run(session, loss; feeds = [x => batch_x, labels => batch_y],
                    targets = [train])
        l = value[]
        close(value)
        isfinite(l) || error("the loss diverged ($l) at step $step")
        if (step + 1) % 100 == 0 || step + 1 == total
            rate = (step + 1) / (time() - started)
            println("epoch $(epoch + 1)/$EPOCHS step $(step + 1)/$total " *
                    "loss $(round(l; digits = 4)) $(round(Int, rate)) steps/s")
        end
    end

    right = 0
    for first in 1:EVAL_BATCH:length(test_y)
        last = min(first + EVAL_BATCH - 1, length(test_y))
        images = test_x[:, first:last] ./ 255.0f0
        scores = run(session, logits; feeds = [x => images])
        predicted = [argmax(c) - 1 for c in eachcol(array(scores))]   # 10 × batch
        right += count(predicted .== test_y[first:last])
        close(scores)
    end
    accuracy = right / length(test_y)
    println("test accuracy: $(round(100accuracy; digits = 2))% " *
            "($(length(test_y)) examples, model mlp, $EPOCHS epochs)")
    path = "fashion-mnist-mlp-julia.ckpt"
    save_checkpoint(session, path)
    println("checkpoint: $path")
    close(session)
    close(g)
    return accuracy
end

if abspath(PROGRAM_FILE) == @__FILE__
    main((isempty(ARGS) ? ("/usr/share/datasets/fashion-mnist",) : (ARGS[1],))...,
         (length(ARGS) >= 2 ? (parse(UInt64, ARGS[2]),) : ())...)
end
