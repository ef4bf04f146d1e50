//! Criterion benchmarks of the pure core: what each reaction of the daemon is made of.
//!
//!     cargo bench --bench core                 # all
//!     cargo bench --bench core -- reconcile    # one group
//!
//! Figures are for comparing builds on one machine; no test asserts a time.

use chrono::{NaiveDate, NaiveDateTime};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use polisd::protocol::amendments::amendment::{self, TallyContext};
use polisd::protocol::chronicle::{self, ChronicleContext};
use polisd::protocol::clock::{PolisTime, PolisZone};
use polisd::protocol::routing::stats::{self, Ledger, Settlement};
use polisd::yaml::Value;
use std::collections::BTreeSet;
use std::hint::black_box;

const OWNERS: [&str; 4] = [
    "claude-code-1",
    "codex-agent-2",
    "gemini-cli-03",
    "mistral-vibe-4",
];
const TAGS: [&str; 8] = [
    "python", "rust", "docs", "infra", "frontend", "data", "security", "review",
];

fn now() -> PolisTime {
    PolisTime {
        zone: PolisZone::default(),
        now: stamp(400_000),
    }
}

/// Minute `i` after 2026-01-01 00:00.
fn stamp(i: u64) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        + chrono::Duration::minutes(i as i64)
}

/// A deterministic spread of settlements (a cheap LCG: no RNG crate in the measured loop).
fn settlements(n: usize) -> Vec<Settlement> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize
    };
    (0..n)
        .map(|i| {
            let at = stamp(i as u64 * 7);
            let mut tags = vec![TAGS[next() % 8].to_string()];
            let second = TAGS[next() % 8].to_string();
            if !tags.contains(&second) && next() % 2 == 0 {
                tags.push(second);
            }
            Settlement {
                path: format!("contracts/settled/c-{i:06}.md"),
                owner: OWNERS[next() % 4].to_string(),
                tags,
                instant: Some(at),
                when_text: String::new(),
                last_completed: Some(at.to_string()[..10].to_string()),
                quality: (next() % 5 + 1) as u8,
                quality_defaulted: false,
                minutes: (next() % 240 + 5) as f64,
                ..Settlement::default()
            }
        })
        .collect()
}

const CONTRACT: &str = "---\ncontract_id: c-000042\ntitle: Contract 42\nopened_by: claude-code-1\n\
opened_at: 2026-01-03 10:42:00\nowner: codex-agent-2\nstatus: settled\nstakes: medium\n\
required_tags: [python, docs]\ncost_ceiling: medium\nsettled_at: 2026-01-03 12:00:00\n\
quality_score: 4\nactual_minutes: 75\n---\n\n## Intent\n\nDo the thing.\n\n## Settlement\n\nDone.\n";

/// A settled contract as `polisd contract open/claim/settle` (and the reference) write one:
/// quoted stamps and title, block lists, the `routing:` and `review:` blocks.
const POLISD_CONTRACT: &str = "---\ncontract_id: fix-the-parser-edge-cases\n\
title: 'Fix the parser: edge cases'\nopened_by: claude-code-1\nopened_at: '2026-12-01 15:08:35'\n\
owner: claude-code-1\nstatus: settled\nstakes: medium\nrequired_tags:\n- python\n- docs\n\
deadline: null\ncost_ceiling: medium\nacceptance_criteria:\n- tests pass\nrouting:\n  \
recommended_by_router: null\n  recommendation_score: null\n  exploration: null\n  override: null\n\
review:\n  required: false\n  reviewer: null\n  status: null\nsettled_at: \"2026-12-01 15:08:37\"\n\
quality_score: 4\nactual_minutes: 30\n---\n\n# Fix the parser: edge cases\n\n## Intent\n\n\
### Goal\n<what and why>\n\n## Settlement\n\nQuality self-score: 4\nactual_minutes: 30\n";

fn chronicle_lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{} | {} | settled | [[contracts/settled/c-{:06}]] | quality 4, 75 minutes\n",
                stamp(i as u64).format("%Y-%m-%d %H:%M"),
                OWNERS[i % 4],
                i
            )
        })
        .collect()
}

