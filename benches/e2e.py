#!/usr/bin/env python3
"""End-to-end measurements of the real `polisd` binary, beside the Python reference in the same run.

Not a test: nothing here asserts a time. Each measurement prints its figures; compare runs on the
same machine only.

    benches/e2e.py all [--quick]                     # every target in one table
    benches/e2e.py reconcile --contracts 10000      # polisd reconcile vs reference reconcile
    benches/e2e.py settle-latency --contracts 10000 --settlements 200 --debounce 50ms
    benches/e2e.py chronicle-latency --lines 1000000 --appends 100 --debounce 50ms --reservations 300
    benches/e2e.py reaction-under-load --writers 8 --probes 200 --debounce 200ms
    benches/e2e.py startup --contracts 100000 --meetings 3 --restarts 3 --baseline OLD
    benches/e2e.py idle-cpu --seconds 60
    benches/e2e.py generate OUT --contracts 10000 --chronicle-lines 100000
    benches/e2e.py session --contracts 10000 --lines 1000000 --runs 50   # primer and hooks
    benches/e2e.py mcp --contracts 10000 --runs 50   # MCP tool calls to one open session
    benches/e2e.py reserve --contracts 10000 --entries 300 --repeat 30
    benches/e2e.py commands --contracts 10000 --rounds 30   # each agents' command, vs the reference
    benches/e2e.py settle-alone --contracts 10000 --rounds 30 --baseline OLD   # settle with no daemon, old vs new
    benches/e2e.py backlog --notices 3000 --baseline OLD   # delivering a backlog of notices after downtime
    benches/e2e.py dashboard --contracts 10000 --clients 50 --seconds 30   # pages and idle cost
    benches/e2e.py dashboard-memory --chronicle-mb 50 --baseline OLD   # serve's memory with a large chronicle
    benches/e2e.py merge --lines 100000 --side 1000 --repeat 5   # git's merge driver on a chronicle
    benches/e2e.py memory DIR --baseline OLD   # RSS and start-up at 10k, 100k and 1M settled

`all` generates polises of 1k, 10k and 100k settled contracts and chronicles of 100k and 1M
lines, runs the reference and polisd on the same files in the same run, and prints ratios and
the read-everything floor. The reference needs about 1 s per 1k contracts, so its 100k run takes
a couple of minutes; `--quick` stops the reference at 10k (polisd still runs 100k).

Build first: `cargo build --release`. The reference comes from $POLISD_REFERENCE_PYTHON,
`.venv/bin/python`, or `target/polis-reference/` (created by `cargo test`).
"""
import argparse
import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# `POLISD_BENCH_LOG=debug` keeps the daemon's per-pass timings in its log (POLISD_BENCH_KEEP keeps the folder).
LOG_LEVEL = os.environ.get("POLISD_BENCH_LOG", "info")
BIN = Path(os.environ.get("POLISD_BIN", REPO / "target" / "release" / "polisd"))
PY = os.environ.get("POLISD_REFERENCE_PYTHON") or next(
    (p for p in (str(REPO / ".venv" / "bin" / "python"), str(REPO / "target" / "polis-reference" / "bin" / "python")) if Path(p).exists()),
    str(REPO / ".venv" / "bin" / "python"))

CITIZENS = ["claude-code-1", "codex-agent-2", "gemini-cli-03", "mistral-vibe-4"]
TAGS = ["python", "rust", "docs", "infra", "frontend", "data", "security", "review"]


@contextlib.contextmanager
def workdir():
    """A scratch folder, removed afterwards unless POLISD_BENCH_KEEP is set (then printed)."""
    if os.environ.get("POLISD_BENCH_KEEP"):
        path = tempfile.mkdtemp(prefix="polisd-bench-")
        print(f"keeping {path}", flush=True)
        yield path
    else:
        with tempfile.TemporaryDirectory() as path:
            yield path


# `--baseline BIN` (or $POLISD_BASELINE_BIN): an earlier polisd measured in the same run, so
# each figure stands beside the one it replaces.
BASELINE = os.environ.get("POLISD_BASELINE_BIN")


def polisd(*args, bin=None, **kw):
    return subprocess.run([str(bin or BIN), *args], check=True, capture_output=True, text=True, **kw)


def make_polis(base: Path, settled: int, seed: int = 7, chronicle_lines: int = 0) -> Path:
    """A polis with `settled` settled contracts, written with `polisd init` plus plain files;
    with `chronicle_lines`, that many valid lines are appended to the chronicle (one a minute,
    the newest an hour ago)."""
    project = base / "project"
    project.mkdir(parents=True)
    polisd("init", str(project), "--agent-id", CITIZENS[0])
    root = project / "_polis"
    rng = random.Random(seed)
    for cid in CITIZENS[1:]:
        d = root / "citizens" / cid
        d.mkdir(parents=True, exist_ok=True)
        tags = "".join(f"  {t}:\n    self_rating: {rng.randint(1, 5)}\n" for t in TAGS)
        (d / "capability_card.yml").write_text(
            f"agent_id: {cid}\nvendor: other\ncapability_tags:\n{tags}cost_envelope:\n  relative: medium\n")
    settled_dir = root / "contracts" / "settled"
    for i in range(settled):
        (settled_dir / f"c-{i:06d}.md").write_text(contract_text(f"c-{i:06d}", i, rng))
    if chronicle_lines:
        write_chronicle(root, chronicle_lines)
    return root


def write_chronicle(root: Path, lines: int):
    import datetime
    end = datetime.datetime.now().replace(second=0, microsecond=0) - datetime.timedelta(hours=1)
    start = end - datetime.timedelta(minutes=lines)
    path = root / "chronicle.md"
    # Before the founding line (stamped now), so every line is in time order and valid.
    head, sep, rest = path.read_text().partition("\n- ")
    with open(path, "w") as f:
        f.write(head + "\n")
        for k in range(lines):
            stamp = (start + datetime.timedelta(minutes=k)).strftime("%Y-%m-%d %H:%M")
            f.write(f"- {stamp} | {CITIZENS[k % len(CITIZENS)]} | worked on | - | step {k}\n")
        f.write(sep.lstrip("\n") + rest)


def contract_text(cid: str, i: int, rng: random.Random, status: str = "settled") -> str:
    tags = rng.sample(TAGS, rng.randint(1, 2))
    day, minute = divmod(i, 1440)
    stamp = f"2026-{1 + (day // 28) % 12:02d}-{1 + day % 28:02d} {minute // 60:02d}:{minute % 60:02d}:00"
    return (
        "---\n"
        f"contract_id: {cid}\ntitle: Contract {i}\nopened_by: {CITIZENS[0]}\nopened_at: {stamp}\n"
        f"owner: {rng.choice(CITIZENS)}\nstatus: {status}\nstakes: medium\n"
        f"required_tags: [{', '.join(tags)}]\ncost_ceiling: medium\n"
        f"settled_at: {stamp}\nquality_score: {rng.randint(1, 5)}\nactual_minutes: {rng.randint(5, 240)}\n"
        "---\n\n## Intent\n\nDo the thing.\n\n## Settlement\n\nDone.\n"
    )


def timed(cmd, repeat=3, **kw):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, **kw)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def read_floor(root: Path) -> float:
    """The raw floor: reading every settled file once."""
    t0 = time.perf_counter()
    for p in (root / "contracts" / "settled").iterdir():
        p.read_bytes()
    return time.perf_counter() - t0


REF_RECONCILE = ("import sys; from pathlib import Path; from polis.routing import reconcile_stats; "
                 "reconcile_stats(Path(sys.argv[1]))")


def measure_reconcile(root: Path, repeat: int, reference: bool = True, baseline=None) -> dict:
    ours = timed([str(BIN), "reconcile", str(root)], repeat=repeat)
    before = timed([str(baseline), "reconcile", str(root)], repeat=repeat) if baseline else None
    # The reference takes minutes on 100k contracts: one run there is plenty.
    big = sum(1 for _ in (root / "contracts" / "settled").iterdir()) > 50000
    ref = timed([PY, "-c", REF_RECONCILE, str(root)], repeat=1 if big else repeat) if reference else None
    floor = min(read_floor(root) for _ in range(repeat))
    return {"ours": ours, "ref": ref, "floor": floor, "before": before}


def cmd_reconcile(args):
    with workdir() as tmp:
        root = make_polis(Path(tmp), args.contracts)
        r = measure_reconcile(root, args.repeat)
        ours, ref, floor = r["ours"], r["ref"], r["floor"]
        print(f"reconcile of {args.contracts} settled contracts (best of {args.repeat}):")
        print(f"  polisd    {ours * 1000:9.1f} ms")
        print(f"  reference {ref * 1000:9.1f} ms   -> polisd is {ref / ours:.1f}x faster")
        print(f"  read floor{floor * 1000:9.1f} ms   -> polisd is {ours / floor:.1f}x the floor")


# The scale check turns reflection off: its daily run reads every settled file again,
# which at 1M would measure reflection rather than the ledger. Everything else runs as shipped.
EXTRA_CONFIG = ""


