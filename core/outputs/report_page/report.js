(function () {
'use strict';
var D = JSON.parse(document.getElementById('loom-data').textContent);
var R = D.ranks, N = D.id.length, MS = D.makespan > 0 ? D.makespan : 1;
var KI = {F: 0, B: 1, I: 2, W: 3}, KN = ['forward', 'backward', 'input gradient', 'weight gradient'];
var PN = {n: 'none', s: 'selective', f: 'full', o: 'offload', m: 'mixed'};
var LEFT = 70, RIGHT = 10, AXIS = 24, MU = D.memUnit, MD = D.memDiv, MDEC = MD > 1 ? 2 : 0;
var dpr = window.devicePixelRatio || 1;
function $(id) { return document.getElementById(id); }
function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]; }); }
/* bytes in the page's memory unit, and a byte count in its own unit */
function mem(b) { return (b / MD).toFixed(MDEC) + ' ' + MU; }
function bytes(b) {
  var u = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
  while (Math.abs(b) >= 1024 && i < 4) { b /= 1024; i++; }
  return (i ? b.toFixed(2) : String(b)) + ' ' + u[i];
}
function step(span, n) {
  if (!(span > 0) || !(n >= 1)) return 1;
  var raw = span / n, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
function decimals(st) { return Math.max(0, Math.min(6, -Math.floor(Math.log(st) / Math.LN10 + 1e-9))); }
/* first index i in [lo, hi) with a[i] > t (a ascending) */
function after(a, lo, hi, t) {
  while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] > t) hi = m; else lo = m + 1; }
  return lo;
}
function setup(cv, h) {
  var w = cv.clientWidth;
  cv.width = Math.round(w * dpr); cv.height = Math.round(h * dpr); cv.style.height = h + 'px';
  var c = cv.getContext('2d');
  c.setTransform(dpr, 0, 0, dpr, 0, 0);
  return {c: c, w: w, h: h};
}
function compName(ci) {
  var p = D.comps[ci], s = [];
  for (var i = 0; i < p.length; i += 2)
    s.push(esc(D.groups[p[i]].name) + (p.length > 2 ? ' ' + p[i + 1] : ''));
  return s.join(' + ') + (p.length > 2 ? ' layers' : '');
}
function stageHtml(i) {
  var k = D.k[i], sub = D.sub ? D.sub[i] : 0, d = D.d[i];
  return '<b>' + k + ' mb' + D.mb[i] + (sub ? '.' + sub : '') + ' chunk ' + D.ch[i] + '</b> ' +
    (D.byModule ? compName(D.c[i]) + ' ' : '') + '(stage ' + D.id[i] + ')<br>' + D.t0[i].toFixed(3) + ' \u2013 ' +
    D.t1[i].toFixed(3) + ' ms (' + (D.t1[i] - D.t0[i]).toFixed(3) + ' ms), ' + KN[KI[k]] +
    '<br>rank ' + D.r[i] + ', policy ' + (PN[D.p[i]] || '?') +
    (d ? ', activations ' + (d > 0 ? '+' : '\u2212') + bytes(Math.abs(d)) : '');
}
var tip = $('tip');
function showTip(e, html) {
  tip.innerHTML = html; tip.style.display = 'block';
  var x = e.clientX + 14, y = e.clientY + 14, w = tip.offsetWidth, h = tip.offsetHeight;
  if (x + w > window.innerWidth - 4) x = Math.max(4, e.clientX - w - 14);
  if (y + h > window.innerHeight - 4) y = Math.max(4, e.clientY - h - 14);
  tip.style.left = x + 'px'; tip.style.top = y + 'px';
}
function hideTip() { tip.style.display = 'none'; }

/* rank of every stage (stages are listed rank by rank in schedule order) */
D.r = new Array(N);
for (var r0 = 0; r0 < R; r0++) for (var j0 = D.off[r0]; j0 < D.off[r0 + 1]; j0++) D.r[j0] = r0;
/* fills (D.fl[i] > 0) run inside the next D.fl[i] stages and end with the
 * last: T1M, the running latest end along each rank, stays sorted for the
 * searches where the ends themselves need not be */
