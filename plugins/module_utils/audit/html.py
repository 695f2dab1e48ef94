# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the fleet audit report (a document of _audit.document()) as one self-contained HTML page.

No external assets: inline CSS, inline SVG plots, a few lines of inline script to sort the table.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from html import escape

COLOURS = {"green": "#2e7d32", "amber": "#f9a825", "red": "#c62828"}

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1b1b1b;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} .meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px} th,td{border:1px solid #ddd;padding:4px 8px;text-align:left}
th{background:#f3f3f3} th.sort{cursor:pointer} td.n{text-align:right}
.pill{display:inline-block;min-width:34px;padding:2px 8px;border-radius:10px;color:#fff;font-weight:600;
text-align:center} .green{background:#2e7d32} .amber{background:#f9a825;color:#1b1b1b} .red{background:#c62828}
.zero{opacity:.35} .plots{display:flex;flex-wrap:wrap;gap:24px} figure{margin:0} figcaption{font-size:13px;color:#333}
"""

_SCRIPT = """
document.querySelectorAll('th.sort').forEach(function (th) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0], col = th.cellIndex;
    var asc = th.dataset.asc !== 'true'; th.dataset.asc = asc;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.key || a.cells[col].textContent;
      var y = b.cells[col].dataset.key || b.cells[col].textContent;
      return asc ? x.localeCompare(y, undefined, {numeric: true}) : y.localeCompare(x, undefined, {numeric: true});
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def _pill(status, count=None):
    text = status if count is None else str(count)
    zero = " zero" if count == 0 else ""
    return '<span class="pill %s%s">%s</span>' % (status, zero, escape(text))


def _percent(value):
    return ("%.2f %%" if value < 0.01 else "%.1f %%") % (100 * value)


def _bars(title, caption, rows, limit_lines, unit="%", width=620):
    """A horizontal bar chart: rows of (label, value 0..1+, status); vertical lines at limit_lines [(value, name)]."""
    if not rows:
        return '<figure><figcaption><b>%s</b>: %s</figcaption></figure>' % (escape(title), escape(caption))
    label_w, bar_h, top = 12 + 7 * max(len(str(r[0])) for r in rows), 16, 22
    plot_w = width - label_w - 60
    scale = max([1.0] + [v for _l, v, _s in rows])
    height = top + len(rows) * (bar_h + 4) + 24
    out = ['<figure><svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" '
           'aria-label="%s">' % (width, height, escape(title))]
    for i, (label, value, status) in enumerate(rows):
        y = top + i * (bar_h + 4)
        w = max(1.0, plot_w * value / scale)
        out.append('<text x="%d" y="%d" font-size="11" text-anchor="end">%s</text>'
                   % (label_w - 6, y + bar_h - 4, escape(str(label))))
        shown = _percent(value) if unit == "%" else "%.2f %s" % (value, unit)
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>'
                   % (label_w, y, w, bar_h, COLOURS.get(status, "#777"), escape(str(label)), escape(shown)))
        out.append('<text x="%.1f" y="%d" font-size="11">%s</text>' % (label_w + w + 4, y + bar_h - 4, escape(shown)))
    for value, name in limit_lines:
        x = label_w + plot_w * value / scale
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-dasharray="4 3"/>'
                   % (x, top - 6, x, height - 20))
        out.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%s</text>'
                   % (x, height - 6, escape(name)))
    out.append('</svg><figcaption><b>%s</b>: %s</figcaption></figure>' % (escape(title), escape(caption)))
    return "".join(out)


def _histogram(title, caption, values, amber, red, width=560):
    if not values:
        return '<figure><figcaption><b>%s</b>: %s</figcaption></figure>' % (escape(title), escape(caption))
    top_value = max(values + [red * 1.2])
    bins = 12
    step = top_value / bins
    counts, worst = [0] * bins, [0.0] * bins
    for v in values:
        i = min(bins - 1, int(v / step))
        counts[i] += 1
        worst[i] = max(worst[i], v)
    height, base, left = 190, 160, 40
    bar_w = (width - left - 20) / float(bins)
    most = max(counts) or 1
    out = ['<figure><svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" aria-label="%s">'
           % (width, height, escape(title))]
    for i, n in enumerate(counts):
        lo = i * step
        status = "red" if worst[i] >= red else "amber" if worst[i] >= amber else "green"  # its worst value's colour
        h = 130.0 * n / most
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%.2f-%.2f ms: %d</title>'
                   '</rect>' % (left + i * bar_w + 1, base - h, bar_w - 2, h, COLOURS[status], lo, lo + step, n))
        if n:
            out.append('<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%d</text>'
                       % (left + (i + 0.5) * bar_w, base - h - 3, n))
        out.append('<text x="%.1f" y="%d" font-size="9" text-anchor="middle">%.1f</text>'
                   % (left + i * bar_w, base + 12, lo))
    out.append('<text x="%d" y="%d" font-size="10">ms</text>' % (width - 18, base + 12))
    out.append('</svg><figcaption><b>%s</b>: %s</figcaption></figure>' % (escape(title), escape(caption)))
    return "".join(out)


