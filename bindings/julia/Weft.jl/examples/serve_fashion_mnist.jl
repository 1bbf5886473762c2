# Serves the model `weft train fashion-mnist` saved (a bundle directory)
# from Julia: predicts the class of every test image through the bundle's
# serving_default signature and prints the accuracy and the hash of the
# predicted classes that the C trainer and Java's ServeFashionMnist print,
# so the three can be compared.
#
#   weft train fashion-mnist --model mlp --save mlp-model
#   WEFT_LIBRARY=$PWD/build/runtime/libweft.so.1 \
#   WEFT_PLUGIN_PATH=$PWD/build/plugins/cpu \
#   julia --project=bindings/julia/Weft.jl \
#       bindings/julia/Weft.jl/examples/serve_fashion_mnist.jl mlp-model [DATA_DIR]

using Weft

include(joinpath(@__DIR__, "idx.jl"))

function main(args)
    isempty(args) && error("usage: serve_fashion_mnist.jl MODEL_DIR [DATA_DIR]")
    dir = length(args) > 1 ? args[2] : "/usr/share/datasets/fashion-mnist"
    images = read_idx(dir, "t10k-images-idx3-ubyte", 3)
    labels = read_idx(dir, "t10k-labels-idx1-ubyte", 1)
    n = size(images, ndims(images))
    model = load_model(args[1])
    println("model $(args[1]): inputs $(input_keys(model)), outputs $(output_keys(model))")
    right = 0
    hash = 0xcbf29ce484222325  # FNV-1a over the classes, as tools/train.c
    for first in 1:1000:n
        count = min(1000, n - first + 1)
        # Julia's (784, count) is Weft's [count, 784], row-major pixels.
        x = Float32.(reshape(images[:, :, first:first+count-1], 784, count)) ./ 255.0f0
        result = run(model, ["images" => x]; outputs = ["classes"])
        classes = array(result["classes"])
        for i in 1:count
            right += classes[i] == labels[first+i-1]
            hash = (hash ⊻ UInt64(classes[i])) * 0x100000001b3
        end
        close(result["classes"])
    end
    close(model)
    println("test accuracy: ", round(100 * right / n; digits = 2), "% ($n examples)")
    println("test predictions: $n classes, fnv1a ", string(hash; base = 16, pad = 16))
end

main(ARGS)
