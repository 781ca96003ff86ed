#!/usr/bin/env python3
"""Reference vectors for the encoder's tests, from a BERT forward pass written in numpy (f64).

    /tmp/venv/bin/pip install numpy safetensors tokenizers
    # the upstream F32 model, as sentence-transformers runs it (tests/reference.json):
    /tmp/venv/bin/python vendor/pocket-encoder/tools/reference.py \
        --weights DIR/all-MiniLM-L6-v2/model.safetensors --out vendor/pocket-encoder/tests/reference.json
    # the bundled 4- and 8-bit weights, dequantized as src/weights.rs does (tests/bundled_vectors.json):
    /tmp/venv/bin/python vendor/pocket-encoder/tools/reference.py \
        --weights vendor/pocket-encoder/assets/model.safetensors --out vendor/pocket-encoder/tests/bundled_vectors.json

The forward pass is BertModel's (post-layer-norm, exact erf GELU, layer-norm epsilon from
config.json) followed by sentence-transformers' Pooling (mean over the attention mask) and
Normalize modules, for one text at a time (no padding), the tokenizer cut at --max-tokens as
the encoder cuts it. It shares no code with the Rust encoder. The number of layers, heads and
widths come from assets/config.json.
"""

import argparse
import json
import math
import pathlib

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

HERE = pathlib.Path(__file__).resolve().parent.parent
TEXTS = [
    "This is an example sentence",
    "Each sentence is converted",
    "Send a document",
    "Transfer a file",
    "A volcano erupts",
    "The cat chased the dog",
    "Deploy checklist (deploy, ops). Build the app, then verify the health check before you tag "
    "the release.",
    "Grocery list. Milk, eggs, bread and apples for the week.",
    "日本語 中文 مرحبا café 🦀",
    "word " * 200,
    "Meeting notes (work). Date, attendees, decisions and follow-ups; the budget review moves to "
    "Thursday and the design review waits for the research paper's method section.",
    "x",
    "0-dimensional biomaterials show inductive properties.",
]


def load_weights(path):
    """Upstream F32 tensors as they are, or the bundled 4- and 8-bit ones dequantized."""
    tensors = load_file(path)
    weights = {}
    for name, value in tensors.items():
        if name.endswith(".scales"):
            continue
        if name.endswith(".q4"):
            base = name[: -len(".q4")]
            nibbles = np.stack([value & 15, value >> 4], axis=1).reshape(-1).astype(np.float64) - 8
            scales = tensors[base + ".scales"].astype(np.float64)
            weights[base] = (nibbles.reshape(-1, 32) * scales[:, None]).reshape(-1)
        elif name.endswith(".q8"):
            base = name[: -len(".q8")]
            scales = tensors[base + ".scales"].astype(np.float64)
            weights[base] = (value.astype(np.float64).reshape(-1, 32) * scales[:, None]).reshape(-1)
        else:
            weights[name] = value.astype(np.float64)
    return weights


def embed(weights, config, ids, types):
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    eps = config["layer_norm_eps"]

    def w(name, *shape):
        return weights[name].reshape(shape)

    def norm(x, name):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w(name + ".weight", hidden) + w(name + ".bias", hidden)

    def linear(x, name, outputs):
        return x @ w(name + ".weight", outputs, x.shape[1]).T + w(name + ".bias", outputs)

    n = len(ids)
    x = (
        w("embeddings.word_embeddings.weight", config["vocab_size"], hidden)[ids]
        + w("embeddings.token_type_embeddings.weight", config["type_vocab_size"], hidden)[types]
        + w("embeddings.position_embeddings.weight", config["max_position_embeddings"], hidden)[:n]
    )
    x = norm(x, "embeddings.LayerNorm")
    head = hidden // heads
    erf = np.vectorize(math.erf)
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{part}", hidden).reshape(n, heads, head).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, hidden)
        x = norm(linear(context, f"{p}.attention.output.dense", hidden) + x, f"{p}.attention.output.LayerNorm")
        inner = linear(x, f"{p}.intermediate.dense", config["intermediate_size"])
        inner = inner * 0.5 * (1.0 + erf(inner / math.sqrt(2.0)))
        x = norm(linear(inner, f"{p}.output.dense", hidden) + x, f"{p}.output.LayerNorm")
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", required=True, help="a model.safetensors, F32 or bundled 4-bit")
    parser.add_argument("--assets", default=str(HERE / "assets"), help="config.json and tokenizer.json")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    assets = pathlib.Path(args.assets)
    config = json.loads((assets / "config.json").read_text())
    tokenizer = Tokenizer.from_file(str(assets / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(args.max_tokens)
    weights = load_weights(args.weights)
    vectors = []
    for text in TEXTS:
        encoded = tokenizer.encode(text)
        vectors.append([float(v) for v in embed(weights, config, encoded.ids, encoded.type_ids)])
    source = (
        f"tools/reference.py (numpy, f64) over {pathlib.Path(args.weights).name} "
        f"({'bundled 4- and 8-bit, dequantized' if any(k.endswith('.scales') for k in load_file(args.weights)) else 'upstream F32'}), "
        f"{config['num_hidden_layers']} layers, at most {args.max_tokens} tokens"
    )
    pathlib.Path(args.out).write_text(
        json.dumps({"source": source, "texts": TEXTS, "embeddings": vectors}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