def render(doc):
    t = doc["thresholds"]
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kubescale fleet audit</title>',
             '<style>%s</style></head><body>' % _CSS]
    totals = doc["totals"]
    parts.append('<h1>kubescale fleet audit</h1><div class="meta">%s · %d nodes · schema %s%s</div>'
                 % (escape(doc["generated_at"]), totals["nodes"], escape(doc["schema"]),
                    " · run with --check" if doc.get("check_mode") else ""))
    parts.append('<h2>Summary per class</h2><table id="summary"><thead><tr><th>class</th><th>nodes</th><th>green</th>'
                 '<th>amber</th><th>red</th><th>checks green / amber / red</th></tr></thead><tbody>')
    for cls, s in doc["classes"].items():
        parts.append('<tr><td>%s</td><td class="n">%d</td><td>%s</td><td>%s</td><td>%s</td><td>%d / %d / %d</td></tr>'
                     % (escape(cls), s["nodes"], _pill("green", s["green"]), _pill("amber", s["amber"]),
                        _pill("red", s["red"]), s["checks"]["green"], s["checks"]["amber"], s["checks"]["red"]))
    parts.append('</tbody></table>')
    parts.append('<h2>Thresholds</h2><table id="thresholds"><thead><tr><th>check</th><th>amber at</th><th>red at</th>'
                 '</tr></thead><tbody>')
    for name, amber, red in (
            ("neighbour entries / gc_thresh3", "%.0f %%" % (100 * t["neigh_amber"]), "%.0f %%" % (100 * t["neigh_red"])),
            ("etcd database / quota", "%.0f %%" % (100 * t["etcd_db_amber"]), "%.0f %%" % (100 * t["etcd_db_red"])),
            ("etcd revisions behind the leader", "%d" % t["etcd_revision_lag_amber"], "-"),
            ("age of the last etcd snapshot", "%s h" % t["snapshot_amber_hours"], "%s h" % t["snapshot_red_hours"]),
            ("fdatasync p99 on the SSD", "%s ms" % t["fdatasync_p99_amber_ms"], "%s ms" % t["fdatasync_p99_red_ms"])):
        parts.append('<tr><td>%s</td><td>%s</td><td>%s</td></tr>' % (escape(name), escape(amber), escape(red)))
    parts.append('</tbody></table>')

    failing = doc["failing"]
    parts.append('<h2>Failing checks (%d)</h2>' % len(failing))
    if failing:
        parts.append('<table id="failing"><thead><tr><th class="sort">node</th><th class="sort">class</th>'
                     '<th class="sort">status</th><th class="sort">area</th><th class="sort">check</th>'
                     '<th>what and where</th></tr></thead><tbody>')
        for c in failing:
            parts.append('<tr><td>%s</td><td>%s</td><td data-key="%d">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>'
                         % (escape(c["node"]), escape(c["class"] or ""), 2 - ["green", "amber", "red"].index(c["status"]),
                            _pill(c["status"]), escape(c["area"]), escape(str(c["check"])), escape(c["message"])))
        parts.append('</tbody></table>')
    else:
        parts.append('<p>%s every check green.</p>' % _pill("green"))

    # plots
    etcd_rows, neigh_rows, p99 = [], [], []
    for host, node in sorted(doc["nodes"].items()):
        for c in node["checks"]:
            if c["check"] == "db_vs_quota" and c["value"] is not None:
                etcd_rows.append(("%s%s" % (host, " (Events)" if c["area"] == "etcd_events" else ""), c["value"],
                                  c["status"]))
            elif c["area"] == "neighbours" and c["check"] in ("ipv4", "ipv6") and c["value"] is not None:
                neigh_rows.append(("%s %s" % (host, c["check"]), c["value"], c["status"]))
            elif c["check"] == "fdatasync_p99" and c["value"] is not None:
                p99.append(float(c["value"]))
    neigh_rows.sort(key=lambda r: -r[1])
    parts.append('<h2>Plots</h2><div class="plots">')
    parts.append(_bars("etcd database vs quota, per member", "amber and red lines at the thresholds",
                       etcd_rows, [(t["etcd_db_amber"], "amber"), (t["etcd_db_red"], "red")]) if etcd_rows else
                 _bars("etcd database vs quota, per member", "no etcd member in this audit", [], []))
    parts.append(_histogram("fdatasync p99 on the local SSDs", "nodes per p99 bin; not measured unless "
                            "fleet_audit_measure_latency is true" if not p99 else "%d SSDs measured" % len(p99),
                            p99, t["fdatasync_p99_amber_ms"], t["fdatasync_p99_red_ms"]))
    shown = neigh_rows[:24]
    parts.append(_bars("neighbour-table fill per node", "entries / gc_thresh3, fullest %d of %d" % (len(shown),
                       len(neigh_rows)), shown, [(t["neigh_amber"], "amber"), (t["neigh_red"], "red")]))
    parts.append('</div>')

    parts.append('<h2>Every node</h2><table id="nodes"><thead><tr><th class="sort">node</th><th class="sort">class'
                 '</th><th class="sort">status</th><th>checks (green / amber / red)</th></tr></thead><tbody>')
    for host, node in sorted(doc["nodes"].items()):
        counts = [sum(1 for c in node["checks"] if c["status"] == s) for s in ("green", "amber", "red")]
        parts.append('<tr><td>%s</td><td>%s</td><td data-key="%d">%s</td><td>%d / %d / %d</td></tr>'
                     % (escape(host), escape(node["class"] or ""), 2 - ["green", "amber", "red"].index(node["status"]),
                        _pill(node["status"]), counts[0], counts[1], counts[2]))
    parts.append('</tbody></table><script>%s</script></body></html>' % _SCRIPT)
    return "\n".join(parts)
