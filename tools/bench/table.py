#!/usr/bin/env python3
"""Merges JSON-lines benchmark records (kjit_bench's and peers.py's; format in
tools/bench/README.md) into one markdown report: the main table (kjit, CuPy, PyTorch side by side,
percent of the copy ceiling, kjit's speed relative to each peer, the goal and whether kjit met it),
the peers against the numbers the issues quote, every variant, and the errors.

    table.py FILE.jsonl [FILE.jsonl ...] [-o table.md] [--brief] [--heading-level N] [--title T]

`--brief --heading-level 3` gives the section docs/PERFORMANCE.md pastes (tools/side-by-side.sh
writes it as OUT_DIR/side-by-side.md).

Standard library only. Lines that are not JSON objects are reported and skipped; a missing file
is reported; neither stops the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import cases as C  # noqa: E402

PEER_ORDER = ["kjit", "cupy", "torch", "cublas"]
# The main table's columns: kjit, the two peers, and cuBLAS where a record has it. Any other impl
# (kjit_bench's `cublas_rebind`, `cublas_sgemm` on mm_host_64, say) is listed under "All variants".
MAIN_IMPLS = ("kjit", "cupy", "torch", "cublas")
LABEL = C.IMPL_LABELS
METRIC_FIELDS = [C.TFLOPS, C.GBPS, C.US, C.MS]


def label(impl):
    return LABEL.get(impl, impl)


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt_value(metric, v):
    if not num(v):
        return "—"
    if metric == C.GBPS:
        return f"{v:.0f}"
    if metric == C.TFLOPS:
        return f"{v:.0f}" if v >= 100 else f"{v:.1f}"
    if v < 1:
        return f"{v:.3f}"
    if v < 10:
        return f"{v:.2f}"
    if v < 100:
        return f"{v:.1f}"
    return f"{v:.0f}"


def ceiling_label(rec):
    """What measured the ceiling: the peer's variant, or kjit bench's note."""
    if rec.get("variant"):
        return rec["variant"]
    src = rec.get("_src", "").split(":")[0]
    what = rec.get("note") or rec["impl"]
    return f"{what}; {src}" if src else what


def esc(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------------------------
# Loading

class Data:
    def __init__(self):
        self.records = []          # every record, in file order
        self.problems = []         # text lines for the report
        self.primary = {}          # (impl, case) -> record

    def load(self, path):
        if not os.path.exists(path):
            self.problems.append(f"{path}: no such file")
            return
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except OSError as e:
            self.problems.append(f"{path}: {e}")
            return
        bad = 0
        for i, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not isinstance(rec, dict) or not rec.get("impl") or not rec.get("case"):
                bad += 1
                if bad <= 3:
                    self.problems.append(f"{path}:{i}: not a record, skipped: {line[:80]}")
                continue
            rec["_src"] = f"{os.path.basename(path)}:{i}"
            self.records.append(rec)
        if bad > 3:
            self.problems.append(f"{path}: {bad - 3} more lines skipped")

    def index(self):
        dup = set()
        for rec in self.records:
            if rec.get("primary", True) is False:
                continue
            key = (rec["impl"], rec["case"])
            if key in self.primary:
                dup.add(key)
            self.primary[key] = rec           # the last one wins
        for impl, case in sorted(dup):
            if impl == "ceiling":              # several copy measurements: the highest is used
                continue
            self.problems.append(f"several main records for {impl} {case}: the last one is shown")

    def get(self, impl, case):
        return self.primary.get((impl, case))

    def case_ids(self):
        seen = {r["case"] for r in self.records}
        known = [c for c in C.ORDER if c in seen or c in C.BY_ID]
        extra = sorted(seen - set(C.ORDER))
        return known, extra

    def impls(self):
        present = {r["impl"] for r in self.records if r["impl"] != "ceiling"}
        order = [i for i in PEER_ORDER if i in present or i in ("kjit", "cupy", "torch")]
        return order + sorted(present - set(order))

    def main_impls(self):
        """The main table's columns (kjit, CuPy, PyTorch always; cuBLAS when present)."""
        return [i for i in self.impls() if i in MAIN_IMPLS]

    def other_impls(self):
        return [i for i in self.impls() if i not in MAIN_IMPLS]

    def ceiling(self):
        """The highest copy bandwidth among the main ceiling records without error."""
        best = None
        for rec in self.records:     # main records and variants alike
            if rec["impl"] == "ceiling" and not rec.get("error") and num(rec.get("gbps")):
                if best is None or rec["gbps"] > best["gbps"]:
                    best = rec
        return best


