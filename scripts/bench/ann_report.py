#!/usr/bin/env python3
"""Turns the output of scripts/bench/ann_compare.sh into Markdown tables (stdin -> stdout).

    scripts/bench/ann_compare.sh 100000 | tee ann-100k.log
    python3 scripts/bench/ann_report.py < ann-100k.log
"""
import re
import sys


def fields(line):
    parts = line.rstrip("\n").split("\t")
    kv = {}
    for p in parts:
        if "=" in p:
            k, v = p.split("=", 1)
            kv[k] = v
    return parts, kv


def main():
    lines = sys.stdin.read().splitlines()
    out = []
    meta = [l for l in lines if l.startswith("# ")]
    out += ["```"] + meta + ["```", ""]
    builds, persist, search, filt = [], [], {}, []
    for l in lines:
        parts, kv = fields(l)
        if parts[0] == "build":
            builds.append((parts, kv))
        elif parts[0] == "persist":
            persist.append(kv)
        elif parts[0] == "search":
            search.setdefault(parts[1], []).append(kv)
        elif parts[0] == "filtered":
            filt.append((parts, kv))

    out.append("| build | threads | wall s | CPU s (1 thread) | index bytes | index / raw f32 |")
    out.append("|---|---|---|---|---|---|")
    for parts, kv in builds:
        if "threads" in kv:
            out.append(
                f"| {parts[1]} | {kv['threads']} | {parts[3]} | {kv.get('cpu_s', '-')} | "
                f"{kv.get('index_bytes', kv.get('rss_delta', '-'))}{' (RSS delta)' if 'index_bytes' not in kv and 'rss_delta' in kv else ''} | "
                f"{kv.get('index_over_raw', '-')} |"
            )
        elif "index_bytes" in kv:
            out.append(f"| {parts[1]} (index size) | - | - | - | {kv['index_bytes']} | {kv.get('index_over_raw', '-')} |")
    for kv in persist:
        out.append("")
        out.append(
            f"Persistence (graph only): {kv['bytes']} bytes, save {kv['save_s']} s, load {kv['load_s']} s "
            f"= {float(kv['load_over_build']) * 100:.2f}% of the one-thread build CPU time."
        )
    out.append("")
    names = list(search)
    efs = sorted({int(kv["ef"]) for rows in search.values() for kv in rows})
    head = "| ef | " + " | ".join(f"{n} recall@10 | {n} QPS 1 thread (CPU) | {n} QPS wall 1t / all" for n in names) + " |"
    out.append(head)
    out.append("|---" * (1 + 3 * len(names)) + "|")
    for ef in efs:
        row = [str(ef)]
        for n in names:
            kv = next((k for k in search[n] if int(k["ef"]) == ef), None)
            if kv is None:
                row += ["-", "-", "-"]
            else:
                row += [kv["recall"], kv.get("qps_1t_cpu", "-"), f"{kv['qps_1t']} / {kv['qps_all']}"]
        out.append("| " + " | ".join(row) + " |")
    if filt:
        out.append("")
        # Newer logs also say which share of the queries the exact scan answered.
        plans = any("exact_scan_share" in kv for _, kv in filt)
        out.append("| index | ef | filter | recall@10 (vs exact filtered) | QPS 1 thread (CPU) | vs unfiltered |"
                   + (" answered by exact scan |" if plans else ""))
        out.append("|---|---|---|---|---|---|" + ("---|" if plans else ""))
        for parts, kv in filt:
            what = parts[3] if not parts[3].startswith("selectivity") else parts[3].replace("selectivity=", "ids ")
            out.append(
                f"| {parts[1]} | {kv['ef']} | {what} | {kv.get('recall', '-')} | {kv.get('qps_1t_cpu', '-')} | {kv.get('vs_unfiltered', '1.00')} |"
                + (f" {kv.get('exact_scan_share', '-')} |" if plans else "")
            )
    print("\n".join(out))


if __name__ == "__main__":
    main()
