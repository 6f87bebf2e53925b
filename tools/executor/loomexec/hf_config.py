"""A Hugging Face `config.json` read as a Loom model, by the rules of
core/problem/hf_config.c (docs/formats.md, "Hugging Face config.json"):
Llama, Mistral, Qwen2 and Mixtral (a dense model of the experts a token
runs through) as one `llm` module; LLaVA and Qwen2-VL as a `vision` encoder
feeding the `llm`; CLIP and SigLIP vision towers as one `vision` backbone.

No Loom CLI command prints the model it converts a config into, so the
rules are restated here; the executor's checks of a plan against the model
(the partition's layers, every transfer's tokens) catch any disagreement
with the planner.
"""

from .errors import InputError, describe

SUPPORTED = ("llama, mistral, qwen2, mixtral, llava, qwen2_vl, clip, clip_vision_model, "
             "siglip, siglip_vision_model")
QWEN2VL_IMAGE_PX = 448
MAX_LAYERS = 100000


def is_hf_config(doc):
    """True when a JSON object is a Hugging Face config: no `modules`, and a
    `model_type` or `architectures` (loom_model_is_hf_config)."""
    return isinstance(doc, dict) and "modules" not in doc and (
        "model_type" in doc or "architectures" in doc)


def _where(path, key):
    """The JSON path of obj[key] under `path`."""
    return "%s.%s" % (path, key) if path else key


def _int(file, obj, path, key, hi, default=None):
    """An integer member in 1..hi; `default` when absent (None: required)."""
    if key not in obj:
        if default is None:
            raise InputError("%s: %s: missing field" % (file, _where(path, key)))
        return default
    v = obj[key]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= hi:
        raise InputError("%s: %s: expected an integer in [1, %d], found %s"
                         % (file, _where(path, key), hi, describe(v)))
    return v


def _object(file, obj, key):
    """A required object member."""
    v = obj.get(key)
    if not isinstance(v, dict):
        raise InputError("%s: %s: expected an object, found %s"
                         % (file, key, "none" if key not in obj else describe(v)))
    return v


def _text(file, cfg, path):
    """The language-model layer group of a decoder-only config, and its vocabulary."""
    hidden = _int(file, cfg, path, "hidden_size", 1 << 20)
    ffn = _int(file, cfg, path, "intermediate_size", 1 << 22)
    layers = _int(file, cfg, path, "num_hidden_layers", MAX_LAYERS)
    heads = _int(file, cfg, path, "num_attention_heads", 1 << 16)
    kv = _int(file, cfg, path, "num_key_value_heads", heads, heads)
    vocab = _int(file, cfg, path, "vocab_size", 1 << 24)
    experts = _int(file, cfg, path, "num_local_experts", 1 << 12, 0)
    top_k = _int(file, cfg, path, "num_experts_per_tok", experts, 1) if experts else 1
    if heads % kv or hidden % heads:
        raise InputError("%s: %s: expected a multiple of num_key_value_heads (%d) that divides "
                         "hidden_size (%d), found %d"
                         % (file, _where(path, "num_attention_heads"), kv, hidden, heads))
    group = {"count": layers, "hidden": hidden, "ffn_hidden": ffn * top_k, "heads": heads,
             "kv_heads": kv, "gated_ffn": True, "causal": True}
    return group, vocab


