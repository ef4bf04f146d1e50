//! The dashboard beside a running daemon (`polisd run`): handoffs, councils, the queue, and the
//! findings about settled files the engine keeps.

use super::chromium::{browser, chromedriver, runtime, text_of};
use super::*;

#[test]
fn polisd_run_serves_the_dashboard_and_status_prints_its_url() {
    let p = generated_polis();
    let daemon = p.start_daemon();
    let mut url = None;
    wait_until(
        "daemon.json with the dashboard",
        Duration::from_secs(30),
        || {
            url = p.daemon_status().and_then(|d| d.dashboard);
            url.is_some()
        },
    );
    let url = url.unwrap();
    let port: u16 = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let r = request(addr, "GET", "/p/0/", &format!("127.0.0.1:{port}"), "");
    assert_eq!(r.status, 200, "{}", daemon.log_text());
    let status = p.polisd(&["status", p.root.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&status.stdout);
    assert!(out.contains(&format!("dashboard {url}")), "{out}");
}

/// The dashboard's address under `polisd run`, from `daemon.json`.
pub(crate) fn daemon_dashboard(p: &TestPolis) -> SocketAddr {
    dashboard_where(p, None)
}

/// The dashboard's address in `daemon.json`, once it names one (and, given `pid`, is that
/// daemon's).
fn dashboard_where(p: &TestPolis, pid: Option<u32>) -> SocketAddr {
    let mut url = None;
    wait_until(
        "daemon.json with the dashboard",
        Duration::from_secs(30),
        || {
            url = p
                .daemon_status()
                .filter(|d| pid.is_none_or(|pid| d.pid == pid))
                .and_then(|d| d.dashboard);
            url.is_some()
        },
    );
    let port: u16 = url
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    SocketAddr::from(([127, 0, 0, 1], port))
}

pub(crate) fn get_at(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, &format!("127.0.0.1:{}", addr.port()), "")
}