fn bench_chronicle(c: &mut Criterion) {
    let mut g = c.benchmark_group("chronicle");
    let text = chronicle_lines(1000);
    let lines = chronicle::scan(&text).lines;
    let registered: BTreeSet<String> = OWNERS.iter().map(|s| s.to_string()).collect();
    let is_registered = |id: &str| registered.contains(id);
    let link_exists = |_: &str| true;
    let ctx = ChronicleContext {
        path: "chronicle.md",
        is_registered: &is_registered,
        link_exists: &link_exists,
        newest_earlier: None,
        now: now(),
    };
    g.throughput(Throughput::Elements(lines.len() as u64));
    g.bench_function("scan_1k_lines", |b| {
        b.iter(|| chronicle::scan(black_box(&text)))
    });
    g.bench_function("validate_1k_lines", |b| {
        b.iter(|| chronicle::validate_all(black_box(&lines), &ctx))
    });
    g.finish();
}

fn bench_contract(c: &mut Criterion) {
    let mut g = c.benchmark_group("contract");
    g.throughput(Throughput::Bytes(CONTRACT.len() as u64));
    g.bench_function("frontmatter_yaml", |b| {
        b.iter(|| polisd::protocol::frontmatter::parse(black_box(CONTRACT)).unwrap())
    });
    g.bench_function("read_settled", |b| {
        b.iter(|| {
            polisd::protocol::contracts::contract::read_settled(
                "contracts/settled/c-000042.md",
                black_box(CONTRACT),
                PolisZone::default(),
            )
        })
    });
    // What a settled file's read adds for SPEC §6 (`published::read_settled`), on a clean one.
    g.bench_function("record_check_settled", |b| {
        let record = polisd::protocol::frontmatter::parse(CONTRACT).unwrap();
        b.iter(|| {
            polisd::operations::records::settled_contract_findings(
                "contracts/settled/c-000042.md",
                "c-000042",
                black_box(CONTRACT),
                &record,
            )
        })
    });
    g.bench_function("yaml_load_only", |b| {
        let yaml = CONTRACT.split("---\n").nth(1).unwrap();
        b.iter(|| polisd::yaml::load(black_box(yaml)).unwrap())
    });
    // The same text through yaml-rust2's events (what `yaml_load_only` cost before the plain
    // reader), and polisd's own shape of settled contract both ways.
    g.bench_function("yaml_load_full", |b| {
        let yaml = CONTRACT.split("---\n").nth(1).unwrap();
        b.iter(|| polisd::yaml::load_full(black_box(yaml)).unwrap())
    });
    g.bench_function("read_settled_polisd_shape", |b| {
        b.iter(|| {
            polisd::protocol::contracts::contract::read_settled(
                "contracts/settled/fix-the-parser-edge-cases.md",
                black_box(POLISD_CONTRACT),
                PolisZone::default(),
            )
        })
    });
    g.bench_function("yaml_polisd_shape_plain", |b| {
        let yaml = POLISD_CONTRACT.split("---\n").nth(1).unwrap();
        b.iter(|| polisd::yaml::load(black_box(yaml)).unwrap())
    });
    g.bench_function("yaml_polisd_shape_full", |b| {
        let yaml = POLISD_CONTRACT.split("---\n").nth(1).unwrap();
        b.iter(|| polisd::yaml::load_full(black_box(yaml)).unwrap())
    });
    g.finish();
}