function isFill(i) { return D.fl ? D.fl[i] > 0 : false; }
var T1M = new Array(N);
for (var r1 = 0; r1 < R; r1++) {
  var late = -Infinity;
  for (var j1 = D.off[r1]; j1 < D.off[r1 + 1]; j1++) { late = Math.max(late, D.t1[j1]); T1M[j1] = late; }
}

/* ---- timeline ---- */
var tl = $('tl'), ov = $('ov'), bar = $('tl-bar'), spacer = $('tl-spacer'), zoomInfo = $('zoom');
var lane = R <= 16 ? 22 : Math.max(7, Math.floor(420 / R)), gap = lane >= 16 ? 4 : 1;
var olane = Math.max(2, Math.min(8, Math.floor(72 / R)));
var durs = [];
for (var i0 = 0; i0 < N; i0++) durs.push(D.t1[i0] - D.t0[i0]);
durs.sort(function (a, b) { return a - b; });
var median = N ? durs[N >> 1] : MS;
if (!(median > 0)) median = MS;
var zoom = 1;
function plotW() { return Math.max(100, tl.clientWidth - LEFT - RIGHT); }
function maxZoom() { return Math.max(1, 400 * MS / (median * plotW())); }
function pxms() { return plotW() * zoom / MS; }
function viewT0() { return bar.scrollLeft / pxms(); }

function drawLanes(c, y0, lnAll, gp, t0, t1, px, detail) {
  var pw = plotW();
  for (var r = 0; r < R; r++) {
    var lo = D.off[r], hi = D.off[r + 1];
    c.fillStyle = '#efefed'; c.fillRect(LEFT, y0 + r * (lnAll + gp), pw, lnAll);
    for (var pass = 0; pass < (D.fl ? 2 : 1); pass++)
    for (var i = after(T1M, lo, hi, t0); i < hi && D.t0[i] < t1; i++) {
      if (isFill(i) !== (pass === 1)) continue;
      var x = LEFT + (D.t0[i] - t0) * px, w = (D.t1[i] - D.t0[i]) * px;
      var ln = pass ? Math.max(2, Math.floor(lnAll / 3)) : lnAll, y = y0 + r * (lnAll + gp);
      if (pass) y += lnAll - ln; /* a fill: a strip along the bottom of its hosts */
      if (w < 0.6) w = 0.6;
      var ki = KI[D.k[i]] || 0, p = D.comps[D.c[i]];
      c.fillStyle = D.groups[p[0]].k[ki];
      c.fillRect(x, y, w, ln);
      if (p.length > 2) {
        var tot = 0, q, by = y;
        for (q = 1; q < p.length; q += 2) tot += p[q];
        for (q = 2; q < p.length; q += 2) {
          var bh = ln * p[q + 1] / tot;
          c.fillStyle = D.groups[p[q]].k[ki]; c.fillRect(x, by, w, bh); by += bh;
        }
      }
      if (!detail) continue;
      if ((ki === 2 || ki === 3) && w >= 3) {
        c.save(); c.beginPath(); c.rect(x, y, w, ln); c.clip();
        c.strokeStyle = ki === 2 ? 'rgba(255,255,255,.55)' : 'rgba(0,0,0,.35)'; c.lineWidth = 2;
        c.beginPath();
        for (var hx = x - ln; hx < x + w; hx += 6) { c.moveTo(hx, y + ln); c.lineTo(hx + ln, y); }
        c.stroke(); c.restore();
      }
      if (D.byModule && D.maxChunk > 0 && D.ch[i] > 0 && ln >= 12) {
        c.fillStyle = 'rgba(0,0,0,' + (0.25 + 0.6 * D.ch[i] / D.maxChunk).toFixed(3) + ')';
        c.fillRect(x, y + ln - 4, w, 4);
      }
      if (w >= 4) { c.fillStyle = '#ffffff'; c.fillRect(x, y, 0.75, ln); }
      if (w >= 18 && ln >= 14) {
        var sub = D.sub ? D.sub[i] : 0;
        var t = D.mb[i] + (sub ? '.' + sub : '');
        if (D.maxChunk > 0 && w >= 36) t += ' c' + D.ch[i];
        c.fillStyle = ki === 1 || ki === 2 ? '#ffffff' : '#222222';
        c.fillText(t, x + w / 2, y + ln / 2 + 0.5);
      }
    }
  }
}

