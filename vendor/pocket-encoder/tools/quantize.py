#!/usr/bin/env python3
"""Makes the bundled assets (assets/) from a sentence-transformers BERT model folder.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy safetensors
    /tmp/venv/bin/python vendor/pocket-encoder/tools/quantize.py \
        --model DIR/all-MiniLM-L6-v2 --revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41 \
        --upstream sentence-transformers/all-MiniLM-L6-v2 --out vendor/pocket-encoder/assets

DIR holds the upstream model as published (model.safetensors in F32, config.json,
tokenizer.json). The format is the released pocket-encoder's, which src/weights.rs reads:

- every 1-D tensor as it is, F32;
- the table of word pieces (`embeddings.word_embeddings.weight`), flattened row-major, as
  symmetric 4-bit values in groups of 32: the group's scale is max(|x|)/7 rounded to F16 (1
  for a group of zeros), each value round-half-to-even(x / scale) clipped to [-7, 7], stored
  as the nibble q + 8, two to a byte, the first value in the low nibble. Tensor `NAME.q4`
  (U8) holds the nibbles, `NAME.scales` (F16, little-endian) the scales. This is the
  released crate's format, and this script makes its file for paraphrase-MiniLM-L3-v2 again
  byte for byte from those weights;
- every other matrix (positions, token types, the transformer layers', the unused
  pooler's), with `--bits 8` (the default), as 8-bit values the same way: scale
  max(|x|)/127 rounded to F16, each value clipped to [-127, 127], stored as `NAME.q8` (I8)
  with `NAME.scales` (F16). With every matrix 4-bit, all-MiniLM-L6-v2's vectors of the 13
  texts of tools/reference.py had a cosine of 0.89-0.96 (mean 0.94) with the F32 model's
  (0.94-0.97 with only the FFN matrices 4-bit, 0.96-0.98 only the attention's, 0.98-0.99
  only the three embedding tables, 0.997-0.998 only the word pieces); with only the word
  pieces 4-bit, 0.996-0.998. `--bits 4` makes every matrix 4-bit, as the released crate
  did (and as its paraphrase-MiniLM-L3-v2 file is);
- tensors that are not parameters (`embeddings.position_ids`) are left out;
- the file's header is compact JSON with sorted keys, padded with spaces to 8 bytes, and the
  tensors follow in the order of their names, as in the released crate's file.

config.json and tokenizer.json are copied byte for byte; shapes.json lists each parameter's
shape; provenance.json records the upstream model, revision and hashes. The same input gives
the same bytes.
"""

import argparse
import hashlib
import json
import pathlib
import shutil
import struct

import numpy as np
from safetensors.numpy import load_file

GROUP = 32
SKIPPED = {"embeddings.position_ids"}


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def quantize(values, bits):
    """Returns (the values' bytes, F16 scales) for an F32 array of any shape: 4-bit values
    packed two to a byte as nibbles q + 8, or 8-bit ones as signed bytes."""
    flat = values.astype(np.float32).reshape(-1)
    if flat.size % GROUP:
        raise SystemExit(f"{flat.size} values are not whole groups of {GROUP}")
    limit = 2 ** (bits - 1) - 1
    groups = flat.reshape(-1, GROUP)
    scales = (np.abs(groups).max(axis=1) / np.float32(limit)).astype(np.float16)
    scales[scales == 0] = np.float16(1)
    # Divide by the F16 scale the encoder multiplies by, so that each value is the nearest
    # of those it can be given (np.rint rounds halves to even).
    q = np.clip(np.rint(groups / scales.astype(np.float32)[:, None]), -limit, limit)
    q = q.astype(np.int16).reshape(-1)
    if bits == 8:
        return q.astype(np.int8), scales.astype("<f2")
    nibbles = (q + 8).astype(np.uint8)
    packed = nibbles[0::2] | (nibbles[1::2] << 4)
    return packed.astype(np.uint8), scales.astype("<f2")


def write_safetensors(path, tensors):
    """tensors: {name: (dtype string, shape, bytes)}, written in the order of their names."""
    header, data, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"data_offsets": [offset, offset + len(raw)], "dtype": dtype, "shape": shape}
        data.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for raw in data:
            out.write(raw)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="the upstream model folder")
    parser.add_argument("--upstream", required=True, help="e.g. sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--revision", required=True, help="the upstream commit the files are from")
    parser.add_argument("--license", default="Apache-2.0")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--bits", type=int, choices=(4, 8), default=8,
                        help="bits of the matrices but the word pieces' (8; 4 as the released crate)")
    parser.add_argument("--out", required=True, help="the assets folder to write")
    args = parser.parse_args()
    model, out = pathlib.Path(args.model), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    weights = load_file(model / "model.safetensors")
    tensors, shapes = {}, {}
    for name, value in weights.items():
        if name in SKIPPED:
            continue
        if value.dtype != np.float32:
            raise SystemExit(f"{name} is {value.dtype}, not F32: not the upstream weights")
        shape = list(value.shape)
        shapes[name] = shape
        if len(shape) < 2:
            tensors[name] = ("F32", shape, value.astype("<f4").tobytes())
        else:
            bits = 4 if name == "embeddings.word_embeddings.weight" else args.bits
            packed, scales = quantize(value, bits)
            if bits == 8:
                tensors[f"{name}.q8"] = ("I8", [packed.size], packed.tobytes())
            else:
                tensors[f"{name}.q4"] = ("U8", [packed.size], packed.tobytes())
            tensors[f"{name}.scales"] = ("F16", [scales.size], scales.tobytes())
    write_safetensors(out / "model.safetensors", tensors)
    (out / "shapes.json").write_text(json.dumps(shapes, indent=2, sort_keys=True) + "\n")
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(model / name, out / name)

    pooling = json.loads((model / "1_Pooling" / "config.json").read_text())
    modules = json.loads((model / "modules.json").read_text())
    if not pooling.get("pooling_mode_mean_tokens") or not any(
        m["type"].endswith("Normalize") for m in modules
    ):
        raise SystemExit("the encoder pools by masked mean and normalizes; this model does not")
    config = json.loads((model / "config.json").read_text())
    provenance = {
        "upstream_model": args.upstream,
        "upstream_revision": args.revision,
        "upstream_sha256": {
            name: sha256(model / name) for name in ("model.safetensors", "config.json", "tokenizer.json")
        },
        "bundled_sha256": sha256(out / "model.safetensors"),
        "quantization": "q4-symmetric-g32-f16-v1: round-to-even, [-7,7], nibble=q+8, low nibble "
        "first, float16 group scale=max(abs)/7; zero group scale=1"
        + (
            " (embeddings.word_embeddings.weight); every other matrix: "
            "q8-symmetric-g32-f16-v1: round-to-even, [-127,127], int8, float16 group "
            "scale=max(abs)/127; zero group scale=1"
            if args.bits == 8
            else ""
        ),
        "dimensions": config["hidden_size"],
        "layers": config["num_hidden_layers"],
        "max_tokens": args.max_tokens,
        "pooling": "attention-masked mean; L2 normalized",
        "tokenizer_sha256": sha256(out / "tokenizer.json"),
        "license": args.license,
        "network_at_build_or_inference": False,
        "made_by": "tools/quantize.py",
    }
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    print(f"{out / 'model.safetensors'}: {(out / 'model.safetensors').stat().st_size} bytes, "
          f"sha256 {provenance['bundled_sha256']}")


if __name__ == "__main__":
    main()
