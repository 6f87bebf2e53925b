"""The model JSON (docs/formats.md), read and scaled down.

The executor keeps every module, its kind, modality, inputs and layer count
(the plan names layers by index) and shrinks what only costs time: every
module gets the same small hidden size (so activations of all modules
concatenate into one [rows, hidden] tensor), at most 4 attention heads with
the model's query-to-KV-head ratio (GQA), the model's FFN-to-hidden ratio
(capped at 4; a module with several layer groups: its first group's
shape for every layer), a vocabulary of at most 61, tokens_per_item and
patches_per_item divided by the token scale (rounded, at least 1) and text
tokens divided by it (rounded up). A module whose patches_per_item differs
from its tokens_per_item runs its layers on the patches and hands on their
average-pooled tokens (layers.end_piece).
docs/executor.md states the rules. Besides Loom's model JSON, `--model`
takes what `loom plan --model` takes: a preset name (presets.py) and a
Hugging Face config.json (hf_config.py).
"""

import json
import math
import os

from .errors import InputError, describe
from .hf_config import is_hf_config, model_from_hf
from .presets import NAMES as PRESET_NAMES
from .presets import preset_doc

MODALITIES = ("text", "image", "video", "audio")


def round_tokens(x):
    """sdk/include/loom/tokens.h's loom_round_tokens: halves up, 0 below."""
    return int(math.floor(x + 0.5)) if x > 0 else 0


def load_model_doc(path):
    """The model JSON `--model` names, as `loom plan` reads it: a preset name
    (case-insensitive; not when the text has a `/` or ends in `.json`), else
    a file holding a Loom model or a Hugging Face config.json (converted)."""
    if "/" not in path and not path.endswith(".json"):
        doc = preset_doc(path)
        if doc is not None:
            return doc
        if not os.path.exists(path):
            raise InputError('model "%s": expected a model preset (%s) or a path to a model.json, '
                             "found neither" % (path, ", ".join(PRESET_NAMES)))
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise InputError("%s: cannot read the model: %s" % (path, e.strerror))
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError("%s: malformed JSON: %s" % (path, e))
    if not isinstance(doc, dict):
        raise InputError("%s: expected a model object, found %s" % (path, describe(doc)))
    if is_hf_config(doc):
        return model_from_hf(path, doc)
    return doc


class Module:
    """One module of the model, with its real and scaled shapes."""

    def __init__(self, index, name, kind, modality, tokens_per_item, vocab, frozen,
                 inputs, layers, real_hidden, heads, kv_heads, ffn_hidden, gated, causal,
                 cross):
        self.index, self.name, self.kind, self.modality = index, name, kind, modality
        self.tokens_per_item, self.vocab, self.frozen = tokens_per_item, vocab, frozen
        self.patches_per_item = tokens_per_item  # set by ModelSpec._module when given
        self.inputs = inputs  # indices of upstream modules
        self.layers, self.real_hidden = layers, real_hidden
        self.real_heads, self.real_kv_heads = heads, kv_heads
        self.real_ffn_hidden = ffn_hidden
        self.gated, self.causal, self.cross = gated, causal, cross
        self.consumers = []   # indices of downstream modules
        # scaled shapes, set by ModelSpec.scale
        self.heads = self.kv_heads = self.ffn = self.vocab_s = 0

    @property
    def terminal(self):
        """True when no module consumes this one: it ends in a loss."""
        return not self.consumers


