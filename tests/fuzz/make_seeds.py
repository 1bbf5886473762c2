#!/usr/bin/env python3
"""Writes seed inputs for the fuzz targets (scripts/fuzz.sh): valid files,
so the fuzzer starts past the headers.  Usage: make_seeds.py KIND DIR, KIND
being `checkpoint` (runtime/checkpoint/FORMAT.md, version 1), `idx`,
`c_api`, `npy`, `graphdef`, `onnx`, `records`, `decoders` or `cluster`."""

import base64
import gzip
import os
import random
import struct
import sys
import zlib


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def checkpoint(records) -> bytes:
    """records: (name, dtype code, dims, data bytes)."""
    pre = b"WEFTCKPT" + struct.pack("<I", 1)
    out = pre + struct.pack("<I", crc32c(pre))
    head = struct.pack("<QI", len(records), 0)
    out += head + struct.pack("<I", crc32c(head))
    chain = b""
    for name, dtype, dims, data in records:
        raw = name.encode()
        rh = (b"VREC" + struct.pack("<I", len(raw)) + raw +
              struct.pack("<II", dtype, len(dims)) +
              b"".join(struct.pack("<q", d) for d in dims) +
              struct.pack("<Q", len(data)))
        hcrc = crc32c(rh)
        dcrc = crc32c(data) if data else 0
        out += rh + struct.pack("<I", hcrc) + data + struct.pack("<I", dcrc)
        chain += struct.pack("<II", hcrc, dcrc)
    end = b"WEFTEND\0" + struct.pack("<QI", len(records), crc32c(chain))
    return out + end + struct.pack("<I", crc32c(end))


# ---- GraphDef seeds (tests/fuzz/graphdef_loader.cc): TensorFlow's
# protobuf wire format written by hand, with TensorFlow's field numbers
# (runtime/model/tf_graph.proto), so no protobuf module is needed.


def pb_varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # negative int64s take ten bytes, as protobuf's
    out = b""
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def pb_field(number: int, value) -> bytes:
    """An int is a varint field; bytes or str a length-delimited one."""
    if isinstance(value, int):
        return pb_varint(number << 3) + pb_varint(value)
    if isinstance(value, str):
        value = value.encode()
    return pb_varint(number << 3 | 2) + pb_varint(len(value)) + value


def tf_shape(dims) -> bytes:
    return b"".join(pb_field(2, pb_field(1, d)) for d in dims)


def tf_tensor(dtype: int, dims, content: bytes = b"", ints=None,
              floats=None) -> bytes:
    out = pb_field(1, dtype) + pb_field(2, tf_shape(dims))
    if content:
        out += pb_field(4, content)
    if floats is not None:
        out += pb_field(5, b"".join(struct.pack("<f", f) for f in floats))
    if ints is not None:
        out += pb_field(7, b"".join(pb_varint(i) for i in ints))
    return out


def tf_node(name: str, op: str, inputs=(), **attrs) -> bytes:
    """attrs: name=(kind, value), kind an AttrValue field: 'type', 'i',
    'b', 's', 'f', 'shape', 'tensor' or 'ints' (a list)."""
    out = pb_field(1, name) + pb_field(2, op)
    for i in inputs:
        out += pb_field(3, i)
    numbers = {"s": 2, "i": 3, "b": 5, "type": 6, "shape": 7, "tensor": 8}
    for key, (kind, value) in sorted(attrs.items()):
        if kind == "ints":
            attr = pb_field(1, pb_field(3, b"".join(pb_varint(v)
                                                     for v in value)))
        elif kind == "f":
            attr = pb_varint(4 << 3 | 5) + struct.pack("<f", value)
        else:
            attr = pb_field(numbers[kind], value)
        out += pb_field(5, pb_field(1, key) + pb_field(2, attr))
    return out


def tf_graph(*nodes) -> bytes:
    return (b"".join(pb_field(1, n) for n in nodes) +
            pb_field(4, pb_field(1, 27)))


