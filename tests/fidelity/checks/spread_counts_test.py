#!/usr/bin/env python3
"""spread_counts_test.py - checks fidelity.py's `spread` workloads: every
iteration holds exactly the row's images in its sequences, no sequence more
than `most_images`, a sequence's text fills what its images leave, each way
of spreading the images is drawn about equally often (also when only one
way fits), the same seed gives the same lines, and images that cannot fit
are refused by name.
Exits 1 naming the first check that fails."""
import collections
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "tools", "bench"))
from fidelity import spread_counts, spread_lines  # noqa: E402


def fail(what):
    sys.exit("spread_counts_test: " + what)


def main():
    w = {"spread": {"images": 68, "most_images": 17}, "iterations": 200, "microbatches": 34,
         "seed": 1, "sequence_tokens": 8192, "tokens_per_image": 169}
    lines = spread_lines(w)
    if len(lines) != 200:
        fail("expected 200 iterations, found %d" % len(lines))
    for i, line in enumerate(lines):
        it = json.loads(line)
        samples = it["samples"]
        if it["iteration"] != i or [s["microbatch"] for s in samples] != list(range(34)):
            fail("iteration %d: expected microbatches 0..33 in order" % i)
        images = [s["images"] for s in samples]
        if sum(images) != 68 or max(images) > 17 or min(images) < 0:
            fail("iteration %d: %d images, most %d; expected 68, at most 17"
                 % (i, sum(images), max(images)))
        for s in samples:
            if s["text_tokens"] + 169 * s["images"] != 8192:
                fail("iteration %d: a sequence of %d tokens" % (i, s["text_tokens"] + 169 * s["images"]))
    if spread_lines(w) != lines:
        fail("the same seed gave different lines")
    if spread_lines(dict(w, seed=2)) == lines:
        fail("seeds 1 and 2 gave the same lines")
    # 3 images over 2 sequences: (0,3) (1,2) (2,1) (3,0), each a quarter;
    # at most 2 in one: (1,2) and (2,1), each a half
    rng = random.Random(7)
    for most, ways in ((3, 4), (2, 2)):
        seen = collections.Counter(tuple(spread_counts(rng, 3, 2, most)) for _ in range(8000))
        if len(seen) != ways or any(abs(n - 8000 / ways) > 0.05 * 8000 / ways for n in seen.values()):
            fail("3 images over 2 sequences, at most %d: drawn %s; expected %d ways alike"
                 % (most, dict(seen), ways))
    # one way only (every sequence at the limit): drawn at once, no redraws
    if spread_counts(rng, 68, 34, 2) != [2] * 34:
        fail("68 images over 34 sequences of at most 2: expected 2 in each")
    try:
        spread_counts(rng, 7, 2, 3)
    except SystemExit as e:
        if str(e) != "fidelity: 7 images do not fit 2 sequences of at most 3":
            fail("refusal reads %r" % str(e))
    else:
        fail("7 images over 2 sequences of at most 3 were not refused")
    print("spread_counts_test: ok")


if __name__ == "__main__":
    main()
