#!/usr/bin/env python3
"""End-to-end measurements of the real `polisd` binary, beside the Python reference in the same run.

Not a test: nothing here asserts a time. Each measurement prints its figures; compare runs on the
same machine only.

    benches/e2e.py reconcile --contracts 10000      # polisd reconcile vs reference reconcile
    benches/e2e.py settle-latency --contracts 10000 --settlements 200 --debounce 50ms
    benches/e2e.py idle-cpu --seconds 60

Build first: `cargo build --release`. The reference comes from `.venv/bin/python` (made by
`.ci/run`) or $POLISD_REFERENCE_PYTHON.
"""
import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("POLISD_BIN", REPO / "target" / "release" / "polisd"))
PY = os.environ.get("POLISD_REFERENCE_PYTHON") or str(REPO / ".venv" / "bin" / "python")

CITIZENS = ["claude-code-1", "codex-agent-2", "gemini-cli-03", "mistral-vibe-4"]
TAGS = ["python", "rust", "docs", "infra", "frontend", "data", "security", "review"]


def polisd(*args, **kw):
    return subprocess.run([str(BIN), *args], check=True, capture_output=True, text=True, **kw)


def make_polis(base: Path, settled: int, seed: int = 7) -> Path:
    """A polis with `settled` settled contracts, written with `polisd init` plus plain files."""
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
    return root


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


def cmd_reconcile(args):
    with tempfile.TemporaryDirectory() as tmp:
        root = make_polis(Path(tmp), args.contracts)
        ours = timed([str(BIN), "reconcile", str(root)], repeat=args.repeat)
        ref = timed([PY, "-c", "import sys; from pathlib import Path; from polis.routing import reconcile_stats; "
                     "reconcile_stats(Path(sys.argv[1]))", str(root)], repeat=args.repeat)
        floor = min(read_floor(root) for _ in range(args.repeat))
        print(f"reconcile of {args.contracts} settled contracts (best of {args.repeat}):")
        print(f"  polisd    {ours * 1000:9.1f} ms")
        print(f"  reference {ref * 1000:9.1f} ms   -> polisd is {ref / ours:.1f}x faster")
        print(f"  read floor{floor * 1000:9.1f} ms   -> polisd is {ours / floor:.1f}x the floor")


def start_daemon(root: Path, tmp: Path, debounce: str):
    config = tmp / "polisd.toml"
    config.write_text(f'[watch]\ndebounce = "{debounce}"\n\n[log]\nlevel = "info"\n')
    env = dict(os.environ, POLISD_STATE_DIR=str(tmp / "state"))
    log = open(tmp / "daemon.log", "w")
    proc = subprocess.Popen([str(BIN), "run", str(root), "--config", str(config)], env=env,
                            stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 60
    while "watching" not in (tmp / "daemon.log").read_text():
        if time.time() > deadline or proc.poll() is not None:
            raise SystemExit("daemon did not start; see " + str(tmp / "daemon.log"))
        time.sleep(0.01)
    return proc


def cmd_settle_latency(args):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        polisd("reconcile", str(root))
        rng = random.Random(11)
        proc = start_daemon(root, tmp, args.debounce)
        stats = root / "contracts" / "routing_stats.yml"
        samples = []
        try:
            for k in range(args.settlements):
                cid = f"new-{k:05d}"
                # Newer than all others, so every settlement changes the stats file.
                text = contract_text(cid, 600000 + k, rng)
                (root / "contracts" / "open" / f"{cid}.md").write_text(text)
                time.sleep(0.05)  # let the open contract be seen first, as in real use
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
        samples.sort()
        p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1000
        print(f"mv -> routing_stats.yml rewritten, {args.settlements} settlements over {args.contracts} settled, debounce {args.debounce}:")
        print(f"  p50 {p(0.50):.1f} ms   p90 {p(0.90):.1f} ms   p99 {p(0.99):.1f} ms   max {samples[-1] * 1000:.1f} ms")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cmd_idle_cpu(args):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        proc = start_daemon(root, tmp, "200ms")
        try:
            time.sleep(2)
            c0 = cpu_seconds(proc.pid)
            time.sleep(args.seconds)
            c1 = cpu_seconds(proc.pid)
            rss = rss_kib(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        print(f"idle for {args.seconds} s with {args.contracts} settled contracts: "
              f"{c1 - c0:.3f} s CPU, RSS {rss / 1024:.1f} MiB")


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
    args = ap.parse_args()
    if not BIN.exists():
        raise SystemExit(f"{BIN} not found: run `cargo build --release` first")
    {"reconcile": cmd_reconcile, "settle-latency": cmd_settle_latency, "idle-cpu": cmd_idle_cpu}[args.cmd](args)


if __name__ == "__main__":
    main()