def graphdef_seeds() -> dict:
    f32, i32 = 1, 3
    weights = struct.pack("<12f", *[0.1 * k - 0.5 for k in range(12)])
    mlp = tf_graph(
        tf_node("x", "Placeholder", dtype=("type", f32),
                shape=("shape", tf_shape([-1, 4]))),
        tf_node("w", "Const", dtype=("type", f32),
                value=("tensor", tf_tensor(f32, [4, 3], content=weights))),
        tf_node("w/read", "Identity", ["w"], T=("type", f32)),
        tf_node("b", "Const", dtype=("type", f32),
                value=("tensor", tf_tensor(f32, [3], floats=[0.5]))),
        tf_node("mm", "MatMul", ["x", "w/read"], T=("type", f32),
                transpose_a=("b", 0), transpose_b=("b", 0)),
        tf_node("logits", "BiasAdd", ["mm", "b"], T=("type", f32),
                data_format=("s", "NHWC")),
        tf_node("shape", "Const", dtype=("type", i32),
                value=("tensor", tf_tensor(i32, [2], ints=[-1, 3]))),
        tf_node("flat", "Reshape", ["logits", "shape"], T=("type", f32)),
        tf_node("relu", "Relu6", ["flat"], T=("type", f32)),
        tf_node("probs", "Softmax", ["relu", "^w"], T=("type", f32)))
    # Out of order, with a NoOp, control inputs, output indices, folded
    # axes and decompositions.
    axis = tf_tensor(i32, [], ints=[1])
    kernel = struct.pack("<8f", *[0.25 * k for k in range(8)])
    cnn = tf_graph(
        tf_node("out", "ConcatV2", ["pool", "split:1", "axis3"],
                T=("type", f32), N=("i", 2), Tidx=("type", i32)),
        tf_node("axis", "Const", dtype=("type", i32),
                value=("tensor", axis)),
        tf_node("split", "Split", ["axis3", "pool"], T=("type", f32),
                num_split=("i", 2)),
        tf_node("axis3", "Const", dtype=("type", i32),
                value=("tensor", tf_tensor(i32, [], ints=[3]))),
        tf_node("pool", "MaxPool", ["conv"], T=("type", f32),
                ksize=("ints", [1, 2, 2, 1]), strides=("ints", [1, 2, 2, 1]),
                padding=("s", "SAME"), data_format=("s", "NHWC")),
        tf_node("conv", "Conv2D", ["image", "k", "^init"], T=("type", f32),
                strides=("ints", [1, 1, 1, 1]), padding=("s", "VALID"),
                dilations=("ints", [1, 1, 1, 1])),
        tf_node("init", "NoOp"),
        tf_node("k", "Const", dtype=("type", f32),
                value=("tensor", tf_tensor(f32, [2, 2, 1, 2], content=kernel))),
        tf_node("image", "Placeholder", dtype=("type", f32),
                shape=("shape", tf_shape([-1, 5, 5, 1]))),
        tf_node("mean", "Mean", ["out", "axis"], T=("type", f32),
                keep_dims=("b", 1)),
        tf_node("t", "Transpose", ["mean", "perm"], T=("type", f32)),
        tf_node("perm", "Const", dtype=("type", i32),
                value=("tensor", tf_tensor(i32, [4], ints=[0, 2, 1, 3]))),
        tf_node("probs", "AddN", ["t", "t", "t"], T=("type", f32),
                N=("i", 3)))
    # The target's first byte picks the outputs: every unread node (even)
    # or "probs" (odd).
    return {"mlp_unread": b"\x00" + mlp, "mlp_named": b"\x01" + mlp,
            "cnn_unread": b"\x00" + cnn, "cnn_named": b"\x01" + cnn}


# ---- ONNX seeds (tests/fuzz/onnx_loader.cc): onnx.proto's wire format by
# hand, with pb_field above, so no onnx module is needed.


