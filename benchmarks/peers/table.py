#!/usr/bin/env python3
"""The peers harness's table: each workload with the ledger's figure, the peer's and the ratio ledger ÷ peer, the
machine's raw limits measured in the same run, and the machine. Reads what run.sh recorded (machine.json and
results.jsonl, one JSON object a line) and prints markdown."""

import json
import sys

# (ledger row, peer, peer row, workload, goal: (min ratio, ledger p99 bound in µs, p50 no higher than the peer's))
COMPARISONS = [
    ("single", "postgres", "single", "single-event durable writes, 32 connections (PostgreSQL: 1 event per transaction)",
     (5.0, 5000, False)),
    ("single", "redis", "xadd", "single-event durable writes, 32 connections (Redis: XADD, appendfsync always)",
     (1.0, 5000, False)),
    ("batch", "postgres", "batch", "batches of 100 events, 8 connections (PostgreSQL: 100 events per transaction)",
     (2.0, None, False)),
    ("batch", "redis", "xadd_pipelined", "batches of 100 events, 8 connections (Redis: XADD pipelined by 16, 32 clients)",
     None),
    ("read2", "postgres", "read2", "entitlements of one app user, 2 connections", (1.5, None, True)),
    ("read8", "postgres", "read8", "entitlements of one app user, 8 connections", (1.5, None, True)),
    ("read2c", "postgres", "read2", "entitlements of one app user, 2 connections, the ledger read by readgen (C)",
     (1.5, None, True)),
    ("read8c", "postgres", "read8", "entitlements of one app user, 8 connections, the ledger read by readgen (C)",
     (1.5, None, True)),
]
PEERS = {"postgres": "PostgreSQL", "redis": "Redis"}
LIMITS = {
    "unix_echo": "Unix-socket echo round trip, 64 bytes, 1 connection (C)",
    "fdatasync_overwrite_4k": "write 4 KiB + fdatasync, overwriting a preallocated file (C)",
    "fdatasync_append_4k": "write 4 KiB + fdatasync, appending (the file grows: size metadata too) (C)",
}


def latency(us):
    if us is None:
        return "—"
    return f"{us:.0f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


def rate(x):
    return f"{x:,.0f}"


def figure(run, unit):
    if run is None:
        return "—"
    text = f"{rate(run['per_second'])} {unit} · p50 {latency(run['p50_us'])} · p99 {latency(run['p99_us'])}"
    if run.get("batch", 1) > 1:
        text += f" ({rate(run['requests_per_second'])} batches/s)"
    if run.get("errors"):
        text += f" · **{run['errors']} errors**"
    return text


def unit_of(system, row):
    if row.startswith("read"):
        return "reads/s" if system == "ledger" else "queries/s"
    if system == "ledger":
        return "inputs/s" if row == "batch" else "req/s"
    if system == "postgres":
        return "events/s" if row == "batch" else "tx/s"
    return "XADD/s"


def main():
    machine = json.load(open(sys.argv[1]))["machine"]
    records = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
    runs = {(r["system"], r["row"]): r for r in records if r.get("kind") == "run"}
    limits = [r for r in records if r.get("kind") == "limit"]
    loads = [f"{r['loadavg']} {r['when']}" for r in records if r.get("kind") == "load"]
    versions = [r["version"] for r in records if r.get("kind") == "version"]

    out = []
    out.append(f"Peers, {machine['date']}: {machine['seconds_per_row']} s per row, one row after the other; "
               f"load average (1, 5, 15 min) {', '.join(loads) if loads else '?'}.")
    out.append("")
    out.append("| workload | ledger | peer | peer's figure | ledger ÷ peer | p50 ledger ÷ peer | goal |")
    out.append("|---|---|---|---|---|---|---|")
    for ledger_row, peer, peer_row, workload, goal in COMPARISONS:
        ours, theirs = runs.get(("ledger", ledger_row)), runs.get((peer, peer_row))
        if ours is None and theirs is None:
            continue
        ratio = p50_ratio = "—"
        verdict = "—" if goal is None else ""
        if ours and theirs and theirs["per_second"] > 0:
            r = ours["per_second"] / theirs["per_second"]
            ratio = f"**{r:.2f}×**"
            if theirs["p50_us"]:
                p50_ratio = f"{ours['p50_us'] / theirs['p50_us']:.2f}×"
            if goal is not None:
                least, p99_bound, p50_no_higher = goal
                met = r >= least
                if p99_bound is not None:
                    met = met and ours["p99_us"] <= p99_bound
                if p50_no_higher:
                    met = met and ours["p50_us"] <= theirs["p50_us"]
                verdict = ("✓ " if met else "✗ ")
        if goal is not None:
            least, p99_bound, p50_no_higher = goal
            verdict += f"≥ {least:.1f}×" + (f", ledger p99 ≤ {latency(p99_bound)}" if p99_bound else "") + \
                (", p50 no higher" if p50_no_higher else "")
        else:
            verdict = "for reference"
        out.append(f"| {workload} | {figure(ours, unit_of('ledger', ledger_row))} | {PEERS[peer]} | "
                   f"{figure(theirs, unit_of(peer, peer_row))} | {ratio} | {p50_ratio} | {verdict} |")
    if limits:
        out.append("")
        out.append("| the machine's raw limits (same run) | per second | p50 | p99 |")
        out.append("|---|---|---|---|")
        for limit in limits:
            when = {"start": "", "end": ", after the peers"}.get(limit.get("when", ""), "")
            out.append(f"| {LIMITS.get(limit['figure'], limit['figure'])}{when} | {rate(limit['per_second'])} | "
                       f"{latency(limit['p50_us'])} | {latency(limit['p99_us'])} |")
    out.append("")
    out.append(f"Machine: {machine['nproc']} cores ({machine['cpu']}), {machine['memory_gib']} GiB, Linux "
               f"{machine['kernel']}; scratch folder on {machine['filesystem']}."
               + (" " + "; ".join(versions) + "." if versions else ""))
    out.append("Durability: every write acknowledged after its fsync (PostgreSQL fsync=on, synchronous_commit=on; "
               "Redis appendonly yes, appendfsync always; the ledger's durable LMDB commits).")
    print("\n".join(out))


if __name__ == "__main__":
    main()
