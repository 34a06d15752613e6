"""Saved models as specs (`symblock import`): a Hugging Face `save_pretrained` folder (config.json +
model.safetensors of a GPT-2, BERT or Llama, read with the `safetensors` package, no network) or a
nanoGPT `ckpt.pt`, turned into a spec mapping by spec_from.py's readers, the same path a live object
takes.

A checkpoint is data, never code: safetensors holds only arrays, and a `ckpt.pt` is opened with
`torch.load(weights_only=True)`, which refuses any pickled object that is not a tensor or plain data.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from symblock.errors import PATH_EXCERPT, SpecError, UsageError, excerpt
from symblock.reference import spec_from

MAX_BYTES = 1 << 30        # a checkpoint worked exactly is tiny; a 1 GiB file is a mistake
HF_TYPES = {"gpt2": "gpt2", "bert": "bert", "llama": "llama"}  # config.json model_type -> reader


def read(path: str | Path, tokens: list[int], generate: int = 0) -> dict:
    """The spec mapping of the checkpoint at `path` on the prompt `tokens` (+ `generate` greedy steps)."""
    p = Path(path)
    if p.is_dir():
        return _hugging_face(p, tokens, generate)
    if p.suffix == ".pt" and p.is_file():
        return _nanogpt(p, tokens, generate)
    what = ("no such file or folder" if not p.exists() else "a file, not a .pt checkpoint" if p.is_file()
            else "neither a folder nor a file")
    raise UsageError(f"{excerpt(str(p), PATH_EXCERPT)}: {what}; expected a Hugging Face model folder "
                     "(config.json and model.safetensors) or a nanoGPT ckpt.pt")


def _size_ok(f: Path) -> Path:
    if f.is_symlink() or not f.is_file():
        raise UsageError(f"{excerpt(str(f), PATH_EXCERPT)}: expected a regular file")
    if f.stat().st_size > MAX_BYTES:
        raise UsageError(f"{excerpt(str(f), PATH_EXCERPT)}: {f.stat().st_size} bytes is over the "
                         f"{MAX_BYTES >> 20} MiB a model worked exactly can have")
    return f


def _hugging_face(folder: Path, tokens: list[int], generate: int) -> dict:
    cfg_file, weights = folder / "config.json", folder / "model.safetensors"
    for f in (cfg_file, weights):
        if not f.exists():
            raise UsageError(f"{excerpt(str(folder), PATH_EXCERPT)}: no {f.name} (expected a save_pretrained folder)")
    try:
        config: dict[str, Any] = json.loads(_size_ok(cfg_file).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SpecError(str(cfg_file), "", f"expected JSON ({e})") from None
    if not isinstance(config, dict):
        raise SpecError(str(cfg_file), "", f"expected a JSON object of the model's settings, got a "
                                           f"{type(config).__name__}")
    kind = config.get("model_type")
    if kind not in HF_TYPES:
        raise spec_from.Unsupported(str(cfg_file), f"model_type {excerpt(kind)}: symblock imports "
                                                   f"{', '.join(HF_TYPES)} folders")
    try:
        from safetensors import SafetensorError
        from safetensors.numpy import load_file
    except ImportError:
        raise UsageError("reading model.safetensors needs the safetensors package: "
                         "pip install 'symblock[import]'") from None
    try:
        state = load_file(str(_size_ok(weights)))
    except SafetensorError as e:   # a truncated or damaged file: the safetensors reader says which part
        raise SpecError(str(weights), "", f"not a complete safetensors file ({e})") from None
    source = spec_from.Source(str(cfg_file), str(weights), prompt="--tokens")
    if kind == "bert":        # BertModel (or a task model's `bert.` body): the encoder's hidden states
        from symblock.reference.spec_from_bert import bert
        refuse_generate(cfg_file, generate)
        return bert(config, spec_from.arrays(state), tokens, source=source)
    if kind == "llama":
        from symblock.reference.spec_from_llama import llama
        return llama(config, spec_from.arrays(state), tokens, generate, source=source)
    if not any(k.startswith("transformer.") for k in state):   # saved from the bare GPT2Model
        state = {"transformer." + k: v for k, v in state.items()}
    return spec_from.gpt(config, spec_from.arrays(state), tokens, generate, flavour=HF_TYPES[kind], source=source)


def refuse_generate(cfg_file: Path, generate: int) -> None:
    if generate:
        raise spec_from.Unsupported(str(cfg_file), "an encoder (BERT) does not generate; leave --generate out")


def _nanogpt(file: Path, tokens: list[int], generate: int) -> dict:
    try:
        import torch
    except ImportError:
        raise UsageError("reading a ckpt.pt needs torch: pip install 'symblock[torch]'") from None
    try:
        ckpt = torch.load(str(_size_ok(file)), map_location="cpu", weights_only=True)
    except Exception as e:  # an unpickling refusal or a damaged file: the file's fault, named
        raise SpecError(str(file), "", f"not a checkpoint torch loads as plain data ({type(e).__name__})") from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict) or not isinstance(ckpt.get("model_args"), dict):
        raise SpecError(str(file), "", "expected nanoGPT's checkpoint: a mapping with `model` and `model_args`")
    for key, value in ckpt["model"].items():
        if not isinstance(key, str):
            raise SpecError(str(file), "model", f"expected weights named by strings, got the key {excerpt(key)}")
        if not isinstance(value, torch.Tensor) or value.is_complex() or value.is_quantized:
            got = value.dtype if isinstance(value, torch.Tensor) else excerpt(value)
            raise SpecError(str(file), f"model.{key}", f"expected a tensor of real numbers, got {got}")
    source = spec_from.Source(str(file), str(file), "model_args.", "model.", prompt="--tokens")
    return spec_from.gpt(ckpt["model_args"], spec_from.arrays(ckpt["model"]), tokens, generate, flavour="nanogpt",
                         source=source)
