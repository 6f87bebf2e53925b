"""A Hugging Face `config.json` read as a Loom model, by the rules of
core/problem/hf_config.c (docs/formats.md, "Hugging Face config.json"):
Llama, Mistral, Qwen2, InternLM2, and Mixtral and Qwen2-MoE (dense models of
the experts a token runs through) as one `llm` module; LLaVA, Qwen2-VL,
Qwen2.5-VL and InternVL as a `vision` encoder feeding the `llm`; CLIP and
SigLIP vision towers as one `vision` backbone. A field the config leaves out
takes its config class's default, the tables below restating
core/problem/hf_defaults.c.

No Loom CLI command prints the model it converts a config into, so the
rules are restated here; the executor's checks of a plan against the model
(the partition's layers, every transfer's tokens) catch any disagreement
with the planner.
"""

from .errors import InputError, describe

IMAGE_PX = 448
MAX_LAYERS = 100000
INTERNVL_DOWNSAMPLE = 0.5  # InternVLChatConfig (OpenGVLab/InternVL configuration_internvl_chat.py)

# Decoder defaults: hidden, ffn, layers, heads, kv heads (None: heads), vocab,
# MLP kind, experts, experts per token, expert ffn, shared expert ffn.
TEXT = {
    # LlamaConfig (models/llama/configuration_llama.py)
    "llama": (4096, 11008, 32, 32, None, 32000, "dense", 0, 0, 0, 0),
    # MistralConfig (models/mistral/configuration_mistral.py)
    "mistral": (4096, 14336, 32, 32, 8, 32000, "dense", 0, 0, 0, 0),
    # MixtralConfig (models/mixtral/configuration_mixtral.py)
    "mixtral": (4096, 14336, 32, 32, 8, 32000, "mixtral", 8, 2, 0, 0),
    # Qwen2Config (models/qwen2/configuration_qwen2.py)
    "qwen2": (4096, 22016, 32, 32, 32, 151936, "dense", 0, 0, 0, 0),
    # Qwen2MoeConfig (models/qwen2_moe/configuration_qwen2_moe.py)
    "qwen2_moe": (2048, 5632, 24, 16, 16, 151936, "qwen2_moe", 60, 4, 1408, 5632),
    # InternLM2Config (OpenGVLab/InternVL internvl/model/internlm2/configuration_internlm2.py)
    "internlm2": (4096, 11008, 32, 32, None, 103168, "dense", 0, 0, 0, 0),
    # the language models of Qwen2VLConfig and Qwen2_5_VLConfig (72B defaults)
    "qwen2_vl": (8192, 29568, 80, 64, 8, 152064, "dense", 0, 0, 0, 0),
    "qwen2_5_vl": (8192, 29568, 80, 64, 8, 152064, "dense", 0, 0, 0, 0),
}
LLMS = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "internlm2")

# ViT defaults: hidden, ffn, layers, heads, image px, patch px, class token.
VIT = {
    "clip_vision_model": (768, 3072, 12, 12, 224, 32, 1),    # CLIPVisionConfig
    "siglip_vision_model": (768, 3072, 12, 12, 224, 16, 0),  # SiglipVisionConfig
    "intern_vit_6b": (3200, 12800, 48, 25, 224, 14, 1),  # InternVisionConfig (InternVL repo)
    "llava": (1024, 4096, 24, 16, 336, 14, 1),  # LlavaConfig's tower without vision_config
}

# Qwen-VL vision defaults: width key, depth, width, heads, mlp ratio, SwiGLU ffn
# (0: GELU MLP of mlp ratio x width), patch px, merge.
QWEN_VIT = {
    "qwen2_vl": ("embed_dim", 32, 1280, 16, 4.0, 0, 14, 2),       # Qwen2VLVisionConfig
    "qwen2_5_vl": ("hidden_size", 32, 3584, 16, 0.0, 3420, 14, 2),  # Qwen2_5_VLVisionConfig
}

READERS = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "internlm2", "llava", "qwen2_vl",
           "qwen2_5_vl", "internvl_chat", "clip", "siglip", "clip_vision_model",
           "siglip_vision_model")
SUPPORTED = ", ".join(READERS)
INTERNVL_ARCH = {"InternLM2ForCausalLM": "internlm2", "LlamaForCausalLM": "llama",
                 "Qwen2ForCausalLM": "qwen2"}