function drawTimeline() {
  var h = AXIS + R * (lane + gap) + 4, g = setup(tl, h), c = g.c, pw = plotW(), px = pxms();
  var t0 = viewT0(), t1 = t0 + pw / px;
  c.clearRect(0, 0, g.w, h);
  c.save(); c.beginPath(); c.rect(LEFT, 0, pw, h); c.clip();
  var st = step(t1 - t0, pw / 110), dec = decimals(st);
  c.font = '11px sans-serif'; c.textAlign = 'center'; c.textBaseline = 'alphabetic';
  for (var v = Math.ceil(t0 / st) * st; v <= t1 + st * 1e-9; v += st) {
    var x = LEFT + (v - t0) * px;
    c.fillStyle = '#dddddd'; c.fillRect(Math.round(x), AXIS - 4, 1, h - AXIS + 4);
    c.fillStyle = '#444444';
    c.textAlign = x < LEFT + 12 ? 'left' : x > LEFT + pw - 12 ? 'right' : 'center';
    c.fillText(v.toFixed(dec), x, AXIS - 8);
  }
  c.textBaseline = 'middle'; c.font = '10px sans-serif';
  drawLanes(c, AXIS, lane, gap, t0, t1, px, true);
  /* the grid over the idle lane background, under nothing */
  c.restore();
  c.fillStyle = '#ffffff'; c.fillRect(0, 0, LEFT, h);
  c.fillStyle = '#222222'; c.textAlign = 'left'; c.textBaseline = 'middle';
  c.font = (lane >= 12 ? 12 : 9) + 'px sans-serif';
  var every = lane >= 9 ? 1 : Math.ceil(9 / lane);
  for (var r = 0; r < R; r += every) c.fillText('rank ' + r, 6, AXIS + r * (lane + gap) + lane / 2);
  c.fillStyle = '#666666'; c.textBaseline = 'alphabetic'; c.font = '11px sans-serif';
  c.fillText('ms', 6, AXIS - 8);
  spacer.style.width = Math.round(pw * zoom) + 'px';
  zoomInfo.textContent = 'zoom \u00d7' + zoom.toFixed(zoom < 10 ? 2 : 1) + ', showing ' +
    t0.toFixed(1) + ' \u2013 ' + Math.min(t1, MS).toFixed(1) + ' ms of ' + MS.toFixed(1) + ' ms';
  drawOverview(t0, t1);
  drawMemory(t0, t1);
  outline();
}

function drawOverview(t0, t1) {
  var h = R * olane + 2, g = setup(ov, h), c = g.c, pw = plotW(), px = pw / MS;
  c.clearRect(0, 0, g.w, h);
  drawLanes(c, 1, olane, 0, 0, MS, px, false);
  c.fillStyle = '#666666'; c.font = '11px sans-serif'; c.textAlign = 'left'; c.textBaseline = 'middle';
  c.fillText('overview', 6, h / 2);
  if (zoom > 1.0001) {
    var x0 = LEFT + t0 * px, x1 = LEFT + Math.min(t1, MS) * px;
    c.fillStyle = 'rgba(255,255,255,.55)';
    c.fillRect(LEFT, 0, x0 - LEFT, h); c.fillRect(x1, 0, LEFT + pw - x1, h);
    c.strokeStyle = '#222222'; c.lineWidth = 1.5; c.strokeRect(x0, 0.75, Math.max(2, x1 - x0), h - 1.5);
  }
}