class ModelSpec:
    """A model JSON and its scaled-down shapes (see the module docstring)."""

    def __init__(self, path, hidden=16, token_scale=64):
        self.path = str(path)
        doc = load_model_doc(self.path)
        self.doc = doc
        self.name = self._field(doc, "name", str, "name")
        mods = self._field(doc, "modules", list, "modules")
        if not mods:
            raise InputError("%s: modules: expected at least one module, found none" % self.path)
        self.modules = []
        names = {}
        for i, m in enumerate(mods):
            where = "modules[%d]" % i
            if not isinstance(m, dict):
                raise InputError("%s: %s: expected an object, found %s" % (self.path, where, describe(m)))
            name = self._field(m, "name", str, where + ".name")
            if name in names:
                raise InputError("%s: %s.name: duplicate module name %s" % (self.path, where, describe(name)))
            names[name] = i
            self.modules.append(self._module(i, m, where))
        for i, m in enumerate(mods):
            ins = m.get("inputs", [])
            if not isinstance(ins, list):
                raise InputError("%s: modules[%d].inputs: expected an array of module names, found %s"
                                 % (self.path, i, describe(ins)))
            for k, n in enumerate(ins):
                if n not in names or names[n] == i:
                    raise InputError("%s: modules[%d].inputs[%d]: expected the name of another module, found %s"
                                     % (self.path, i, k, describe(n)))
                self.modules[i].inputs.append(names[n])
                self.modules[names[n]].consumers.append(i)
        self.by_name = names
        self.scale(hidden, token_scale)

    def _field(self, obj, key, typ, where):
        """obj[key] of type typ, or InputError naming the JSON path."""
        if key not in obj:
            raise InputError("%s: %s: missing field" % (self.path, where))
        v = obj[key]
        ok = isinstance(v, typ) and not (typ is int and isinstance(v, bool))
        if typ is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            want = {str: "a string", list: "an array", int: "an integer", float: "a number",
                    bool: "true or false", dict: "an object"}[typ]
            raise InputError("%s: %s: expected %s, found %s" % (self.path, where, want, describe(v)))
        return v

    def _positive(self, obj, key, where):
        """An integer field >= 1."""
        v = self._field(obj, key, int, where)
        if v < 1:
            raise InputError("%s: %s: expected an integer >= 1, found %d" % (self.path, where, v))
        return v

    def _layer_groups(self, m, lw):
        """A module's layers: one group, or an array of groups (expanded in
        order). Returns the first group (whose shape the scaled model gives
        every layer), its JSON path and the layer count over all groups."""
        groups = m.get("layers")
        if not isinstance(groups, list):
            group = self._field(m, "layers", dict, lw)
            return group, lw, self._positive(group, "count", lw + ".count")
        if not groups:
            raise InputError("%s: %s: expected at least one layer group, found none" % (self.path, lw))
        count = 0
        for k, g in enumerate(groups):
            gw = "%s[%d]" % (lw, k)
            if not isinstance(g, dict):
                raise InputError("%s: %s: expected an object, found %s" % (self.path, gw, describe(g)))
            count += self._positive(g, "count", gw + ".count")
        return groups[0], lw + "[0]", count

    def _module(self, i, m, where):
        """One entry of modules[], checked."""
        name = m["name"]
        modality = m.get("modality", "text")
        if modality not in MODALITIES:
            raise InputError("%s: %s.modality: expected one of text, image, video, audio, found %s"
                             % (self.path, where, describe(modality)))
        kind = m.get("kind", "encoder")
        tpi = m.get("tokens_per_item", 1)
        if not isinstance(tpi, int) or isinstance(tpi, bool) or tpi < 1:
            raise InputError("%s: %s.tokens_per_item: expected an integer >= 1, found %s"
                             % (self.path, where, describe(tpi)))
        ppi = m.get("patches_per_item", tpi)
        if not isinstance(ppi, int) or isinstance(ppi, bool) or ppi < 1:
            raise InputError("%s: %s.patches_per_item: expected an integer >= 1, found %s"
                             % (self.path, where, describe(ppi)))
        vocab = m.get("vocab", 0) or 0
        frozen = bool(m.get("frozen", False))
        lw = where + ".layers"
        layers, lw, count = self._layer_groups(m, lw)
        hidden = self._positive(layers, "hidden", lw + ".hidden")
        heads = self._positive(layers, "heads", lw + ".heads")
        kv = layers.get("kv_heads", heads)
        if not isinstance(kv, int) or isinstance(kv, bool) or kv < 1 or heads % kv:
            raise InputError("%s: %s.kv_heads: expected a divisor of heads (%d), found %s"
                             % (self.path, lw, heads, describe(kv)))
        ffn = layers.get("ffn_hidden", 4 * hidden)
        mod = Module(i, name, kind, modality, tpi, vocab, frozen, [], count, hidden, heads, kv,
                     ffn, bool(layers.get("gated_ffn", False)), bool(layers.get("causal", False)),
                     bool(layers.get("cross_attention", False)))
        mod.patches_per_item = ppi if modality != "text" else tpi
        return mod

    def scale(self, hidden, token_scale):
        """Sets the scaled shapes: `hidden` for every module, tokens / token_scale."""
        self.hidden = hidden
        self.token_scale = token_scale
        for m in self.modules:
            m.heads = min(4, m.real_heads)
            ratio = m.real_heads // m.real_kv_heads
            m.kv_heads = max(1, m.heads // ratio)
            while m.heads % m.kv_heads:
                m.kv_heads -= 1
            while hidden % m.heads:
                m.heads -= 1
                m.kv_heads = max(1, min(m.kv_heads, m.heads))
                while m.heads % m.kv_heads:
                    m.kv_heads -= 1
            m.ffn = max(4, int(round(hidden * min(4.0, m.real_ffn_hidden / m.real_hidden))))
            m.vocab_s = min(61, m.vocab) if m.vocab else 0

    # -- token counts (sdk/include/loom/tokens.h), real and scaled --------

    @staticmethod
    def _items(mod, s, per_item):
        """loom_sample_items_tokens: sample s's items at per_item tokens each."""
        if mod.modality == "image":
            return s["images"] * per_item
        if mod.modality == "video":
            return round_tokens(s["video_seconds"] * per_item)
        if mod.modality == "audio":
            return round_tokens(s["audio_seconds"] * per_item)
        return s["text_tokens"]

    def real_own_tokens(self, m, s):
        """loom_sample_output_tokens: what module m hands on for sample s."""
        mod = self.modules[m]
        return self._items(mod, s, mod.tokens_per_item)

    def real_tokens(self, m, s):
        """loom_sample_tokens: the sequence sample s gives module m's layers
        (a non-text module's patches)."""
        mod = self.modules[m]
        if mod.modality != "text":
            return self._items(mod, s, mod.patches_per_item)
        return s["text_tokens"] + sum(self.real_own_tokens(u, s) for u in mod.inputs)

    def real_span_out_tokens(self, m, end_layer, s):
        """loom_sample_span_out_tokens: the tokens leaving a span of module m
        that ends before layer end_layer (merged after a non-text module's
        last layer)."""
        mod = self.modules[m]
        if mod.modality != "text" and end_layer >= mod.layers:
            return self.real_own_tokens(m, s)
        return self.real_tokens(m, s)

    def scaled_tokens_per_item(self, m):
        """tokens_per_item / token_scale, rounded, at least 1."""
        return max(1, int(round(self.modules[m].tokens_per_item / self.token_scale)))

    def scaled_patches_per_item(self, m):
        """patches_per_item / token_scale, rounded, at least 1 (the scaled
        tokens_per_item where the module merges nothing)."""
        mod = self.modules[m]
        if mod.patches_per_item == mod.tokens_per_item:
            return self.scaled_tokens_per_item(m)
        return max(1, int(round(mod.patches_per_item / self.token_scale)))

    def merges(self, m):
        """True when module m's layers run on more (or fewer) rows an item
        than it hands on: its end pools them."""
        return self.scaled_patches_per_item(m) != self.scaled_tokens_per_item(m)

    def scaled_text(self, s):
        """Scaled text tokens of sample s: text_tokens / token_scale rounded up."""
        return -(-s["text_tokens"] // self.token_scale)

    def own_rows(self, m, s):
        """Scaled own tokens of module m for sample s (what it hands on):
        tokens.h's rule with the scaled tokens_per_item and the scaled text
        tokens."""
        mod = self.modules[m]
        if mod.modality == "text":
            return self.scaled_text(s)
        return self._items(mod, s, self.scaled_tokens_per_item(m))

    def item_rows(self, m, s):
        """Scaled rows a non-text module's layers run on for sample s: the
        scaled patches_per_item an item."""
        mod = self.modules[m]
        if mod.modality == "text":
            return self.scaled_text(s)
        return self._items(mod, s, self.scaled_patches_per_item(m))

    def text_rows(self, m, s):
        """Scaled text tokens of a text module's sequence (its own input)."""
        return self.scaled_text(s)

    def scaled_sample(self, s):
        """Sample s of the scaled workload: the same images and seconds, the
        scaled text tokens (so tokens.h on the scaled model gives our rows)."""
        return {"text_tokens": self.scaled_text(s), "images": s["images"],
                "video_seconds": s["video_seconds"], "audio_seconds": s["audio_seconds"]}

    def upstream_rows(self, m, s):
        """Rows module m takes from its upstream modules for sample s."""
        return sum(self.own_rows(u, s) for u in self.modules[m].inputs)

    def rows(self, m, s):
        """Scaled sequence rows of module m for sample s: a text module's
        upstream rows then its text rows; any other module its own rows."""
        mod = self.modules[m]
        if mod.modality == "text":
            return self.upstream_rows(m, s) + self.text_rows(m, s)
        return self.item_rows(m, s)

    def ctx_rows(self, m, s):
        """Context rows of a cross-attention module (its upstream outputs)."""
        return self.upstream_rows(m, s) if self.modules[m].cross else 0

    def scaled_doc(self):
        """A model JSON of the scaled-down model (for planning with a profile)."""
        mods = []
        for m in self.modules:
            d = {"name": m.name, "kind": m.kind, "modality": m.modality,
                 "tokens_per_item": self.scaled_tokens_per_item(m.index),
                 "frozen": m.frozen,
                 "layers": {"count": m.layers, "hidden": self.hidden, "ffn_hidden": m.ffn,
                            "heads": m.heads, "kv_heads": m.kv_heads, "gated_ffn": m.gated,
                            "causal": m.causal}}
            if self.merges(m.index):
                d["patches_per_item"] = self.scaled_patches_per_item(m.index)
            if m.cross:
                d["layers"]["cross_attention"] = True
            if m.vocab:
                d["vocab"] = m.vocab_s
            if m.inputs:
                d["inputs"] = [self.modules[u].name for u in m.inputs]
            mods.append(d)
        out = {"name": self.name + "-scaled", "modules": mods}
        for k in ("parallel", "workload_family"):
            if k in self.doc:
                out[k] = self.doc[k]
        return out
