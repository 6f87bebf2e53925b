"""roofline_params.py - the params a plan's roofline cost model ran with, as the
export checks (check_megatron_exports.py, check_torchtitan_exports.py) compare them
with what a runtime's file states: the plugin's defaults (plugins/roofline/
manifest.json), the planner manifest's cost_model params, then the --param
cost_model.KEY=VALUE of the loom command line."""
import json
import os


def roofline_params(src, manifest, args=()):
    """{param: value} for the manifest (a path under src) and command-line args, or
    None when the manifest's cost model is not roofline."""
    with open(os.path.join(src, "plugins/roofline/manifest.json")) as fh:
        prm = {k: v["default"] for k, v in json.load(fh)["params"].items()}
    with open(os.path.join(src, manifest)) as fh:
        steps = json.load(fh)["pipeline"]
    for step in steps:
        if step["role"] == "cost_model":
            if step["use"] != "roofline":
                return None
            prm.update(step.get("params", {}))
    for i, a in enumerate(args[:-1]):
        if a == "--param" and args[i + 1].startswith("cost_model."):
            k, _, v = args[i + 1][len("cost_model."):].partition("=")
            prm[k] = {"true": True, "false": False}.get(v, v)
    return prm
