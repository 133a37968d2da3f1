#!/usr/bin/env python3
"""Draw the time/quality trade-off of parsa's --quality settings (with
METIS and Zoltan PHG as reference points) as one SVG, by hand (no
matplotlib here).

usage: plot_tradeoff.py RESULTS.json OUT.svg

RESULTS.json is bench.py [--issue6] --tradeoff --json: {"tradeoff":
{dataset: {method: {"metrics": {...}, "seconds": {"partition": s}}}}}.
One row per dataset, two panels per row: partition time (log x) against
T_sum and against T_max.  Methods "parsa-best@L" (best with --time-limit
L) are drawn as the anytime curve of best: small points on a solid line.
"""
import json
import math
import sys

W, H = 420, 300          # one panel
ML, MR, MT, MB = 70, 20, 40, 50
COLORS = {"parsa-fast": "#9ecae1", "parsa": "#3182bd", "parsa-best": "#08519c",
          "parsa-best-tsum": "#17becf", "parsa-best-tmax": "#e377c2",
          "metis": "#e6550d", "zoltan": "#31a354", "parsa-best@": "#6a51a3",
          "mtk-default": "#fdae6b", "mtk-quality": "#a63603"}
LABELS = {"parsa-fast": "parsa fast", "parsa": "parsa default",
          "parsa-best": "parsa best", "parsa-best-tsum": "best --objective tsum",
          "parsa-best-tmax": "best --objective tmax", "metis": "METIS",
          "zoltan": "Zoltan PHG", "parsa-best@": "best --time-limit",
          "mtk-default": "Mt-KaHyPar default", "mtk-quality": "Mt-KaHyPar quality"}
ORDER = ["parsa-fast", "parsa", "parsa-best", "parsa-best-tsum", "parsa-best-tmax",
         "metis", "zoltan", "mtk-default", "mtk-quality"]
# points from ../shared/docs/anchors-mtkahypar.md (not run here): squares
SQUARE = ("mtk-default", "mtk-quality")
ANY = "parsa-best@"


def anytime(meths):
    """The time-limited runs of best, by limit."""
    return sorted((m for m in meths if m.startswith(ANY)), key=lambda m: float(m[len(ANY):]))


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;")


def nice_ticks(lo, hi, n=5):
    span = hi - lo or abs(hi) or 1.0
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    t = math.floor(lo / step) * step
    out = []
    while t <= hi + 1e-9 * step:
        if t >= lo - 1e-9 * step:
            out.append(t)
        t += step
    return out


def panel(x0, y0, title, pts, ykey, curve=()):
    """pts: [(method, seconds, metrics)] -> SVG elements of one panel;
    curve: the same for best's time-limited runs."""
    xs = [max(p[1], 1e-4) for p in list(pts) + list(curve)]
    ys = [p[2][ykey] for p in list(pts) + list(curve)]
    lx0, lx1 = math.log10(min(xs)) - 0.15, math.log10(max(xs)) + 0.15
    ylo, yhi = min(ys), max(ys)
    pad = (yhi - ylo) * 0.12 or yhi * 0.05 or 1
    ylo, yhi = ylo - pad, yhi + pad
    pw, ph = W - ML - MR, H - MT - MB

    def X(s):
        return x0 + ML + (math.log10(max(s, 1e-4)) - lx0) / (lx1 - lx0) * pw

    def Y(v):
        return y0 + MT + (1 - (v - ylo) / (yhi - ylo)) * ph

    e = ['<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>'
         % (x0 + ML, y0 + MT, pw, ph),
         '<text x="%d" y="%d" font-size="13" text-anchor="middle">%s</text>'
         % (x0 + ML + pw / 2, y0 + MT - 12, esc(title))]
    for d in range(math.floor(lx0), math.ceil(lx1) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** d
            if lx0 <= math.log10(v) <= lx1:
                e.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>'
                         % (X(v), y0 + MT, X(v), y0 + MT + ph))
                e.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%g</text>'
                         % (X(v), y0 + MT + ph + 14, v))
    for t in nice_ticks(ylo, yhi):
        e.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>'
                 % (x0 + ML, Y(t), x0 + ML + pw, Y(t)))
        e.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%s</text>'
                 % (x0 + ML - 4, Y(t) + 3, "{:,.0f}".format(t)))
    e.append('<text x="%d" y="%d" font-size="11" text-anchor="middle">partition time, s (log)</text>'
             % (x0 + ML + pw / 2, y0 + H - 12))
    e.append('<text x="%d" y="%d" font-size="11" text-anchor="middle" transform="rotate(-90 %d %d)">%s</text>'
             % (x0 + 14, y0 + MT + ph / 2, x0 + 14, y0 + MT + ph / 2, ykey))
    line = [p for p in pts if p[0] in ("parsa-fast", "parsa", "parsa-best")]
    if len(line) > 1:
        e.append('<polyline fill="none" stroke="#3182bd" stroke-dasharray="4,3" points="%s"/>'
                 % " ".join("%.1f,%.1f" % (X(p[1]), Y(p[2][ykey])) for p in line))
    if curve:
        e.append('<polyline fill="none" stroke="%s" points="%s"/>'
                 % (COLORS[ANY], " ".join("%.1f,%.1f" % (X(p[1]), Y(p[2][ykey])) for p in curve)))
    for meth, s, m in curve:
        e.append('<g><title>best --time-limit %s: %.3fs, %s %.0f</title><circle cx="%.1f" cy="%.1f" r="3" fill="%s"/></g>'
                 % (meth[len(ANY):], s, ykey, m[ykey], X(s), Y(m[ykey]), COLORS[ANY]))
    for meth, s, m in pts:
        if meth in SQUARE:
            e.append('<g><title>%s (anchors file): %.3fs, %s %.0f</title><rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/></g>'
                     % (LABELS[meth], s, ykey, m[ykey], X(s) - 5, Y(m[ykey]) - 5, COLORS[meth]))
            continue
        e.append('<g><title>%s: %.3fs, %s %.0f</title><circle cx="%.1f" cy="%.1f" r="5" fill="%s"/></g>'
                 % (LABELS.get(meth, meth), s, ykey, m[ykey], X(s), Y(m[ykey]), COLORS.get(meth, "#000")))
    return e


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = json.load(open(sys.argv[1]))["tradeoff"]
    rows = list(data.items())
    width, height = 2 * W, len(rows) * H + 64
    e = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'
         % (width, height), '<rect width="100%" height="100%" fill="white"/>']
    for r, (name, meths) in enumerate(rows):
        pts = [(m, meths[m]["seconds"]["partition"], meths[m]["metrics"]) for m in ORDER if m in meths]
        curve = [(m, meths[m]["seconds"]["partition"], meths[m]["metrics"]) for m in anytime(meths)]
        for c, key in enumerate(("T_sum", "T_max")):
            e += panel(c * W, r * H, "%s, k=16: time vs %s" % (name, key), pts, key, curve)
    x, yl = 20, height - 42
    for m in ORDER + [ANY]:
        w = 24 + 7 * len(LABELS[m])
        if x + w > width:
            x, yl = 20, yl + 22
        if m in SQUARE:
            e.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>' % (x - 5, yl - 5, COLORS[m]))
        else:
            e.append('<circle cx="%d" cy="%d" r="5" fill="%s"/>' % (x, yl, COLORS[m]))
        e.append('<text x="%d" y="%d" font-size="11">%s</text>' % (x + 8, yl + 4, LABELS[m]))
        x += w
    e.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(e) + "\n")


if __name__ == "__main__":
    main()
