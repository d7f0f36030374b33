#!/usr/bin/env bash
# Opens the HTML report of `faultlab diagnose` in a real browser and checks the findings are on the page.
#
#   scripts/diagnose-html.sh
#
# The browser: Debian's `chromium` package, installed here with apt-get when /usr/bin/chromium is missing (the
# machine reaches Debian's archive; no browser download of its own). Run headless with the flags this closed
# network needs (no background networking, no component updates, no QUIC) and a fresh profile each time.
#
# The page: `faultlab demo --out DIR` writes its traces; `faultlab diagnose TRAJECTORY DIR/traces/tool-error.json
# DIR/traces/healthy.json --format html --out report.html` renders them after the trajectory of the demo's blind
# retrier (first: its duplicate_side_effect is the page's error finding, so it is in the screenshot). Chromium then
#   - takes a screenshot (1280x3000) of report.html, and
#   - dumps the DOM after the page's script has run (--dump-dom).
# Checks, one line each:
#   report        diagnose exited 0 and wrote the page
#   offline       the page refers to nothing outside itself (no http(s) URL, no src=, no <link>, no url())
#   finding NAME  for tool_loop, retry_storm (the tool-error trace) and duplicate_side_effect (the trajectory):
#                 a <div class="finding …" data-kind="NAME"> whose name reads NAME sits in the timeline message
#                 (or line) where it happens, and the summary table has its row
#   healthy       the healthy trace's section says it has no findings
#   index         the page (three traces) opens with an index linking to each
#   sequence      each trace with calls has a sequence view with a call group and a held bar per call, and a
#                 duration chart with a row per call
#   script        the page's script ran in the browser (the filter label counts the messages with findings)
#   screenshot    the PNG exists, is a 1280x3000 PNG and is not trivially small
#   highlight     the screenshot shows the findings' colours (the error and warning boxes' borders) over enough
#                 pixels to be seen
#   eval cards    the demo's eval report at 1280 px: no card's content is wider than the card (measured in the
#                 browser: the report in a frame, each card's scrollWidth against its clientWidth)
#   eval wall time  that report's header gives the time the batch took (more than 0 s)
# then `N passed, M failed`; the exit status is non-zero if any check failed. The page, the DOM and the screenshot
# are kept in .cache/diagnose-html/last/ for a look.
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary (a path, or a name on PATH; default: the workspace debug build,
#                  brought up to date with `cargo build -p faultlab`: scripts/lib/faultlab-bin.sh)
set -euo pipefail

DIE_STATUS=1
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cache=".cache/diagnose-html"

# --- the browser ---------------------------------------------------------------------------------------------
chromium=/usr/bin/chromium
if [[ ! -x "$chromium" ]]; then
  mkdir -p "$cache"
  exec {lock_fd}>"$cache.lock"
  flock -w 900 "$lock_fd" || die "could not lock $cache.lock within 900 s (another install running?)"
  if [[ ! -x "$chromium" ]]; then
    log "installing Debian's chromium"
    apt-get update -qq </dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null
  fi
  exec {lock_fd}>&-
fi
[[ -x "$chromium" ]] || die "$chromium is missing after the install"
log "$("$chromium" --version 2>/dev/null | head -n1)"

# --- the binary ----------------------------------------------------------------------------------------------
resolve_faultlab_bin
bin="$FAULTLAB_BIN"

# --- the page, the DOM, the screenshot -------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/diagnose-html.XXXXXX")"
trap 'rm -rf "$work"' EXIT
page="$work/report.html"
shot="$work/report.png"
dom="$work/dom.html"

timeout -k 10 300 "$bin" demo --out "$work/demo" </dev/null >"$work/demo.log" 2>&1 ||
  die "faultlab demo failed; its output: $(tail -n 5 "$work/demo.log")"
diagnose_rc=0
# A proxy trajectory too (the blind retrier's, where a write timed out after it ran): the sequence view's three lanes.
trajectory="$work/demo/eval/runs/transport-timeout-after-write/blind-retrier/1/trajectory.jsonl"
"$bin" diagnose "$trajectory" "$work/demo/traces/tool-error.json" "$work/demo/traces/healthy.json" --format html \
  --out "$page" </dev/null 2>"$work/diagnose.stderr" || diagnose_rc=$?

# Chromium as root needs --no-sandbox; the rest keeps it from reaching for the network this machine does not have.
browser() {
  local profile
  profile="$(mktemp -d "$work/profile.XXXXXX")"
  timeout -k 10 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --hide-scrollbars "$@" </dev/null
}
if [[ -f "$page" ]]; then
  browser --screenshot="$shot" --window-size=1280,3000 "file://$page" >"$work/screenshot.log" 2>&1 || true
  browser --dump-dom "file://$page" >"$dom" 2>"$work/dump-dom.log" || true
fi

# The demo's eval report, measured in the browser at 1280 px: a page that holds it in a frame and writes down, for
# every card, whether its content is wider than the card (text spilling out), and the report's wall time line.
eval_page="$work/demo/eval/report.html"
eval_measure="$work/eval-measure.html"
eval_dom="$work/eval-dom.html"
eval_shot="$work/eval-report.png"
cat >"$eval_measure" <<HTML
<!doctype html><html><body><iframe id="f" src="file://$eval_page" style="width:1280px;height:2000px;border:0"></iframe>
<pre id="out">pending</pre><script>
document.getElementById("f").addEventListener("load", function () {
  var doc = this.contentDocument, lines = [];
  doc.querySelectorAll(".card").forEach(function (card, i) {
    var title = (card.querySelector("h2") || {}).textContent || ("card " + i);
    lines.push((card.scrollWidth > card.clientWidth + 1 ? "SPILLS " : "fits ") + title + " " + card.scrollWidth + "/" + card.clientWidth);
  });
  var metas = Array.prototype.map.call(doc.querySelectorAll("header .meta"), function (m) { return m.textContent; });
  lines.push("meta " + (metas.length ? metas.join(" | ") : "(none)"));
  document.getElementById("out").textContent = lines.join("\n");
});
</script></body></html>
HTML
if [[ -f "$eval_page" ]]; then
  browser --allow-file-access-from-files --virtual-time-budget=10000 --dump-dom "file://$eval_measure" \
    >"$eval_dom" 2>"$work/eval-dump-dom.log" || true
  browser --screenshot="$eval_shot" --window-size=1280,2000 "file://$eval_page" >"$work/eval-screenshot.log" 2>&1 || true
fi

rm -rf "$cache/last"
mkdir -p "$cache/last"
cp "$work"/*.html "$work"/*.png "$work"/*.log "$work/diagnose.stderr" "$cache/last/" 2>/dev/null || true

# --- the checks ------------------------------------------------------------------------------------------------
python3 - "$diagnose_rc" "$page" "$dom" "$shot" "$eval_dom" <<'EOF'
import html
import html.parser
import os
import re
import struct
import sys
import zlib

diagnose_rc, page, dom, shot, eval_dom = sys.argv[1:]
passed = failed = 0


def check(name, ok, detail):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


class Dom(html.parser.HTMLParser):
    """Finding boxes (kind, name text, the message they sit in), summary rows, the filter counts, clean notes."""

    VOID = {"meta", "input", "br", "img", "hr", "link"}

    def __init__(self):
        super().__init__()
        self.stack = []  # (tag, attrs) of open elements
        self.findings = []  # [kind, name text, message id]
        self.rows = set()
        self.counts = []
        self.clean = []
        self.text_for = None  # (list, index) collecting text
        self.index = []  # the index's links
        self.pictures = {}  # section id -> [sequence calls, held bars, duration rows]

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag not in self.VOID:
            self.stack.append((tag, attrs))
        section = next((a.get("id") for t, a in reversed(self.stack) if t == "section"), None)
        inside = lambda name: any(name in (a.get("class") or "").split() for _, a in self.stack[:-1])
        if tag == "a" and any(t == "nav" for t, _ in self.stack):
            self.index.append(attrs.get("href"))
        counts = self.pictures.setdefault(section, [0, 0, 0])
        if tag == "g" and "call" in classes and inside("sequence"):
            counts[0] += 1
        if tag == "rect" and "held" in classes:
            counts[1] += 1
        if tag == "tr" and "duration" in classes:
            counts[2] += 1
        if tag == "div" and "finding" in classes and "data-kind" in attrs:
            entry = next((a.get("id") for t, a in reversed(self.stack) if t == "li"), None)
            self.findings.append([attrs["data-kind"], "", entry])
        if tag == "tr" and "finding-row" in classes:
            self.rows.add(attrs.get("data-kind"))
        if tag == "span" and "finding-name" in classes and self.findings:
            self.text_for = ("finding", len(self.findings) - 1)
        if tag == "span" and "filter-count" in classes:
            self.counts.append("")
            self.text_for = ("count", len(self.counts) - 1)
        if tag == "p" and "clean" in classes:
            self.clean.append("")
            self.text_for = ("clean", len(self.clean) - 1)

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, _ = self.stack.pop()
            if open_tag == tag:
                break
        self.text_for = None

    def handle_data(self, data):
        if self.text_for:
            kind, i = self.text_for
            if kind == "finding":
                self.findings[i][1] += data
            elif kind == "count":
                self.counts[i] += data
            else:
                self.clean[i] += data


def png_pixels(path):
    """(width, height, RGB(A) rows) of an 8-bit RGB or RGBA PNG, filters undone."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


source = read(page)
check("report", diagnose_rc == "0" and bool(source), f"faultlab diagnose --format html exited {diagnose_rc}, "
      f"wrote {len(source)} bytes")
outside = [p for p in (r"https?://", r"\ssrc=", r"<link", r"url\(", r"@import") if re.search(p, source)]
check("offline", bool(source) and not outside, "no outside references" if not outside else f"found {outside}")

parsed = Dom()
parsed.feed(read(dom))
anchors = {"duplicate_side_effect": "t0-m12", "tool_loop": "t1-m5", "retry_storm": "t1-m7"}
for kind, anchor in anchors.items():
    boxes = [f for f in parsed.findings if f[0] == kind]
    ok = any(name.strip() == kind and entry == anchor for _, name, entry in boxes) and kind in parsed.rows
    where = ", ".join(f"{name.strip()!r} in {entry}" for _, name, entry in boxes) or "no finding box"
    check(f"finding {kind}", ok, f"{where}; summary row {'present' if kind in parsed.rows else 'missing'}")
check("healthy", any("No findings" in c for c in parsed.clean), f"clean notes: {[c.strip() for c in parsed.clean]}")
check("script", " (10 of 11)" in parsed.counts, f"filter counts after the script ran: {parsed.counts}")
check("index", parsed.index == ["#t0", "#t1", "#t2"], f"the index links to {parsed.index}")
pictures = {k: v for k, v in parsed.pictures.items() if k and any(v)}
ok = bool(pictures) and all(calls > 0 and calls == held == rows for calls, held, rows in pictures.values())
check("sequence", ok, ", ".join(f"{k}: {c} calls, {h} held bars, {r} duration rows" for k, (c, h, r) in
      sorted(pictures.items())) or "no sequence view")

size = os.path.getsize(shot) if os.path.isfile(shot) else 0
try:
    width, height, bpp, rows = png_pixels(shot) if size else (0, 0, 0, [])
    problem = None
except (ValueError, zlib.error, TypeError, struct.error) as e:
    width = height = bpp = 0
    rows, problem = [], str(e)
check("screenshot", size > 20_000 and (width, height) == (1280, 3000),
      problem or f"{size} bytes, {width}x{height}")

# The finding boxes' left borders: --error #c62828 and --warning #b26a00 (report.css).
colours = {"error": (0xC6, 0x28, 0x28), "warning": (0xB2, 0x6A, 0x00)}
seen = {name: 0 for name in colours}
for row in rows:
    for x in range(0, len(row), bpp):
        pixel = (row[x], row[x + 1], row[x + 2])
        for name, colour in colours.items():
            if all(abs(p - c) <= 6 for p, c in zip(pixel, colour)):
                seen[name] += 1
check("highlight", all(n >= 500 for n in seen.values()),
      ", ".join(f"{n} pixels of the {name} colour" for name, n in seen.items()))

measured = re.search(r'<pre id="out">(.*?)</pre>', read(eval_dom), re.S)
lines = html.unescape(measured.group(1)).splitlines() if measured else []
cards = [l for l in lines if l.startswith(("fits ", "SPILLS "))]
spills = [l for l in cards if l.startswith("SPILLS ")]
check("eval cards", bool(cards) and not spills,
      f"{len(cards)} cards measured at 1280 px" + (f"; spilling: {spills}" if spills else ""))
meta = next((l for l in lines if l.startswith("meta ")), "meta (not measured)")
wall = re.search(r"wall time ([0-9.]+) s", meta)
check("eval wall time", bool(wall) and float(wall.group(1)) > 0, meta)

print(f"{passed} passed, {failed} failed", flush=True)
sys.exit(1 if failed else 0)
EOF
