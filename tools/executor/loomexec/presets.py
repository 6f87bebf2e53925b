"""Loom's built-in model presets (core/problem/presets.c, docs/formats.md
"Model presets") as model JSON, so `--model vlm-s` means what it means to
`loom plan`: PipeWeaver Table 3's networks alone, and the Table 4 / 6
combinations with their parallel configs."""

IMAGE_TOKENS = 169
VIDEO_TOKENS_PER_SECOND = 2 * 48 * 48

# preset: (module, kind, modality, tokens_per_item, vocab,
#          (layers, hidden, ffn_hidden, heads, kv_heads, gated_ffn, causal, cross_attention))
BASES = {
    "vit-5b": ("vit", "encoder", "image", IMAGE_TOKENS, 0, (63, 1792, 15360, 16, 16, 0, 0, 0)),
    "vit-22b": ("vit", "encoder", "image", IMAGE_TOKENS, 0, (48, 6144, 24576, 48, 48, 0, 0, 0)),
    "llama3-8b": ("llm", "backbone", "text", 1, 128256, (32, 4096, 14336, 32, 8, 1, 1, 0)),
    "qwen2-32b": ("llm", "backbone", "text", 1, 152064, (64, 5120, 27648, 40, 8, 1, 1, 0)),
    "qwen2-72b": ("llm", "backbone", "text", 1, 152064, (80, 8192, 29568, 64, 8, 1, 1, 0)),
    "dit-5b": ("dit", "decoder", "video", VIDEO_TOKENS_PER_SECOND, 0,
               (28, 3584, 10240, 28, 28, 0, 0, 1)),
    "dit-30b": ("dit", "decoder", "video", VIDEO_TOKENS_PER_SECOND, 0,
                (48, 6144, 24576, 48, 48, 0, 0, 1)),
    "gpt-175b": ("llm", "backbone", "text", 1, 50257, (96, 12288, 49152, 96, 96, 0, 1, 0)),
}

# preset: (upstream base, downstream base, text-to-video, tp, pp, dp)
COMBOS = {
    "vlm-s": ("vit-5b", "llama3-8b", False, 4, 4, 1),
    "vlm-m": ("vit-5b", "qwen2-32b", False, 8, 4, 1),
    "vlm-l": ("vit-22b", "qwen2-72b", False, 8, 8, 1),
    "t2v-s": ("llama3-8b", "dit-5b", True, 4, 4, 1),
    "t2v-l": ("qwen2-32b", "dit-30b", True, 8, 8, 1),
    "vlm-xl": ("vit-22b", "gpt-175b", False, 8, 8, 128),
    "t2v-xl": ("qwen2-72b", "dit-30b", True, 8, 4, 96),
}

NAMES = list(COMBOS) + list(BASES)


def _module(base):
    """The module JSON of a base preset."""
    name, kind, modality, tokens, vocab, g = BASES[base]
    m = {"name": name, "kind": kind, "modality": modality, "tokens_per_item": tokens,
         "layers": {"count": g[0], "hidden": g[1], "ffn_hidden": g[2], "heads": g[3],
                    "kv_heads": g[4], "gated_ffn": bool(g[5]), "causal": bool(g[6]),
                    "cross_attention": bool(g[7])}}
    if vocab:
        m["vocab"] = vocab
    return m


def preset_doc(name):
    """The model JSON of preset `name` (case-insensitive), or None."""
    key = name.lower()
    if key in BASES:
        return {"name": key, "modules": [_module(key)]}
    if key not in COMBOS:
        return None
    up, down, t2v, tp, pp, dp = COMBOS[key]
    first, second = _module(up), _module(down)
    if t2v:
        first.update(name="text_encoder", kind="encoder")
    second["inputs"] = [first["name"]]
    return {"name": key, "modules": [first, second],
            "parallel": {"tp": tp, "pp": pp, "dp": dp, "vpp": 1, "microbatches": 4 * pp},
            "workload_family": "video" if t2v else "interleaved"}
