#!/usr/bin/env python3
"""Writes seed inputs for the fuzz targets (scripts/fuzz.sh): valid files,
so the fuzzer starts past the headers.  Usage: make_seeds.py KIND DIR, KIND
being `checkpoint` (runtime/checkpoint/FORMAT.md, version 1), `idx` or
`c_api`."""

import gzip
import os
import random
import struct
import sys


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