def onnx_attr(name: str, value) -> bytes:
    """An AttributeProto: int, float, str, list of ints, or ('t', tensor)."""
    out = pb_field(1, name)
    if isinstance(value, tuple):
        return out + pb_field(5, value[1]) + pb_field(20, 4)
    if isinstance(value, list):
        return out + b"".join(pb_field(8, v) for v in value) + pb_field(20, 7)
    if isinstance(value, float):
        return (out + pb_varint(2 << 3 | 5) + struct.pack("<f", value) +
                pb_field(20, 1))
    if isinstance(value, int):
        return out + pb_field(3, value) + pb_field(20, 2)
    return out + pb_field(4, value) + pb_field(20, 3)


def onnx_node(op: str, inputs, outputs, **attrs) -> bytes:
    out = b"".join(pb_field(1, i) for i in inputs)
    out += b"".join(pb_field(2, o) for o in outputs)
    out += pb_field(4, op)
    for key, value in sorted(attrs.items()):
        out += pb_field(5, onnx_attr(key, value))
    return out


def onnx_tensor(name: str, dtype: int, dims, raw: bytes) -> bytes:
    return (b"".join(pb_field(1, d) for d in dims) + pb_field(2, dtype) +
            pb_field(8, name) + pb_field(9, raw))


def onnx_value(name: str, dtype: int, dims) -> bytes:
    shape = b"".join(pb_field(1, pb_field(1, d) if isinstance(d, int)
                              else pb_field(2, d)) for d in dims)
    tensor = pb_field(1, dtype) + pb_field(2, shape)
    return pb_field(1, name) + pb_field(2, pb_field(1, tensor))


def onnx_model(nodes, inputs, outputs, initializers=(), opset=13) -> bytes:
    graph = b"".join(pb_field(1, n) for n in nodes) + pb_field(2, "g")
    graph += b"".join(pb_field(5, t) for t in initializers)
    graph += b"".join(pb_field(11, v) for v in inputs)
    graph += b"".join(pb_field(12, v) for v in outputs)
    opset_id = pb_field(1, "") + pb_field(2, opset)
    return pb_field(1, 8) + pb_field(8, opset_id) + pb_field(7, graph)


