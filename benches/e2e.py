#!/usr/bin/env python3
"""End-to-end measurements of the real `polisd` binary, beside the Python reference in the same run.

Not a test: nothing here asserts a time. Each measurement prints its figures; compare runs on the
same machine only.

    benches/e2e.py all [--quick]                     # every target of issue 6, one table
    benches/e2e.py reconcile --contracts 10000      # polisd reconcile vs reference reconcile
    benches/e2e.py settle-latency --contracts 10000 --settlements 200 --debounce 50ms
    benches/e2e.py chronicle-latency --lines 1000000 --appends 100 --debounce 50ms
    benches/e2e.py startup --contracts 100000
    benches/e2e.py idle-cpu --seconds 60
    benches/e2e.py generate OUT --contracts 10000 --chronicle-lines 100000
    benches/e2e.py commands --contracts 10000 --rounds 30   # each agents' command, vs the reference

`all` generates polises of 1k, 10k and 100k settled contracts and chronicles of 100k and 1M
lines, runs the reference and polisd on the same files in the same run, and prints ratios and
the read-everything floor. The reference needs about 1 s per 1k contracts, so its 100k run takes
a couple of minutes; `--quick` stops the reference at 10k (polisd still runs 100k).

Build first: `cargo build --release`. The reference comes from `.venv/bin/python` (made by
`.ci/run`) or $POLISD_REFERENCE_PYTHON.
"""
import argparse
import contextlib
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
# `POLISD_BENCH_LOG=debug` keeps the daemon's per-pass timings in its log (POLISD_BENCH_KEEP keeps the folder).
LOG_LEVEL = os.environ.get("POLISD_BENCH_LOG", "info")
BIN = Path(os.environ.get("POLISD_BIN", REPO / "target" / "release" / "polisd"))
PY = os.environ.get("POLISD_REFERENCE_PYTHON") or next(
    (p for p in (str(REPO / ".venv" / "bin" / "python"), "/tmp/refvenv/bin/python") if Path(p).exists()),
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


def polisd(*args, **kw):
    return subprocess.run([str(BIN), *args], check=True, capture_output=True, text=True, **kw)


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


def measure_reconcile(root: Path, repeat: int, reference: bool = True) -> dict:
    ours = timed([str(BIN), "reconcile", str(root)], repeat=repeat)
    # The reference takes minutes on 100k contracts: one run there is plenty.
    big = sum(1 for _ in (root / "contracts" / "settled").iterdir()) > 50000
    ref = timed([PY, "-c", REF_RECONCILE, str(root)], repeat=1 if big else repeat) if reference else None
    floor = min(read_floor(root) for _ in range(repeat))
    return {"ours": ours, "ref": ref, "floor": floor}


def cmd_reconcile(args):
    with workdir() as tmp:
        root = make_polis(Path(tmp), args.contracts)
        r = measure_reconcile(root, args.repeat)
        ours, ref, floor = r["ours"], r["ref"], r["floor"]
        print(f"reconcile of {args.contracts} settled contracts (best of {args.repeat}):")
        print(f"  polisd    {ours * 1000:9.1f} ms")
        print(f"  reference {ref * 1000:9.1f} ms   -> polisd is {ref / ours:.1f}x faster")
        print(f"  read floor{floor * 1000:9.1f} ms   -> polisd is {ours / floor:.1f}x the floor")


def spawn_daemon(root: Path, tmp: Path, debounce: str, state: Path, log: Path):
    """`polisd run` on `root` with its own configuration, state folder and log."""
    config = tmp / f"{log.stem}.toml"
    config.write_text(f'[watch]\ndebounce = "{debounce}"\n\n[log]\nlevel = "{LOG_LEVEL}"\n')
    env = dict(os.environ, POLISD_STATE_DIR=str(state))
    with open(log, "w") as err:
        return subprocess.Popen([str(BIN), "run", str(root), "--config", str(config)], env=env,
                                stdout=subprocess.DEVNULL, stderr=err)


def start_daemon(root: Path, tmp: Path, debounce: str, until: str = "watching"):
    log = tmp / "daemon.log"
    proc = spawn_daemon(root, tmp, debounce, tmp / "state", log)
    deadline = time.time() + 60
    while until not in log.read_text():
        if time.time() > deadline or proc.poll() is not None:
            raise SystemExit("daemon did not start; see " + str(log))
        time.sleep(0.01)
    return proc


READY = "initial scan done"


def percentiles(samples):
    samples = sorted(samples)
    p = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1000
    return {"p50": p(0.50), "p90": p(0.90), "p99": p(0.99), "max": samples[-1] * 1000}


def settle_samples(root: Path, tmp: Path, settlements: int, debounce: str) -> list:
    polisd("reconcile", str(root))
    rng = random.Random(11)
    proc = start_daemon(root, tmp, debounce, until=READY)
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


def chronicle_samples(root: Path, tmp: Path, appends: int, debounce: str) -> list:
    """Append one line that breaks C008 (an uppercase verb) and wait for its finding in the
    author's inbox: the line was read, validated and reported."""
    import datetime
    proc = start_daemon(root, tmp, debounce, until=READY)
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


def cmd_chronicle_latency(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, 0, chronicle_lines=args.lines)
        p = percentiles(chronicle_samples(root, tmp, args.appends, args.debounce))
        print(f"line appended -> validated and its finding in the inbox, {args.appends} appends to a "
              f"{args.lines}-line chronicle, debounce {args.debounce}:")
        print(f"  p50 {p['p50']:.1f} ms   p90 {p['p90']:.1f} ms   p99 {p['p99']:.1f} ms   max {p['max']:.1f} ms")


def measure_startup(root: Path, tmp: Path, fresh: bool = True) -> dict:
    """Seconds from spawn to "watching" and to the end of the initial scan, on a polis polisd
    has never met (fresh state directory), or with `fresh=False` on a restart (the state of the
    previous run kept)."""
    state = tmp / "state-startup"
    if fresh:
        shutil.rmtree(state, ignore_errors=True)
    logp = tmp / "startup.log"
    out = {}
    t0 = time.perf_counter()
    proc = spawn_daemon(root, tmp, "50ms", state, logp)
    try:
        while "scan" not in out:
            text = logp.read_text()
            if "watch" not in out and "watching" in text:
                out["watch"] = time.perf_counter() - t0
            if READY in text:
                out["scan"] = time.perf_counter() - t0
            if time.perf_counter() - t0 > 300 or proc.poll() is not None:
                raise SystemExit("daemon did not start; see " + str(logp))
            time.sleep(0.002)
        out["rss_kib"] = rss_kib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    return out


def cmd_startup(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        s = measure_startup(root, tmp)
        print(f"start-up on {args.contracts} settled contracts: watching after {s['watch']:.2f} s, "
              f"initial scan done after {s['scan']:.2f} s, RSS {s['rss_kib'] / 1024:.1f} MiB")


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


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
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


def measure_idle(root: Path, tmp: Path, seconds: int) -> dict:
    proc = start_daemon(root, tmp, "200ms", until=READY)
    try:
        time.sleep(2)
        c0, w0, t0 = cpu_seconds(proc.pid), wakeups(proc.pid), time.perf_counter()
        time.sleep(seconds)
        c1, w1, t1 = cpu_seconds(proc.pid), wakeups(proc.pid), time.perf_counter()
        rss = rss_kib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    # Context switches of all threads over the window: an idle daemon should add almost none.
    return {"cpu": c1 - c0, "wakeups": w1 - w0, "wakeups_per_s": (w1 - w0) / (t1 - t0),
            "rss_kib": rss}


def cmd_idle_cpu(args):
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp, args.contracts)
        m = measure_idle(root, tmp, args.seconds)
        print(f"idle for {args.seconds} s with {args.contracts} settled contracts: "
              f"{m['cpu']:.3f} s CPU, {m['wakeups']} wake-ups ({m['wakeups_per_s']:.1f}/s), "
              f"RSS {m['rss_kib'] / 1024:.1f} MiB")


def read_file_floor(path: Path, repeat: int = 3) -> float:
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        path.read_bytes()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def cmd_all(args):
    """Every figure of issue 6 part 4 in one run, printed as one table."""
    sizes = [1000, 10000, 100000]
    ref_limit = 10000 if args.quick else 100000
    rows = []

    def row(what, ours, ref="—", ratio="—", note=""):
        rows.append((what, ours, ref, ratio, note))
        print(f"  {what}: polisd {ours}  reference {ref}  {ratio}  {note}", flush=True)

    with workdir() as tmp:
        tmp = Path(tmp)
        polises = {}
        for n in sizes:
            t0 = time.perf_counter()
            polises[n] = make_polis(tmp / f"p{n}", n)
            print(f"generated {n} settled contracts in {time.perf_counter() - t0:.1f} s", flush=True)
        for n in sizes:
            r = measure_reconcile(polises[n], args.repeat, reference=n <= ref_limit)
            ours, ref, floor = r["ours"], r["ref"], r["floor"]
            row(f"`polisd reconcile`, {n // 1000}k settled", f"{ours * 1000:.0f} ms",
                f"{ref * 1000:.0f} ms" if ref else "not run (--quick)",
                f"{ref / ours:.1f}x faster" if ref else "—",
                f"read floor {floor * 1000:.0f} ms: {ours / floor:.1f}x the floor")
        for n in [10000, 100000]:
            d = tmp / f"settle{n}"
            d.mkdir()
            shutil.copytree(polises[n].parent, d / "project", symlinks=True)
            root = d / "project" / "_polis"
            p = percentiles(settle_samples(root, d, args.settlements, args.debounce))
            row(f"settle -> `routing_stats.yml`, {n // 1000}k settled (debounce {args.debounce})",
                f"p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms",
                "a full reconcile per change (row above)", "—",
                f"target p99 <= debounce + 20 ms")
        for lines in [100000, 1000000]:
            d = tmp / f"chron{lines}"
            d.mkdir()
            root = make_polis(d, 0, chronicle_lines=lines)
            floor = read_file_floor(root / "chronicle.md")
            p = percentiles(chronicle_samples(root, d, args.appends, args.debounce))
            row(f"chronicle line appended -> validated, {lines // 1000}k lines (debounce {args.debounce})",
                f"p50 {p['p50']:.0f} ms, p99 {p['p99']:.0f} ms", "no chronicle validation", "—",
                f"reading the file once: {floor * 1000:.0f} ms; target p99 < debounce + 5 ms")
        for fresh, what in [(True, "first meeting"), (False, "restart")]:
            s = measure_startup(polises[100000], tmp, fresh=fresh)
            row(f"start-up of `polisd run`, 100k settled, {what}",
                f"watching {s['watch']:.2f} s, scan done {s['scan']:.2f} s", "no daemon", "—",
                f"RSS after the scan {s['rss_kib'] / 1024:.0f} MiB; target < 3 s")
        d = tmp / "idle"
        d.mkdir()
        shutil.copytree(polises[10000].parent, d / "project", symlinks=True)
        m = measure_idle(d / "project" / "_polis", d, args.seconds)
        row(f"idle {args.seconds} s, 10k settled",
            f"{m['cpu']:.3f} s CPU, {m['wakeups']} wake-ups ({m['wakeups'] / args.seconds:.2f}/s)",
            "no daemon", "—", "target < 0.1 s")
        row("resident memory, 10k settled", f"{m['rss_kib'] / 1024:.1f} MiB", "no daemon", "—", "target < 25 MB")

    print()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"polisd {BIN}; reference {PY}")
    print("| measure | polisd | reference | ratio | notes |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")



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