def is_hf_config(doc):
    """True when a JSON object is a Hugging Face config: no `modules`, and a
    `model_type` or `architectures` (loom_model_is_hf_config)."""
    return isinstance(doc, dict) and "modules" not in doc and (
        "model_type" in doc or "architectures" in doc)


def _where(path, key):
    """The JSON path of obj[key] under `path`."""
    return "%s.%s" % (path, key) if path else key


def _int(file, obj, path, key, hi, default, lo=1):
    """An integer member in lo..hi; `default` when absent."""
    if key not in obj:
        return default
    v = obj[key]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise InputError("%s: %s: expected an integer in [%d, %d], found %s"
                         % (file, _where(path, key), lo, hi, describe(v)))
    return v


def _number(file, obj, path, key, lo, hi, default):
    """A number member in lo..hi; `default` when absent."""
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise InputError("%s: %s: expected a number in [%g, %g], found %s"
                         % (file, _where(path, key), lo, hi, describe(v)))
    return v


def _string(file, obj, path, key, default):
    """A string member; `default` when absent."""
    v = obj.get(key, default)
    if not isinstance(v, str):
        raise InputError("%s: %s: expected a string, found %s"
                         % (file, _where(path, key), describe(v)))
    return v


def _sub(file, doc, key):
    """A sub-config object; None when absent or null (the class's default)."""
    v = doc.get(key)
    if v is not None and not isinstance(v, dict):
        raise InputError("%s: %s: expected an object, found %s" % (file, key, describe(v)))
    return v


def _unsupported(file, path, what, supported, mtype):
    return InputError('%s: %s: expected %s (%s), found %s'
                      % (file, _where(path, "model_type"), what, supported, describe(mtype)))


def _active_ffn(file, cfg, path, d, ffn):
    """The FFN width a token runs through (see active_ffn in hf_config.c)."""
    kind = d[6]
    if kind == "dense":
        return ffn
    qwen = kind == "qwen2_moe"
    experts = _int(file, cfg, path, "num_experts" if qwen else "num_local_experts", 1 << 12, d[7])
    top_k = _int(file, cfg, path, "num_experts_per_tok", experts, d[8])
    if not qwen:
        return ffn * top_k
    moe = _int(file, cfg, path, "moe_intermediate_size", 1 << 22, d[9])
    shared = _int(file, cfg, path, "shared_expert_intermediate_size", 1 << 22, d[10], lo=0)
    step = _int(file, cfg, path, "decoder_sparse_step", 1 << 16, 1)
    dense = cfg.get("mlp_only_layers", [])
    if not isinstance(dense, list):
        raise InputError("%s: %s: expected an array, found %s"
                         % (file, _where(path, "mlp_only_layers"), describe(dense)))
    if step != 1 or dense:
        raise InputError("%s: %s: expected every layer sparse (decoder_sparse_step 1, "
                         "mlp_only_layers empty; Loom reads no mixed dense and MoE stacks), "
                         "found %s" % (file, _where(path, "decoder_sparse_step" if step != 1
                                                    else "mlp_only_layers"),
                                       "a step above 1" if step != 1 else "dense layers"))
    return moe * top_k + shared