fn bench_reconcile(c: &mut Criterion) {
    let mut g = c.benchmark_group("reconcile");
    g.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let all = settlements(n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("full_render", n), &all, |b, all| {
            b.iter(|| {
                let s = stats::reconcile(black_box(all), &Value::Null, &Value::Null);
                stats::render(&s).unwrap()
            })
        });
        // The daemon's case: one settlement newer than all others on a warm ledger.
        let mut ledger = Ledger::new();
        for s in &all {
            ledger.insert(s.clone());
        }
        ledger.stats(&Value::Null, &Value::Null);
        let newest = {
            let mut s = all[0].clone();
            s.path = "contracts/settled/zz-new.md".into();
            let at = stamp(n as u64 * 7 + 1);
            s.instant = Some(at);
            s.when_text = at.to_string();
            s
        };
        g.bench_with_input(
            BenchmarkId::new("ledger_newest_render", n),
            &newest,
            |b, s| {
                b.iter_batched_ref(
                    || ledger.clone(),
                    |l| {
                        l.insert(s.clone());
                        stats::render(&l.stats(&Value::Null, &Value::Null)).unwrap()
                    },
                    BatchSize::LargeInput,
                )
            },
        );
        // A late sync: one settlement older than all others (replays its tags).
        let oldest = {
            let mut s = newest.clone();
            s.path = "contracts/settled/aa-late.md".into();
            let at = stamp(0) - chrono::Duration::days(1);
            s.instant = Some(at);
            s.when_text = at.to_string();
            s
        };
        g.bench_with_input(
            BenchmarkId::new("ledger_oldest_render", n),
            &oldest,
            |b, s| {
                b.iter_batched_ref(
                    || ledger.clone(),
                    |l| {
                        l.insert(s.clone());
                        stats::render(&l.stats(&Value::Null, &Value::Null)).unwrap()
                    },
                    BatchSize::LargeInput,
                )
            },
        );
    }
    g.finish();
}

fn bench_content_hash(c: &mut Criterion) {
    let card = "agent_id: claude-code-1\nvendor: anthropic\nmodel: claude\ncapability_tags:\n  python:\n    self_rating: 5\n  rust:\n    self_rating: 4\n  docs:\n    self_rating: 3\ncost_envelope:\n  relative: medium\ncontent_hash: sha256:0000\n";
    let value = polisd::yaml::load(card).unwrap();
    c.bench_function("content_hash", |b| {
        b.iter(|| polisd::protocol::citizens::card::content_hash(black_box(&value)).unwrap())
    });
}

fn bench_tally(c: &mut Criterion) {
    let voters: Vec<String> = (0..40).map(|i| format!("citizen-agent-{i:02}")).collect();
    let text = format!(
        "---\namendment_id: AMD-2026-001\ntitle: A rule\nproposed_by: {}\nproposed_at: 2026-01-01 10:00:00\n\
         status: proposed\nquorum_required: majority\nexpires_at: 2027-01-01\nvotes:\n  agree: [{}]\n  disagree: [{}]\n---\n\nBody.\n",
        voters[0],
        voters[..15].join(", "),
        voters[30..].join(", ")
    );
    let a = amendment::parse(&text, "AMD-2026-001").unwrap();
    let registered: BTreeSet<String> = voters.iter().cloned().collect();
    let active = registered.clone();
    let away = BTreeSet::new();
    let ctx = TallyContext {
        registered: &registered,
        active: &active,
        away: &away,
        departed: &away,
        now: now(),
    };
    c.bench_function("tally_40_citizens", |b| {
        b.iter(|| amendment::tally(black_box(&a), &ctx))
    });
    let chron = chronicle_lines(100_000);
    c.bench_function("active_authors_100k_lines", |b| {
        b.iter(|| chronicle::activity::active_authors(&[black_box(chron.as_str())], &now()))
    });
}

