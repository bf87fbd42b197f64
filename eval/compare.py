#!/usr/bin/env python3
"""Result folders of the evaluation side by side: each headline figure's
value in each, as one markdown table.

usage: python3 eval/compare.py [--title TEXT] [--note TEXT] [--append] --out FILE
                               LABEL=DIR [LABEL=DIR ...]

A folder is what `python3 -m eval --out DIR` wrote (its <experiment>.json);
a headline a folder lacks is shown as "-". Each folder's build and
time-model settings and how many SoCs it ran at once are listed under the
table, with the command that made it when the folder has one (a file
COMMAND in it).
"""
import argparse
import json
import os


def load(d):
    out = {}
    for name in ("freq", "latency", "throughput", "cpu", "multiplex", "breakdown"):
        p = os.path.join(d, f"{name}.json")
        if os.path.exists(p):
            with open(p) as f:
                out[name] = json.load(f)
    p = os.path.join(d, "run.json")         # the whole run (python3 -m eval writes it)
    if os.path.exists(p):
        with open(p) as f:
            out["_run"] = json.load(f)
    return out


def row(res, exp, **match):
    for r in res.get(exp, {}).get("rows", []):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def val(r, key):
    return None if r is None else r.get(key)


def headlines(res):
    """(label, value, unit) of the headline figures of one folder."""
    out = []
    lat = {c: row(res, "latency", contender=c, size=64)
           for c in ("linux", "accio", "accio-spin", "accio-auto", "dpdk")}
    for c in ("linux", "accio", "accio-spin", "dpdk"):
        out.append((f"processing p50 at 64 B, {c}", val(lat[c], "proc_p50_us"), "µs"))
        out.append((f"processing p99 at 64 B, {c}", val(lat[c], "proc_p99_us"), "µs"))
    lp, ap, dp = (val(lat[c], "proc_p50_us") for c in ("linux", "accio", "dpdk"))
    out.append(("Linux / Accio blocking, p50 at 64 B", lp / ap if lp and ap else None, "x"))
    out.append(("DPDK / Accio blocking, p50 at 64 B", dp / ap if dp and ap else None, "x"))
    for c in ("accio", "linux", "accio-spin"):
        out.append((f"CPU busy at 40x, {c}", val(row(res, "cpu", contender=c, factor=40),
                                                  "cpu_busy_pct"), "%"))
    have = {r["threads"] for r in res.get("multiplex", {}).get("rows", [])}
    for t in [t for t in (1, 4, 16, 64, 256, 1024) if t in have] or [1, 4, 64]:
        for c in ("accio", "linux"):
            r = row(res, "multiplex", contender=c, threads=t)
            out.append((f"multiplexing T={t}, {c}: processing p50", val(r, "p50_us"), "µs"))
            out.append((f"multiplexing T={t}, {c}: processing p99", val(r, "p99_us"), "µs"))
    for t in sorted(r["threads"] for r in res.get("multiplex", {}).get("rows", [])
                    if r["contender"] == "dpdk"):
        r = row(res, "multiplex", contender="dpdk", threads=t)
        out.append((f"multiplexing T={t}, dpdk: turnaround p50", val(r, "wire_p50_us"), "µs"))
        out.append((f"multiplexing T={t}, dpdk: datagrams lost", val(r, "lost"), ""))
    a1 = val(row(res, "multiplex", contender="accio", threads=1), "p50_us")
    a4 = val(row(res, "multiplex", contender="accio", threads=4), "p50_us")
    out.append(("multiplexing, Accio T=4 / T=1 (p50)", a4 / a1 if a1 and a4 else None, "x"))
    tp = res.get("throughput", {})
    sinks = [r for r in tp.get("rows", []) if r["size"] == 64]
    out.append(("POSIX sink at 64 B, best contender", max((r["delivered_mbps"] for r in sinks),
                                                          default=None), "Mb/s"))
    for b in tp.get("bus_rows", []):
        if b["size"] in (64, 1472):
            out.append((f"engine at {b['size']} B (bus limit {b['bus_limit_mbps']:.0f})",
                        b["engine_mbps"], "Mb/s"))
    tot = res.get("breakdown", {}).get("totals", {})
    for m in ("accio", "spin", "linux"):
        t = tot.get(m)
        out.append((f"breakdown: instructions per round trip, {m}",
                    round(t) if isinstance(t, (int, float)) else None, ""))
    # An experiment's SoC time: its SoCs' wall time summed (guest_s); a run
    # from before parallel jobs ran one SoC at a time, so its wall time is that.
    exps = {k: v for k, v in res.items() if not k.startswith("_")}
    soc = {name: r.get("guest_s", r.get("wall_s")) for name, r in exps.items()}
    for name in exps:
        out.append((f"SoC time, {name}", soc[name], "s"))
    out.append(("SoC time, the whole evaluation (one SoC at a time)",
                sum(w for w in soc.values() if w) if any(soc.values()) else None, "s"))
    run = res.get("_run", {})
    wall = [r.get("wall_s") for r in exps.values()]
    out.append(("wall time of the evaluation",
                run.get("wall_s") or (sum(w for w in wall if w) if any(wall) else None), "s"))
    return out


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "x":
        return f"{v:.2f}x"
    if unit == "s":
        return f"{v:,.0f} s"
    if isinstance(v, float) and v >= 1000:
        return f"{v:,.0f}"
    return f"{v:,.1f}" if isinstance(v, float) else f"{v:,}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="Headlines side by side")
    ap.add_argument("--note", default="")
    ap.add_argument("--append", action="store_true")
    ap.add_argument("dirs", nargs="+", metavar="LABEL=DIR")
    a = ap.parse_args()
    cols = [d.split("=", 1) for d in a.dirs]
    data = [(label, load(d), d) for label, d in cols]
    tables = [headlines(res) for _, res, _ in data]
    names, units = [], {}
    for t in tables:
        for name, _, unit in t:
            if name not in units:
                names.append(name)
                units[name] = unit
    values = [{name: v for name, v, _ in t} for t in tables]
    lines = [f"## {a.title}", ""]
    if a.note:
        lines += [a.note, ""]
    lines += ["| figure | " + " | ".join(label for label, _, _ in data) + " |",
              "|---|" + "---:|" * len(data)]
    for name in names:
        unit = units[name]
        u = f" ({unit})" if unit and unit not in ("x", "s") else ""
        lines.append(f"| {name}{u} | " + " | ".join(fmt(v.get(name), unit) for v in values)
                     + " |")
    lines.append("")
    for label, res, d in data:
        conf = next((r["configuration"] for r in res.values() if "configuration" in r), {})
        cmd = ""
        if os.path.exists(os.path.join(d, "COMMAND")):
            with open(os.path.join(d, "COMMAND")) as f:
                cmd = f" Command: `{f.read().strip()}`."
        lines.append(f"- {label}: commit {conf.get('commit')}, QEMU {conf.get('qemu')}, "
                     f"rr-timeslice {conf.get('rr_timeslice')}, harts in parallel "
                     f"{conf.get('icount_parallel', True)}, skew "
                     f"{conf.get('icount_skew_ns', 'none (rounds)')} ns"
                     + (", quick" if conf.get("quick") else "")
                     + f", {conf.get('jobs', 1)} SoC(s) at once.{cmd}")
    lines.append("")
    mode = "a" if a.append else "w"
    with open(a.out, mode) as f:
        if not a.append:
            f.write("# The platform's settings and changes, measured\n\nGenerated by "
                    "`eval/compare.py` from result folders of `python3 -m eval`; do not "
                    "edit by hand.\n\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
