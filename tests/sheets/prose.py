"""The prose of a generated Markdown document: text outside math, plus the words inside math's
`\\text{...}`, with code spans (step names, IDs) removed; for the no-English-in-zh check."""
from __future__ import annotations

import re

# technical names a Chinese text keeps in Latin letters (the seed articles do)
TERMS = {"block", "token", "softmax", "LayerNorm", "RMSNorm", "FFN", "Post", "Pre", "LN", "ReLU", "GELU",
         "SiLU", "erf", "tanh", "Transformer", "Block", "ID", "RMS", "max", "mask", "sqrt", "dk", "pt",
         "YAML", "JSON", "RoPE"}


def prose_words(markdown: str) -> list[str]:
    text = re.sub(r"`[^`]*`", " ", markdown)
    inner = []

    def math(m):
        tex = re.sub(r"_\{\\text\{[^{}]*\}\}", " ", m.group(0))   # d_{\text{model}}: a symbol's name
        inner.extend(re.findall(r"\\text\{([^{}]*)\}", tex))
        return " "
    text = re.sub(r"\$\$.*?\$\$", math, text, flags=re.S)
    text = re.sub(r"\$[^$]*\$", math, text)
    words = re.findall(r"[A-Za-z]{2,}", text + " " + " ".join(inner))
    return [w for w in words if w not in TERMS]