/// A page of the dashboard over a polis with 10,000 settled contracts (under
/// 20 ms): each page rendered from a snapshot, and the first page after a change (one settled
/// file rewritten) under `polisd run` (the snapshot built from what the engine published after
/// its pass; the pass itself is the daemon's work and is not timed) and under `polisd serve`
/// (the view re-reads the file the watcher named), against reading the whole folder again.
fn bench_dashboard(c: &mut Criterion) {
    use criterion::BatchSize;
    use polisd::daemon::engine::{Engine, EngineOptions, Trigger};
    use polisd::dashboard::{pages, render, view};
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("POLISD_STATE_DIR", dir.path().join("state"));
    let root = dir.path().join("_polis");
    for d in ["contracts/settled", "contracts/open", "citizens"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("CONSTITUTION.md"), "# Constitution\n").unwrap();
    let citizens = ["alpha-agent", "bravo-agent", "charlie-agent", "delta-agent"];
    for id in citizens {
        std::fs::create_dir_all(root.join("citizens").join(id)).unwrap();
        std::fs::write(
            root.join(format!("citizens/{id}/capability_card.yml")),
            format!("agent_id: {id}\nvendor: other\nmodel: m\ncapability_tags:\n  rust:\n    self_rating: 3\n    evidence: x\n"),
        )
        .unwrap();
    }
    let tags = ["rust", "docs", "infra", "review", "tests"];
    let settled = |i: usize, quality: usize| {
        format!(
            "---\ncontract_id: c-{i:05}\ntitle: work {i}\nopened_by: alpha-agent\nowner: {}\nstatus: settled\n\
             required_tags:\n- {}\nsettled_at: '2026-{:02}-{:02} 10:00:00'\nquality_score: {}\nactual_minutes: 30\n---\n\n## Intent\n\nx\n",
            citizens[i % 4],
            tags[i % 5],
            1 + (i / 28) % 12,
            1 + i % 28,
            quality
        )
    };
    for i in 0..10_000usize {
        std::fs::write(
            root.join(format!("contracts/settled/c-{i:05}.md")),
            settled(i, 1 + (i * 7) % 5),
        )
        .unwrap();
    }
    let (tx, rx) = tokio::sync::watch::channel(polisd::daemon::Change::default());
    let v = view::PolisView::new(&root, rx);
    let snapshot = v.current();
    let picker = vec![("/p/0/".to_string(), "bench".to_string())];
    let none = std::collections::HashMap::new();
    let mut group = c.benchmark_group("dashboard_10k_settled");
    group.sample_size(20);
    for page in pages::PAGES.iter().filter(|p| p.nav.is_some()) {
        group.bench_function(page.route, |b| {
            b.iter(|| render(page, &v, &snapshot, 0, &picker, &none, &none, ""))
        });
    }
    let mut params = std::collections::HashMap::new();
    params.insert("id".to_string(), "alpha-agent".to_string());
    group.bench_function("/citizens/{id}", |b| {
        b.iter(|| {
            render(
                &pages::citizen::PAGE,
                &v,
                &snapshot,
                0,
                &picker,
                &params,
                &none,
                "",
            )
        })
    });
    group.bench_function("/api/state", |b| {
        b.iter(|| polisd::dashboard::api::state("bench", &snapshot).to_string())
    });
    let mut first_page = std::collections::HashMap::new();
    first_page.insert("limit".to_string(), "1000".to_string());
    group.bench_function("/api/replay (1,000 settlements)", |b| {
        b.iter(|| polisd::dashboard::api::replay(&snapshot, &first_page).map(|v| v.to_string()))
    });
    params.insert("id".to_string(), "c-00042".to_string());
    group.bench_function("/contracts/{id} (settled)", |b| {
        b.iter(|| {
            render(
                &pages::contract::PAGE,
                &v,
                &snapshot,
                0,
                &picker,
                &params,
                &none,
                "",
            )
        })
    });
    drop(snapshot);

    // One settled file rewritten per iteration (its quality moves), then the overview.
    let mut n = 0usize;
    let base = root.clone();
    let mut rewrite = move || {
        n += 1;
        let i = (n * 37) % 10_000;
        let rel = format!("contracts/settled/c-{i:05}.md");
        std::fs::write(base.join(&rel), settled(i, 1 + n % 5)).unwrap();
        rel
    };

    // `polisd serve`: the watcher names the path; the next page re-reads that file.
    group.bench_function("first_overview_after_a_change/serve", |b| {
        b.iter_batched(
            &mut rewrite,
            |rel| {
                v.note_changed(Some([rel.as_str()]));
                tx.send_modify(|c| c.generation += 1);
                let s = v.current();
                render(&pages::overview::PAGE, &v, &s, 0, &picker, &none, &none, "")
            },
            BatchSize::PerIteration,
        )
    });

    // `polisd run`: the engine's pass (not timed) publishes its state; the page builds on it.
    let config = polisd::daemon::config::Config::default();
    let mut engine = Engine::open(&root, EngineOptions::from(config.effective_for(&root))).unwrap();
    engine.set_publishing(true);
    engine.handle(&Trigger::Rescan, chrono::Utc::now()).unwrap();
    group.bench_function("first_overview_after_a_change/run", |b| {
        b.iter_batched(
            || {
                let rel = rewrite();
                engine
                    .handle(
                        &Trigger::Paths(vec![std::path::PathBuf::from(&rel)]),
                        chrono::Utc::now(),
                    )
                    .unwrap();
                engine.published().unwrap()
            },
            |state| {
                tx.send_modify(|c| {
                    c.generation += 1;
                    c.state = Some(state);
                });
                let s = v.current();
                render(&pages::overview::PAGE, &v, &s, 0, &picker, &none, &none, "")
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
    let mut slow = c.benchmark_group("dashboard_10k_settled_full_read");
    slow.sample_size(10);
    slow.bench_function("read_whole_folder", |b| b.iter(|| view::read(&root, 0)));
    slow.finish();
}

/// The reservation rules on a file of 300 entries (plain paths and globs from three citizens):
/// parsing, one `reserve` check, and the daemon's all-pairs overlap scan.
fn bench_reservations(c: &mut Criterion) {
    use polisd::protocol::contracts::reservation as r;
    let mut text = String::from("reservations:\n");
    for i in 0..300 {
        let path = if i % 2 == 1 {
            format!("src/mod{i}/**/*.rs")
        } else {
            format!("docs/part{i}.md")
        };
        text.push_str(&format!(
            "- citizen: agent-number-{}\n  paths:\n  - {path}\n  reserved_at: '2026-03-02T10:00:00+00:00'\n  expires_at: null\n",
            i % 3
        ));
    }
    let zone = polisd::protocol::clock::PolisZone::default();
    c.bench_function("reservations_parse_300", |b| {
        b.iter(|| r::parse(Some(black_box(&text)), zone).unwrap())
    });
    let entries = r::parse(Some(&text), zone).unwrap();
    let paths = vec!["src/mod7/net/http.rs".to_string(), "bench/dir".to_string()];
    c.bench_function("reservations_conflicts_300", |b| {
        b.iter(|| {
            r::conflicts(
                black_box(&entries),
                "agent-number-9",
                &paths,
                r::aware_now(&now()),
            )
        })
    });
    c.bench_function("reservations_overlapping_300", |b| {
        b.iter(|| r::overlapping(black_box(&entries), &now()))
    });
}

/// The durable ledger of settled contracts as a command run with no daemon reads it (the file
/// in the page cache): mapped, its SHA-256 checked, decoded into records.
fn bench_ledger(c: &mut Criterion) {
    use polisd::fs::state::{read_ledger_in, Fingerprint, LedgerFile, Restored, SettledRecord};
    let mut g = c.benchmark_group("ledger");
    g.sample_size(20);
    for n in [10_000usize, 100_000] {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("project").join("_polis");
        std::fs::create_dir_all(&root).unwrap();
        let records: Vec<SettledRecord> = settlements(n)
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let fingerprint = Fingerprint {
                    size: 700 + (i % 97) as u64,
                    mtime_ns: 1_780_000_000_000_000_000 + i as i64 * 7_000_000_000,
                    ctime_ns: 1_780_000_000_000_000_000 + i as i64 * 7_000_000_001,
                    mode: 0o100644,
                    ino: 10_000_000 + i as u64,
                };
                SettledRecord::of(&s.path, &fingerprint, false, Some(s.view()))
            })
            .collect();
        let lock = LedgerFile::lock_in(base.path(), &root)
            .unwrap()
            .expect("no daemon runs");
        let (mut file, _) = lock.restore(None);
        file.write_snapshot(0, records.iter().map(SettledRecord::as_ref))
            .unwrap();
        drop(file);
        let dir = polisd::fs::state::polis_state_dir(base.path(), &root.canonicalize().unwrap());
        assert!(matches!(read_ledger_in(&dir).0, Restored::Records { .. }));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("read_snapshot", n), &dir, |b, dir| {
            b.iter(|| read_ledger_in(black_box(dir)))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_reservations,
    bench_chronicle,
    bench_contract,
    bench_reconcile,
    bench_ledger,
    bench_content_hash,
    bench_tally,
    bench_dashboard
);
criterion_main!(benches);
