//! The dashboard, served by the real binary (`polisd serve`, `polisd run`) on 127.0.0.1:0:
//! every page over HTTP, the event stream, the security checks (Host allow-list, token off
//! loopback, read-only, headers), hostile agent text, and the same in headless Chromium
//! (`browser_*`: Debian's `chromium` and `chromium-driver`, which `.ci/run` installs).
//!
//! This file holds the fixtures and the HTTP client every part uses; each module is one part:
//! pages over HTTP, the lessons index, limits, the daemon beside the dashboard, Chromium, the
//! export, a team-scale polis, the console, and hostile requests.

#[path = "../harness/mod.rs"]
mod harness;

mod chromium;
mod console;
mod hostile;
mod http;
mod lead;
mod lessons;
mod limits;
mod races;
mod refusals;
mod report;
mod team;
mod under_run;

pub(crate) use harness::{wait_until, TestPolis, BIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const FOUNDER: &str = "founder-one";
const ALPHA: &str = "alpha-agent";
const BRAVO: &str = "bravo-agent";

/// Agent text that would run script if any page let it through. Each sets `window.__pwned`.
const HOSTILE_TITLE: &str =
    "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">";
const HOSTILE_BODY: &str = "## Intent\n\n<script>window.__pwned=3</script>\n\n\
<img src=x onerror=\"window.__pwned=4\">\n\n[click me](javascript:window.__pwned=5)\n\n\
<a href=\"javascript:window.__pwned=6\" onclick=\"window.__pwned=7\">raw link</a>\n\n\
<svg onload=\"window.__pwned=8\"></svg>\n";

fn contract(
    id: &str,
    title: &str,
    owner: Option<&str>,
    status: &str,
    tags: &[&str],
    extra: &str,
    body: &str,
) -> String {
    let owner = owner.map_or("null".to_string(), str::to_string);
    let tags: Vec<String> = tags.iter().map(|t| format!("- {t}")).collect();
    format!(
        "---\ncontract_id: {id}\ntitle: '{}'\nopened_by: {FOUNDER}\nopened_at: '2026-01-05 10:00:00'\n\
         owner: {owner}\nstatus: {status}\nstakes: high\nrequired_tags:\n{}\n{extra}---\n{body}",
        title.replace('\'', "''"),
        tags.join("\n")
    )
}

fn settled(id: &str, owner: &str, tag: &str, quality: u8, day: u32) -> String {
    contract(
        id,
        &format!("settled work {id}"),
        Some(owner),
        "settled",
        &[tag],
        &format!("settled_at: '2026-02-{day:02} 12:00:00'\nquality_score: {quality}\nactual_minutes: 30\n"),
        "## Intent\n\nDone.\n",
    )
}

/// A polis with three citizens, settled history on two tags, open contracts (one hostile),
/// a proposed amendment short of quorum, and a chronicle with a bad line.
fn generated_polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    p.citizen(ALPHA, "openai", &[("rust", 4), ("docs", 3)], "medium");
    p.citizen(BRAVO, "google", &[("rust", 3)], "low");
    for (day, (owner, tag, q)) in (1u32..).zip([
        (ALPHA, "rust", 4),
        (BRAVO, "rust", 5),
        (ALPHA, "rust", 5),
        (BRAVO, "rust", 2),
        (ALPHA, "docs", 4),
    ]) {
        p.save(
            &format!("contracts/settled/done-{day}.md"),
            &settled(&format!("done-{day}"), owner, tag, q, day),
        );
    }
    p.save(
        "contracts/open/hostile-one.md",
        &contract(
            "hostile-one",
            HOSTILE_TITLE,
            Some(ALPHA),
            "claimed",
            &["rust"],
            "",
            HOSTILE_BODY,
        ),
    );
    p.save(
        "contracts/open/next-job.md",
        &contract(
            "next-job",
            "the next job",
            Some(BRAVO),
            "in_progress",
            &["rust"],
            "",
            "## Intent\n\nShip **it**.\n",
        ),
    );
    p.save(
        "amendments/proposed/quorum-rule.md",
        &format!(
            "---\namendment_id: quorum-rule\ntitle: a quorum rule\nproposed_by: {FOUNDER}\n\
             proposed_at: '2026-11-20 10:00:00'\nstatus: proposed\nexpires_at: '2099-01-01'\n---\n\nBody.\n"
        ),
    );
    p.append(
        "chronicle.md",
        &harness::chronicle_line(
            ALPHA,
            "claimed",
            "[[contracts/open/hostile-one]]",
            "<script>window.__pwned=9</script> note",
        ),
    );
    p.append("chronicle.md", "- this line is not a chronicle entry\n");
    p.save(
        &format!("citizens/{ALPHA}/inbox.md"),
        &format!("---\nfile_type: inbox\nowner: {ALPHA}\n---\n\n### 2026-11-30 10:00 from {BRAVO}\n\n<script>window.__pwned=10</script> hello [x](javascript:alert(1))\n\n---\n"),
    );
    p
}

// ---------------------------------------------------------------------------------------------
// A server under test and a minimal HTTP/1.1 client (the tests need exact control of Host).

/// A running `polisd serve`; it and everything it started are killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    url: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `second-rule`: proposed by the founder, agreed by alpha, quorum 2, so a tally would ratify
/// it.
fn amendment_at_quorum(p: &TestPolis) {
    p.save(
        "amendments/proposed/second-rule.md",
        &format!(
            "---\namendment_id: second-rule\ntitle: a second rule\nproposed_by: {FOUNDER}\n\
             proposed_at: '2026-11-20 10:00:00'\nstatus: proposed\nexpires_at: '2099-01-01'\n\
             quorum_required: 2\n---\n\nBody.\n\n## Response from {ALPHA} (agree)\n\nYes.\n"
        ),
    );
}

fn serve(p: &TestPolis, listen: &str) -> Server {
    serve_with(p, listen, "")
}

/// [`serve`] with more lines for the configuration's `[dashboard]` table.
fn serve_with(p: &TestPolis, listen: &str, dashboard: &str) -> Server {
    let config = p.dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!("[watch]\ndebounce = \"50ms\"\n\n[dashboard]\n{dashboard}\n"),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(&p.root)
        .args(["--listen", listen, "--json", "--config"])
        .arg(&config)
        .env("POLISD_STATE_DIR", &p.state_dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = stderr.clone();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| {
        panic!(
            "serve printed {line:?} ({e}); stderr: {}",
            stderr.lock().unwrap()
        )
    });
    let url = v["url"].as_str().unwrap().to_string();
    let port: u16 = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap();
    Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        url,
        stderr,
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn request(addr: SocketAddr, method: &str, path: &str, host: &str, extra: &str) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(server: &Server, path: &str) -> Reply {
    request(
        server.addr,
        "GET",
        path,
        &format!("127.0.0.1:{}", server.addr.port()),
        "",
    )
}