function setZoom(z, anchorPx) {
  var pw = plotW(), px = pxms();
  if (anchorPx === undefined) anchorPx = pw / 2;
  var t = (bar.scrollLeft + anchorPx) / px;
  zoom = Math.max(1, Math.min(maxZoom(), z));
  spacer.style.width = Math.round(pw * zoom) + 'px';
  bar.scrollLeft = Math.max(0, t * pxms() - anchorPx);
  drawTimeline();
}
function centerOn(t) { bar.scrollLeft = Math.max(0, t * pxms() - plotW() / 2); drawTimeline(); }

$('zin').onclick = function () { setZoom(zoom * 2); };
$('zout').onclick = function () { setZoom(zoom / 2); };
$('zfit').onclick = function () { setZoom(1); };
$('zread').onclick = function () { setZoom(readable()); };
function readable() { return Math.min(maxZoom(), Math.max(1, 6 * MS / (median * plotW()))); }
bar.addEventListener('scroll', function () { drawTimeline(); });
tl.addEventListener('wheel', function (e) {
  if (e.ctrlKey || e.metaKey) {
    e.preventDefault();
    setZoom(zoom * Math.pow(1.0015, -e.deltaY), Math.max(0, e.offsetX - LEFT));
  } else if (Math.abs(e.deltaX) > Math.abs(e.deltaY) || e.shiftKey) {
    e.preventDefault();
    bar.scrollLeft += e.deltaX || e.deltaY;
  }
}, {passive: false});
var drag = null;
tl.addEventListener('mousedown', function (e) { drag = {x: e.clientX, s: bar.scrollLeft}; tl.style.cursor = 'grabbing'; });
window.addEventListener('mouseup', function () { drag = null; tl.style.cursor = ''; });
window.addEventListener('mousemove', function (e) { if (drag) bar.scrollLeft = drag.s - (e.clientX - drag.x); });
tl.addEventListener('mousemove', function (e) {
  if (drag) return hideTip();
  var r = Math.floor((e.offsetY - AXIS) / (lane + gap)), yin = (e.offsetY - AXIS) - r * (lane + gap);
  if (r < 0 || r >= R || yin > lane || e.offsetX < LEFT) return hideTip();
  var px = pxms(), t = viewT0() + (e.offsetX - LEFT) / px, slack = 2 / px;
  var lo = D.off[r], hi = D.off[r + 1], hit = -1, strip = yin >= lane - lane / 3;
  for (var i = after(T1M, lo, hi, t - slack); i < hi && D.t0[i] <= t + slack; i++)
    if (D.t1[i] >= t - slack && (hit < 0 || (isFill(i) && strip))) hit = i;
  if (hit >= 0) showTip(e, stageHtml(hit));
  else showTip(e, 'rank ' + r + ' idle at ' + t.toFixed(3) + ' ms');
});
tl.addEventListener('mouseleave', hideTip);
function ovPick(e) { centerOn((e.offsetX - LEFT) / (plotW() / MS)); }
var ovDrag = false;
ov.addEventListener('mousedown', function (e) { ovDrag = true; if (zoom <= 1.0001) setZoom(readable()); ovPick(e); });
ov.addEventListener('mousemove', function (e) { if (ovDrag) ovPick(e); });
window.addEventListener('mouseup', function () { ovDrag = false; });