/// The text of the element with `id` (its opening tag to the next closing `</section>`,
/// `</table>`, `</p>` or `</ul>`), for assertions about one part of a page.
pub(crate) fn part<'a>(html: &'a str, id: &str) -> &'a str {
    let Some(start) = html.find(&format!("id=\"{id}\"")) else {
        return "";
    };
    let rest = &html[start..];
    let end = ["</section>", "</table>", "</p>", "</ul>"]
        .iter()
        .filter_map(|t| rest.find(t))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn handoffs_under_polisd_run_show_the_chain_dependencies_and_queue_items() {
    let p = generated_polis();
    p.save(
        "contracts/open/waits-for-client.md",
        &contract(
            "waits-for-client",
            "after the client",
            None,
            "proposed",
            &["rust"],
            "depends_on: [design-api-next-1]\n",
            "## Intent\n\nLater.\n",
        ),
    );
    let daemon = p.start_daemon();
    let addr = daemon_dashboard(&p);
    // A settlement with three suggestions (one accepted, one refused by the chain rules, one
    // for a citizen who does not exist) and a new citizen asked for.
    let settlement = format!(
        "## Intent\n\nDesign it.\n\n## Settlement\n\nDone.\n\n\
         ### Suggested next citizen\n- **Citizen**: {BRAVO}\n- **Reason**: Write the client\n- **Context**: api.md\n\n\
         ### Suggested next citizen\n- **Citizen**: {ALPHA}\n- **Reason**: Review my own work\n\n\
         ### Suggested next citizen\n- **Citizen**: ghost-agent\n- **Reason**: Haunt it\n\n\
         ### Suggested new citizen\n- **Need**: legal review\n- **Reason**: nobody reads licences\n- **Suggested role**: counsel\n"
    );
    p.save(
        "contracts/settled/design-api.md",
        &contract(
            "design-api",
            "design the api",
            Some(ALPHA),
            "settled",
            &["rust"],
            "settled_at: '2026-02-20 12:00:00'\nquality_score: 4\nactual_minutes: 30\n",
            &settlement,
        ),
    );
    wait_until(
        "the follow-up opened by the daemon",
        Duration::from_secs(30),
        || p.exists("contracts/open/design-api-next-1.md"),
    );
    let mut page = String::new();
    wait_until(
        "the parent's page shows the dispatch",
        Duration::from_secs(30),
        || {
            page = get_at(addr, "/p/0/contracts/design-api").body;
            part(&page, "followups").contains("design-api-next-1")
        },
    );
    let followups = part(&page, "followups");
    assert!(
        followups.contains("/p/0/contracts/design-api-next-1"),
        "{followups}"
    );
    assert!(followups.contains("already owns a step"), "{followups}");
    assert!(
        followups.contains("not a registered citizen"),
        "{followups}"
    );
    assert!(
        part(&page, "citizens-needed").contains("legal review"),
        "{page}"
    );

    let child = get_at(addr, "/p/0/contracts/design-api-next-1").body;
    assert!(
        part(&child, "parent").contains("design-api</a> (settled)"),
        "{child}"
    );
    assert!(part(&child, "chain").contains(ALPHA), "{child}");
    assert!(part(&child, "depends-on").contains("design-api"), "{child}");
    assert!(part(&child, "readiness").contains("Ready"), "{child}");
    assert!(
        part(&child, "unblocks").contains("waits-for-client"),
        "{child}"
    );
    let waiting = get_at(addr, "/p/0/contracts/waits-for-client").body;
    let readiness = part(&waiting, "readiness");
    assert!(
        readiness.contains("Not ready") && readiness.contains("design-api-next-1"),
        "{waiting}"
    );

    // The refused and skipped suggestions and the new citizen wait for a person.
    let mut queue = String::new();
    wait_until(
        "the human queue lists the handoff notices",
        Duration::from_secs(30),
        || {
            queue = part(&get_at(addr, "/p/0/").body, "queue").to_string();
            queue.matches("data-key=\"notice/").count() >= 2
                && queue.contains("data-key=\"new-citizen/")
        },
    );
    assert!(queue.contains("were not opened"), "{queue}");
    assert!(queue.contains("A new citizen is asked for in"), "{queue}");
    assert!(
        queue.contains("polisd queue answer new-citizen/"),
        "{queue}"
    );
    drop(daemon);
}

