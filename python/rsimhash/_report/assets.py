"""The page's style and its one script, inlined into every page.

The script only adds to a page that is complete without it: it shows the
filter form (``hidden`` in the HTML, useless without a script), hides the
pairs outside the chosen distance or similarity, and moves between pairs
with the keyboard. The page's Content-Security-Policy allows this script
alone (by its SHA-256) and no network at all, so nothing in a record can
run or load anything even if it got past the escaping.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#5b6570;--bg:#fff;--panel:#f5f7f9;--line:#d5dbe1;
--bar:#4f7fb8;--accent:#d9822b;--ins:#dff5df;--ins-fg:#0a5c0a;--del:#fbe0e0;--del-fg:#8a1010;--chg:#fff1c2}
@media (prefers-color-scheme:dark){:root{--fg:#e3e7eb;--muted:#9aa5b0;--bg:#14181c;--panel:#1d2227;--line:#36404a;
--bar:#6f9fd8;--accent:#f0a050;--ins:#163d1b;--ins-fg:#9be39b;--del:#4a1c1c;--del-fg:#ffb0b0;--chg:#4a3f14}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC",
"Noto Sans Arabic",sans-serif,"Apple Color Emoji","Segoe UI Emoji","Noto Color Emoji";color:var(--fg);
background:var(--bg)}
header.top,main,footer{max-width:1280px;margin:0 auto;padding:0 20px}
header.top{padding-top:16px}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin:1.6em 0 .6em;border-bottom:1px solid var(--line)}
h3{font-size:1em;margin:0 0 .4em;font-weight:600}
.sub,.muted,figcaption,.changed,.note{color:var(--muted)}
.cut{background:var(--chg);padding:2px 8px;margin:0 0 4px;border-radius:4px;font-size:13px}
nav a{margin-right:1em}
code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere;word-break:break-word}
table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid var(--line);text-align:left;
vertical-align:top}
table.numbers td{font-variant-numeric:tabular-nums}
.warn{background:var(--chg);padding:6px 10px;border-radius:4px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
figure.chart{margin:0;padding:10px;background:var(--panel);border:1px solid var(--line);border-radius:6px}
svg.plot{width:100%;height:auto;display:block}
svg .bar{fill:var(--bar)}svg .bar.marked{fill:var(--accent)}svg .dot{fill:var(--bar);fill-opacity:.8}
svg .grid{stroke:var(--line);stroke-width:1}svg .k{stroke:var(--accent);stroke-width:2;stroke-dasharray:5 4}svg .axis{stroke:var(--muted);stroke-width:1}
svg .tick,svg .label{fill:var(--muted);font-size:12px}
details.numbers table{margin-top:6px;font-size:13px}
ol.groups{padding-left:1.5em}ol.groups td:first-child{white-space:nowrap}
td.id{min-width:10em;max-width:28em}td.distance,td.similarity{white-space:nowrap;font-variant-numeric:tabular-nums}
.first{overflow-wrap:anywhere}
form#filter{position:sticky;top:0;z-index:2;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--line);
display:flex;flex-wrap:wrap;gap:18px;align-items:center}
form#filter[hidden]{display:none}
article.pair{margin:14px 0;padding:10px 12px;border:1px solid var(--line);border-radius:6px;background:var(--panel)}
article.pair:focus{outline:3px solid var(--accent);outline-offset:2px}
article.pair[hidden]{display:none}
.anchor{color:var(--muted);text-decoration:none;margin-right:.4em}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:12px}
@media (max-width:760px){.sides{grid-template-columns:1fr}}
.side{min-width:0}.who{font-size:13px;margin-bottom:4px}.role{color:var(--muted)}
.text{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);border:1px solid var(--line);
border-radius:4px;padding:8px 10px;unicode-bidi:plaintext;max-height:32em;overflow:auto}
ins{background:var(--ins);color:var(--ins-fg);text-decoration:underline}
del{background:var(--del);color:var(--del-fg);text-decoration:line-through}
ins.chg,del.chg{background:var(--chg)}
.case{text-decoration:underline dotted var(--muted)}
details.fold{display:inline}details.fold>summary{display:inline;cursor:pointer;color:var(--muted);
font-style:italic;list-style:none}
details.fold>summary::-webkit-details-marker{display:none}
details.fold[open]>summary{display:none}
.keys kbd{border:1px solid var(--line);border-radius:3px;padding:0 4px;font-size:12px}
footer{margin:40px auto 20px;color:var(--muted);font-size:13px}
"""

SCRIPT = """(function () {
  "use strict";
  var pairs = Array.prototype.slice.call(document.querySelectorAll("article.pair"));
  var form = document.getElementById("filter");
  var keys = document.getElementById("keys");
  if (keys) keys.hidden = false;
  if (form) {
    form.hidden = false;
    var maxD = document.getElementById("max-distance");
    var minS = document.getElementById("min-similarity");
    var shown = document.getElementById("shown");
    var apply = function () {
      var d = maxD ? parseFloat(maxD.value) : Infinity;
      var s = minS ? parseFloat(minS.value) : -Infinity;
      if (maxD) document.getElementById("max-distance-value").textContent = maxD.value;
      if (minS) document.getElementById("min-similarity-value").textContent = minS.value;
      var n = 0;
      pairs.forEach(function (p) {
        var pd = parseFloat(p.getAttribute("data-distance"));
        var ps = parseFloat(p.getAttribute("data-similarity"));
        var hide = (!isNaN(pd) && pd > d) || (!isNaN(ps) && ps < s);
        p.hidden = hide;
        if (!hide) n += 1;
      });
      shown.textContent = n + " of " + pairs.length + " pairs shown";
    };
    form.addEventListener("input", apply);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    apply();
  }
  var go = function (step) {
    var visible = pairs.filter(function (p) { return !p.hidden; });
    if (!visible.length) return;
    var at = visible.indexOf(document.activeElement);
    var next = at < 0 ? (step > 0 ? 0 : visible.length - 1) : Math.min(visible.length - 1, Math.max(0, at + step));
    visible[next].focus();
    visible[next].scrollIntoView({block: "start"});
  };
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.key === "j" || e.key === "n") { go(1); e.preventDefault(); }
    else if (e.key === "k" || e.key === "p") { go(-1); e.preventDefault(); }
    else if (e.key === "o") {
      var a = document.activeElement;
      if (a && a.classList.contains("pair")) {
        var folds = a.querySelectorAll("details.fold");
        var open = Array.prototype.some.call(folds, function (f) { return !f.open; });
        Array.prototype.forEach.call(folds, function (f) { f.open = open; });
      }
      e.preventDefault();
    } else if (e.key === "/" && form) {
      var first = form.querySelector("input");
      if (first) { first.focus(); e.preventDefault(); }
    }
  });
})();
"""


def script_hash() -> str:
    """The CSP source that allows ``SCRIPT`` and nothing else."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii") + "'"


def csp() -> str:
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src {script_hash()}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