/* ---- memory ---- */
var memCv = $('mem'), memT = [], memB = [], memMax = 0, cap = D.cap;
for (var r = 0; r < R; r++) {
  var b = D.stat[r], ts = [0], bs = [b];
  /* a release and an allocation at the same instant (one stage ends, the
   * next starts) are one step: only a rise within an instant is kept */
  var put = function (t, v) {
    var n = ts.length - 1;
    if (ts[n] === t && v >= bs[n]) bs[n] = v; else { ts.push(t); bs.push(v); }
  };
  var freeAt = -1, freeBytes = 0; /* a fill frees its bytes after its last host */
  for (var i = D.off[r]; i < D.off[r + 1]; i++) {
    var d = D.d[i];
    if (d > 0) { b += d; put(D.t0[i], b); }
    else if (d < 0 && isFill(i)) { freeAt = i + D.fl[i]; freeBytes = d; }
    else if (d < 0) { b += d; put(D.t1[i], b); }
    if (i === freeAt) { b += freeBytes; put(D.t1[i], b); freeAt = -1; }
    if (b > memMax) memMax = b;
  }
  if (D.stat[r] > memMax) memMax = D.stat[r];
  ts.push(MS); bs.push(b);
  memT.push(ts); memB.push(bs);
}
/* hues from orange round to pink, leaving red to the cap */
function rankColor(r) { return 'hsl(' + Math.round(30 + 300 * r / Math.max(R, 1)) + ',65%,' + (r % 2 ? 36 : 46) + '%)'; }
var MH = 260, MTOP = 10, MBOT = 24;
var ymax = Math.max(memMax, cap || 0) * 1.08 || 1;
var memView = null;
function drawMemory(t0, t1) {
  memView = [t0, t1];
  var g = setup(memCv, MH), c = g.c, pw = plotW(), px = pw / MS, ph = MH - MTOP - MBOT;
  function Y(v) { return MTOP + ph - v / ymax * ph; }
  c.clearRect(0, 0, g.w, MH);
  if (zoom > 1.0001) {
    c.fillStyle = 'rgba(78,121,167,.10)';
    c.fillRect(LEFT + t0 * px, MTOP, (Math.min(t1, MS) - t0) * px, ph);
  }
  var st = step(ymax / MD, 5), dec = decimals(st);
  c.font = '11px sans-serif'; c.textAlign = 'right'; c.textBaseline = 'middle';
  for (var v = 0; v * MD <= ymax; v += st) {
    var y = Y(v * MD);
    c.fillStyle = '#e4e4e4'; c.fillRect(LEFT, Math.round(y), pw, 1);
    c.fillStyle = '#444444'; c.fillText(v.toFixed(dec), LEFT - 6, y);
  }
  c.save(); c.translate(12, MTOP + ph / 2); c.rotate(-Math.PI / 2); c.textAlign = 'center';
  c.fillText(MU, 0, 0); c.restore();
  var xs = step(MS, pw / 110), xd = decimals(xs);
  c.textAlign = 'center'; c.textBaseline = 'alphabetic';
  for (var tx = 0; tx <= MS + xs * 1e-9; tx += xs) {
    var mx0 = LEFT + tx * px;
    c.textAlign = mx0 > LEFT + pw - 12 ? 'right' : 'center';
    c.fillStyle = '#444444'; c.fillText(tx.toFixed(xd), mx0, MH - 8);
    c.fillStyle = '#bbbbbb'; c.fillRect(Math.round(LEFT + tx * px), MTOP + ph, 1, 4);
  }
  c.textAlign = 'left'; c.fillStyle = '#666666'; c.fillText('ms', 6, MH - 8);
  for (var r = 0; r < R; r++) {
    var ts = memT[r], bs = memB[r];
    c.strokeStyle = rankColor(r); c.lineWidth = R > 16 ? 1 : 1.5; c.beginPath();
    c.moveTo(LEFT, Y(bs[0]));
    for (var i = 1; i < ts.length; i++) {
      c.lineTo(LEFT + ts[i] * px, Y(bs[i - 1])); c.lineTo(LEFT + ts[i] * px, Y(bs[i]));
    }
    c.stroke();
  }
  if (cap) {
    var yc = Y(cap);
    c.strokeStyle = '#c62828'; c.lineWidth = 1.5; c.setLineDash([6, 4]);
    c.beginPath(); c.moveTo(LEFT, yc); c.lineTo(LEFT + pw, yc); c.stroke(); c.setLineDash([]);
    c.fillStyle = '#c62828'; c.textAlign = 'right'; c.textBaseline = 'bottom';
    c.fillText('cap ' + mem(cap), LEFT + pw - 4, yc - 3);
  }
}
function memAt(r, t) {
  var ts = memT[r], i = after(ts, 0, ts.length - 1, t) - 1;
  return memB[r][Math.max(0, i)];
}
memCv.addEventListener('mousemove', function (e) {
  if (e.offsetX < LEFT) return hideTip();
  var t = (e.offsetX - LEFT) / (plotW() / MS);
  if (t > MS) return hideTip();
  var rows = [], top = 0;
  for (var r = 0; r < R; r++) { var v = memAt(r, t); rows.push([r, v]); if (v > memAt(top, t)) top = r; }
  var html = '<b>' + t.toFixed(3) + ' ms</b>';
  if (R > 16) rows = [rows[top]];
  for (var k = 0; k < rows.length; k++)
    html += '<br><span class="sw" style="background:' + rankColor(rows[k][0]) + '"></span>rank ' +
      rows[k][0] + ': ' + mem(rows[k][1]) + (cap && rows[k][1] > cap ? ' (over the cap)' : '');
  if (R > 16) html += '<br>(the highest of ' + R + ' ranks)';
  showTip(e, html);
});
memCv.addEventListener('mouseleave', hideTip);
memCv.addEventListener('click', function (e) {
  if (zoom <= 1.0001) setZoom(readable());
  centerOn((e.offsetX - LEFT) / (plotW() / MS));
});
var ml = [];
for (var r2 = 0; r2 < R; r2++) {
  var over = cap && D.peak[r2] > cap, mx = 0;
  for (var q = 0; q < memB[r2].length; q++) if (memB[r2][q] > mx) mx = memB[r2][q];
  ml.push('<span' + (over ? ' class="flag"' : '') + '><span class="sw" style="background:' +
    rankColor(r2) + '"></span>rank ' + r2 + ' ' + mem(D.peak[r2]) + (over ? ' over the cap' : '') +
    (mx !== D.peak[r2] ? ' (replay ' + mem(mx) + ')' : '') + '</span>');
}
if (cap) ml.push('<span><span class="sw" style="background:#c62828"></span>cap ' + mem(cap) + '</span>');
$('mem-legend').innerHTML = ml.join('');