def spawn_daemon(root: Path, tmp: Path, debounce: str, state: Path, log: Path, bin=None):
    """`polisd run` on `root` with its own configuration, state folder and log."""
    config = tmp / f"{log.stem}.toml"
    config.write_text(f'[watch]\ndebounce = "{debounce}"\n\n[log]\nlevel = "{LOG_LEVEL}"\n' + EXTRA_CONFIG)
    env = dict(os.environ, POLISD_STATE_DIR=str(state))
    with open(log, "w") as err:
        return subprocess.Popen([str(bin or BIN), "run", str(root), "--config", str(config)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)


def start_daemon(root: Path, tmp: Path, debounce: str, until: str = "watching", bin=None):
    log = tmp / "daemon.log"
    proc = spawn_daemon(root, tmp, debounce, tmp / "state", log, bin=bin)
    # A first meeting with 1M settled contracts on a loaded machine takes minutes.
    deadline = time.time() + 600
    while until not in log.read_text():
        if time.time() > deadline or proc.poll() is not None:
            raise SystemExit("daemon did not start; see " + str(log))
        time.sleep(0.01)
    return proc


READY = "initial scan done"


def meet_once(root: Path, base: Path, state: Path, bin=None):
    """A daemon meets the polis once (its first pass done, its state saved) and stops."""
    log = base / "met.log"
    proc = spawn_daemon(root, base, "50ms", state, log, bin=bin)
    while READY not in log.read_text():
        if proc.poll() is not None:
            raise SystemExit("daemon did not start; see " + str(log))
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    proc.wait()


def percentiles(samples):
    samples = sorted(samples)
    p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1000
    return {"p50": p(0.50), "p90": p(0.90), "p99": p(0.99), "max": samples[-1] * 1000}


def settle_samples(root: Path, tmp: Path, settlements: int, debounce: str, bin=None) -> list:
    polisd("reconcile", str(root), bin=bin)
    rng = random.Random(11)
    proc = start_daemon(root, tmp, debounce, until=READY, bin=bin)
    stats = root / "contracts" / "routing_stats.yml"
    samples = []
    try:
        for k in range(settlements):
            cid = f"new-{k:05d}"
            text = contract_text(cid, 600000 + k, rng)
            (root / "contracts" / "open" / f"{cid}.md").write_text(text)
            time.sleep(0.05)
            before = stats.read_bytes()
            t0 = time.perf_counter()
            os.rename(root / "contracts" / "open" / f"{cid}.md", root / "contracts" / "settled" / f"{cid}.md")
            while stats.read_bytes() == before:
                if time.perf_counter() - t0 > 30:
                    raise SystemExit("stats never changed")
                time.sleep(0.0005)
            samples.append(time.perf_counter() - t0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return samples


def chronicle_samples(root: Path, tmp: Path, appends: int, debounce: str, bin=None) -> list:
    """Append one line that breaks C008 (an uppercase verb) and wait for its finding in the
    author's inbox: the line was read, validated and reported."""
    import datetime
    proc = start_daemon(root, tmp, debounce, until=READY, bin=bin)
    author = CITIZENS[1]
    inbox = root / "citizens" / author / "inbox.md"
    samples = []
    try:
        for k in range(appends):
            before = inbox.read_bytes() if inbox.exists() else b""
            stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
            line = f"- {stamp} | {author} | Measured Latency | - | probe {k}\n"
            t0 = time.perf_counter()
            with open(root / "chronicle.md", "a") as f:
                f.write(line)
            while (inbox.read_bytes() if inbox.exists() else b"") == before:
                if time.perf_counter() - t0 > 60:
                    raise SystemExit("no finding was reported; see " + str(tmp / "daemon.log"))
                time.sleep(0.0005)
            samples.append(time.perf_counter() - t0)
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return samples


def reaction_under_load(root: Path, tmp: Path, writers: int, probes: int, debounce: str) -> list:
    """`Writers` agents append valid lines to the chronicle without pause (one every
    10-30 ms each), so the file never goes quiet for the debounce; meanwhile a probe appends a
    line breaking C008 and waits for its finding in the author's inbox."""
    import datetime
    import threading
    proc = start_daemon(root, tmp, debounce, until=READY)
    author = CITIZENS[1]
    others = [c for c in CITIZENS if c != author]
    inbox = root / "citizens" / author / "inbox.md"
    stop = threading.Event()

    def writer(n: int):
        rng = random.Random(n)
        k = 0
        while not stop.is_set():
            stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
            with open(root / "chronicle.md", "a") as f:
                f.write(f"- {stamp} | {others[n % len(others)]} | noted work | - | writer {n} line {k}\n")
            k += 1
            time.sleep(rng.uniform(0.01, 0.03))

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(writers)]
    for t in threads:
        t.start()
    samples = []
    try:
        time.sleep(1.0)
        for k in range(probes):
            before = inbox.read_bytes() if inbox.exists() else b""
            stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
            t0 = time.perf_counter()
            with open(root / "chronicle.md", "a") as f:
                f.write(f"- {stamp} | {author} | Measured Under Load | - | probe {k}\n")
            while (inbox.read_bytes() if inbox.exists() else b"") == before:
                if time.perf_counter() - t0 > 60:
                    raise SystemExit("no finding was reported; see " + str(tmp / "daemon.log"))
                time.sleep(0.001)
            samples.append(time.perf_counter() - t0)
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return samples


def cmd_reaction_under_load(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, 0, chronicle_lines=1000)
        p = percentiles(reaction_under_load(root, tmp, args.writers, args.probes, args.debounce))
        print(f"line appended -> its finding in the inbox, with {args.writers} agents appending "
              f"continuously, {args.probes} probes, debounce {args.debounce}:")
        print(f"  p50 {p['p50']:.1f} ms   p90 {p['p90']:.1f} ms   p99 {p['p99']:.1f} ms   max {p['max']:.1f} ms"
              f"   (target p99 < 300 ms)")


def cmd_chronicle_latency(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, 0, chronicle_lines=args.lines)
        if args.reservations:
            # Every chronicle change also runs the reservations step (a `left polis` line
            # releases what its citizen held): its cost with a full file.
            write_reservations(root.parent, args.reservations)
        p = percentiles(chronicle_samples(root, tmp, args.appends, args.debounce))
        print(f"line appended -> validated and its finding in the inbox, {args.appends} appends to a "
              f"{args.lines}-line chronicle, {args.reservations} reservations, debounce {args.debounce}:")
        print(f"  p50 {p['p50']:.1f} ms   p90 {p['p90']:.1f} ms   p99 {p['p99']:.1f} ms   max {p['max']:.1f} ms")


def measure_startup(root: Path, tmp: Path, fresh: bool = True, bin=None, label: str = "new") -> dict:
    """Seconds from exec to "watching", to the end of the initial scan, and to the first
    settlement handled (a contract moved into `settled/` as soon as the daemon watches, until
    `routing_stats.yml` changes; `polisd reconcile` afterwards must leave the file as it is, or
    the figure is refused). On a polis polisd has never met (fresh state directory), or with
    `fresh=False` on a restart (the state of the previous run kept). Also the resident memory
    after the scan and its peak (VmHWM)."""
    state = tmp / f"state-startup-{label}"
    if fresh:
        shutil.rmtree(state, ignore_errors=True)
    polisd("reconcile", str(root), bin=bin)
    stats = root / "contracts" / "routing_stats.yml"
    before = stats.read_bytes()
    # Settled before the daemon starts again, so every run settles a contract of its own.
    global _probe
    _probe += 1
    # Unique across runs on a kept folder: a probe moved over an equal file changes nothing.
    cid = f"probe-{label}-{os.getpid()}-{_probe:04d}"
    rng = random.Random(_probe)
    # Outside `_polis/` (same file system) until it is moved in: the daemon must not route it.
    staged = root.parent / f"{cid}.md"
    staged.write_text(contract_text(cid, 900000 + _probe, rng))
    logp = tmp / f"startup-{label}.log"
    out = {}
    t0 = time.perf_counter()
    proc = spawn_daemon(root, tmp, "50ms", state, logp, bin=bin)
    try:
        while "react" not in out:
            text = logp.read_text()
            if "watch" not in out and "watching" in text:
                out["watch"] = time.perf_counter() - t0
                os.rename(staged, root / "contracts" / "settled" / f"{cid}.md")
            if "scan" not in out and READY in text:
                out["scan"] = time.perf_counter() - t0
            if "watch" in out and stats.read_bytes() != before:
                out["react"] = time.perf_counter() - t0
            if time.perf_counter() - t0 > 600 or proc.poll() is not None:
                raise SystemExit("daemon did not start; see " + str(logp))
            time.sleep(0.002)
        while "scan" not in out:
            if READY in logp.read_text():
                out["scan"] = time.perf_counter() - t0
            time.sleep(0.002)
        time.sleep(0.5)
        out["rss_kib"] = rss_kib(proc.pid)
        out["peak_kib"] = rss_kib(proc.pid, "VmHWM:")
        out["anon_kib"] = rss_kib(proc.pid, "RssAnon:")
        out["log"] = logp.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    reacted = stats.read_bytes()
    polisd("reconcile", str(root), bin=bin)
    if stats.read_bytes() != reacted:
        raise SystemExit(f"{label}: the daemon's stats after the restart differ from a full reconcile")
    return out


_probe = 0


def cmd_startup(args):
    """First meeting and restart; with `--baseline`, an earlier polisd too, on the same polis
    (each with its own state folder), its restarts interleaved with this one's. `--restarts N`
    restarts each N times and prints the medians (and CPU seconds to the first settlement
    handled are not measured here: see the log's pass timings with POLISD_BENCH_LOG=debug)."""
    bins = [("new", None)] + ([("baseline", args.baseline)] if args.baseline else [])
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        restarts = {}
        meetings = {}
        for _ in range(args.meetings):
            for label, b in bins:
                s = measure_startup(root, tmp, bin=b, label=label)
                meetings.setdefault(label, []).append(s)
                print(f"{label}: start-up on {args.contracts} settled contracts: watching after {s['watch']:.2f} s, "
                      f"first settlement handled after {s['react']:.2f} s, initial scan done after {s['scan']:.2f} s, "
                      f"RSS {s['rss_kib'] / 1024:.1f} MiB (peak {s['peak_kib'] / 1024:.1f} MiB), "
                      f"load average {os.getloadavg()[0]:.1f}", flush=True)
        if args.meetings > 1:
            for label, _ in bins:
                print(startup_medians(label, "first meeting", meetings[label]))
            if len(bins) > 1:
                ratio = (statistics.median(r['react'] for r in meetings['baseline'])
                         / statistics.median(r['react'] for r in meetings['new']))
                print(f"first meeting, baseline / new (medians, same run): {ratio:.2f}x")
        for _ in range(args.restarts):
            for label, b in bins:
                restarts.setdefault(label, []).append(measure_startup(root, tmp, fresh=False, bin=b, label=label))
        for label, _ in bins:
            print(startup_medians(label, "restart", restarts[label]))
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def startup_medians(label, what, runs):
    """One line of medians over start-ups measured by measure_startup."""
    m = lambda key: statistics.median(r[key] for r in runs)
    each = ", ".join(f"{r['react']:.2f}" for r in runs)
    return (f"{label}: {what} (median of {len(runs)}): watching after {m('watch'):.2f} s, first settlement "
            f"handled after {m('react'):.2f} s (runs: {each}), initial scan done after {m('scan'):.2f} s, "
            f"RSS {m('rss_kib') / 1024:.1f} MiB (peak {m('peak_kib') / 1024:.1f} MiB)")


def cmd_generate(args):
    out = Path(args.out)
    root = make_polis(out, args.contracts, chronicle_lines=args.chronicle_lines)
    print(root)


def cmd_settle_latency(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        p = percentiles(settle_samples(root, tmp, args.settlements, args.debounce))
        print(f"mv -> routing_stats.yml rewritten, {args.settlements} settlements over {args.contracts} "
              f"settled, debounce {args.debounce}:")
        print(f"  p50 {p['p50']:.1f} ms   p90 {p['p90']:.1f} ms   p99 {p['p99']:.1f} ms   max {p['max']:.1f} ms")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int, field: str = "VmRSS:") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def wakeups(pid: int) -> int:
    """Context switches of every thread of `pid`: a sleeping process that wakes adds some."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def measure_idle(root: Path, tmp: Path, seconds: int, bin=None) -> dict:
    proc = start_daemon(root, tmp, "200ms", until=READY, bin=bin)
    try:
        time.sleep(2)
        c0, w0, t0 = cpu_seconds(proc.pid), wakeups(proc.pid), time.perf_counter()
        time.sleep(seconds)
        c1, w1, t1 = cpu_seconds(proc.pid), wakeups(proc.pid), time.perf_counter()
        rss = rss_kib(proc.pid)
        peak = rss_kib(proc.pid, "VmHWM:")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    # Context switches of all threads over the window: an idle daemon should add almost none.
    return {"cpu": c1 - c0, "wakeups": w1 - w0, "wakeups_per_s": (w1 - w0) / (t1 - t0),
            "rss_kib": rss, "peak_kib": peak}


def cmd_idle_cpu(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        m = measure_idle(root, tmp, args.seconds)
        print(f"idle for {args.seconds} s with {args.contracts} settled contracts: "
              f"{m['cpu']:.3f} s CPU, {m['wakeups']} wake-ups ({m['wakeups_per_s']:.1f}/s), "
              f"RSS {m['rss_kib'] / 1024:.1f} MiB")


def http_get(port: int, path: str) -> tuple:
    """One GET on 127.0.0.1:`port` (status, body, seconds)."""
    import socket
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    raw = b"".join(chunks).decode(errors="replace")
    status = int(raw.split(" ", 2)[1]) if raw.startswith("HTTP/") else 0
    return status, raw, time.perf_counter() - t0


def sse_client(port: int):
    """An open event-stream connection, its headers read."""
    import socket
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(f"GET /p/0/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    seen = b""
    while b"\r\n\r\n" not in seen:
        seen += s.recv(4096)
    return s


def start_dashboard(mode: str, root: Path, tmp: Path):
    """`polisd run` (dashboard beside the daemon) or `polisd serve` on a free port: (process, port)."""
    config = tmp / f"dash-{mode}.toml"
    config.write_text('[watch]\ndebounce = "50ms"\n\n[log]\nlevel = "info"\n\n[dashboard]\nlisten = "127.0.0.1:0"\n')
    state = tmp / f"state-{mode}"
    env = dict(os.environ, POLISD_STATE_DIR=str(state))
    log = tmp / f"dash-{mode}.log"
    if mode == "serve":
        proc = subprocess.Popen([str(BIN), "serve", str(root), "--listen", "127.0.0.1:0", "--json",
                                 "--config", str(config)], env=env, stdout=subprocess.PIPE,
                                stderr=open(log, "w"), text=True)
        import json
        url = json.loads(proc.stdout.readline())["url"]
    else:
        proc = subprocess.Popen([str(BIN), "run", str(root), "--config", str(config)], env=env,
                                stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        deadline = time.time() + 120
        while READY not in log.read_text():
            if time.time() > deadline or proc.poll() is not None:
                raise SystemExit("daemon did not start; see " + str(log))
            time.sleep(0.05)
        import json
        url = None
        while not url:
            out = subprocess.run([str(BIN), "status", str(root), "--json"], env=env, capture_output=True, text=True)
            try:
                url = json.loads(out.stdout)["daemon"]["dashboard"]
            except (ValueError, KeyError, TypeError):
                time.sleep(0.1)
    return proc, int(url.rstrip("/").rsplit(":", 1)[1])


def thread_switches(pid: int) -> dict:
    """Context switches per thread of `pid` (threads come and go: a pool's idle thread exits)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            lines = (task / "status").read_text().splitlines()
        except OSError:
            continue
        out[task.name] = sum(int(l.split()[1]) for l in lines
                             if l.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
    return out


def idle_window(pid: int, seconds: int) -> dict:
    """CPU and wake-ups over `seconds` of rest: context switches of the threads alive at both
    ends (a thread that ends meanwhile, as an idle blocking-pool thread does after 10 s, is
    left out; one that starts counts from zero)."""
    time.sleep(12)  # past the blocking pool's 10 s keep-alive after the last page
    c0, w0, t0 = cpu_seconds(pid), thread_switches(pid), time.perf_counter()
    time.sleep(seconds)
    c1, w1, t1 = cpu_seconds(pid), thread_switches(pid), time.perf_counter()
    woke = sum(n - w0.get(tid, 0) for tid, n in w1.items())
    return {"cpu": c1 - c0, "cpu_pct": 100 * (c1 - c0) / (t1 - t0), "wakeups_per_s": woke / (t1 - t0),
            "threads": len(w1)}


def cmd_dashboard(args):
    """The dashboard under `polisd run` and `polisd serve`: the overview at rest,
    the first overview after one settled file changes (the change event awaited first, then
    the GET timed), and idle cost with no client and with `--clients` event-stream clients."""
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        settled = sorted((root / "contracts" / "settled").iterdir())
        rng = random.Random(3)
        for mode in ("run", "serve"):
            proc, port = start_dashboard(mode, root, tmp)
            try:
                http_get(port, "/p/0/")  # the first read after start
                warm = [http_get(port, "/p/0/")[2] for _ in range(args.repeat)]
                after = []
                probe = sse_client(port)
                probe.settimeout(30)
                for k in range(args.repeat):
                    f = settled[rng.randrange(len(settled))]
                    import re
                    f.write_text(re.sub(r"quality_score: \d", f"quality_score: {1 + k % 5}", f.read_text(), count=1))
                    got = b""
                    while b"event: change" not in got:
                        got += probe.recv(65536)
                    time.sleep(0.02)  # let a follow-up event of the same change land too
                    after.append(http_get(port, "/p/0/")[2])
                probe.close()
                quiet = idle_window(proc.pid, args.seconds)
                clients = [sse_client(port) for _ in range(args.clients)]
                busy = idle_window(proc.pid, args.seconds)
                for c in clients:
                    c.close()
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait()
            w, a = percentiles(warm), percentiles(after)
            print(f"polisd {mode}, {args.contracts} settled contracts:")
            print(f"  overview, nothing changed:        p50 {w['p50']:.1f} ms  max {w['max']:.1f} ms")
            print(f"  first overview after a change:    p50 {a['p50']:.1f} ms  max {a['max']:.1f} ms")
            print(f"  idle, no client ({args.seconds} s):          {quiet['cpu_pct']:.3f} % CPU, {quiet['wakeups_per_s']:.2f} wake-ups/s")
            print(f"  idle, {args.clients} event-stream clients:     {busy['cpu_pct']:.3f} % CPU, {busy['wakeups_per_s']:.2f} wake-ups/s")



def page_times(port: int, pages, repeat: int) -> dict:
    """Each (name, path) of `pages` on 127.0.0.1:`port`: the first GET and the median of
    `repeat` more, in seconds, and the answer's size."""
    out = {}
    for name, path in pages:
        status, body, first = http_get(port, path)
        if status != 200:
            raise SystemExit(f"{path}: HTTP {status}")
        warm = [http_get(port, path)[2] for _ in range(repeat)]
        out[name] = {"first": first, "warm": statistics.median(warm), "bytes": len(body)}
    return out


def resident(pid: int) -> dict:
    """The resident memory of `pid` now and its peak (KiB)."""
    return {"rss_kib": rss_kib(pid), "peak_kib": rss_kib(pid, "VmHWM:")}


def dashboard_memory_run(root: Path, tmp: Path, bin, repeat: int) -> dict:
    """`polisd serve` (binary `bin`) over `root`: each page's first and warm latency, the
    chronicle page after an append (the change event awaited first), then VmRSS and VmHWM."""
    global BIN
    saved, BIN = BIN, Path(bin)
    try:
        proc, port = start_dashboard("serve", root, tmp)
    finally:
        BIN = saved
    pages = [
        ("overview", "/p/0/"),
        ("chronicle", "/p/0/chronicle"),
        ("chronicle page 2", "/p/0/chronicle?page=1"),
        ("chronicle page 500", "/p/0/chronicle?page=499"),
        ("chronicle, oldest page", "/p/0/chronicle?page=100000000"),
        ("chronicle by citizen", f"/p/0/chronicle?citizen={CITIZENS[1]}"),
        ("chronicle by citizen, page 50", f"/p/0/chronicle?citizen={CITIZENS[1]}&page=49"),
        ("search", "/p/0/search?q=step+4242"),
        ("api/replay", "/p/0/api/replay?from=0&limit=1000"),
        ("api/replay, later page", "/p/0/api/replay?from=5000&limit=1000"),
        ("api/state", "/p/0/api/state"),
        ("citizen", f"/p/0/citizens/{CITIZENS[1]}"),
        ("tags", "/p/0/tags"),
    ]
    out = {}
    try:
        out["pages"] = page_times(port, pages, repeat)
        # An append: the event, then the chronicle page (the appended bytes are what changed).
        probe = sse_client(port)
        probe.settimeout(30)
        after = []
        for k in range(repeat):
            with open(root / "chronicle.md", "a") as f:
                stamp = time.strftime("%Y-%m-%d %H:%M")
                f.write(f"- {stamp} | {CITIZENS[k % len(CITIZENS)]} | worked on | - | appended {k}\n")
            got = b""
            while b"event: change" not in got:
                got += probe.recv(65536)
            time.sleep(0.02)
            status, body, t = http_get(port, "/p/0/chronicle")
            if f"appended {k}" not in body:
                raise SystemExit("the chronicle page after an append does not show it")
            after.append(t)
        probe.close()
        out["after_append"] = statistics.median(after)
        out.update(resident(proc.pid))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return out


def reference_dashboard_memory(root: Path, repeat: int) -> dict:
    """The reference's `polis serve` (stdlib http.server, the polis read on every request) over
    `root`: its two pages (`/`, `/api/state`) first and warm, then VmRSS and VmHWM."""
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([PY, "-m", "polis.cli", "serve", "--port", str(port), "--polis-root", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    try:
        deadline = time.time() + 60
        while True:
            try:
                http_get(port, "/api/state")
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise SystemExit("the reference's `polis serve` did not start")
                time.sleep(0.1)
        out["pages"] = page_times(port, (("overview", "/"), ("api/state", "/api/state")), repeat)
        out.update(resident(proc.pid))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return out


def cmd_dashboard_memory(args):
    """`polisd serve` over a polis whose chronicle is `--chronicle-mb` MB: latency of each page
    (overview, chronicle and its later pages, filtered, search, the JSON API, a citizen) and
    the server's resident memory (VmRSS) and peak (VmHWM) once they were all shown; with
    `--baseline`, an earlier binary on the same polis in the same run."""
    with workdir() as tmp:
        tmp = Path(tmp)
        line = f"- 2026-01-01 00:00 | {CITIZENS[0]} | worked on | - | step 500000\n"
        lines = int(args.chronicle_mb * 1_000_000 / len(line))
        root = make_polis(tmp, args.contracts, chronicle_lines=lines)
        size = (root / "chronicle.md").stat().st_size
        print(f"polis: {args.contracts} settled contracts, {len(CITIZENS)} citizens, "
              f"chronicle.md {size / 1e6:.1f} MB ({lines} lines)")
        runs = [("new", BIN)] + ([("baseline", Path(args.baseline))] if args.baseline else [])
        results = {label: dashboard_memory_run(root, tmp, bin, args.repeat) for label, bin in runs}
        labels = [label for label, _ in runs]
        if args.reference:
            if not Path(PY).exists():
                raise SystemExit(f"no reference at {PY}: run `cargo test --locked --test setup` once")
            ref = reference_dashboard_memory(root, args.repeat)
            print("reference `polis serve` (reads the polis on every request):")
            for name, m in ref["pages"].items():
                print(f"  {name:34}{m['first'] * 1e3:>12.1f} /{m['warm'] * 1e3:>9.1f} ms")
            print(f"  {'VmRSS / VmHWM':34}{mib(ref['rss_kib']):>12} / {mib(ref['peak_kib'])}")
            results["reference"] = ref
        print(f"{'page (ms: first / warm median)':36}" + "".join(f"{l:>24}" for l in labels))
        for name in results["new"]["pages"]:
            cells = "".join(f"{results[l]['pages'][name]['first'] * 1e3:>12.1f} /{results[l]['pages'][name]['warm'] * 1e3:>9.1f}" for l in labels)
            print(f"{name:36}{cells}")
        print(f"{'chronicle after an append (median)':36}" + "".join(f"{results[l]['after_append'] * 1e3:>24.1f}" for l in labels))
        print(f"{'VmRSS after all pages (MiB)':36}" + "".join(f"{mib(results[l]['rss_kib']):>24}" for l in labels))
        print(f"{'VmHWM, the peak (MiB)':36}" + "".join(f"{mib(results[l]['peak_kib']):>24}" for l in labels))
        if args.json:
            print(json.dumps({"chronicle_bytes": size, **results}))


def read_file_floor(path: Path, repeat: int = 3) -> float:
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        path.read_bytes()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def add_session_work(root: Path, me: str, notices: int = 30, open_contracts: int = 40):
    """Open contracts (some routed to `me`, some claimed by it, with chronicle lines about them),
    a lesson on its tags and `notices` unread messages in its inbox: what a primer prints."""
    import datetime
    now = datetime.datetime.now().replace(second=0, microsecond=0)
    open_dir = root / "contracts" / "open"
    lines = []
    for i in range(open_contracts):
        cid = f"open-{i:03d}"
        owner = me if i % 4 == 0 else "null"
        routed = me if i % 4 == 1 else CITIZENS[1]
        (open_dir / f"{cid}.md").write_text(
            "---\n"
            f"contract_id: {cid}\ntitle: Open work {i}\nopened_by: {CITIZENS[1]}\n"
            f"opened_at: {(now - datetime.timedelta(days=i)).strftime('%Y-%m-%d %H:%M:%S')}\n"
            f"owner: {owner}\nstatus: {'claimed' if owner == me else 'proposed'}\nstakes: medium\n"
            f"required_tags: [{TAGS[i % len(TAGS)]}]\nrouting:\n  recommended_by_router: {routed}\n"
            "  recommendation_score: 0.5\n  exploration: false\n---\n\n## Intent\n\nDo it.\n")
        if owner == me and i % 8 == 0:
            stamp = (now - datetime.timedelta(minutes=30 + i)).strftime("%Y-%m-%d %H:%M")
            lines.append(f"- {stamp} | {me} | worked on | [[contracts/open/{cid}]] | step\n")
    with open(root / "chronicle.md", "a") as f:
        f.writelines(lines)
    lesson_dir = root / "lessons" / TAGS[0]
    lesson_dir.mkdir(parents=True, exist_ok=True)
    (lesson_dir / "2026-01-01-a-lesson.md").write_text(
        f"---\nlesson_id: 2026-01-01-a-lesson\nfiled_by: {CITIZENS[1]}\ncapability_tags: [{TAGS[0]}]\n"
        "quality_impact: 3\n---\n\nCheck the cache before the database.\n")
    inbox = root / "citizens" / me / "inbox.md"
    with open(inbox, "a") as f:
        for k in range(notices):
            f.write(f"\n### 2026-02-01 10:{k % 60:02d} from {CITIZENS[1]}\n\nMessage {k}: please look.\n\n---\n")


def session_samples(root: Path, state: Path, runs: int) -> dict:
    """Wall time of one process per call: the primer, the session-start hook, a notices hook
    that delivers, one that finds nothing new, one inside the rate limit; and the floor
    (`polisd --version`, the cost of starting the process at all)."""
    me = CITIZENS[0]
    env = dict(os.environ, POLISD_STATE_DIR=str(state))
    project = root.parent
    payload = ('{"session_id":"s","transcript_path":"/tmp/t","cwd":"%s","permission_mode":"default",'
               '"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},'
               '"tool_response":{},"tool_use_id":"t1"}' % project)
    start = '{"session_id":"s","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' % project

    def sample(cmd, stdin=None, before=None):
        # Wall time, and the CPU (user + system) the child used: on a loaded machine the wall
        # time is mostly waiting for a core, the CPU is what an idle machine would see.
        import resource
        out, cpu = [], []
        for _ in range(runs):
            if before:
                before()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, input=stdin, text=True, check=True, capture_output=True, env=env,
                           cwd=project)
            out.append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        res = percentiles(out)
        res["cpu_ms"] = statistics.mean(cpu) * 1000
        return res

    inbox = root / "citizens" / me / "inbox.md"
    counter = [0]

    def new_notice():
        counter[0] += 1
        with open(inbox, "a") as f:
            f.write(f"\n### 2026-02-02 10:00 from {CITIZENS[1]}\n\nNew {counter[0]}.\n\n---\n")

    res = {
        "floor": sample([str(BIN), "--version"]),
        "prime": sample([str(BIN), "prime", "--as", me, "--no-mark-read"]),
        "hook_prime": sample([str(BIN), "hook", "claude", "prime", "--as", me], stdin=start),
        "hook_delivers": sample([str(BIN), "hook", "claude", "notices", "--as", me, "--interval", "0"],
                                stdin=payload, before=new_notice),
        "hook_nothing_new": sample([str(BIN), "hook", "claude", "notices", "--as", me, "--interval", "0"],
                                   stdin=payload),
        "hook_rate_limited": sample([str(BIN), "hook", "claude", "notices", "--as", me], stdin=payload),
    }
    primer = subprocess.run([str(BIN), "prime", "--as", me, "--no-mark-read"], check=True,
                            capture_output=True, text=True, env=env, cwd=project).stdout
    res["primer_bytes"] = len(primer.encode())
    return res


def cmd_session(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        root = make_polis(tmp, args.contracts, chronicle_lines=args.lines)
        add_session_work(root, CITIZENS[0])
        print(f"generated {args.contracts} settled, {args.lines} chronicle lines in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        r = session_samples(root, tmp / "state", args.runs)
        for k, v in r.items():
            if isinstance(v, dict):
                print(f"  {k}: p50 {v['p50']:.1f} ms, p99 {v['p99']:.1f} ms, "
                      f"CPU {v['cpu_ms']:.1f} ms")
            else:
                print(f"  {k}: {v}")
def mcp_samples(root: Path, state: Path, runs: int) -> dict:
    """Round-trip time of MCP tool calls to one `polisd mcp` process (the session an agent CLI
    keeps open), each tool `runs` times after a warm-up call."""
    me = CITIZENS[0]
    env = dict(os.environ, POLISD_STATE_DIR=str(state))
    proc = subprocess.Popen([str(BIN), "mcp", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    ids = iter(range(1, 10**9))

    def rpc(method, params):
        n = next(ids)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                                     "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            reply = json.loads(proc.stdout.readline())
            if reply.get("id") == n:
                return reply

    try:
        rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}})
        proc.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        open_id = next(p.stem for p in (root / "contracts" / "open").glob("*.md"))
        settled_id = next(p.stem for p in (root / "contracts" / "settled").glob("*.md"))
        calls = {
            "status": ("polis_status", {}),
            "prime": ("polis_prime", {"citizen": me, "mark_read": False}),
            "notices": ("polis_notices", {"citizen": me, "unread": False}),
            "list_open": ("polis_list_contracts", {}),
            "list_settled_page": ("polis_list_contracts", {"state": "settled"}),
            "show_settled": ("polis_show_contract", {"contract_id": settled_id}),
            "context": ("polis_context", {"contract_id": open_id}),
            "route": ("polis_route", {"contract_id": open_id, "seed": 1}),
            "ready": ("polis_ready", {"citizen": me}),
            "amendments": ("polis_amendments", {}),
            "rejected_arguments": ("polis_tally", {"dryRun": True}),
        }
        res = {}
        for label, (tool, arguments) in calls.items():
            rpc("tools/call", {"name": tool, "arguments": arguments})
            out = []
            for _ in range(runs):
                t0 = time.perf_counter()
                rpc("tools/call", {"name": tool, "arguments": arguments})
                out.append(time.perf_counter() - t0)
            res[label] = percentiles(out)
        return res
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def cmd_mcp(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        add_session_work(root, CITIZENS[0])
        print(f"polisd mcp, {args.contracts} settled contracts, {args.runs} calls each:", flush=True)
        for k, v in mcp_samples(root, tmp / "state", args.runs).items():
            print(f"  {k}: p50 {v['p50']:.2f} ms, p99 {v['p99']:.2f} ms")


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def growth(values):
    """"10k->100k x9.8, 100k->1M x10.2" for figures at 10k, 100k, 1M."""
    keys = sorted(values)
    return ", ".join(f"{fmt_n(a)}->{fmt_n(b)} x{values[b] / values[a]:.1f}"
                     for a, b in zip(keys, keys[1:]) if values[a])


def fmt_n(n):
    return f"{n // 1000000}M" if n >= 1000000 else f"{n // 1000}k"


def cmd_all(args):
    """Every daemon figure (latency, start-up, memory) in one run, printed as one table; with a baseline binary,
    each polisd figure beside the one it replaces."""
    sizes = [1000, 10000, 100000]
    ref_limit = 10000 if args.quick else 100000
    base = args.baseline or BASELINE
    rows = []

    def row(what, ours, before="—", change="—", ref="—", ratio="—", note=""):
        rows.append((what, ours, before, change, ref, ratio, note))
        print(f"  {what}: polisd {ours} | before {before} {change} | reference {ref} {ratio} | {note}",
              flush=True)

    def x(old, new):
        """How many times better the new figure is (old / new)."""
        return f"{old / new:.1f}x" if old and new else "—"

    with workdir() as tmp:
        tmp = Path(tmp)
        polises = {}
        for n in sizes:
            t0 = time.perf_counter()
            polises[n] = make_polis(tmp / f"p{n}", n)
            print(f"generated {n} settled contracts in {time.perf_counter() - t0:.1f} s", flush=True)
        ref100k = None
        for n in sizes:
            r = measure_reconcile(polises[n], args.repeat, reference=n <= ref_limit, baseline=base)
            ours, ref, floor, before = r["ours"], r["ref"], r["floor"], r["before"]
            if n == 100000:
                ref100k = ref
            row(f"`polisd reconcile`, {fmt_n(n)} settled", f"{ours * 1000:.0f} ms",
                f"{before * 1000:.0f} ms" if before else "—", x(before, ours),
                f"{ref * 1000:.0f} ms" if ref else "not run (--quick)",
                f"{ref / ours:.0f}x faster" if ref else "—",
                f"read floor {floor * 1000:.0f} ms: {ours / floor:.1f}x the floor")
        for n in [10000, 100000]:
            res = {}
            for label, bin in [("new", BIN), ("before", base)]:
                if not bin:
                    continue
                d = tmp / f"settle{n}-{label}"
                d.mkdir()
                shutil.copytree(polises[n].parent, d / "project", symlinks=True)
                root = d / "project" / "_polis"
                res[label] = percentiles(settle_samples(root, d, args.settlements, args.debounce, bin=bin))
            p, q = res["new"], res.get("before")
            row(f"settle -> `routing_stats.yml`, {fmt_n(n)} settled (debounce {args.debounce})",
                f"p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms",
                f"p50 {q['p50']:.0f} ms, p99 {q['p99']:.0f} ms" if q else "—", "—",
                "a full reconcile per change (row above)", "—", "target p99 <= debounce + 10 ms")
        for lines in [100000, 1000000]:
            res = {}
            for label, bin in [("new", BIN), ("before", base)]:
                if not bin:
                    continue
                d = tmp / f"chron{lines}-{label}"
                d.mkdir()
                root = make_polis(d, 0, chronicle_lines=lines)
                floor = read_file_floor(root / "chronicle.md")
                res[label] = percentiles(chronicle_samples(root, d, args.appends, args.debounce, bin=bin))
            p, q = res["new"], res.get("before")
            row(f"chronicle line appended -> validated, {fmt_n(lines)} lines (debounce {args.debounce})",
                f"p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms",
                f"p50 {q['p50']:.0f} ms, p99 {q['p99']:.0f} ms" if q else "—", "—",
                "no chronicle validation", "—",
                f"reading the file once: {floor * 1000:.0f} ms; target p99 < debounce + 5 ms")
        d = tmp / "load"
        d.mkdir()
        root = make_polis(d, 0, chronicle_lines=1000)
        p = percentiles(reaction_under_load(root, d, 8, 100, "200ms"))
        row("chronicle finding -> inbox with 8 agents appending continuously (debounce 200ms)",
            f"p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms", note="target p99 < 300 ms")
        for n in [10000, 100000]:
            st = {}
            for label, bin in [("new", BIN), ("before", base)]:
                if not bin:
                    continue
                first = measure_startup(polises[n], tmp, fresh=True, bin=bin, label=label)
                again = measure_startup(polises[n], tmp, fresh=False, bin=bin, label=label)
                st[label] = (first, again)
            for i, what in [(0, "first meeting"), (1, "restart")]:
                s_new = st["new"][i]
                s_old = st["before"][i] if "before" in st else None
                fmt = lambda s: (f"reacts {s['react']:.2f} s (watching {s['watch']:.2f} s, scan done "
                                 f"{s['scan']:.2f} s)")
                row(f"start-up of `polisd run`, {fmt_n(n)} settled, {what}: exec -> first settlement handled",
                    fmt(s_new), fmt(s_old) if s_old else "—",
                    x(s_old["react"], s_new["react"]) if s_old else "—", "no daemon", "—",
                    "target < 0.5 s on restart, < 2 s first meeting (100k)")
                row(f"resident memory after the scan, {fmt_n(n)} settled, {what} (peak during the scan)",
                    f"{mib(s_new['rss_kib'])} (peak {mib(s_new['peak_kib'])})",
                    f"{mib(s_old['rss_kib'])} (peak {mib(s_old['peak_kib'])})" if s_old else "—",
                    x(s_old["rss_kib"], s_new["rss_kib"]) if s_old else "—", "no daemon", "—",
                    f"{(s_new['rss_kib'] * 1024) / n:.0f} B per settlement incl. the process; "
                    "target < 12 MiB (10k), < 35 MiB (100k)")
        idle = {}
        for label, bin in [("new", BIN), ("before", base)]:
            if not bin:
                continue
            d = tmp / f"idle-{label}"
            d.mkdir()
            shutil.copytree(polises[10000].parent, d / "project", symlinks=True)
            idle[label] = measure_idle(d / "project" / "_polis", d, args.seconds, bin=bin)
        m, o = idle["new"], idle.get("before")
        fmt = lambda m: f"{m['cpu']:.3f} s CPU, {m['wakeups']} wake-ups"
        row(f"idle {args.seconds} s, 10k settled", fmt(m), fmt(o) if o else "—", "—", "no daemon", "—",
            "target < 0.1 s CPU per minute, 0 wake-ups")
        if args.scale:
            scale_rows(tmp, polises, args, ref100k, row)

    print()
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f} "
          f"(other builds share it); polisd {BIN}; before {base or '—'}; reference {PY}")
    print("| measure | polisd | before | better by | reference | vs reference | notes |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def scale_rows(tmp: Path, polises: dict, args, ref100k, row):
    """Scale check: reconcile, start-up, settle latency and memory at 10k, 100k and
    1M settled contracts (the reference at 100k only), with the growth of each figure."""
    global EXTRA_CONFIG
    EXTRA_CONFIG = "\n[behaviour]\nreflect = false\n"
    sizes = [10000, 100000, 1000000]
    polises = dict(polises)
    for n in sizes:
        if n not in polises:
            t0 = time.perf_counter()
            polises[n] = make_polis(tmp / f"p{n}", n)
            print(f"generated {n} settled contracts in {time.perf_counter() - t0:.1f} s", flush=True)
    figs = {k: {} for k in ["reconcile", "first", "restart", "settle99", "rss", "peak", "restart_rss"]}
    for n in sizes:
        r = measure_reconcile(polises[n], 1 if n >= 1000000 else args.repeat, reference=False)
        figs["reconcile"][n] = r["ours"]
        first = measure_startup(polises[n], tmp, fresh=True, label=f"scale{n}")
        again = measure_startup(polises[n], tmp, fresh=False, label=f"scale{n}")
        figs["first"][n] = first["react"]
        figs["restart"][n] = again["react"]
        figs["rss"][n] = first["rss_kib"]
        figs["peak"][n] = first["peak_kib"]
        figs["restart_rss"][n] = again["rss_kib"]
        d = tmp / f"scale-settle{n}"
        d.mkdir()
        # The folder is moved, not copied (1M files): settle_samples leaves it usable.
        root = polises[n]
        p = percentiles(settle_samples(root, d, args.scale_settlements, args.debounce))
        figs["settle99"][n] = p["p99"]
        row(f"scale, {fmt_n(n)} settled",
            f"reconcile {r['ours']:.2f} s; reacts {first['react']:.2f} s first meeting, "
            f"{again['react']:.2f} s restart; settle p50 {p['p50']:.0f} ms p99 {p['p99']:.0f} ms; "
            f"RSS {mib(first['rss_kib'])} (peak {mib(first['peak_kib'])}), after a restart "
            f"{mib(again['rss_kib'])} (peak {mib(again['peak_kib'])})",
            "—", "—",
            f"reconcile {ref100k:.1f} s" if n == 100000 and ref100k else "not timed",
            f"{ref100k / r['ours']:.0f}x faster" if n == 100000 and ref100k else "—",
            f"target settle p99 <= debounce + 10 ms")
    for key, what in [("reconcile", "reconcile"), ("first", "first-meeting start-up"),
                      ("restart", "restart"), ("settle99", "settle p99"), ("rss", "RSS after the scan"),
                      ("peak", "peak RSS"), ("restart_rss", "RSS after a restart")]:
        row(f"growth of {what}", growth(figs[key]), "—", "—", "—", "—",
            "x10 per step is linear; nothing quadratic grows x100")


def make_polis_linked(base: Path, settled: int, distinct: int = 1000) -> Path:
    """A polis of `settled` settled contracts made of `distinct` files and hard links to them
    (1M files written one by one take longer than the measurements). Each link is its own
    directory entry to list, stat and read; their settlements repeat every `distinct`."""
    root = make_polis(base, distinct)
    settled_dir = root / "contracts" / "settled"
    for i in range(distinct, settled):
        os.link(settled_dir / f"c-{i % distinct:06d}.md", settled_dir / f"c-{i:06d}.md")
    return root


def cmd_round2(args):
    """Figures in one shorter run (for a loaded machine): start-up and restart at
    10k and 100k, settle latency at 100k, chronicle appends at 1M lines, idle, each beside the
    baseline binary; and the scale check at 10k / 100k / 1M (1M made of hard links). Reflection
    is off for this binary: its per-settlement and daily re-reads of settled files
    are measured apart (`--reflection`)."""
    global EXTRA_CONFIG
    base = args.baseline or BASELINE
    off = "\n[behaviour]\nreflect = false\n"
    rows = []

    def row(*r):
        rows.append(r)
        print("  " + " | ".join(r), flush=True)

    def x(old, new):
        return f"{old / new:.1f}x" if old and new else "—"

    def both(fn):
        """fn(bin, label) for this binary (reflection off) and the baseline."""
        global EXTRA_CONFIG
        EXTRA_CONFIG = off
        new = fn(BIN, "new")
        EXTRA_CONFIG = ""
        old = fn(base, "before") if base else None
        return new, old

    tmp = Path(args.dir)
    tmp.mkdir(parents=True, exist_ok=True)
    polises = {}
    for n in [10000, 100000, 1000000]:
        d = tmp / f"p{n}"
        if (d / "project" / "_polis").exists():
            polises[n] = d / "project" / "_polis"
            continue
        t0 = time.perf_counter()
        polises[n] = make_polis(d, n) if n < 1000000 else make_polis_linked(d, n)
        print(f"generated {n} settled contracts in {time.perf_counter() - t0:.1f} s", flush=True)
    fmt = lambda s: f"reacts {s['react']:.2f} s (watching {s['watch']:.2f} s, scan done {s['scan']:.2f} s)"
    mem = lambda s: f"{mib(s['rss_kib'])} (peak {mib(s['peak_kib'])})"
    for n in [10000, 100000]:
        def st(bin, label):
            return (measure_startup(polises[n], tmp, fresh=True, bin=bin, label=label),
                    measure_startup(polises[n], tmp, fresh=False, bin=bin, label=label))
        new, old = both(st)
        for i, what in [(0, "first meeting"), (1, "restart")]:
            a, b = new[i], old[i] if old else None
            row(f"`polisd run`, {fmt_n(n)} settled, {what}: exec -> first settlement handled", fmt(a),
                fmt(b) if b else "—", x(b["react"], a["react"]) if b else "—")
            row(f"resident memory after the scan (peak), {fmt_n(n)} settled, {what}", mem(a),
                mem(b) if b else "—", x(b["rss_kib"], a["rss_kib"]) if b else "—")

    def settle(bin, label):
        d = tmp / f"settle-{label}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        shutil.copytree(polises[100000].parent, d / "project", symlinks=True)
        return percentiles(settle_samples(d / "project" / "_polis", d, args.settlements, args.debounce, bin=bin))
    p, q = both(settle)
    pf = lambda p: f"p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms"
    row(f"settle -> `routing_stats.yml`, 100k settled (debounce {args.debounce})", pf(p), pf(q) if q else "—", "—")

    def chron(bin, label):
        d = tmp / f"chron-{label}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        root = make_polis(d, 0, chronicle_lines=1000000)
        return percentiles(chronicle_samples(root, d, args.appends, args.debounce, bin=bin))
    p, q = both(chron)
    row(f"chronicle line appended -> validated, 1M lines (debounce {args.debounce})", pf(p), pf(q) if q else "—", "—")

    def idle(bin, label):
        d = tmp / f"idle-{label}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        shutil.copytree(polises[10000].parent, d / "project", symlinks=True)
        return measure_idle(d / "project" / "_polis", d, args.seconds, bin=bin)
    m, o = both(idle)
    fi = lambda m: f"{m['cpu']:.3f} s CPU, {m['wakeups']} wake-ups, RSS {mib(m['rss_kib'])}"
    row(f"idle {args.seconds} s, 10k settled", fi(m), fi(o) if o else "—", "—")

    EXTRA_CONFIG = off
    figs = {k: {} for k in ["reconcile", "first", "restart", "settle99", "rss", "peak", "restart_rss"]}
    for n in [10000, 100000, 1000000]:
        r = measure_reconcile(polises[n], 1, reference=False)
        first = measure_startup(polises[n], tmp, fresh=True, label=f"scale{n}")
        again = measure_startup(polises[n], tmp, fresh=False, label=f"scale{n}")
        d = tmp / f"scale-settle{n}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        p = percentiles(settle_samples(polises[n], d, args.scale_settlements, args.debounce))
        for k, v in [("reconcile", r["ours"]), ("first", first["react"]), ("restart", again["react"]),
                     ("settle99", p["p99"]), ("rss", first["rss_kib"]), ("peak", first["peak_kib"]),
                     ("restart_rss", again["rss_kib"])]:
            figs[k][n] = v
        row(f"scale, {fmt_n(n)} settled",
            f"reconcile {r['ours']:.2f} s; reacts {first['react']:.2f} s first meeting, {again['react']:.2f} s "
            f"restart; settle p50 {p['p50']:.0f} ms p99 {p['p99']:.0f} ms; RSS {mem(first)} first meeting, "
            f"{mem(again)} after a restart", "—", "—")
    for key, what in [("reconcile", "reconcile"), ("first", "first-meeting start-up"),
                      ("restart", "restart"), ("settle99", "settle p99"), ("rss", "RSS after the scan"),
                      ("peak", "peak RSS"), ("restart_rss", "RSS after a restart")]:
        row(f"growth of {what}", growth(figs[key]), "—", "—")
    print()
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f} "
          f"(other engineers' builds share it); polisd {BIN}; before {base or '—'}")
    print("| measure | polisd | before | better by |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def cmd_scale(args):
    """The scale check alone (the reference at 100k)."""
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp / "ref100k", 100000)
        ref = timed([PY, "-c", REF_RECONCILE, str(root)], repeat=1)
        shutil.rmtree(tmp / "ref100k")
        rows = []

        def row(*r):
            rows.append(r)
            print("  " + " | ".join(r), flush=True)
        scale_rows(tmp, {}, args, ref, row)
    print("| measure | polisd | before | better by | reference | vs reference | notes |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def write_reservations(project: Path, entries: int):
    """`entries` reservations spread over three citizens, plain paths and globs, none of them
    in the way of the measured `bench/…` paths."""
    lines = ["# Advisory file reservations (collision prevention). Managed by `polis reserve/release`.",
             "reservations:"]
    for i in range(entries):
        who = CITIZENS[1 + i % 3]
        path = f"src/mod{i}/**/*.rs" if i % 2 else f"docs/part{i}.md"
        lines += [f"- citizen: {who}", "  paths:", f"  - {path}",
                  "  reserved_at: '2026-03-02T10:00:00+00:00'", "  expires_at: null"]
    (project / "_polis" / "reservations.yml").write_text("\n".join(lines) + "\n")


REF_CLI = "import sys; from polis.cli import main; sys.exit(main(sys.argv[1:]))"


def cmd_memory(args):
    """Resident memory at 10k, 100k and 1M settled contracts (1M made of hard links), first
    meeting and restart, with the start-up and reaction times of the same runs; with
    `--baseline`, an earlier polisd on the same polises, each size's runs of the two binaries
    interleaved. Reflection stays on at 10k and 100k (the daemon as configured by default) and
    is off at 1M, as in the scale check: the hard-linked folder's 999k files whose
    `contract_id` is not their name would be read again by its first run."""
    global EXTRA_CONFIG
    bins = [("new", None)] + ([("before", args.baseline)] if args.baseline else [])
    tmp = Path(args.dir)
    tmp.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.sizes.split(",")]
    rows = []
    for n in sizes:
        d = tmp / f"p{n}"
        root = d / "project" / "_polis"
        if not root.exists():
            shutil.rmtree(d, ignore_errors=True)
            t0 = time.perf_counter()
            root = make_polis(d, n) if n < 1000000 else make_polis_linked(d, n)
            print(f"generated {n} settled contracts in {time.perf_counter() - t0:.1f} s", flush=True)
        EXTRA_CONFIG = "\n[behaviour]\nreflect = false\n" if n >= 1000000 else ""
        for what, fresh in [("first meeting", True), ("restart", False)]:
            for label, b in bins:
                s = measure_startup(root, tmp, fresh=fresh, bin=b, label=f"{label}{n}")
                line = (f"{label}: {fmt_n(n)} settled, {what}: RSS {mib(s['rss_kib'])} "
                        f"(anonymous {mib(s['anon_kib'])}, peak {mib(s['peak_kib'])}); watching "
                        f"{s['watch']:.2f} s, first settlement handled {s['react']:.2f} s, "
                        f"initial scan done {s['scan']:.2f} s; load {os.getloadavg()[0]:.1f}")
                print(line, flush=True)
                rows.append((f"{fmt_n(n)}, {what}", label, s))
    EXTRA_CONFIG = ""
    print()
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}; "
          f"polisd {BIN}; before {args.baseline or '—'}")
    print("| settled, start | binary | RSS after the scan (anonymous; peak) | watching / first settlement handled / scan done |")
    print("|---|---|---|---|")
    for what, label, s in rows:
        print(f"| {what} | {label} | {mib(s['rss_kib'])} ({mib(s['anon_kib'])}; {mib(s['peak_kib'])}) | "
              f"{s['watch']:.2f} / {s['react']:.2f} / {s['scan']:.2f} s |")


def cmd_reserve(args):
    """`reserve` + `release` + `reservations` on a polis with many settled contracts and many
    reservations, polisd beside the reference CLI on identical copies. Median wall time per
    command, including process start-up."""
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp / "ours", args.contracts)
        write_reservations(root.parent, args.entries)
        theirs = tmp / "theirs" / "project"
        shutil.copytree(root.parent, theirs, symlinks=True)
        who = CITIZENS[0]
        tools = {"polisd": (root.parent, [str(BIN)]), "reference": (theirs, [PY, "-c", REF_CLI])}
        results = {}
        for name, (cwd, base) in tools.items():
            samples = {"reserve": [], "release": [], "reservations": []}
            for k in range(args.repeat):
                for what, extra in [("reserve", ["reserve", f"bench/file{k}.rs", "bench/dir/", "--as", who]),
                                    ("reservations", ["reservations"]),
                                    ("release", ["release", "--as", who])]:
                    t0 = time.perf_counter()
                    subprocess.run(base + extra, cwd=cwd, check=True, capture_output=True)
                    samples[what].append(time.perf_counter() - t0)
            results[name] = {k: statistics.median(v) * 1000 for k, v in samples.items()}
        # The floors a write command cannot go under: starting the process, and one atomic
        # replace with its two fsyncs (file, folder) on this disk.
        start = statistics.median([timed([str(BIN), "--version"], repeat=1) for _ in range(args.repeat)]) * 1000
        fsyncs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            tmpf = root / ".bench-floor.tmp"
            fd = os.open(tmpf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmpf, root / ".bench-floor")
            dfd = os.open(root, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
            fsyncs.append(time.perf_counter() - t0)
        (root / ".bench-floor").unlink()
        fsync = statistics.median(fsyncs) * 1000
        print(f"{args.contracts} settled contracts, {args.entries} reservations, {args.repeat} runs each, median ms:")
        print(f"floors: process start {start:.1f} ms, atomic replace with fsyncs {fsync:.1f} ms; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print("| command | polisd | reference | ratio |")
        print("|---|---|---|---|")
        for what in ["reserve", "release", "reservations"]:
            o, r = results["polisd"][what], results["reference"][what]
            print(f"| `{what}` | {o:.1f} ms | {r:.1f} ms | {r / o:.1f}x faster |")


def cmd_merge(args):
    """`polisd merge-driver %O %A %B %P` on a chronicle of `--lines` lines that each side of a
    merge extended by `--side` lines of its own (interleaved in time) plus a line both sides
    hold: the id-aware union git runs for `chronicle.md` (docs/sync.md). Beside it, in the same
    run, git's own `git merge-file --union` on the same three files (a line union that neither
    sorts nor recognises ids), and the floor of reading the three files. Wall time per run,
    process start included; the result file is restored before each run."""
    import datetime
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp / "polis", 0, chronicle_lines=args.lines)
        base = (root / "chronicle.md").read_text()
        start = datetime.datetime.now().replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)

        def side(who, offset):
            out = []
            for k in range(args.side):
                stamp = (start + datetime.timedelta(minutes=2 * k + offset)).strftime("%Y-%m-%d %H:%M")
                out.append(f"- {stamp} | {who} | worked on | - | {who} step {k}\n")
            return out

        shared = f"- {(start - datetime.timedelta(minutes=1)).strftime('%Y-%m-%d %H:%M')} | {CITIZENS[3]} | noted | - | on both sides\n"
        files = {"base": base,
                 "ours": base + shared + "".join(side(CITIZENS[1], 0)),
                 "theirs": base + shared + "".join(side(CITIZENS[2], 1))}
        paths = {}
        for name, text in files.items():
            paths[name] = tmp / f"{name}.md"
            paths[name].write_text(text)
        result = tmp / "result.md"
        project = root.parent

        def run(cmd):
            samples = []
            for _ in range(args.repeat):
                shutil.copyfile(paths["ours"], result)
                t0 = time.perf_counter()
                subprocess.run(cmd, cwd=project, check=True, capture_output=True)
                samples.append(time.perf_counter() - t0)
            return samples

        ours = run([str(BIN), "merge-driver", str(paths["base"]), str(result), str(paths["theirs"]),
                    "_polis/chronicle.md"])
        merged = result.read_text()
        lines = [l for l in merged.splitlines() if l.startswith("- ")]
        expected = args.lines + 1 + 1 + 2 * args.side  # the founding line, the shared line once
        stamps = [l[2:18] for l in lines]
        check = "ok" if len(lines) == expected and stamps == sorted(stamps) else \
            f"UNEXPECTED: {len(lines)} lines (expected {expected}), sorted={stamps == sorted(stamps)}"
        union = run(["git", "merge-file", "--union", str(result), str(paths["base"]), str(paths["theirs"])])
        union_lines = sum(1 for l in result.read_text().splitlines() if l.startswith("- "))
        floor = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for p in paths.values():
                p.read_bytes()
            floor.append(time.perf_counter() - t0)
        size = sum(len(t.encode()) for t in files.values()) / 1e6
        print(f"chronicle of {args.lines} lines, each side +{args.side} lines and one shared line; "
              f"{size:.1f} MB read; {args.repeat} runs; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print("| merge | min | median | result |")
        print("|---|---|---|---|")
        print(f"| `polisd merge-driver` (id-aware union, sorted) | {min(ours) * 1000:.0f} ms | "
              f"{statistics.median(ours) * 1000:.0f} ms | {len(lines)} lines, {check} |")
        print(f"| `git merge-file --union` | {min(union) * 1000:.0f} ms | {statistics.median(union) * 1000:.0f} ms | "
              f"{union_lines} lines (the shared line {'twice' if union_lines > expected else 'once'}) |")
        print(f"| reading the three files | {min(floor) * 1000:.1f} ms | {statistics.median(floor) * 1000:.1f} ms | |")


REF_COMMANDS = {
    # The reference's CLI for the same actions, where it has one (`python -m polis.cli`).
    "contract open": lambda k, root: ["contract", "open", "--title", f"Ref bench {k}", "--by", CITIZENS[0],
                                      "--tags", "python", "--polis-root", str(root)],
    "contract claim": lambda k, root: ["contract", "claim", f"ref-bench-{k}", "--as", CITIZENS[1],
                                       "--polis-root", str(root)],
    "contract settle": lambda k, root: ["contract", "settle", f"ref-bench-{k}", "--quality", "4",
                                        "--minutes", "10", "--polis-root", str(root)],
    "context": lambda k, root: ["contract", "context", f"ref-bench-{k}", "--polis-root", str(root)],
    "guardrail list": lambda k, root: ["guardrail", "list", "--polis-root", str(root)],
}


def command_rounds(root: Path, rounds: int, env: dict, cpu: dict = None, fsync: dict = None,
                   first: int = 0) -> dict:
    """Runs every agents' command `rounds` times on `root`; wall time of each process (and,
    into `cpu`, its user + system CPU seconds; into `fsync`, with strace, the wall time it
    spent in fsync/fdatasync and how many it made, one traced run per command)."""
    samples = {}

    def run(name, *args):
        argv = [str(BIN), *args, "--polis", str(root)]
        if fsync is not None and name not in fsync and shutil.which("strace"):
            trace = Path(tempfile.mkstemp(prefix="polisd-strace-")[1])
            subprocess.run(["strace", "-f", "-T", "-e", "trace=fsync,fdatasync", "-o", str(trace), *argv],
                           check=True, capture_output=True, env=env)
            spent = [float(m) for m in re.findall(r"<([0-9.]+)>", trace.read_text())]
            trace.unlink()
            fsync[name] = (len(spent), sum(spent))
            return
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        samples.setdefault(name, []).append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if cpu is not None:
            cpu.setdefault(name, []).append(
                (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))

    for k in range(first, first + rounds):
        cid = f"bench-{k}"
        run("contract open", "contract", "open", "--title", f"Bench {k}", "--by", CITIZENS[0], "--tags", "python,docs")
        run("contract claim", "contract", "claim", cid, "--as", CITIZENS[1])
        run("context", "context", cid)
        run("contract show", "contract", "show", cid)
        run("log", "log", "--as", CITIZENS[1], "worked on", "--link", f"contracts/open/{cid}", "--note", f"step {k}")
        run("review", "review", cid, "--as", CITIZENS[2], "--decision", "signed_off")
        # A fresh amendment each round: the daemon's tally decides earlier ones as votes arrive.
        run("amendment propose", "amendment", "propose", "--title", f"Bench amendment {k}", "--by", CITIZENS[0])
        aid = next((root / "amendments" / "proposed").glob(f"*-bench-amendment-{k}.md")).stem
        run("amendment vote", "amendment", "vote", aid, "--as", CITIZENS[k % 3 + 1],
            "--vote", ["agree", "disagree", "abstain"][k % 3])
        run("lesson file", "lesson", "file", "--as", CITIZENS[1], "--tags", "python", "--impact", "3",
            f"Lesson number {k} about python")
        run("guardrail add", "guardrail", "add", "--text", f"Check number {k}", "--tags", "python")
        run("guardrail list", "guardrail", "list")
        run("reserve", "reserve", f"bench/file{k}.rs", "--as", CITIZENS[1])
        run("release", "release", f"bench/file{k}.rs", "--as", CITIZENS[1])
        run("contract settle", "contract", "settle", cid, "--quality", "4", "--minutes", "10",
            "--no-lesson", "benchmark")
        run("contract open (2)", "contract", "open", "--title", f"Dropped {k}", "--by", CITIZENS[0])
        run("contract abandon", "contract", "abandon", f"dropped-{k}", "--reason", "bench")
    return samples


def stat_floor(root: Path) -> float:
    """The floor of any settle that checks every settled file, in seconds: `du -s` of the settled
    folder, one process that lists it and stats each file once on one thread (coreutils, so C
    speed, measured beside polisd in the same run)."""
    return timed(["du", "-s", str(root / "contracts" / "settled")], repeat=1)


def fsync_floor(root: Path, repeat: int = 20) -> tuple:
    """The medians, in ms, of one fsync of a small new file, and of one of its folder, on the
    disk under `root`: what every durable write pays at least."""
    files, dirs = [], []
    for _ in range(repeat):
        tmpf = root / ".bench-floor.tmp"
        fd = os.open(tmpf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, b"x" * 2048)
        t0 = time.perf_counter()
        os.fsync(fd)
        files.append(time.perf_counter() - t0)
        os.close(fd)
        os.rename(tmpf, root / ".bench-floor")
        dfd = os.open(root, os.O_RDONLY)
        t0 = time.perf_counter()
        os.fsync(dfd)
        dirs.append(time.perf_counter() - t0)
        os.close(dfd)
    (root / ".bench-floor").unlink()
    return statistics.median(files) * 1000, statistics.median(dirs) * 1000


def ref_rounds(root: Path, rounds: int) -> dict:
    samples = {}
    for k in range(rounds):
        for name, argv in REF_COMMANDS.items():
            t0 = time.perf_counter()
            subprocess.run([PY, "-m", "polis.cli", *argv(k, root)], check=True, capture_output=True)
            samples.setdefault(name, []).append(time.perf_counter() - t0)
    return samples


def cmd_commands(args):
    """Each agents' command on a polis with `--contracts` settled contracts and a chronicle of
    `--chronicle-lines`: first with no daemon running (so `settle` reconciles
    `routing_stats.yml` itself, from the durable ledger), then with a daemon (which takes the
    stats over). Wall and CPU time per process, the fsync time of one traced run of each, and
    the disk's fsync floor. The reference runs its CLI for the same actions on a copy in the
    same run."""
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp / "ours", args.contracts, chronicle_lines=args.chronicle_lines)
        ref_root = make_polis(tmp / "ref", args.contracts)
        polisd("reconcile", str(root))
        env = dict(os.environ, POLISD_STATE_DIR=str(tmp / "state"))
        # A daemon met the polis once (as a user's would have), leaving the ledger.
        proc = start_daemon(root, tmp, "50ms", until=READY)
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        alone_cpu, fsyncs = {}, {}
        # The first round warms the page cache and is traced (strace), not timed.
        command_rounds(root, 1, env, fsync=fsyncs)
        alone = command_rounds(root, args.rounds, env, cpu=alone_cpu, first=1)
        full = []
        for k in range(min(args.rounds, 5)):
            t0 = time.perf_counter()
            polisd("reconcile", str(root), env=env)
            full.append(time.perf_counter() - t0)
        floor_file, floor_dir = fsync_floor(root)
        floor_stat = statistics.median(stat_floor(root) for _ in range(args.rounds))
        proc = start_daemon(root, tmp, "50ms", until=READY)
        try:
            ours = command_rounds(root, args.rounds, env, first=1000)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        ref = ref_rounds(ref_root, args.rounds) if Path(PY).exists() else {}
    print(f"agents' commands, {args.contracts} settled contracts, chronicle {args.chronicle_lines} lines, "
          f"{args.rounds} rounds (ms, whole process); load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs; fsync floor: a small file {floor_file:.1f} ms, its folder {floor_dir:.1f} ms; "
          f"`polisd reconcile` (full read) p50 {percentiles(full)['p50']:.0f} ms; "
          f"`du -s` of the settled folder (list it, stat each file once) p50 {floor_stat * 1000:.1f} ms")
    print("| command | no daemon: wall p50 | CPU p50 | fsyncs (ms in them) | with a daemon: wall p50 | reference p50 | ratio (no daemon) |")
    print("|---|---|---|---|---|---|---|")
    for name, xs in alone.items():
        p = percentiles(xs)
        c = percentiles(alone_cpu[name])
        d = percentiles(ours[name])["p50"] if name in ours else None
        key = name.replace(" (2)", "")
        r = percentiles(ref[key])["p50"] if key in ref else None
        n, spent = fsyncs.get(name, (0, 0.0))
        ratio = f"{r / p['p50']:.0f}x" if r else "—"
        print(f"| {name} | {p['p50']:.1f} | {c['p50']:.1f} | {n} ({spent * 1000:.1f}) | "
              f"{f'{d:.1f}' if d else '—'} | {f'{r:.1f}' if r else '—'} | {ratio} |")