def _text(file, cfg, path, d):
    """The language-model layer group of a decoder config, and its vocabulary."""
    hidden = _int(file, cfg, path, "hidden_size", 1 << 20, d[0])
    ffn = _int(file, cfg, path, "intermediate_size", 1 << 22, d[1])
    layers = _int(file, cfg, path, "num_hidden_layers", MAX_LAYERS, d[2])
    heads = _int(file, cfg, path, "num_attention_heads", 1 << 16, d[3])
    if cfg.get("num_key_value_heads", 0) is None:
        kv = heads
    else:
        kv = _int(file, cfg, path, "num_key_value_heads", heads, d[4] or heads)
    vocab = _int(file, cfg, path, "vocab_size", 1 << 24, d[5])
    ffn = _active_ffn(file, cfg, path, d, ffn)
    if kv > heads or heads % kv or hidden % heads:
        raise InputError("%s: %s: expected a multiple of num_key_value_heads (%d) that divides "
                         "hidden_size (%d), found %d"
                         % (file, _where(path, "num_attention_heads"), kv, hidden, heads))
    if cfg.get("head_dim") is not None:
        dim = _int(file, cfg, path, "head_dim", 1 << 16, hidden // heads)
        if dim != hidden // heads:
            raise InputError("%s: %s: expected hidden_size / num_attention_heads = %d (Loom models "
                             "no other head width), found %d"
                             % (file, _where(path, "head_dim"), hidden // heads, dim))
    group = {"count": layers, "hidden": hidden, "ffn_hidden": ffn, "heads": heads,
             "kv_heads": kv, "gated_ffn": True, "causal": True}
    return group, vocab


def _vit(file, cfg, path, d, image_px=0):
    """A CLIP / SigLIP / InternViT tower's layer group, the patches its layers
    run on ((image // patch)^2 plus the class token when the class has one)
    and the patch grid's side."""
    cfg = cfg or {}
    hidden = _int(file, cfg, path, "hidden_size", 1 << 20, d[0])
    ffn = _int(file, cfg, path, "intermediate_size", 1 << 22, d[1])
    layers = _int(file, cfg, path, "num_hidden_layers", MAX_LAYERS, d[2])
    heads = _int(file, cfg, path, "num_attention_heads", 1 << 16, d[3])
    image = _int(file, cfg, path, "image_size", 1 << 16, d[4])
    patch = _int(file, cfg, path, "patch_size", 1 << 12, d[5])
    if image_px:
        image = image_px
    if hidden % heads:
        raise InputError("%s: %s: expected a divisor of hidden_size (%d), found %d"
                         % (file, _where(path, "num_attention_heads"), hidden, heads))
    if patch > image:
        raise InputError("%s: %s: expected at most image_size (%d), found %d"
                         % (file, _where(path, "patch_size"), image, patch))
    group = {"count": layers, "hidden": hidden, "ffn_hidden": ffn, "heads": heads,
             "kv_heads": heads, "gated_ffn": False, "causal": False}
    side = image // patch
    return group, side * side + d[6], side


def _qwen_vit(file, cfg, path, d):
    """A Qwen-VL tower for a 448 px square image: its layer group, the
    patches its blocks run on and the merged tokens the LM receives."""
    cfg = cfg or {}
    key, gated = d[0], d[5] != 0
    depth = _int(file, cfg, path, "depth", MAX_LAYERS, d[1])
    width = _int(file, cfg, path, key, 1 << 20, d[2])
    heads = _int(file, cfg, path, "num_heads", 1 << 16, d[3])
    if gated:
        ffn = _int(file, cfg, path, "intermediate_size", 1 << 22, d[5])
    else:
        ratio = _number(file, cfg, path, "mlp_ratio", 0.25, 64, d[4])
    patch = _int(file, cfg, path, "patch_size", 1 << 12, d[6])
    merge = _int(file, cfg, path, "spatial_merge_size", 64, d[7])
    if width % heads:
        raise InputError("%s: %s: expected a divisor of %s (%d), found %d"
                         % (file, _where(path, "num_heads"), key, width, heads))
    if not gated:
        ffn = int(width * ratio + 0.5)
    group = {"count": depth, "hidden": width, "ffn_hidden": ffn, "heads": heads,
             "kv_heads": heads, "gated_ffn": gated, "causal": False}
    side = IMAGE_PX // patch // merge
    tokens = side * side if side > 0 else 1
    return group, tokens * merge * merge, tokens


def _llm_part(file, cfg, key, mtype):
    """A VLM's language model: sub-config `cfg` (None: defaults) of `mtype`."""
    if mtype not in LLMS:
        raise _unsupported(file, key, "a supported language model", ", ".join(LLMS), mtype)
    return _text(file, cfg or {}, key, TEXT[mtype])


def _internvl_llm_type(file, lc):
    """The language model InternVLChatConfig builds from llm_config."""
    if lc is None:
        return "internlm2"
    arch = lc.get("architectures")
    first = arch[0] if isinstance(arch, list) and arch else None
    if isinstance(first, str):
        if first in INTERNVL_ARCH:
            return INTERNVL_ARCH[first]
        if "model_type" not in lc:
            raise InputError('%s: llm_config.architectures[0]: expected InternLM2ForCausalLM, '
                             'LlamaForCausalLM or Qwen2ForCausalLM (or a model_type beside it), '
                             'found %s' % (file, describe(first)))
    return _string(file, lc, "llm_config", "model_type", "internlm2")


def _vision(group, tokens, patches, backbone):
    """The `vision` module of a converted model."""
    m = {"name": "vision", "kind": "backbone" if backbone else "encoder", "modality": "image",
         "tokens_per_item": tokens, "layers": group}
    if patches != tokens:
        m["patches_per_item"] = patches
    return m


def _llm(group, vocab, fed):
    """The `llm` module of a converted model (fed by `vision` when `fed`)."""
    m = {"name": "llm", "kind": "backbone", "modality": "text", "tokens_per_item": 1,
         "vocab": vocab, "layers": group}
    if fed:
        m["inputs"] = ["vision"]
    return m


def _llava(file, doc):
    vc = _sub(file, doc, "vision_config")
    vtype = _string(file, vc, "vision_config", "model_type", "clip_vision_model") if vc \
        is not None else "clip_vision_model"
    strategy = _string(file, doc, "", "vision_feature_select_strategy", "default")
    if strategy not in ("default", "full"):
        raise InputError('%s: vision_feature_select_strategy: expected "default" or "full", '
                         'found %s' % (file, describe(strategy)))
    if vtype not in ("clip_vision_model", "siglip_vision_model"):
        raise _unsupported(file, "vision_config", "a supported vision tower",
                           "clip_vision_model, siglip_vision_model", vtype)
    vgroup, patches, _ = _vit(file, vc, "vision_config", VIT[vtype if vc is not None else "llava"])
    tokens = patches - 1 if strategy == "default" else patches  # LLaVA drops the first feature
    tc = _sub(file, doc, "text_config")
    ttype = _string(file, tc, "text_config", "model_type", "llama") if tc is not None else "llama"
    group, vocab = _llm_part(file, tc, "text_config", ttype)
    return [_vision(vgroup, tokens, patches, False), _llm(group, vocab, True)]


def _qwen_vl(file, doc, mtype):
    vgroup, patches, tokens = _qwen_vit(file, _sub(file, doc, "vision_config"), "vision_config",
                                        QWEN_VIT[mtype])
    tc = _sub(file, doc, "text_config")
    if tc is not None:
        group, vocab = _text(file, tc, "text_config", TEXT[mtype])
    else:
        group, vocab = _text(file, doc, "", TEXT[mtype])
    return [_vision(vgroup, tokens, patches, False), _llm(group, vocab, True)]


def _internvl(file, doc):
    vc = _sub(file, doc, "vision_config")
    image = 0
    if doc.get("force_image_size") is not None:
        image = _int(file, doc, "", "force_image_size", 1 << 16, 0)
    ratio = _number(file, doc, "", "downsample_ratio", 0.0625, 1, INTERNVL_DOWNSAMPLE)
    vgroup, patches, side = _vit(file, vc, "vision_config", VIT["intern_vit_6b"], image)
    lc = _sub(file, doc, "llm_config")
    group, vocab = _llm_part(file, lc, "llm_config", _internvl_llm_type(file, lc))
    tokens = max(1, int(side * side * ratio * ratio))
    return [_vision(vgroup, tokens, patches, False), _llm(group, vocab, True)]


def model_from_hf(file, doc):
    """The Loom model JSON (docs/formats.md) a Hugging Face config stands for;
    its name is `_name_or_path`, else `model_type` (as the planner names it)."""
    mtype = doc.get("model_type")
    if not isinstance(mtype, str):
        raise InputError("%s: model_type: expected a string (a Hugging Face config), found %s"
                         % (file, "none" if "model_type" not in doc else describe(mtype)))
    name = doc.get("_name_or_path")
    name = name if isinstance(name, str) and name else mtype
    if mtype in LLMS:
        group, vocab = _text(file, doc, "", TEXT[mtype])
        mods = [_llm(group, vocab, False)]
    elif mtype == "llava":
        mods = _llava(file, doc)
    elif mtype in ("qwen2_vl", "qwen2_5_vl"):
        mods = _qwen_vl(file, doc, mtype)
    elif mtype == "internvl_chat":
        mods = _internvl(file, doc)
    elif mtype in ("clip", "siglip"):
        vgroup, patches, _ = _vit(file, _sub(file, doc, "vision_config"), "vision_config",
                                  VIT[mtype + "_vision_model"])
        mods = [_vision(vgroup, patches, patches, True)]
    elif mtype in ("clip_vision_model", "siglip_vision_model"):
        vgroup, patches, _ = _vit(file, doc, "", VIT[mtype])
        mods = [_vision(vgroup, patches, patches, True)]
    else:
        raise InputError('%s: model_type: expected a supported Hugging Face architecture (%s), '
                         'found %s' % (file, SUPPORTED, describe(mtype)))
    return {"name": name, "modules": mods}