def command_rounds(root: Path, rounds: int, env: dict) -> dict:
    """Runs every agents' command `rounds` times on `root`; wall time of each process."""
    samples = {}

    def run(name, *args):
        t0 = time.perf_counter()
        subprocess.run([str(BIN), *args, "--polis", str(root)], check=True, capture_output=True, env=env)
        samples.setdefault(name, []).append(time.perf_counter() - t0)

    for k in range(rounds):
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
        run("contract settle", "contract", "settle", cid, "--quality", "4", "--minutes", "10")
        run("contract open (2)", "contract", "open", "--title", f"Dropped {k}", "--by", CITIZENS[0])
        run("contract abandon", "contract", "abandon", f"dropped-{k}", "--reason", "bench")
    return samples


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
    `--chronicle-lines`, with a daemon running (so `settle` leaves the stats to it), then
    `settle` without a daemon (it reconciles itself). The reference runs its CLI for the same
    actions on a copy in the same run."""
    with workdir() as tmp:
        tmp = Path(tmp)
        root = make_polis(tmp / "ours", args.contracts, chronicle_lines=args.chronicle_lines)
        ref_root = make_polis(tmp / "ref", args.contracts)
        polisd("reconcile", str(root))
        env = dict(os.environ, POLISD_STATE_DIR=str(tmp / "state"))
        proc = start_daemon(root, tmp, "50ms", until=READY)
        try:
            ours = command_rounds(root, args.rounds, env)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        # Without a daemon, settle also rebuilds routing_stats.yml from every settled file.
        for k in range(min(args.rounds, 10)):
            polisd("contract", "open", "--title", f"Alone {k}", "--by", CITIZENS[0], "--polis", str(root), env=env)
            polisd("contract", "claim", f"alone-{k}", "--as", CITIZENS[1], "--polis", str(root), env=env)
            t0 = time.perf_counter()
            polisd("contract", "settle", f"alone-{k}", "--quality", "3", "--polis", str(root), env=env)
            ours.setdefault("contract settle, no daemon (+ reconcile)", []).append(time.perf_counter() - t0)
        ref = ref_rounds(ref_root, args.rounds) if Path(PY).exists() else {}
    print(f"agents' commands, {args.contracts} settled contracts, chronicle {args.chronicle_lines} lines, "
          f"{args.rounds} rounds (ms, whole process)")
    print("| command | polisd p50 | p90 | max | reference p50 | ratio |")
    print("|---|---|---|---|---|---|")
    for name, xs in ours.items():
        p = percentiles(xs)
        key = name.replace(" (2)", "")
        r = percentiles(ref[key])["p50"] if key in ref else None
        ratio = f"{r / p['p50']:.0f}x" if r else "—"
        rtext = f"{r:.1f}" if r else "—"
        print(f"| {name} | {p['p50']:.1f} | {p['p90']:.1f} | {p['max']:.1f} | {rtext} | {ratio} |")

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
    u = sub.add_parser("startup")
    u.add_argument("--contracts", type=int, default=100000)
    g = sub.add_parser("generate")
    g.add_argument("out")
    g.add_argument("--contracts", type=int, default=10000)
    g.add_argument("--chronicle-lines", type=int, default=0)
    m = sub.add_parser("commands")
    m.add_argument("--contracts", type=int, default=10000)
    m.add_argument("--chronicle-lines", type=int, default=100000)
    m.add_argument("--rounds", type=int, default=30)
    a = sub.add_parser("all")
    a.add_argument("--quick", action="store_true", help="run the reference up to 10k contracts only")
    a.add_argument("--repeat", type=int, default=3)
    a.add_argument("--settlements", type=int, default=100)
    a.add_argument("--appends", type=int, default=300)
    a.add_argument("--debounce", default="50ms")
    a.add_argument("--seconds", type=int, default=60)
    args = ap.parse_args()
    if not BIN.exists():
        raise SystemExit(f"{BIN} not found: run `cargo build --release` first")
    if not Path(PY).exists() and args.cmd in ("reconcile", "all"):
        raise SystemExit(f"no reference at {PY}: run .ci/run's setup or set POLISD_REFERENCE_PYTHON")
    {"reconcile": cmd_reconcile, "settle-latency": cmd_settle_latency, "idle-cpu": cmd_idle_cpu,
     "chronicle-latency": cmd_chronicle_latency, "startup": cmd_startup, "generate": cmd_generate,
     "commands": cmd_commands, "all": cmd_all}[args.cmd](args)


if __name__ == "__main__":
    main()