def cmd_settle_alone(args):
    """`contract settle` with no daemon running (it reconciles `routing_stats.yml` from the
    durable ledger a daemon left) on a polis of `--contracts` settled contracts: wall and CPU
    medians per process, for this polisd and (with `--baseline`) an earlier one, interleaved
    round by round on copies of one polis so both meet the same load. Each one's stats must
    equal a full reconcile's afterwards."""
    bins = [("new", str(BIN))] + ([("baseline", args.baseline)] if args.baseline else [])
    with workdir() as tmp:
        tmp = Path(tmp)
        made = make_polis(tmp / "made", args.contracts)
        setups = {}
        for label, b in bins:
            base = tmp / label
            shutil.copytree(made.parent, base / "project", symlinks=True)
            root = base / "project" / "_polis"
            env = dict(os.environ, POLISD_STATE_DIR=str(base / "state"))
            # A daemon met the polis once (as a user's would have), leaving the ledger.
            meet_once(root, base, base / "state", bin=b)
            setups[label] = (b, root, env)
        wall, cpu, floor = {}, {}, []
        for k in range(args.rounds):
            for label, (b, root, env) in setups.items():
                cid = f"bench-{k}"
                run = lambda *a: subprocess.run([b, *a, "--polis", str(root)], check=True,
                                                capture_output=True, env=env)
                run("contract", "open", "--title", f"Bench {k}", "--by", CITIZENS[0])
                run("contract", "claim", cid, "--as", CITIZENS[1])
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                run("contract", "settle", cid, "--quality", "4", "--minutes", "10",
                    "--no-lesson", "benchmark")
                wall.setdefault(label, []).append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.setdefault(label, []).append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            floor.append(stat_floor(setups["new"][1]))
        for label, (b, root, env) in setups.items():
            stats = root / "contracts" / "routing_stats.yml"
            reacted = stats.read_bytes()
            polisd("reconcile", str(root), bin=b)
            if stats.read_bytes() != reacted:
                raise SystemExit(f"{label}: settle's stats differ from a full reconcile")
    print(f"contract settle with no daemon, {args.contracts} settled contracts, {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    med = lambda xs: statistics.median(xs) * 1000
    for label, _ in bins:
        w = percentiles(wall[label])
        print(f"  {label}: wall p50 {w['p50']:.1f} ms, p90 {w['p90']:.1f} ms, max {w['max']:.1f} ms, "
              f"CPU p50 {med(cpu[label]):.1f} ms, {w['p50'] / med(floor):.2f}x the floor; "
              f"{sum(t < 0.020 for t in wall[label])} of {len(wall[label])} under 20 ms")
    f = percentiles(floor)
    print(f"  floor, `du -s` of the settled folder (list it, stat each file once): "
          f"p50 {f['p50']:.1f} ms, p90 {f['p90']:.1f} ms")
    if args.baseline:
        print(f"  ratio baseline/new: wall {med(wall['baseline']) / med(wall['new']):.2f}x, "
              f"CPU {med(cpu['baseline']) / med(cpu['new']):.2f}x")


def cmd_backlog(args):
    """A backlog of notices after downtime: a daemon met the polis, stopped, and `--notices`
    contracts were settled meanwhile (each one's opener is told); the next start queues every
    `contract-settled` notice at once. Seconds from exec to "initial scan done" (the delivery is
    part of the first pass), for this polisd and (with `--baseline`) an earlier one, on copies of
    one polis."""
    bins = [("new", str(BIN))] + ([("baseline", args.baseline)] if args.baseline else [])
    results = {}
    with workdir() as tmp:
        tmp = Path(tmp)
        for label, b in bins:
            base = tmp / label
            root = make_polis(base, 0)
            state = base / "state"
            meet_once(root, base, state, bin=b)
            rng = random.Random(11)
            settled_dir = root / "contracts" / "settled"
            for i in range(args.notices):
                (settled_dir / f"b-{i:06d}.md").write_text(contract_text(f"b-{i:06d}", i, rng))
            log = base / "backlog.log"
            t0 = time.perf_counter()
            proc = spawn_daemon(root, base, "50ms", state, log, bin=b)
            try:
                while READY not in log.read_text():
                    if proc.poll() is not None or time.perf_counter() - t0 > 900:
                        raise SystemExit("daemon did not finish its first pass; see " + str(log))
                    time.sleep(0.005)
                seconds = time.perf_counter() - t0
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait()
            inbox = (root / "citizens" / CITIZENS[0] / "inbox.md").read_text()
            results[label] = (seconds, inbox.count("<!-- polisd:contract-settled:"))
    print(f"a backlog of {args.notices} settlements after downtime; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for label, (seconds, told) in results.items():
        print(f"  {label}: exec -> initial scan done {seconds:.2f} s, {told} notices in the opener's inbox")
    if args.baseline:
        print(f"  ratio baseline/new: {results['baseline'][0] / results['new'][0]:.1f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reconcile")
    r.add_argument("--contracts", type=int, default=10000)
    r.add_argument("--repeat", type=int, default=3)
    s = sub.add_parser("settle-latency")
    s.add_argument("--contracts", type=int, default=10000)
    s.add_argument("--settlements", type=int, default=200)
    s.add_argument("--debounce", default="50ms")
    i = sub.add_parser("idle-cpu")
    i.add_argument("--contracts", type=int, default=10000)
    i.add_argument("--seconds", type=int, default=60)
    c = sub.add_parser("chronicle-latency")
    c.add_argument("--lines", type=int, default=1000000)
    c.add_argument("--appends", type=int, default=100)
    c.add_argument("--debounce", default="50ms")
    c.add_argument("--reservations", type=int, default=0)
    w = sub.add_parser("reaction-under-load")
    w.add_argument("--writers", type=int, default=8)
    w.add_argument("--probes", type=int, default=200)
    w.add_argument("--debounce", default="200ms")
    u = sub.add_parser("startup")
    u.add_argument("--contracts", type=int, default=100000)
    u.add_argument("--restarts", type=int, default=1)
    u.add_argument("--meetings", type=int, default=1, help="first meetings of each binary (interleaved; medians when > 1)")
    u.add_argument("--baseline", default=BASELINE, help="an earlier polisd binary, measured beside this one")
    g = sub.add_parser("generate")
    g.add_argument("out")
    g.add_argument("--contracts", type=int, default=10000)
    g.add_argument("--chronicle-lines", type=int, default=0)
    e = sub.add_parser("session")
    e.add_argument("--contracts", type=int, default=10000)
    e.add_argument("--lines", type=int, default=1000000)
    e.add_argument("--runs", type=int, default=50)
    mc = sub.add_parser("mcp")
    mc.add_argument("--contracts", type=int, default=10000)
    mc.add_argument("--runs", type=int, default=50)
    rv = sub.add_parser("reserve")
    rv.add_argument("--contracts", type=int, default=10000)
    rv.add_argument("--entries", type=int, default=300)
    rv.add_argument("--repeat", type=int, default=30)
    m = sub.add_parser("commands")
    m.add_argument("--contracts", type=int, default=10000)
    m.add_argument("--chronicle-lines", type=int, default=100000)
    m.add_argument("--rounds", type=int, default=30)
    bl = sub.add_parser("backlog")
    bl.add_argument("--notices", type=int, default=3000)
    bl.add_argument("--baseline")
    sa = sub.add_parser("settle-alone")
    sa.add_argument("--contracts", type=int, default=10000)
    sa.add_argument("--rounds", type=int, default=30)
    sa.add_argument("--baseline", default=BASELINE, help="an earlier polisd binary, measured beside this one")
    d = sub.add_parser("dashboard")
    d.add_argument("--contracts", type=int, default=10000)
    d.add_argument("--repeat", type=int, default=20)
    d.add_argument("--clients", type=int, default=50)
    d.add_argument("--seconds", type=int, default=30)
    dm = sub.add_parser("dashboard-memory")
    dm.add_argument("--contracts", type=int, default=10000)
    dm.add_argument("--chronicle-mb", type=float, default=50)
    dm.add_argument("--repeat", type=int, default=5)
    dm.add_argument("--baseline", default=BASELINE, help="an earlier polisd binary, measured beside this one")
    dm.add_argument("--json", action="store_true")
    dm.add_argument("--reference", action="store_true", help="also the reference's `polis serve` on the same polis")
    a = sub.add_parser("all")
    a.add_argument("--quick", action="store_true", help="run the reference up to 10k contracts only")
    a.add_argument("--repeat", type=int, default=3)
    a.add_argument("--settlements", type=int, default=100)
    a.add_argument("--appends", type=int, default=300)
    a.add_argument("--debounce", default="50ms")
    a.add_argument("--seconds", type=int, default=60)
    a.add_argument("--baseline", help="an earlier polisd binary, measured beside this one")
    a.add_argument("--scale", action="store_true", help="also the 10k/100k/1M scale check")
    a.add_argument("--scale-settlements", type=int, default=30)
    r2 = sub.add_parser("round2")
    r2.add_argument("dir", help="a folder for the generated polises (kept, and reused when run again)")
    r2.add_argument("--baseline")
    r2.add_argument("--settlements", type=int, default=30)
    r2.add_argument("--scale-settlements", type=int, default=20)
    r2.add_argument("--appends", type=int, default=50)
    r2.add_argument("--seconds", type=int, default=60)
    r2.add_argument("--debounce", default="50ms")
    mg = sub.add_parser("merge")
    mg.add_argument("--lines", type=int, default=100000)
    mg.add_argument("--side", type=int, default=1000)
    mg.add_argument("--repeat", type=int, default=5)
    sc = sub.add_parser("scale")
    sc.add_argument("--repeat", type=int, default=1)
    sc.add_argument("--debounce", default="50ms")
    sc.add_argument("--scale-settlements", type=int, default=30)
    me = sub.add_parser("memory")
    me.add_argument("dir", help="a folder for the generated polises (kept, and reused when run again)")
    me.add_argument("--sizes", default="10000,100000,1000000")
    me.add_argument("--baseline", default=BASELINE, help="an earlier polisd binary, measured beside this one")
    args = ap.parse_args()
    if not BIN.exists():
        raise SystemExit(f"{BIN} not found: run `cargo build --release` first")
    if not Path(PY).exists() and args.cmd in ("reconcile", "all", "reserve", "scale"):
        raise SystemExit(f"no reference at {PY}: run `cargo test --locked --test setup` once, or set POLISD_REFERENCE_PYTHON")
    {"reconcile": cmd_reconcile, "settle-latency": cmd_settle_latency, "idle-cpu": cmd_idle_cpu,
     "chronicle-latency": cmd_chronicle_latency, "reaction-under-load": cmd_reaction_under_load,
     "startup": cmd_startup, "generate": cmd_generate,
     "reserve": cmd_reserve, "commands": cmd_commands, "settle-alone": cmd_settle_alone, "backlog": cmd_backlog, "session": cmd_session, "mcp": cmd_mcp, "all": cmd_all,
     "scale": cmd_scale, "memory": cmd_memory, "round2": cmd_round2, "merge": cmd_merge,
     "dashboard": cmd_dashboard, "dashboard-memory": cmd_dashboard_memory}[args.cmd](args)

if __name__ == "__main__":
    main()