def _clip(file, cfg, path, cls):
    """A CLIP / SigLIP tower's layer group and its tokens per image
    ((image_size // patch_size)^2, plus the class token when `cls`)."""
    hidden = _int(file, cfg, path, "hidden_size", 1 << 20)
    ffn = _int(file, cfg, path, "intermediate_size", 1 << 22)
    layers = _int(file, cfg, path, "num_hidden_layers", MAX_LAYERS)
    heads = _int(file, cfg, path, "num_attention_heads", 1 << 16)
    image = _int(file, cfg, path, "image_size", 1 << 16, 224)
    patch = _int(file, cfg, path, "patch_size", 1 << 12, 32)
    if hidden % heads:
        raise InputError("%s: %s: expected a divisor of hidden_size (%d), found %d"
                         % (file, _where(path, "num_attention_heads"), hidden, heads))
    if patch > image:
        raise InputError("%s: %s: expected at most image_size (%d), found %d"
                         % (file, _where(path, "patch_size"), image, patch))
    group = {"count": layers, "hidden": hidden, "ffn_hidden": ffn, "heads": heads,
             "kv_heads": heads, "gated_ffn": False, "causal": False}
    return group, (image // patch) ** 2 + (1 if cls else 0)


def _qwen2vl(file, cfg, path):
    """Qwen2-VL's tower for a 448 px square image: its layer group, the
    patches its blocks run on and the merged tokens the LM receives."""
    depth = _int(file, cfg, path, "depth", MAX_LAYERS)
    dim = _int(file, cfg, path, "embed_dim", 1 << 20)
    heads = _int(file, cfg, path, "num_heads", 1 << 16)
    ratio = cfg.get("mlp_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0.25 <= ratio <= 64:
        raise InputError("%s: %s: expected a number in [0.25, 64], found %s"
                         % (file, _where(path, "mlp_ratio"), describe(ratio)))
    patch = _int(file, cfg, path, "patch_size", 1 << 12, 14)
    merge = _int(file, cfg, path, "spatial_merge_size", 64, 2)
    if dim % heads:
        raise InputError("%s: %s: expected a divisor of embed_dim (%d), found %d"
                         % (file, _where(path, "num_heads"), dim, heads))
    group = {"count": depth, "hidden": dim, "ffn_hidden": int(dim * ratio + 0.5), "heads": heads,
             "kv_heads": heads, "gated_ffn": False, "causal": False}
    side = QWEN2VL_IMAGE_PX // patch // merge
    tokens = side * side if side > 0 else 1
    return group, tokens * merge * merge, tokens


def _vision(group, tokens, patches, backbone):
    """The `vision` module of a converted model."""
    m = {"name": "vision", "kind": "backbone" if backbone else "encoder", "modality": "image",
         "tokens_per_item": tokens, "layers": group}
    if patches:
        m["patches_per_item"] = patches
    return m


def _llm(group, vocab, fed):
    """The `llm` module of a converted model (fed by `vision` when `fed`)."""
    m = {"name": "llm", "kind": "backbone", "modality": "text", "tokens_per_item": 1,
         "vocab": vocab, "layers": group}
    if fed:
        m["inputs"] = ["vision"]
    return m


def model_from_hf(file, doc):
    """The Loom model JSON (docs/formats.md) a Hugging Face config stands for;
    its name is `_name_or_path`, else `model_type` (as the planner names it)."""
    mtype = doc.get("model_type")
    if not isinstance(mtype, str):
        raise InputError("%s: model_type: expected a string (a Hugging Face config), found %s"
                         % (file, "none" if "model_type" not in doc else describe(mtype)))
    name = doc.get("_name_or_path")
    name = name if isinstance(name, str) and name else mtype
    if mtype in ("llama", "mistral", "qwen2", "mixtral"):
        group, vocab = _text(file, doc, "")
        mods = [_llm(group, vocab, False)]
    elif mtype == "llava":
        vc, tc = _object(file, doc, "vision_config"), _object(file, doc, "text_config")
        vgroup, tokens = _clip(file, vc, "vision_config", False)
        group, vocab = _text(file, tc, "text_config")
        mods = [_vision(vgroup, tokens, 0, False), _llm(group, vocab, True)]
    elif mtype == "qwen2_vl":
        vgroup, patches, tokens = _qwen2vl(file, _object(file, doc, "vision_config"), "vision_config")
        group, vocab = _text(file, doc, "")
        mods = [_vision(vgroup, tokens, patches, False), _llm(group, vocab, True)]
    elif mtype in ("clip", "siglip"):
        vgroup, tokens = _clip(file, _object(file, doc, "vision_config"), "vision_config",
                               mtype == "clip")
        mods = [_vision(vgroup, tokens, 0, True)]
    elif mtype in ("clip_vision_model", "siglip_vision_model"):
        vgroup, tokens = _clip(file, doc, "", mtype == "clip_vision_model")
        mods = [_vision(vgroup, tokens, 0, True)]
    else:
        raise InputError('%s: model_type: expected a supported Hugging Face architecture (%s), '
                         'found %s' % (file, SUPPORTED, describe(mtype)))
    return {"name": name, "modules": mods}
