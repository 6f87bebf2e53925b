#!/usr/bin/env python3
"""Plan pipeline-parallel training iterations from Python with the `loom`
package (python/ in this repository; docs/embedding.md).

A training loop: while step k trains, the loader prefetches the samples of
step k + 1 and Loom plans that iteration, so the plan is ready when the
step starts. Runs from the source tree without installing the package.
"""

import argparse
import os
import random
import sys

try:
    import loom
except ImportError:  # not installed: the package beside this example
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import loom


def prefetch(rng, batch_size):
    """What a data loader knows about the next batch before loading it."""
    batch = []
    for _ in range(batch_size):
        images = rng.choice([0, 1, 1, 2, 3, 5])
        batch.append(loom.Sample(text_tokens=rng.randint(64, 2048), images=images))
    return batch


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", help="path of libloom.so (default: $LOOM_LIBRARY, the build tree)")
    ap.add_argument("--manifest", help="planner manifest (default: megatron-1f1b)")
    ap.add_argument("--model", default="vlm-s")
    ap.add_argument("--cluster", default="h800")
    ap.add_argument("--parallel", default="tp=4,pp=4,mb=8")
    ap.add_argument("--steps", type=int, default=3, help="training steps to play")
    ap.add_argument("--batch", type=int, default=32, help="samples per step")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", help="write the outputs of the last plan into this folder")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    with loom.Planner(manifest=args.manifest, model=args.model, cluster=args.cluster,
                      parallel=args.parallel, seed=args.seed, library=args.lib) as planner:
        print("libloom %s, model %s, %s" % (planner.version, args.model, args.parallel))
        upcoming = prefetch(rng, args.batch)
        ready = planner.plan(upcoming)
        for step in range(args.steps):
            plan, samples = ready, upcoming
            if step + 1 < args.steps:  # meanwhile: prefetch and plan the next step
                upcoming = prefetch(rng, args.batch)
                ready = planner.plan(upcoming)
            with plan:
                first = ["%s %s%d" % (a["action"], a.get("kind", ""), a["microbatch"])
                         for a in plan.actions(0)[:3]]
                print("step %d: %d samples, %d images -> makespan %.3f ms, bubble %.1f %%, "
                      "peak %.2f GiB, planned in %.1f ms; rank 0 starts with %s"
                      % (step, len(samples), sum(s.images for s in samples), plan.makespan_ms,
                         100 * plan.bubble_ratio, max(plan.peak_bytes) / 2**30,
                         plan.plan_time_ms, ", ".join(first)))
                if args.out and step + 1 == args.steps:
                    print("wrote %s" % plan.write(args.out))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except loom.LoomError as e:
        print("loom_client: %s (%s)" % (e.message, e.status), file=sys.stderr)
        sys.exit(2)