def onnx_seeds() -> dict:
    f32, i64 = 1, 7

    def floats(n, scale=0.1):
        return struct.pack(f"<{n}f", *[scale * (k % 7 - 3) for k in range(n)])

    def ints(values):
        return struct.pack(f"<{len(values)}q", *values)

    cnn = onnx_model(
        [onnx_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                   pads=[1, 1, 1, 1]),
         onnx_node("BatchNormalization", ["c", "s", "b", "b", "v"], ["n"]),
         onnx_node("Relu", ["n"], ["r"]),
         onnx_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2],
                   strides=[2, 2], ceil_mode=1),
         onnx_node("AveragePool", ["p"], ["a"], kernel_shape=[2, 2],
                   pads=[0, 0, 1, 1]),
         onnx_node("GlobalAveragePool", ["a"], ["g"]),
         onnx_node("Flatten", ["g"], ["f"]),
         onnx_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1, alpha=0.5)],
        [onnx_value("x", f32, ["N", 3, 5, 5])],
        [onnx_value("y", f32, ["N", 2])],
        [onnx_tensor("w", f32, [4, 3, 3, 3], floats(108)),
         onnx_tensor("b", f32, [4], floats(4)),
         onnx_tensor("s", f32, [4], floats(4, 1.0)),
         onnx_tensor("v", f32, [4], struct.pack("<4f", 1, 2, 3, 4)),
         onnx_tensor("fc", f32, [2, 4], floats(8)),
         onnx_tensor("fb", f32, [2], floats(2))])
    # Shapes computed from constants: Shape, Gather, Unsqueeze, Concat,
    # Reshape, Slice, Pad, Split, Expand, Range, ConstantOfShape.
    shapes = onnx_model(
        [onnx_node("Shape", ["x"], ["sh"]),
         onnx_node("Gather", ["sh", "zero"], ["n"], axis=0),
         onnx_node("Unsqueeze", ["n", "zero1"], ["n1"]),
         onnx_node("Concat", ["n1", "minus1"], ["target"], axis=0),
         onnx_node("Reshape", ["x", "target"], ["flat"]),
         onnx_node("Slice", ["flat", "starts", "ends", "axes1"], ["sl"]),
         onnx_node("Pad", ["sl", "pads"], ["pd"], mode="reflect"),
         onnx_node("Split", ["pd"], ["s0", "s1"], axis=1),
         onnx_node("Range", ["zero", "three", "one"], ["rg"]),
         onnx_node("ConstantOfShape", ["target2"], ["co"],
                   value=("t", onnx_tensor("", f32, [1], floats(1, 2.0)))),
         onnx_node("Expand", ["s0", "target2"], ["ex"]),
         onnx_node("Transpose", ["ex"], ["t"], perm=[1, 0]),
         onnx_node("Softmax", ["t"], ["y"], axis=0),
         onnx_node("ReduceSum", ["co", "axes1"], ["z"], keepdims=0)],
        [onnx_value("x", f32, [2, 3, 4])],
        [onnx_value("y", f32, [-1, -1]), onnx_value("z", f32, [-1]),
         onnx_value("rg", i64, [3]), onnx_value("s1", f32, [-1, -1])],
        [onnx_tensor("zero", i64, [], ints([0])),
         onnx_tensor("zero1", i64, [1], ints([0])),
         onnx_tensor("one", i64, [], ints([1])),
         onnx_tensor("three", i64, [], ints([3])),
         onnx_tensor("minus1", i64, [1], ints([-1])),
         onnx_tensor("starts", i64, [1], ints([1])),
         onnx_tensor("ends", i64, [1], ints([-1])),
         onnx_tensor("axes1", i64, [1], ints([1])),
         onnx_tensor("pads", i64, [4], ints([0, 2, 0, 2])),
         onnx_tensor("target2", i64, [2], ints([2, 7]))])
    old = onnx_model(
        [onnx_node("Reshape", ["x"], ["r"], shape=[2, -1]),
         onnx_node("Clip", ["r"], ["c"], min=-1.0, max=1.0),
         onnx_node("Add", ["c", "b"], ["y"], broadcast=1)],
        [onnx_value("x", f32, [2, 2])], [onnx_value("y", f32, [2, 2])],
        [onnx_tensor("b", f32, [2], floats(2))], opset=4)
    return {"cnn": cnn, "shapes": shapes, "opset4": old}


# ---- Input pipelines: record files (tests/fuzz/record_reader.cc) and
# decoders (tests/fuzz/decoders.cc).


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(records) -> bytes:
    out = b""
    for r in records:
        length = struct.pack("<Q", len(r))
        out += (length + struct.pack("<I", masked_crc32c(length)) + r +
                struct.pack("<I", masked_crc32c(r)))
    return out


def idx(type_code: int, fmt: str, dims, values) -> bytes:
    return (bytes([0, 0, type_code, len(dims)]) +
            b"".join(struct.pack(">I", d) for d in dims) +
            b"".join(struct.pack(">" + fmt, v) for v in values))


