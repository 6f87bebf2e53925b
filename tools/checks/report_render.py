#!/usr/bin/env python3
"""report_render.py --loom LOOM --src SRC_DIR [--work DIR] - renders what
`loom plan --out` writes for people (report.html and timeline.svg) in
headless Chromium and checks that it shows something.

For four plans (Megatron on vlm-s, a stage-times problem, PipeWeaver on
vlm-l: thousands of stages, Optimus on vlm-s: fills inside backbone stages)
it
  - loads report.html and reads the DOM back (--dump-dom): the page's script
    must have finished (<html data-loom-report="ok">), its window.onerror
    hook must not have fired, and Chromium's log must hold no uncaught
    error;
  - loads report.html#stage=ID: the tooltip must describe stage ID;
  - takes screenshots of report.html and timeline.svg and decodes the PNGs
    (zlib, standard library only): each must have many distinct colours, a
    good share of non-white pixels, and thousands of pixels in the exact
    colours the plan's stages are drawn with (read from the page's data).

The screenshots stay in the work folder (default: a temporary folder) for
people to look at. Exit 0 when everything holds, 1 naming every failed
check, 77 (a skip for ctest) when Chromium is missing or cannot render a
trivial page; LOOM_CHROMIUM names the browser to use.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1", "--enable-logging=stderr",
         "--v=0"]
CASES = [
    ("megatron-vlm-s", ["--manifest", "examples/manifests/megatron-balanced.json",
                        "--model", "vlm-s", "--iterations", "1"]),
    ("stage-times", ["--stage-times", "examples/stage-times/interleaved-v2.json"]),
    ("pipeweaver-vlm-l", ["--manifest", "examples/manifests/pipeweaver.json", "--model", "vlm-l",
                          "--iterations", "1", "--param", "ranker.budget_ms=300"]),
    # encoder layers as fills inside backbone stages (drawn as strips)
    ("optimus-vlm-s", ["--manifest", "examples/manifests/optimus.json", "--model", "vlm-s",
                       "--iterations", "1"]),
]


def decode_png(path):
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s is not a PNG file" % path)
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("%s: unsupported PNG (depth %d, colour type %d, interlace %d)"
                         % (path, depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows, i = [], 0
    for _ in range(h):
        f = raw[i]
        cur = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                cur[x] = (cur[x] + cur[x - bpp]) & 255
        elif f == 2:
            cur = bytearray((a + b) & 255 for a, b in zip(cur, prev))
        elif f == 3:
            for x in range(stride):
                left = cur[x - bpp] if x >= bpp else 0
                cur[x] = (cur[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[x] = (cur[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(cur) if bpp == 3 else
                    bytes(b for k, b in enumerate(cur) if k % 4 != 3))
        prev = cur
    return w, h, rows


def colour_stats(path, wanted):
    """Distinct colours, share of non-white pixels and pixels in `wanted`
    (a set of (r, g, b)) of a screenshot."""
    w, h, rows = decode_png(path)
    counts = {}
    for row in rows:
        for x in range(0, len(row), 3):
            px = row[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    white = sum(n for px, n in counts.items() if min(px) >= 245)
    stage = sum(n for px, n in counts.items() if tuple(px) in wanted)
    return len(counts), 1 - white / float(w * h), stage


def stage_colours(html_path):
    """The exact fill colours of the plan's stages (of the modules or chunks
    they show), from report.html's data."""
    text = open(html_path, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="loom-data">(.*?)</script>', text, re.S)
    data = json.loads(m.group(1))
    used = set()
    for c in set(data["c"]):
        used.update(data["comps"][c][0::2])
    out = set()
    for g in sorted(used):
        for hexc in data["groups"][g]["k"]:
            out.add(tuple(int(hexc[i:i + 2], 16) for i in (1, 3, 5)))
    return data, out


class Browser:
    def __init__(self, exe):
        self.exe = exe

    def run(self, args, timeout=120):
        """(exit code, stdout, stderr) of one headless run."""
        profile = tempfile.mkdtemp(prefix="loom-chromium-")
        try:
            p = subprocess.run([self.exe] + FLAGS + ["--user-data-dir=" + profile] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout)
            return (p.returncode, p.stdout.decode("utf-8", "replace"),
                    p.stderr.decode("utf-8", "replace"))
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    def screenshot(self, url, png, size):
        if os.path.exists(png):
            os.unlink(png)
        rc, _, err = self.run(["--screenshot=" + png, "--window-size=" + size, url])
        ok = rc == 0 and os.path.exists(png)
        return ok, err if ok else "exit status %d, no screenshot\n%s" % (rc, err)


def find_browser():
    names = [os.environ.get("LOOM_CHROMIUM", ""), "chromium", "chromium-browser",
             "google-chrome", "google-chrome-stable"]
    for n in names:
        if n and shutil.which(n):
            return shutil.which(n)
    return None


def script_errors(log):
    """Lines of Chromium's log that report a script error of the page."""
    return [l for l in log.splitlines()
            if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--work")
    a = ap.parse_args()

    exe = find_browser()
    if not exe:
        print("report_render: SKIP: no Chromium found (chromium, chromium-browser, "
              "google-chrome; LOOM_CHROMIUM); tools/install-deps.sh installs it")
        return SKIP
    work = a.work or tempfile.mkdtemp(prefix="loom-report-render-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    browser = Browser(exe)

    # Can this Chromium render anything at all? A page that is one colour.
    probe = os.path.join(work, "probe.html")
    with open(probe, "w") as f:
        f.write('<!DOCTYPE html><html><body style="margin:0;background:#1f77b4"></body></html>')
    try:
        ok, err = browser.screenshot("file://" + probe, os.path.join(work, "probe.png"),
                                     "200,100")
        probe_ok = ok and colour_stats(os.path.join(work, "probe.png"),
                                       {(31, 119, 180)})[2] > 10000
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        probe_ok, err = False, str(e)
    if not probe_ok:
        tail = "\n".join(err.strip().splitlines()[-5:])
        print("report_render: SKIP: %s cannot render a trivial page headless:\n%s" % (exe, tail))
        return SKIP

    failures = []

    def check(cond, what):
        print("  %s %s" % ("ok  " if cond else "FAIL", what))
        if not cond:
            failures.append(what)

    for name, args in CASES:
        out = os.path.join(work, name)
        cmd = [a.loom, "plan", "--quiet", "--out", out] + args
        p = subprocess.run(cmd, cwd=a.src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        print("%s: %s" % (name, " ".join(cmd[1:])))
        if p.returncode != 0:
            check(False, "%s: loom plan exited %d: %s" % (name, p.returncode,
                                                          p.stdout.decode()[-400:]))
            continue
        html = os.path.join(out, "report.html")
        svg = os.path.join(out, "timeline.svg")
        data, colours = stage_colours(html)
        n = len(data["id"])

        rc, dom, log = browser.run(["--dump-dom", "file://" + html])
        check(rc == 0 and 'data-loom-report="ok"' in dom,
              "%s: report.html's script ran to the end (data-loom-report=\"ok\")" % name)
        title = re.search(r"<title>(.*?)</title>", dom, re.S)
        hooked = 'data-loom-report="error"' in dom or (
            title is not None and title.group(1).startswith("LOOM REPORT ERROR"))
        check(not hooked and not script_errors(log),
              "%s: no script error (%s)" % (name, "; ".join(script_errors(log))[:300]
                                           or "window.onerror silent, log clean"))

        sid = data["id"][n // 2]
        rc, dom, log = browser.run(["--dump-dom", "file://%s#stage=%d" % (html, sid)])
        m = re.search(r'<div id="tip"[^>]*>(.*?)</div>', dom, re.S)
        check(m is not None and ("(stage %d)" % sid) in m.group(1),
              "%s: report.html#stage=%d shows that stage's details" % (name, sid))

        for page, url, size, min_inked in (
                ("report.html", "file://" + html, "1400,1600", 0.10),
                ("timeline.svg", "file://" + svg, "1400,700", 0.05)):
            png = os.path.join(work, "%s-%s.png" % (name, page.split(".")[0]))
            ok, err = browser.screenshot(url, png, size)
            if not ok:
                check(False, "%s: no screenshot of %s: %s" % (name, page, err[-300:]))
                continue
            distinct, inked, stage_px = colour_stats(png, colours)
            check(distinct >= 40, "%s: %s has %d distinct colours (>= 40)"
                  % (name, page, distinct))
            check(inked >= min_inked, "%s: %s is %.0f %% non-white (>= %.0f %%)"
                  % (name, page, 100 * inked, 100 * min_inked))
            check(stage_px >= 10000, "%s: %s has %d pixels in the stage colours (>= 10000)"
                  % (name, page, stage_px))
            print("       %s" % png)

    if failures:
        print("report_render: %d check%s failed" % (len(failures), "" if len(failures) == 1
                                                     else "s"))
        return 1
    print("report_render: every check passed; screenshots in %s" % work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
