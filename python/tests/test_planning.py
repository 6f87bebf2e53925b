"""Planning through the package: typed results, the same figures as
`loom plan --json`, plan.json, write(), closing."""

import json
import math
import os
import random
import subprocess

import pytest

import loom


def batch(seed, n=32):
    """A prefetched batch of an interleaved image-text-video-audio set."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s = {"text_tokens": rng.randint(64, 2048), "images": rng.choice([0, 1, 1, 2, 3, 5])}
        if i % 7 == 3:
            s["video_seconds"] = round(rng.uniform(0.5, 8), 3)
        if i % 5 == 1:
            s["audio_seconds"] = round(rng.uniform(0.5, 8), 3)
        out.append(s)
    return out


def test_version(library, cli):
    out = subprocess.run([str(cli), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("loom %s " % loom.version())
    assert loom.version(library) == loom.version()
    assert loom.__version__ == loom.version()


def test_plans_iterations(planner):
    results = [planner.plan([loom.Sample(**s) for s in batch(k)]) for k in range(3)]
    for r in results:
        assert isinstance(r, loom.Result)
        assert r.ranks == 4
        assert r.makespan_ms > 0 and math.isfinite(r.makespan_ms)
        assert 0 <= r.bubble_ratio < 1
        assert r.mfu is None or 0 < r.mfu < 1
        assert r.plan_time_ms >= 0
        assert isinstance(r.peak_bytes, tuple) and len(r.peak_bytes) == 4
        assert all(isinstance(b, int) and b > 0 for b in r.peak_bytes)
    assert len({r.makespan_ms for r in results}) == 3  # different batches, different plans


def test_inputs_agree(planner):
    """Sample objects, dicts, a record dict and its JSON text plan the same."""
    samples = batch(5, n=12)
    figures = set()
    for r in (planner.plan([loom.Sample(**s) for s in samples]),
              planner.plan(samples),
              planner.plan(iter(samples)),
              planner.plan_json({"samples": samples}),
              planner.plan_json({"iteration": 4, "samples": samples}),
              planner.plan_json(json.dumps({"samples": samples})),
              planner.plan_json(json.dumps({"samples": samples}).encode())):
        figures.add((r.makespan_ms, r.bubble_ratio, r.peak_bytes, r.mfu))
    assert len(figures) == 1


def test_microbatches_given(planner):
    samples = [loom.Sample(500 + 10 * i, images=i % 3, microbatch=i % 8) for i in range(16)]
    r = planner.plan(samples)
    assert r.ranks == 4 and r.makespan_ms > 0
    assert r.plan_json["microbatches"] == 8


def test_matches_cli(planner, cli, tmp_path):
    """The same samples through `loom plan --workload --json` give the same
    makespan (1e-9 relative), bubble, MFU and peak bytes per iteration."""
    iterations = [batch(k) for k in range(3)]
    workload = tmp_path / "workload.jsonl"
    workload.write_text("".join(json.dumps({"samples": s}) + "\n" for s in iterations))
    env = dict(os.environ, LOOM_PLUGIN_PATH="")
    out = subprocess.run([str(cli), "plan", "--workload", str(workload), "--json", "--quiet",
                          "--model", "vlm-s", "--cluster", "h800",
                          "--parallel", "tp=4,pp=4,mb=8", "--seed", "3"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["iterations"]
    assert len(rows) == 3
    for samples, row in zip(iterations, rows):
        r = planner.plan([loom.Sample(**s) for s in samples])
        # The CLI prints 6 decimals: above 500 ms that is within 1e-9.
        assert row["makespan_ms"] > 500
        assert math.isclose(r.makespan_ms, row["makespan_ms"], rel_tol=1e-9, abs_tol=0)
        assert "%.6f" % r.makespan_ms == "%.6f" % row["makespan_ms"]
        assert "%.6f" % r.bubble_ratio == "%.6f" % row["bubble_ratio"]
        assert r.mfu is not None and "%.6f" % r.mfu == "%.6f" % row["mfu"]
        assert list(r.peak_bytes) == row["peak_mem_bytes"]


def test_plan_json(planner):
    r = planner.plan(batch(1, n=16))
    doc = r.plan_json
    assert doc is r.plan_json  # parsed once
    assert doc["ranks"] == r.ranks == 4
    assert len(doc["stages"]) > 0
    assert [e["rank"] for e in doc["rank_actions"]] == [0, 1, 2, 3]
    assert math.isclose(doc["metrics"]["makespan_ms"], r.makespan_ms, rel_tol=1e-6)
    first = r.actions(0)[0]
    assert (first["action"], first["kind"], first["microbatch"]) == ("forward_stage", "F", 0)
    with pytest.raises(loom.LoomInputError) as e:
        r.actions(9)
    assert e.value.message == "rank: expected an integer in [0, 3], found 9"


def test_actions_refuse_the_compact_form(planner):
    # a plan above 65536 stages comes in the compact form (docs/outputs.md):
    # rank_orders instead of rank_actions; the parsed document stands in for one
    r = planner.plan(batch(1, n=16))
    doc = dict(r.plan_json)
    doc["stages"] = {"columns": ["id"], "rows": [[i] for i in range(70000)]}
    doc["rank_actions"] = None
    doc["rank_orders"] = [[] for _ in range(r.ranks)]
    r._json = doc
    with pytest.raises(loom.LoomInputError) as e:
        r.actions(0)
    assert e.value.message == ('actions: a plan of 70000 stages is in the compact form, which '
                               'lists each rank\'s stage order (plan_json["rank_orders"]), not '
                               'its actions')


def test_write(planner, tmp_path):
    r = planner.plan(batch(2, n=16))
    out = r.write(tmp_path / "plan")
    assert out == tmp_path / "plan"
    names = sorted(p.name for p in out.iterdir())
    for name in ("plan.json", "schedule.csv", "summary.txt", "timeline.svg", "trace.json"):
        assert name in names
    written = json.loads((out / "plan.json").read_text())
    assert written["metrics"]["makespan_ms"] == r.plan_json["metrics"]["makespan_ms"]
    assert written["rank_actions"] == r.plan_json["rank_actions"]
    r.write(str(tmp_path / "again"))  # str paths too
    assert (tmp_path / "again" / "plan.json").is_file()


def test_write_error(planner, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    r = planner.plan(batch(2, n=4))
    with pytest.raises(loom.LoomInputError) as e:
        r.write(blocker / "plan")
    assert e.value.status == "LOOM_EIO"
    assert str(blocker) in e.value.message


def test_context_manager_closes(library, tmp_path):
    with loom.Planner(model="vlm-s", parallel="tp=4,pp=4,mb=8", library=library) as p:
        assert not p.closed
        r = p.plan(batch(3, n=8))
        gone = p.plan(batch(4, n=8))
        gone.close()
    assert p.closed
    with pytest.raises(loom.LoomInputError) as e:
        p.plan(batch(3, n=8))
    assert (e.value.status, e.value.message) == ("LOOM_EINVAL", "planner is closed")
    with pytest.raises(loom.LoomInputError, match="^planner is closed$"):
        p.plan_json({"samples": batch(3, n=8)})
    # Results outlive their planner: the C planner is freed with the last one.
    assert p._owner.ptr
    assert r.plan_json["ranks"] == 4
    assert (r.write(tmp_path / "late") / "plan.json").is_file()
    with r:
        assert not r.closed
    assert r.closed
    assert not p._owner.ptr
    assert r.makespan_ms > 0  # the figures stay readable
    with pytest.raises(loom.LoomInputError, match="^result is closed$"):
        r.write("/tmp/never")
    p.close()  # idempotent
    r.close()


def test_threads(library):
    """One planner shared by threads (calls take turns) and one per thread
    give the figures of planning one after the other."""
    import threading

    batches = [batch(20 + k, n=12) for k in range(6)]
    with loom.Planner(model="vlm-s", parallel="tp=4,pp=4,mb=8", library=library) as p:
        serial = [p.plan(b).makespan_ms for b in batches]
        shared = [None] * len(batches)

        def run(k):
            shared[k] = p.plan(batches[k]).makespan_ms

        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(batches))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    own = [None] * len(batches)

    def alone(k):
        with loom.Planner(model="vlm-s", parallel="tp=4,pp=4,mb=8", library=library) as q:
            own[k] = q.plan(batches[k]).makespan_ms

    threads = [threading.Thread(target=alone, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert shared == serial
    assert own[:3] == serial[:3]


def test_close_on_error(library):
    with pytest.raises(KeyError):
        with loom.Planner(library=library) as p:
            raise KeyError("boom")
    assert p.closed


def test_options(library):
    opts = loom.PlannerOptions(model="vlm-s", parallel="tp=4,pp=4,mb=4", seed=3)
    with loom.Planner(opts, library=library) as a, \
            loom.Planner({"model": "vlm-s", "parallel": "tp=4,pp=4,mb=4", "seed": 3},
                         library=library) as b:
        assert a.options == b.options == opts
        s = batch(6, n=8)
        assert a.plan(s).makespan_ms == b.plan(s).makespan_ms
    with pytest.raises(TypeError):
        loom.Planner(opts, model="vlm-m", library=library)


def test_manifest_and_paths(library, repo):
    manifest = repo / "examples" / "manifests" / "megatron-1f1b.json"
    model = repo / "examples" / "models" / "vlm-s.json"
    with loom.Planner(manifest=manifest, model=model, parallel="tp=4,pp=4,mb=8",
                      library=library) as p:
        r = p.plan([loom.Sample(812, images=3), loom.Sample(40, images=1),
                    loom.Sample(0, video_seconds=4.5), loom.Sample(100, audio_seconds=2.0)])
        assert r.ranks == 4 and r.makespan_ms > 0


def test_sample_dict_round_trip():
    s = loom.Sample.from_dict({"text_tokens": 812, "images": 3, "video_seconds": 1.5})
    assert s == loom.Sample(812, images=3, video_seconds=1.5)
    assert s.to_dict() == {"text_tokens": 812, "images": 3, "video_seconds": 1.5}
    assert loom.Sample.from_dict(loom.Sample(7).to_dict()) == loom.Sample(7)