def record_seeds() -> dict:
    """The target's first four bytes pick the reader, how the file is
    compressed and the fixed-length sizes (record_reader.cc)."""
    records = [b"", b"one", bytes(range(40)), b"\xff" * 300]
    plain = tfrecord(records)
    seeds = {
        "tfrecord": b"\x00\x00\x00\x00" + plain,
        "tfrecord_gzip": b"\x04\x00\x01\x00" + plain,
        "tfrecord_zlib": b"\x08\x00\x02\x00" + plain,
        "tfrecord_gzip_stream": b"\x0c\x00\x00\x00" + gzip.compress(plain),
        # header 2, records of 1 + 3 = 4 bytes, footer 1
        "fixed": b"\x01\x02\x03\x01" + b"hh" + bytes(range(12)) + b"f",
        "fixed_gzip": b"\x05\x02\x03\x01" + b"hh" + bytes(range(12)) + b"f",
        "text": b"\x02\x01\x00\x00" + b"header\nline one\r\nline two\n\nlast",
        "text_gzip": b"\x06\x00\x00\x00" + b"a\nb\r\n",
        "idx_u8": b"\x03\x00\x00\x00" + idx(0x08, "B", [2, 2, 2], range(8)),
        "idx_i16_gzip": b"\x07\x00\x00\x00" + idx(0x0B, "h", [3, 2],
                                                  [-1, 2, -3, 4, -5, 6]),
        "idx_f32": b"\x03\x00\x00\x00" + idx(0x0D, "f", [3], [1.5, -2, 0]),
        "idx_f64": b"\x03\x00\x00\x00" + idx(0x0E, "d", [1, 2], [1e300, 2]),
        "idx_i32": b"\x03\x00\x00\x00" + idx(0x0C, "i", [2], [7, -7]),
        "idx_i8": b"\x03\x00\x00\x00" + idx(0x09, "b", [2], [-128, 127]),
    }
    return seeds


