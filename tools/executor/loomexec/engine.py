"""Runs a chunk's pieces for one unit: forward with or without graphs,
recomputation before backward, and backward as one pass (B) or split into
the input gradient (I) and, later, the weight gradient (W).

Every piece starts from leaves detached from its inputs, so the backward
walks the pieces in reverse, handing each the gradient of what it wrote and
collecting the gradient of what it read. A piece marked `recompute` runs
under no_grad in the forward (only its inputs are kept) and again with a
graph just before the stage's backward. A piece marked `offload` keeps its
graph, but every tensor autograd saves for its backward is copied into a
separate host buffer when saved and read back from it in the backward
(saved-tensor hooks), as an activation-offloading runtime does.
"""

import torch


def _leaf(t):
    """A leaf sharing t's storage, needing a gradient when t does."""
    return t.detach().requires_grad_(t.requires_grad)


def _offload_pack(t):
    """Saved-tensor hook: the tensor leaves for host memory (a copy)."""
    return t.detach().clone()


def _offload_unpack(t):
    """Saved-tensor hook: the copy comes back for the backward."""
    return t


class ChunkRun:
    """The pieces of one stage pair (forward and its backward) for one unit."""

    def __init__(self, pieces, params, unit, grads):
        self.pieces, self.P, self.unit = pieces, params, unit
        self.grads = grads    # name -> accumulated gradient (shared by the rank)
        self.tape = []

    def forward(self, state):
        """Runs every piece on `state` (a dict, updated in place)."""
        for pc in self.pieces:
            ins = {k: _leaf(state[k]) for k in pc.reads}
            if pc.recompute:
                with torch.no_grad():
                    out = pc.fn(self.P, self.unit, ins)
                # what the output would need, had the graph been kept
                needs = any(t.requires_grad for t in ins.values()) or any(
                    self.P[n].requires_grad for n in pc.params)
                vals = {k: v.detach().requires_grad_(needs and v.is_floating_point())
                        for k, v in out.items()}
                self.tape.append([pc, ins, None, None])
            elif pc.offload:
                with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(
                        _offload_pack, _offload_unpack):
                    out = pc.fn(self.P, self.unit, ins)
                vals = out
                self.tape.append([pc, ins, out, None])
            else:
                with torch.enable_grad():
                    out = pc.fn(self.P, self.unit, ins)
                vals = out
                self.tape.append([pc, ins, out, None])
            for k in pc.drops:
                state.pop(k, None)
            state.update(vals)
        return state

    def recompute(self):
        """Rebuilds the graphs of the recomputed pieces (before backward)."""
        for entry in self.tape:
            if entry[2] is None:
                with torch.enable_grad():
                    entry[2] = entry[0].fn(self.P, self.unit, entry[1])

    def _add_param_grads(self, names, res):
        """Adds parameter gradients into the rank's sums."""
        for n, g in zip(names, res):
            if g is None:
                continue
            if n in self.grads:
                self.grads[n] += g
            else:
                self.grads[n] = g.clone()

    def backward(self, g_out, mode):
        """mode B: input and weight gradients; I: input gradients only, the
        graphs kept for weight_grad(). g_out: key -> gradient of the chunk's
        output state. Returns key -> gradient of the chunk's input state."""
        self.recompute()
        g = dict(g_out)
        for entry in reversed(self.tape):
            pc, ins, outs = entry[0], entry[1], entry[2]
            pairs = [(outs[k], g.pop(k)) for k in pc.writes
                     if k in g and g[k] is not None and outs[k].requires_grad]
            for k in pc.writes:
                g.pop(k, None)
            if not pairs:
                entry[2] = None
                continue
            in_keys = [k for k in pc.reads if ins[k].requires_grad]
            pnames = [n for n in pc.params if self.P[n].requires_grad] if mode == "B" else []
            targets = [ins[k] for k in in_keys] + [self.P[n] for n in pnames]
            if targets:
                res = torch.autograd.grad([o for o, _ in pairs], targets,
                                          grad_outputs=[x for _, x in pairs],
                                          allow_unused=True, retain_graph=(mode == "I"))
            else:
                res = []
            for k, gr in zip(in_keys, res):
                if gr is not None:
                    g[k] = gr if g.get(k) is None else g[k] + gr
            self._add_param_grads(pnames, res[len(in_keys):])
            if mode == "I":
                entry[3] = pairs
            else:
                entry[2] = None
        return g

    def weight_grad(self):
        """The W half of a split backward: weight gradients from the graphs
        and output gradients the I half kept; frees them."""
        for entry in self.tape:
            pc, pairs = entry[0], entry[3]
            if not pairs:
                continue
            pnames = [n for n in pc.params if self.P[n].requires_grad]
            if pnames:
                res = torch.autograd.grad([o for o, _ in pairs], [self.P[n] for n in pnames],
                                          grad_outputs=[x for _, x in pairs], allow_unused=True)
                self._add_param_grads(pnames, res)
            entry[2] = entry[3] = None
        self.tape = []