def metric_of(case_id, rec=None):
    case = C.BY_ID.get(case_id)
    if case:
        return case.metric
    if rec:
        for f in METRIC_FIELDS:
            if num(rec.get(f)):
                return f
    return C.GBPS


# ------------------------------------------------------------------------------------------
# Goals

def speed_ratio(metric, kjit_v, peer_v):
    """kjit's speed relative to the peer: > 1 means kjit is faster, for every metric."""
    if not (num(kjit_v) and num(peer_v)) or kjit_v <= 0 or peer_v <= 0:
        return None
    return kjit_v / peer_v if C.HIGHER_IS_BETTER[metric] else peer_v / kjit_v


def goal_status(case, data, ceiling_gbps):
    """(state, text): state 'met', 'missed' or None (cannot tell)."""
    if case is None or case.goal is None:
        return None, ""
    g, metric = case.goal, case.metric
    rec = data.get("kjit", case.id)
    if rec is None:
        return None, "no kjit result"
    if rec.get("error"):
        return None, "kjit failed"
    v = rec.get(metric)
    if not num(v):
        return None, f"kjit gave no {metric}"
    unit = C.UNITS[metric]
    if g.kind == "copy_frac":
        if not ceiling_gbps:
            return None, "no copy ceiling measured"
        frac = v / ceiling_gbps
        if frac >= g.value:
            return "met", f"{frac * 100:.1f}% of copy"
        return "missed", f"by {(g.value - frac) * 100:.1f} points: {frac * 100:.1f}% of copy"
    if g.kind == "gbps_min":
        if v >= g.value:
            return "met", f"{v:.0f} GB/s"
        return "missed", f"by {(1 - v / g.value) * 100:.1f}%: {v:.0f} GB/s"
    if g.kind == "max":
        if v <= g.value:
            return "met", f"{fmt_value(metric, v)} {unit}"
        return "missed", f"by {(v / g.value - 1) * 100:.0f}%: {fmt_value(metric, v)} {unit}"
    if g.kind == "vs_impl":
        ref = data.get(g.impl, case.id)
        if ref is None or ref.get("error") or not num(ref.get(metric)):
            return None, f"no {label(g.impl)} result to compare"
        r = v / ref[metric]
        if r >= g.value:
            return "met", f"{r:.3f}× {label(g.impl)}"
        return "missed", f"by {(g.value - r) * 100:.1f}%: {r:.3f}× {label(g.impl)}"
    return None, f"unknown goal kind {g.kind}"


# ------------------------------------------------------------------------------------------
# Rendering

def floor_text(data, case_id):
    """'; the launch floor in this run: X µs' when kjit recorded a floor variant of the case (its
    variant text starts with 'the launch floor'), so that a missed host-time goal shows what the
    host itself charged; '' otherwise."""
    for rec in data.records:
        if (rec.get("impl") == "kjit" and rec.get("case") == case_id and not rec.get("error")
                and str(rec.get("variant", "")).startswith("the launch floor")
                and num(rec.get("us_per_call"))):
            return f"; the launch floor in this run (cuLaunchKernel alone): {fmt_value(C.US, rec['us_per_call'])} µs"
    return ""


class Notes:
    """Numbered footnotes for errors and failed checks."""

    def __init__(self):
        self.items = []

    def add(self, text):
        if text in self.items:
            return self.items.index(text) + 1
        self.items.append(text)
        return len(self.items)


def cell(rec, metric, ceiling_gbps, notes: Notes, with_pct=True):
    if rec is None:
        return "—"
    where = f"{label(rec['impl'])} {rec['case']}" + (f" ({rec['variant']})" if rec.get("variant") else "")
    if rec.get("error"):
        return f"error [{notes.add(f'{where}: ' + str(rec['error']))}]"
    v = rec.get(metric)
    if not num(v):
        for f in METRIC_FIELDS:           # the record used another metric than the case's
            if num(rec.get(f)):
                metric, v = f, rec[f]
                break
    text = fmt_value(metric, v)
    if metric == C.GBPS and with_pct and ceiling_gbps and num(v):
        text += f" ({v / ceiling_gbps * 100:.0f}%)"
    chk = str(rec.get("check") or "")
    if chk and not chk.startswith("ok"):
        text += f" ⚠[{notes.add(f'{where}: check ' + chk)}]"
    return text