def png(width, height, color_type, bit_depth, rows, palette=None, trns=None,
        interlaced=False) -> bytes:
    """rows: the filtered scanlines (each starting with its filter type),
    in Adam7 order when interlaced."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data)))
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0,
                       int(interlaced))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    if palette:
        out += chunk(b"PLTE", palette)
    if trns:
        out += chunk(b"tRNS", trns)
    return (out + chunk(b"IDAT", zlib.compress(rows)) +
            chunk(b"IEND", b""))


def example(features) -> bytes:
    """features: key -> ("bytes" | "float" | "int64", values)."""
    entries = b""
    for key, (kind, values) in features.items():
        if kind == "bytes":
            inner = b"".join(pb_field(1, v) for v in values)
            feature = pb_field(1, inner)
        elif kind == "float":
            feature = pb_field(2, pb_field(1, b"".join(
                struct.pack("<f", v) for v in values)))
        else:
            feature = pb_field(3, pb_field(1, b"".join(
                pb_varint(v) for v in values)))
        entries += pb_field(1, pb_field(1, key) + pb_field(2, feature))
    return pb_field(1, entries)


def decoder_seeds() -> dict:
    """The target's first byte picks the decoder (and channels), the second
    the feature key (decoders.cc)."""
    seeds = {}
    gray = b"".join(b"\x00" + bytes(range(y * 4, y * 4 + 4)) for y in range(3))
    rgb = b"".join(b"\x01" + bytes(range(12)) for _ in range(2))  # Sub filter
    rgba16 = b"".join(b"\x00" + bytes(range(16)) for _ in range(2))
    seeds["png_gray"] = b"\x00\x00" + png(4, 3, 0, 8, gray)
    seeds["png_rgb"] = b"\x03\x00" + png(4, 2, 2, 8, rgb)
    seeds["png_rgba16"] = b"\x8a\x00" + png(2, 2, 6, 16, rgba16)
    seeds["png_palette"] = b"\x00\x00" + png(
        2, 2, 3, 2, b"\x00\x10\x00\x20", palette=bytes(range(9)),
        trns=b"\x00\x80")
    # Adam7 over 3 x 3 gray: passes 1, 4, 5, 6, 7 hold pixels.
    seeds["png_interlaced"] = b"\x06\x00" + png(
        3, 3, 0, 8, b"\x00\x01" + b"\x00\x02" + b"\x00\x03\x04" +
        b"\x00\x05\x00\x06" + b"\x00\x07\x08\x09", interlaced=True)
    for name, text in JPEG_SEEDS.items():
        seeds["jpeg_" + name] = b"\x01\x00" + base64.b64decode(text)
    ex = example({"image": ("bytes", [b"\x89PNG", b""]),
                  "label": ("int64", [3, -1]),
                  "f": ("float", [1.5, -2.0])})
    for i, key in enumerate(["image", "label", "f"]):
        seeds["example_" + key] = b"\x02" + bytes([i if i < 2 else 4]) + ex
    return seeds


# Small JPEG files made by libjpeg-turbo 2.1 (cjpeg-like defaults, quality
# 50): 8 x 8 gray, 16 x 16 RGB (4:2:0), 16 x 8 RGB progressive.
JPEG_SEEDS = {
    "gray": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0o"
        "OjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/wAALCAAIAAgBAREA"
        "/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQA"
        "AAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJico"
        "KSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKT"
        "lJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo"
        "6erx8vP09fb3+Pn6/9oACAEBAAA/AMKz0vp8tf/Z"
    ),
    "rgb": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0o"
        "OjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8a"
        "Gi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj"
        "Y2NjY2P/wAARCAAQABADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQF"
        "BgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEI"
        "I0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNk"
        "ZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLD"
        "xMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEB"
        "AQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJB"
        "UQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZH"
        "SElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaan"
        "qKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oA"
        "DAMBAAIRAxEAPwBvhzS/ufLVfVLk6xq4jhYNZ2x2RY6Mf4mz3yensB61o65dDTdLWxgO"
        "Lq7XHBGUj7n8eQPx9Kb4f05Y0DvhVUZLHgAetPdgvI//2Q=="
    ),
    "progressive": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0o"
        "OjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8a"
        "Gi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj"
        "Y2NjY2P/wgARCAAIABADASIAAhEBAxEB/8QAFgABAQEAAAAAAAAAAAAAAAAAAAED/8QA"
        "FQEBAQAAAAAAAAAAAAAAAAAAAAH/2gAMAwEAAhADEAAAAZmJ/8QAGBAAAgMAAAAAAAAA"
        "AAAAAAAAAAMCBBP/2gAIAQEAAQUCrqGy2b//xAAUEQEAAAAAAAAAAAAAAAAAAAAA/9oA"
        "CAEDAQE/AX//xAAUEQEAAAAAAAAAAAAAAAAAAAAA/9oACAECAQE/AX//xAAZEAABBQAA"
        "AAAAAAAAAAAAAAAAAQIRMTL/2gAIAQEABj8CITDaP//EABoQAAICAwAAAAAAAAAAAAAA"
        "AAAhARExUWH/2gAIAQEAAT8hxIYto63J/9oADAMBAAIAAwAAABAP/8QAFhEBAQEAAAAA"
        "AAAAAAAAAAAAAQAR/9oACAEDAQE/EBy//8QAFhEBAQEAAAAAAAAAAAAAAAAAAQAx/9oA"
        "CAECAQE/EHQv/8QAGxABAAICAwAAAAAAAAAAAAAAAQAxEVEhQWH/2gAIAQEAAT8QlKIE"
        "8dLZ3lrwNz//2Q=="
    ),
}


def main() -> None:
    kind, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    seeds = {}
    if kind == "checkpoint":
        assert crc32c(b"123456789") == 0xE3069283
        floats = struct.pack("<3f", 1.0, -2.5, 3.25)
        seeds["two_records"] = checkpoint([
            ("w", 1, [3], floats),
            ("step", 4, [], struct.pack("<q", 7)),
        ])
        seeds["empty_tensor"] = checkpoint([("e", 1, [0, 5], b"")])
        seeds["no_records"] = checkpoint([])
    elif kind == "c_api":
        # The target reads its input as a program through libFuzzer's
        # FuzzedDataProvider, for which any bytes are a valid program: seeds
        # of a few lengths, from a fixed generator so that runs repeat.
        rng = random.Random(10)
        for length in (64, 256, 1024, 4096):
            seeds[f"random_{length}"] = bytes(
                rng.randrange(256) for _ in range(length))
    elif kind == "graphdef":
        seeds.update(graphdef_seeds())
    elif kind == "onnx":
        seeds.update(onnx_seeds())
    elif kind == "records":
        seeds.update(record_seeds())
    elif kind == "decoders":
        seeds.update(decoder_seeds())
    elif kind == "cluster":
        # Transfer headers (runtime/distributed/transfer.cc: magic "WFT1",
        # key, dtype, rank, dims, dead flag) after the payload size, and
        # cluster specs with a constraint.
        def header(key, dtype, dims, size):
            body = struct.pack("<II", 0x57465431, len(key)) + key
            body += struct.pack("<ii", dtype, len(dims))
            body += b"".join(struct.pack("<q", d) for d in dims) + b"\0"
            return b"\0" + struct.pack("<q", size) + body
        seeds["header_float"] = header(b"s0.1/0/x:0>1", 1, [2, 3], 24)
        seeds["header_scalar"] = header(b"s0.1/3/^n>0/2", 10, [], 1)
        seeds["spec_ps_worker"] = b"\1\3ps:1,worker\n/job:worker/task:1"
        seeds["spec_wildcard"] = b"\1\4worker:4\n/job:worker/task:*/device:CPU:0"
        seeds["spec_serving"] = b"\1\3ps:1,worker\nps"
        seeds["spec_app_contexts"] = b"\1\x83ps,worker\n/job:worker"
        # Run requests of an asynchronous cluster (runtime/session/serve.cc:
        # magic "WFRR", kind, run, timeout, names hash, counts, ids).
        def request(kind, run, feeds, fetches, targets):
            words = [0x57465252, kind, run, 0, 12345, len(feeds),
                     len(fetches), len(targets)]
            for f in feeds + fetches:
                words += list(f)
            words += targets
            return b"\3" + b"".join(struct.pack("<q", w) for w in words)
        seeds["request_run"] = request(0, 7, [(3, 0)], [(9, 0), (4, 1)], [12])
        seeds["request_end"] = request(1, 0, [], [], [])
    elif kind == "npy":
        # NumPy .npy files (tools/npy.h): each dtype, each format version,
        # Fortran order, a scalar, an empty array.
        def npy(descr, shape, payload, version=1, fortran=False):
            header = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, "
                      f"'shape': {tuple(shape)!r}, }}")
            preamble = 10 if version == 1 else 12
            length = len(header) + 1
            length += -(preamble + length) % 64
            text = header.encode().ljust(length - 1) + b"\n"
            size = struct.pack("<H" if version == 1 else "<I", length)
            return b"\x93NUMPY" + bytes([version, 0]) + size + text + payload
        for descr, size in (("<f4", 4), ("<f8", 8), ("<i4", 4), ("<i8", 8),
                            ("|u1", 1), ("|i1", 1), ("<i2", 2), ("<u2", 2),
                            ("<u4", 4), ("<u8", 8), ("|b1", 1), ("<f2", 2)):
            seeds["dtype_" + descr[1:]] = npy(descr, (2, 3),
                                              bytes(range(6 * size)))
        seeds["version_2"] = npy("<f4", (3,), bytes(12), version=2)
        seeds["version_3"] = npy("=i8", (1, 2), bytes(16), version=3)
        seeds["fortran"] = npy("<i2", (2, 3, 2), bytes(range(24)),
                               fortran=True)
        seeds["scalar"] = npy("<f8", (), struct.pack("<d", 1.5))
        seeds["empty"] = npy("<f4", (0, 5), b"")
    else:
        header = struct.pack(">BBBBIII", 0, 0, 8, 3, 2, 2, 2)
        images = header + bytes([0, 64, 128, 255, 1, 2, 3, 4])
        labels = struct.pack(">BBBBI", 0, 0, 8, 1, 3) + bytes([1, 2, 3])
        # The target's first byte picks gzip (odd) or plain (even).
        seeds["images_plain"] = b"\x02" + images
        seeds["labels_plain"] = b"\x00" + labels
        seeds["images_gzip"] = b"\x03" + images
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