/// A duo council run by the daemon, watched on the councils page: its seats and open round,
/// then the decision with the chairman's verdict rendered (its agent text escaped), and the
/// contract page's link to it.
#[test]
fn a_council_under_polisd_run_shows_its_rounds_then_its_verdict() {
    const CHARLIE: &str = "charlie-agent";
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "anthropic", &[("arch", 5)], "medium");
    p.citizen(BRAVO, "openai", &[("arch", 4)], "medium");
    p.citizen(CHARLIE, "google", &[("arch", 3)], "medium");
    let cid = "cache-duo";
    p.save(
        &format!("contracts/open/{cid}.md"),
        &contract(
            cid,
            "replace the cache",
            None,
            "proposed",
            &["arch"],
            "council:\n  mode: duo\n  round_hours: 2\n",
            "## Intent\n\nReplace it.\n",
        ),
    );
    let daemon = p.start_daemon();
    let addr = daemon_dashboard(&p);
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    ok(p.polisd(&["contract", "claim", cid, "--as", FOUNDER]));
    let councils = || get_at(addr, "/p/0/councils").body;
    wait_until("the council on the page", Duration::from_secs(30), || {
        councils().contains("restating the question (before 3 rounds) open until")
    });
    let status: serde_json::Value =
        serde_json::from_slice(&ok(p.polisd(&["council", "status", cid, "--json"])).stdout)
            .unwrap();
    let seats: Vec<String> = status["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    let page = councils();
    for seat in &seats {
        assert!(page.contains(&format!("citizens/{seat}\"")), "{page}");
    }
    assert!(page.contains("not written yet"), "{page}");
    for n in 0..=3 {
        wait_until(&format!("round {n} open"), Duration::from_secs(30), || {
            let out = p.polisd(&["council", "status", cid, "--json"]);
            serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok_and(|v| v["round"] == n)
        });
        for seat in &seats {
            let file = p.dir.path().join(format!("{seat}-{n}.md"));
            std::fs::write(&file, format!("My view, round {n}: keep it simple.\n")).unwrap();
            ok(p.polisd(&[
                "council",
                "write",
                cid,
                "--as",
                seat,
                file.to_str().unwrap(),
            ]));
        }
        if n >= 1 {
            wait_until(
                &format!("round {n} closed"),
                Duration::from_secs(30),
                || p.exists(&format!("reviews/{cid}/round-{n}-packet.md")),
            );
        }
    }
    wait_until("the verdict asked for", Duration::from_secs(30), || {
        councils().contains("waiting for the chairman")
    });
    p.save(
        &format!("reviews/{cid}/verdict.md"),
        &format!(
            "---\ndecision: signed_off\n---\n\n## Panel and mode\nDuo.\n\n## Chairman\nThe chair.\n\n\
             ## Acceptable compromises\n- keep the old cache behind a flag\n\n## Kill criteria\n\
             - If p95 latency rises above 200 ms by 2027-01-15, invalidated → roll back to the old cache\n\n\
             ## Concrete next step\n- Write the migration plan {HOSTILE_TITLE}\n\n## Unresolved questions\n- none\n\n\
             ## Key agreements\n- the cache must go\n\n## Key disagreements\n- the TTL\n\n\
             ## Decision options\n- ship now: fast, risky\n- ship after a canary: slower, safer\n\n\
             ## Confidence\nmedium, because the load test was small.\n"
        ),
    );
    wait_until("the decision on the page", Duration::from_secs(30), || {
        councils().contains("Decided <strong>signed_off</strong>")
    });
    let page = councils();
    assert!(
        page.contains("Write the migration plan"),
        "the verdict rendered: {page}"
    );
    assert!(
        !page.contains("<script>window"),
        "agent text escaped: {page}"
    );
    assert!(!page.contains("<img src=x"), "agent text escaped: {page}");
    let contract_page = get_at(addr, &format!("/p/0/contracts/{cid}")).body;
    assert!(
        part(&contract_page, "council").contains(&format!("councils#council-{cid}")),
        "{contract_page}"
    );
    // And in a browser, the verdict's markup stays text.
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("http://{addr}/p/0/councils"))
            .await
            .unwrap();
        c.execute(
            "return new Promise(r => setTimeout(() => r(1), 300))",
            vec![],
        )
        .await
        .unwrap();
        assert_eq!(
            text_of(&c, "return String(window.__pwned)").await,
            "undefined"
        );
        assert_eq!(
            text_of(&c, "return String(document.scripts.length)").await,
            "1"
        );
        let verdict = text_of(
            &c,
            "return document.querySelector('section.council details').textContent",
        )
        .await;
        assert!(
            verdict.contains("<script>window.__pwned=1</script>"),
            "{verdict}"
        );
        c.close().await.unwrap();
    });
    drop(daemon);
}

