"""Writes the TFRecord files of the input-pipeline benchmark (bench/pipeline.c
and its twin bench/pipeline_tf.py), once: each file is left alone when it
is already there.  Every record is a tf.train.Example with an encoded image
(bytes feature "image") and its class (int64 feature "label"):

  fashion-mnist-png.tfrecord   the 60,000 Fashion-MNIST training images,
                               28x28 gray, as PNG (small: reading and
                               parsing weigh as much as decoding)
  rgb64-jpeg.tfrecord          10,000 64x64 RGB JPEGs (quality 90), made
                               from the first 10,000 of them: scaled up,
                               tinted by a colour gradient of their own and
                               given some noise, so that decoding dominates

Encoded by TensorFlow (tf.io.encode_png, tf.io.encode_jpeg), written by
tf.io.TFRecordWriter, to a temporary name renamed in.

Usage: pipeline_data.py OUT_DIR [FASHION_MNIST_DIR]
(default /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist,
as tools/train.c; the IDX files may be gzip-compressed or not)."""
import gzip
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FILES = {"png": "fashion-mnist-png.tfrecord", "jpeg": "rgb64-jpeg.tfrecord"}
JPEG_COUNT, JPEG_SIZE = 10000, 64


def read_idx(directory, name):
    """The array in <directory>/<name>[.gz] (IDX: big-endian header, bytes)."""
    path = os.path.join(directory, name)
    opener = open
    if not os.path.exists(path):
        path, opener = path + ".gz", gzip.open
    with opener(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def example(encoded, label):
    return tf.train.Example(features=tf.train.Features(feature={
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[encoded])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(
            value=[int(label)])),
    })).SerializeToString()


def write(path, images, labels, encode):
    """Writes one Example per image, encoded by `encode`, unless `path`
    exists."""
    if os.path.exists(path):
        return
    temporary = path + ".partial"
    with tf.io.TFRecordWriter(temporary) as w:
        for image, label in zip(images, labels):
            w.write(example(encode(image).numpy(), label))
    os.replace(temporary, path)
    print("wrote %s (%d records, %.1f MB)" % (path, len(labels),
                                             os.path.getsize(path) / 1e6))


def rgb64(images):
    """64x64 RGB versions of 28x28 gray images (deterministic)."""
    rng = np.random.default_rng(15)
    up = tf.image.resize(images[..., None].astype(np.float32),
                         [JPEG_SIZE, JPEG_SIZE]).numpy()
    ramp = np.linspace(0, 1, JPEG_SIZE, dtype=np.float32)
    out = np.empty((len(images), JPEG_SIZE, JPEG_SIZE, 3), np.uint8)
    for i in range(len(images)):
        a, b = rng.uniform(40, 215, 3), rng.uniform(40, 215, 3)
        background = (a * ramp[:, None, None] +
                      b * (1 - ramp[None, :, None]))
        weight = up[i] / 255
        pixel = weight * rng.uniform(120, 255, 3) + (1 - weight) * background
        pixel += rng.normal(0, 6, pixel.shape)
        out[i] = np.clip(pixel, 0, 255).astype(np.uint8)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    source = sys.argv[2] if len(sys.argv) > 2 else (
        "/usr/share/datasets/fashion-mnist")
    os.makedirs(out_dir, exist_ok=True)
    paths = {k: os.path.join(out_dir, v) for k, v in FILES.items()}
    if all(os.path.exists(p) for p in paths.values()):
        return
    images = read_idx(source, "train-images-idx3-ubyte")
    labels = read_idx(source, "train-labels-idx1-ubyte")
    write(paths["png"], images, labels,
          lambda x: tf.io.encode_png(x[..., None]))
    write(paths["jpeg"], rgb64(images[:JPEG_COUNT]), labels[:JPEG_COUNT],
          lambda x: tf.io.encode_jpeg(x, quality=90))


if __name__ == "__main__":
    main()
