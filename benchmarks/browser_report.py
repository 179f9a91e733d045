"""The printed tables of browser.py: the peers' cold starts and warm latency, and the
embeds' visits with their bytes and ratios."""

from __future__ import annotations

from typing import Any


def table(peers: dict[str, dict[str, Any]]) -> str:
    rows = [("peer", "cold (page)", "cold (wall)", "warm median", "warm p90", "warm mean",
             "max |diff|")]
    others: list[str] = []
    for name, r in peers.items():
        if "error" in r or "skipped" in r:
            why = f"error: {r['error'][:80]}" if "error" in r else f"skipped: {r['skipped']}"
            others.append(f"{name}  {why}")
            continue
        rows.append((name, f"{r['cold_median_ms']:.0f} ms", f"{r['cold_wall_median_ms']:.0f} ms",
                     f"{r['warm_median_ms']:.2f} ms", f"{r['warm_p90_ms']:.2f} ms",
                     f"{r['warm_mean_ms']:.3f} ms", f"{r['max_abs_diff']:.1e}"))
        if "breakdown" in r:
            b = r["breakdown"]
            others.append(f"{name} per prediction: Python {b['python_ms']:.1f} ms, readback "
                          f"{b['readback_ms']:.1f} ms (submit + GPU + map), worker bridge "
                          f"{b['bridge_ms']:.1f} ms; {b['dispatches']:.0f} dispatches, "
                          f"{b['submits']:.0f} submits, {b['readbacks']:.0f} readback")
            if "load" in (r.get("page", {}).get("bench") or {}):
                load = r["page"]["bench"]["load"]
                others.append(f"{name} load: " + ", ".join(
                    f"{k} {v:.0f} ms" for k, v in load.items()))
    return "\n".join(aligned(rows) + others)


def aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def size(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n:,.0f} B"


def embed_table(embed: dict[str, Any]) -> str:
    rows = [("peer", "first visit", "repeat visit", "first bytes", "(gzip host)", "repeat bytes",
             "repeat runtime+weights", "repeat 304s", "first, 20 Mbit/s")]
    others = []
    if "export" in embed:
        x = embed["export"]
        others.append(f"export-web: {x['error']}" if "error" in x else
                      f"export-web says: {size(x['disk_bytes'])} on disk, a first visit "
                      f"{size(x['first_visit_bytes'])} ({size(x['first_visit_gz_bytes'])} "
                      "with the .gz copies)")
    for name, r in embed["peers"].items():
        if "error" in r or "skipped" in r:
            why = f"error: {r['error'][:80]}" if "error" in r else f"skipped: {r['skipped']}"
            others.append(f"{name}  {why}")
            continue
        rows.append((name, f"{r['first_median_ms']:.0f} ms", f"{r['repeat_median_ms']:.0f} ms",
                     size(r["first_bytes"]), size(r["first_bytes_if_gzip"]),
                     size(r["repeat_bytes"]), size(r["repeat_bundle_bytes"]),
                     f"{r['repeat_not_modified']:.0f}",
                     f"{r['throttled_first_median_ms']:.0f} ms"
                     if "throttled_first_median_ms" in r else "-"))
    for name, ratios in embed.get("ratios", {}).items():
        others.append(f"{name} / peer: " + ", ".join(f"{k} {v['first']:.2f}x first, "
                                                     f"{v['repeat']:.2f}x repeat"
                                                     for k, v in ratios.items()))
    return "\n".join(aligned(rows) + others)

