#!/usr/bin/env python3
"""The table of record of issues 22 and 23 from bench_suite's bench.json files of one session
(several calls of one GPU job are merged: a row in a later file replaces an earlier one): every
row with rtcg's and the peer's time, GF/s, GB/s, the share of the roofline, the errors, the
search's wall time, the issue's target for the row and whether it is met. With --previous FILES,
the ratio of the latest earlier result of each row (for "no regression").

  scripts/bench-record.py RUN.json [RUN2.json ...] [--previous OLD.json ...]
"""
import argparse
import json
import re
import sys

TF32_PEAK = 495e3  # GF/s, the datasheet's dense TF32 tensor peak of an H100/H200
FP32_PEAK = 67e3


def target(name, bw_share, flop_share, tc_roof_share):
    """(text, met) for a row: the issue's target, or None where the row has none of its own."""
    def speed(need):
        return lambda r: (f"≥ {need}×", r["speedRatio"] is not None and r["speedRatio"] >= need)
    rules = [
        (r"sgemm_tf32x3_1000$", lambda r: accurate(r, 1.5)),
        (r"sgemm_tf32x3_", lambda r: accurate(r, 2.0)),
        (r"sgemm_tf32_4096$", speed(0.8)),
        (r"gemm_bf16_", speed(0.8)),
        # Issue 41: the Ozaki scheme II policies and native DGEMM at 1000 / 2048.
        (r"dgemm_fp64x_8192$", speed(1.3)),
        (r"dgemm_fp64x_4096$", speed(1.1)),
        (r"sgemm_fp32x_8192$", speed(2.5)),
        (r"dg_diff_fp64x_", speed(1.5)),
        (r"dgemm_(1000|2048)$", speed(1.0)),
        (r"dgemm_", speed(0.9)),
        (r"(dg_diff_stacked|dg_lift|batched)_tf32x3_", lambda r: tc_dg(r, name, tc_roof_share)),
        (r"spmv_", speed(1.0)),
        # Issue 37: accumulations and scans.
        (r"histogram_2\^26_256$", lambda r: both(speed(1.0)(r), (f"≥ 70% BW", bw_share >= 0.7))),
        (r"(histogram_|assemble_)", speed(1.0)),
        (r"(cumsum|exclusive_scan)_2\^26$", lambda r: both(speed(1.0)(r), (f"≥ 80% BW", bw_share >= 0.8))),
        (r"(row_cumsum|segmented_sum)_", speed(1.0)),
        (r"(softmax|layernorm|trmv)_", lambda r: both(speed(1.0)(r), (f"≥ 80% BW", bw_share >= 0.8))),
        (r"(syrk|trmm|nearest)_", lambda r: both(speed(1.0)(r), (f"≥ 60% FP32", flop_share >= 0.6))),
        (r"(sgemm_(1000|1500|3000)|dg_diff(_stacked)?_N[78]|dg_lift_N[57])$", speed(1.0)),
    ]
    for pattern, rule in rules:
        if re.match(pattern, name):
            return rule
    return None


def both(a, b):
    return f"{a[0]}, {b[0]}", a[1] and b[1]


def accurate(r, need):
    ok_err = r["relErrReference"] is not None and r["relErrPeerReference"] is not None and \
        r["relErrReference"] <= 2 * r["relErrPeerReference"]
    return f"≥ {need}×, err ≤ 2× peer's", (r["speedRatio"] or 0) >= need and ok_err


def tc_dg(r, name, roof_share):
    m = re.search(r"_N(\d+)$", name)
    need_speed = m is not None and int(m.group(1)) >= 5
    text = ("≥ 2×, " if need_speed else "") + "≥ 70% of min(TF32/3, AI×BW)"
    return text, roof_share >= 0.7 and (not need_speed or (r["speedRatio"] or 0) >= 2.0)


def fmt(x, spec):
    return "–" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--previous", nargs="*", default=[])
    a = ap.parse_args()
    rows, info = {}, None
    for path in a.runs:
        doc = json.load(open(path))
        info = info or doc
        for r in doc["workloads"]:
            rows[r["name"]] = r
    previous = {}
    for path in a.previous:
        for r in json.load(open(path)).get("workloads", []):
            if isinstance(r, dict) and r.get("speedRatio") is not None:
                previous[r["name"]] = r["speedRatio"]
    bw = info["copyBandwidthGBs"]
    print(f"Device: {info['device']} ({info['arch']}), driver {info['driver']}, copy bandwidth {bw:.0f} GB/s.")
    print()
    print("| row | rtcg ms | GF/s | GB/s | roof | peer | peer ms | speed | before | err ref / peer | search s | target | met |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    missed = []
    for name, r in rows.items():
        ms = r.get("rtcgMs")
        bw_share = (r["bytes"] / (ms * 1e-3) / 1e9 / bw) if ms else 0
        flop_share = (r["flops"] / (ms * 1e-3) / 1e9 / FP32_PEAK) if ms else 0
        # Issue 22's DG roofline: min(TF32 peak / 3, arithmetic intensity x copy bandwidth).
        tc_roof = min(TF32_PEAK / 3, r["flops"] / r["bytes"] * bw) if r.get("bytes") else None
        tc_share = (r["flops"] / (ms * 1e-3) / 1e9 / tc_roof) if ms and tc_roof else 0
        rule = target(name, bw_share, flop_share, tc_share)
        text, met = rule(r) if rule else ("no regression", None)
        if met is False:
            missed.append(name)
        roof = f"{100 * (r.get('roofline') or 0):.0f}%"
        if re.match(r"(dg_diff_stacked|dg_lift|batched)_tf32x3_", name):
            roof += f" ({100 * tc_share:.0f}% of TF32/3 roof)"
        err = f"{fmt(r.get('relErrReference'), '.1e')} / {fmt(r.get('relErrPeerReference'), '.1e')}"
        before = previous.get(name)
        # A row measured with an earlier run's schedule (--schedules) had its search there.
        searched = fmt(r.get('tuneSeconds'), '.0f') if str(r.get('scheduleSource', 'tuned')).startswith('tuned') \
            else "earlier"
        print(f"| {name} | {fmt(ms, '.4f')} | {fmt(r.get('gflops'), '.0f')} | {fmt(r.get('gbytes'), '.0f')} | {roof} | "
              f"{r.get('peer', '–')} | {fmt(r.get('peerMs'), '.4f')} | {fmt(r.get('speedRatio'), '.2f')}× | "
              f"{fmt(before, '.2f')}{'×' if before else ''} | {err} | {searched} | {text} | "
              f"{'–' if met is None else ('yes' if met else '**no**')} |")
    print()
    print(f"Missed: {len(missed)} of {sum(1 for n in rows if target(n, 0, 0, 0))} rows with a target"
          + (f" ({', '.join(missed)})" if missed else "") + ".")


if __name__ == "__main__":
    sys.exit(main())