def render(data: Data, title="kjit benchmarks", brief=False, heading_level=1, intro="") -> str:
    """The markdown report. heading_level: the title's level (1: '#'); sections are one deeper,
    so that the report can be pasted under a heading of a longer document. An empty title is
    left out."""
    notes = Notes()
    out = []
    ceil = data.ceiling()
    ceiling_gbps = ceil["gbps"] if ceil else None
    all_impls = data.impls()
    impls = data.main_impls()
    peers = [i for i in impls if i != "kjit"]
    h1 = "#" * max(1, min(5, heading_level))
    h2 = h1 + "#"

    devices = sorted({r.get("device") for r in data.records if r.get("device")})
    dates = sorted(r.get("date") for r in data.records if r.get("date"))
    if title:
        out.append(f"{h1} {title}")
        out.append("")
    if intro:
        out.append(intro)
        out.append("")
    if devices:
        out.append(f"Device: {', '.join(devices)}. ")
    if dates:
        out.append(f"Records dated {dates[0]} to {dates[-1]}. ")
    libs = {}
    for r in data.records:
        if r.get("lib"):
            libs.setdefault(r["impl"] if r["impl"] != "ceiling" else "ceiling", set()).add(r["lib"])
    for impl in sorted(libs):
        out.append(f"{label(impl)}: {'; '.join(sorted(libs[impl]))}. ")
    if ceil:
        out.append(f"Copy ceiling (device-to-device, read + write, the highest measured in this "
                   f"run): **{ceiling_gbps:.0f} GB/s** ({esc(ceiling_label(ceil))}).")
    else:
        out.append("No copy ceiling was measured: the percent-of-copy columns and goals are empty.")
    out.append("")
    out.append("GB/s count each input read once and each output written once; a percentage is of "
               "the copy ceiling. `kjit ÷ X` is kjit's speed relative to X (above 1: kjit faster; "
               "for times, X's time over kjit's). µs: host time per call; ms: time per call.")
    out.append("")

    hdr = ["case", "metric"] + [label(i) for i in impls] + \
          [f"kjit ÷ {label(p)}" for p in peers if p != "cublas"] + ["goal", "status"]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(hdr) - 4) + ["---"] * 2) + "|")

    known, extra = data.case_ids()
    tally = {"met": 0, "missed": 0, None: 0}
    missed_notes = []
    group = None
    for cid in known + extra:
        case = C.BY_ID.get(cid)
        recs = {i: data.get(i, cid) for i in impls}
        if case and case.group != group:
            group = case.group
            out.append(f"| **{C.GROUP_NAMES.get(group, group)}** |" + " |" * (len(hdr) - 1))
        if case is None and group != "_extra":
            group = "_extra"
            out.append("| **Other cases** |" + " |" * (len(hdr) - 1))
        any_rec = next((r for r in recs.values() if r), None)
        metric = metric_of(cid, any_rec)
        row = [f"`{cid}`<br>{esc(case.title) if case else ''}", C.UNITS[metric]]
        row += [cell(recs[i], metric, ceiling_gbps, notes) for i in impls]
        kv = recs["kjit"].get(metric) if recs.get("kjit") and not recs["kjit"].get("error") else None
        for p in peers:
            if p == "cublas":
                continue
            pv = recs[p].get(metric) if recs.get(p) and not recs[p].get("error") else None
            r = speed_ratio(metric, kv, pv)
            row.append(f"{r:.2f}×" if r is not None else "")
        state, text = goal_status(case, data, ceiling_gbps)
        if case is not None and case.goal is not None:
            tally[state] += 1
        row.append(esc(case.goal.text(metric)) if case and case.goal else "")
        row.append(" ".join(t for t in ({"met": "met", "missed": "**MISSED**"}.get(state, ""),
                                         esc(text)) if t))
        if state == "missed" and recs.get("kjit") and recs["kjit"].get("note"):
            missed_notes.append(f"- `{cid}`: {esc(recs['kjit']['note'])}" + esc(floor_text(data, cid)))
        elif state == "missed":
            missed_notes.append(f"- `{cid}`: (kjit's record gives no note)")
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append(f"Goals: {tally['met']} met, {tally['missed']} missed, {tally[None]} not decided "
               f"(no kjit result, or nothing to compare with).")
    out.append("")
    if missed_notes:
        out.append(f"{h2} Missed goals: kjit's notes")
        out.append("")
        out.extend(missed_notes)
        out.append("")

    others = data.other_impls()
    if others:
        out.append("Also measured, in the full report's variants: "
                   + ", ".join(f"`{i}`" for i in others) + ".")
        out.append("")

    if brief:
        return "\n".join(out + _footnotes(notes, data, h2))

    # ---- peers against the issues' numbers
    ref_impls = [i for i in ("cupy", "torch", "cublas", "ceiling")
                 if any(i in c.issue for c in C.CASES)]
    out.append(f"{h2} Peers here and in the issues")
    out.append("")
    out.append("The issues' numbers were measured on the same kind of machine (H200) with CuPy "
               "14.2 and PyTorch 2.11; a large difference means the peer script does not do what "
               "the issue measured (see the variants below).")
    out.append("")
    hdr2 = ["case", "metric"]
    for i in ref_impls:
        hdr2 += [f"{label(i)} here", f"{label(i)} issue"]
    out.append("| " + " | ".join(hdr2) + " |")
    out.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(hdr2) - 2)) + "|")
    for cid in known:
        case = C.BY_ID[cid]
        if not case.issue:
            continue
        row = [f"`{cid}`", C.UNITS[case.metric]]
        for i in ref_impls:
            rec = data.get(i, cid)
            if i == "ceiling" and rec is None and cid == "copy":
                rec = ceil
            row.append(cell(rec, case.metric, ceiling_gbps, notes, with_pct=False) if rec else "—")
            row.append(esc(case.issue.get(i, "")))
        out.append("| " + " | ".join(row) + " |")
    out.append("")

    # ---- every record
    out.append(f"{h2} All variants")
    out.append("")
    out.append("`*`: the record shown in the main table (for the copy ceiling: the one used). "
               "spread: min-max of the repeats.")
    out.append("")
    out.append("| case | impl | variant | value | spread | check | note |")
    out.append("|---|---|---|---:|---|---|---|")
    order = {c: k for k, c in enumerate(known + extra)}
    impl_rank = {i: k for k, i in enumerate(["ceiling"] + all_impls)}
    recs = sorted(data.records, key=lambda r: (order.get(r["case"], 1e9),
                                              impl_rank.get(r["impl"], 1e9)))
    for r in recs:
        metric = metric_of(r["case"], r)
        shown = ceil if r["impl"] == "ceiling" else data.get(r["impl"], r["case"])
        star = "*" if shown is r else ""
        val = cell(r, metric, ceiling_gbps, notes)
        unit = C.UNITS[metric] if not r.get("error") else ""
        spread = r.get("spread")
        sp = ""
        if isinstance(spread, list) and len(spread) == 2 and all(num(s) for s in spread):
            sp = f"{spread[0]:.4g}–{spread[1]:.4g} {'µs' if metric == C.US else 'ms'}"
        chk = str(r.get("check") or "")
        out.append(f"| `{r['case']}` | {label(r['impl'])}{star} | {esc(r.get('variant', ''))} | "
                   f"{val} {unit} | {sp} | {esc(chk)} | {esc(r.get('note', ''))} |")
    out.append("")

    return "\n".join(out + _footnotes(notes, data, h2))


def _footnotes(notes, data, h2="##"):
    out = []
    if notes.items or data.problems:
        out.append(f"{h2} Errors and failed checks")
        out.append("")
        for k, text in enumerate(notes.items, 1):
            out.append(f"{k}. {esc(text)}")
        for p in data.problems:
            out.append(f"- input: {esc(p)}")
        out.append("")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", help="JSON-lines files (kjit.jsonl, peers.jsonl)")
    p.add_argument("-o", "--out", help="write the markdown here (default: stdout)")
    p.add_argument("--title", default="kjit benchmarks")
    p.add_argument("--brief", action="store_true",
                   help="the main table, missed goals and errors only")
    p.add_argument("--intro", default="", help="a paragraph after the title (the command, say)")
    p.add_argument("--heading-level", type=int, default=1,
                   help="level of the title (1: '#'); sections one deeper (3: to paste under a "
                        "'##' section of docs/PERFORMANCE.md)")
    args = p.parse_args(argv)
    data = Data()
    for f in args.files:
        data.load(f)
    data.index()
    text = render(data, args.title, args.brief, args.heading_level, args.intro) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0 if data.records else 1


if __name__ == "__main__":
    sys.exit(main())