#[test]
fn a_ratified_setting_change_and_a_settled_conflict_copy_wait_in_the_queue() {
    let p = generated_polis();
    p.save(
        "amendments/ratified/raise-explore.md",
        &format!(
            "---\namendment_id: raise-explore\ntitle: explore more\nproposed_by: {FOUNDER}\n\
             proposed_at: '2026-11-20 10:00:00'\nstatus: ratified\nratified_at: '2026-11-25 10:00:00'\n\
             setting_change:\n  key: routing.explore_rate\n  from: 0.15\n  to: 0.3\n---\n\nBody.\n"
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let queue = part(&get(&s, "/p/0/").body, "queue").to_string();
    assert!(
        queue.contains(r#"data-key="setting/raise-explore/routing.explore_rate=0.3""#),
        "{queue}"
    );
    assert!(
        queue.contains("set <code>routing.explore_rate</code> to 0.3"),
        "{queue}"
    );
    let settings = p
        .read("polis.yml")
        .replace("explore_rate: 0.15", "explore_rate: 0.3");
    p.save("polis.yml", &settings);
    wait_until("the item to clear", Duration::from_secs(20), || {
        !get(&s, "/p/0/").body.contains("data-key=\"setting/")
    });
    // A sync-conflict copy among the settled contracts (a folder the view lists again only
    // when it changed) shows up too.
    // Written in place, as a sync tool does (no rename, which the watcher may report as a
    // change of the folder): seen from the copy's own event, with no other change after it.
    std::fs::write(
        p.path("contracts/settled/done-1.sync-conflict-20261130-101010-ABCDEF.md"),
        settled("done-1", ALPHA, "rust", 1, 1),
    )
    .unwrap();
    wait_until(
        "the conflict copy in the queue",
        Duration::from_secs(20),
        || {
            get(&s, "/p/0/").body.contains(
            "data-key=\"conflict/contracts/settled/done-1.sync-conflict-20261130-101010-ABCDEF.md\"",
        )
        },
    );
}

/// Two settled contracts that break SPEC §6: `bad-one` is counted (an id that is not its file
/// name, a typo of a key, an owner with no card) and `bad-two` is not (a status that does not
/// belong in `settled/`).
pub(crate) const BAD_ONE: &str = "contracts/settled/bad-one.md";
pub(crate) const BAD_TWO: &str = "contracts/settled/bad-two.md";

pub(crate) fn save_bad_settled(p: &TestPolis) {
    let one = settled("other-id", "ghost-agent", "rust", 4, 6)
        .replace("actual_minutes:", "actual_minuts:");
    p.save(BAD_ONE, &one);
    p.save(
        BAD_TWO,
        &settled("bad-two", ALPHA, "rust", 3, 7).replace("status: settled", "status: claimed"),
    );
}

/// A finding as the pages and `check` print it: code, `path[:line]`, message.
type Shown = (String, String, String);

/// `polisd check --json`'s findings about settled files, sorted.
fn settled_findings_of_check(p: &TestPolis) -> Vec<Shown> {
    let out = p.polisd(&["check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check --json: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let mut found: Vec<Shown> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .starts_with("contracts/settled/")
        })
        .map(|f| {
            let line = f["line"]
                .as_u64()
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            (
                f["code"].as_str().unwrap().to_string(),
                format!("{}{line}", f["path"].as_str().unwrap()),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    found.sort();
    found
}

fn unescape(html: &str) -> String {
    html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The overview's findings table rows about settled files, sorted.
fn settled_findings_on_overview(html: &str) -> Vec<Shown> {
    let start = html.find("id=\"findings\"").unwrap_or(html.len());
    let section = &html[start..];
    let section = &section[..section.find("</section>").unwrap_or(section.len())];
    let mut found: Vec<Shown> = section
        .split("<tr class=")
        .skip(1)
        .filter_map(|row| {
            let cells: Vec<String> = row
                .split("<td>")
                .skip(1)
                .map(|c| unescape(c.split("</td>").next().unwrap_or("")))
                .collect();
            match &cells[..] {
                [code, at, what] if at.starts_with("contracts/settled/") => {
                    Some((code.clone(), at.clone(), what.clone()))
                }
                _ => None,
            }
        })
        .collect();
    found.sort();
    found
}

/// The human queue's keys of findings about settled files, sorted.
fn settled_findings_in_queue(html: &str) -> Vec<String> {
    let mut keys: Vec<String> = part(html, "queue")
        .split("data-key=\"")
        .skip(1)
        .filter_map(|k| k.split('"').next())
        .filter(|k| k.starts_with("finding/") && k.contains("/contracts/settled/"))
        .map(str::to_string)
        .collect();
    keys.sort();
    keys
}

/// The queue keys `check`'s findings give (`queue::file_findings`: code, path, line).
fn queue_keys_of(found: &[Shown]) -> Vec<String> {
    let mut keys: Vec<String> = found
        .iter()
        .map(|(code, at, _)| {
            let (path, line) = match at.rsplit_once(':') {
                Some((path, l)) => (path, format!("Some({l})")),
                None => (at.as_str(), "None".to_string()),
            };
            format!("finding/{code}/{path}/{line}")
        })
        .collect();
    keys.sort();
    keys
}

/// The dashboard of the daemon running as `daemon` (not an earlier one's `daemon.json`).
pub(crate) fn dashboard_of(p: &TestPolis, daemon: &harness::Daemon) -> SocketAddr {
    let pid = daemon.child.id();
    dashboard_where(p, Some(pid))
}

#[test]
fn findings_about_settled_files_are_those_of_check_under_run_after_a_restart_serve_and_report() {
    let p = generated_polis();
    save_bad_settled(&p);
    let expected = settled_findings_of_check(&p);
    let codes: Vec<&str> = expected.iter().map(|(c, _, _)| c.as_str()).collect();
    for code in ["P016", "P017", "P018"] {
        assert!(codes.contains(&code), "check reports {code}: {expected:?}");
    }
    // Whether a settled contract's citizens are registered is not a fact about its bytes
    // (docs/protocol.md, P019): not reported for a settled file, by check or the dashboard.
    assert!(!codes.contains(&"P019"), "{expected:?}");
    let keys = queue_keys_of(&expected);

    let daemon = p.start_daemon();
    let page = get_at(dashboard_of(&p, &daemon), "/p/0/").body;
    assert_eq!(settled_findings_on_overview(&page), expected, "{page}");
    assert_eq!(settled_findings_in_queue(&page), keys, "{page}");

    // A restart reads the files with findings again (the ledger flags them): still shown.
    drop(daemon);
    let daemon = p.start_daemon();
    let page = get_at(dashboard_of(&p, &daemon), "/p/0/").body;
    assert_eq!(
        settled_findings_on_overview(&page),
        expected,
        "after a restart: {page}"
    );
    assert_eq!(
        settled_findings_in_queue(&page),
        keys,
        "after a restart: {page}"
    );

    // Fixed on disk while the daemon runs: its findings go, the other file's stay.
    p.save(BAD_ONE, &settled("bad-one", ALPHA, "rust", 4, 6));
    let addr = dashboard_of(&p, &daemon);
    let left: Vec<Shown> = expected
        .iter()
        .filter(|(_, at, _)| !at.starts_with(BAD_ONE))
        .cloned()
        .collect();
    assert!(
        !left.is_empty() && left.len() < expected.len(),
        "{expected:?}"
    );
    wait_until(
        "the fixed file's findings to leave the overview",
        Duration::from_secs(20),
        || settled_findings_on_overview(&get_at(addr, "/p/0/").body) == left,
    );
    assert_eq!(settled_findings_of_check(&p), left);
    assert_eq!(
        settled_findings_in_queue(&get_at(addr, "/p/0/").body),
        queue_keys_of(&left)
    );
    drop(daemon);

    // Without a daemon: `polisd serve` and `polisd report` show the same.
    save_bad_settled(&p);
    assert_eq!(settled_findings_of_check(&p), expected);
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/").body;
    assert_eq!(
        settled_findings_on_overview(&page),
        expected,
        "serve: {page}"
    );
    assert_eq!(settled_findings_in_queue(&page), keys, "serve: {page}");
    let md = String::from_utf8(p.polisd(&["report", "--format", "md"]).stdout).unwrap();
    for (code, at, _) in &expected {
        assert!(
            md.contains(&format!("| {code} | {at} |")),
            "report: {code} {at}: {md}"
        );
    }
}

#[test]
fn beside_the_daemon_pages_come_from_the_engine_without_reading_settled_files() {
    use polisd::daemon::engine::{Engine, EngineOptions, Trigger};
    let p = generated_polis();
    // This test alone runs the engine in this process.
    std::env::set_var("POLISD_STATE_DIR", &p.state_dir);
    let config = polisd::daemon::config::Config::default();
    let mut engine =
        Engine::open(&p.root, EngineOptions::from(config.effective_for(&p.root))).unwrap();
    engine.handle(&Trigger::Rescan, chrono::Utc::now()).unwrap();
    assert!(
        engine.published().is_none(),
        "nothing is kept while nobody reads it"
    );
    engine.set_publishing(true);
    engine.handle(&Trigger::Rescan, chrono::Utc::now()).unwrap();
    let state = engine.published().expect("a pass publishes its state");
    assert_eq!(state.settled.len(), 5);
    // Not the chronicle: the engine appends to its copy in place, which a shared text forbids.
    assert!(state.polis.chronicle.is_none());
    assert!(state
        .polis
        .contracts
        .iter()
        .all(|c| c.folder != polisd::protocol::layout::ContractFolder::Settled));
    // The settled files are gone: what the pages show of them comes from the engine.
    std::fs::rename(p.path("contracts/settled"), p.dir.path().join("moved-away")).unwrap();
    let (tx, rx) = tokio::sync::watch::channel(polisd::daemon::Change::default());
    let view = polisd::dashboard::view::PolisView::new(&p.root, rx);
    tx.send_modify(|c| {
        c.generation = 1;
        c.state = Some(state);
    });
    let snapshot = view.current();
    assert_eq!(snapshot.summary.contracts.settled, 5);
    assert_eq!(snapshot.settled_count(), 5);
    let rust = snapshot.stats.tag("rust").expect("the rust tag");
    assert_eq!(rust.citizens.len(), 2);
    let (_, history) = snapshot
        .history()
        .iter()
        .find(|(t, _)| t == "rust")
        .unwrap();
    assert_eq!(
        history
            .series
            .iter()
            .map(|(_, pts)| pts.len())
            .sum::<usize>(),
        4
    );
    // The chronicle, which the engine does not hand over, is read by the view itself, for the
    // build only: the snapshot keeps what it found, and the chronicle page reads the file.
    assert_eq!(snapshot.chronicle_files, ["chronicle.md"]);
    assert!(snapshot.polis.chronicle.is_none());
    let none = std::collections::HashMap::new();
    let render = |page| polisd::dashboard::render(page, &view, &snapshot, 0, &[], &none, &none, "");
    let (status, html) = render(&polisd::dashboard::pages::chronicle::PAGE);
    assert_eq!(status, 200);
    assert!(html.contains("window.__pwned=9"), "{html}");
    let (status, html) = render(&polisd::dashboard::pages::overview::PAGE);
    assert_eq!(status, 200);
    assert!(html.contains(r#"id="count-settled">5<"#), "{html}");
    drop(tx);
}

#[test]
fn a_busy_port_is_one_warning_not_a_failed_start() {
    let p = generated_polis();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    std::fs::write(
        p.dir.path().join("polisd.toml"),
        format!("[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:{port}\"\n"),
    )
    .unwrap();
    let daemon = p.start_daemon();
    let log = daemon.log_text();
    assert_eq!(log.matches("dashboard not started").count(), 1, "{log}");
    // The status file follows the pass that logged "initial scan done" by a moment.
    harness::wait_until("the daemon's status file", harness::DEADLINE, || {
        p.daemon_status().is_some()
    });
    assert!(p.daemon_status().is_some_and(|d| d.dashboard.is_none()));
}