/* report.html#stage=ID: show that stage, outlined, with its details */
var focus = -1;
function focusStage(id) {
  for (var i = 0; i < N; i++) if (D.id[i] === id) break;
  if (i >= N) return false;
  focus = i;
  setZoom(Math.max(zoom, readable()));
  centerOn((D.t0[i] + D.t1[i]) / 2);
  var rc = tl.getBoundingClientRect(), px = pxms();
  var x = rc.left + LEFT + ((D.t0[i] + D.t1[i]) / 2 - viewT0()) * px;
  var y = rc.top + AXIS + D.r[i] * (lane + gap) + lane;
  showTip({clientX: x, clientY: y}, stageHtml(i));
  return true;
}
function outline() {
  if (focus < 0) return;
  var c = tl.getContext('2d'), px = pxms(), t0 = viewT0();
  c.save(); c.setTransform(dpr, 0, 0, dpr, 0, 0);
  c.strokeStyle = '#000000'; c.lineWidth = 2;
  c.strokeRect(LEFT + (D.t0[focus] - t0) * px - 1, AXIS + D.r[focus] * (lane + gap) - 1,
    Math.max(2, (D.t1[focus] - D.t0[focus]) * px) + 2, lane + 2);
  c.restore();
}
var lastW = 0;
function redraw() { if (tl.clientWidth !== lastW) { lastW = tl.clientWidth; setZoom(zoom); } }
window.addEventListener('resize', redraw);
zoom = Math.min(maxZoom(), Math.max(1, 3 * MS / (median * plotW())));
lastW = tl.clientWidth;
setZoom(zoom, 0);
var hm = /^#stage=(\d+)$/.exec(location.hash);
if (hm) focusStage(parseInt(hm[1], 10));
document.documentElement.setAttribute('data-loom-report', 'ok');
})();
