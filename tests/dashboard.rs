//! The dashboard, served by the real binary (`polisd serve`, `polisd run`) on 127.0.0.1:0:
//! every page over HTTP, the event stream, the security checks (Host allow-list, token off
//! loopback, read-only, headers), hostile agent text, and the same in headless Chromium
//! (`browser_*`: Debian's `chromium` and `chromium-driver`, which `.ci/run` installs).

mod harness;

use harness::{wait_until, TestPolis, BIN};
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

// ---------------------------------------------------------------------------------------------
// HTTP

#[test]
fn every_page_renders_the_generated_polis() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/");
    assert_eq!(overview.status, 200, "{}", overview.body);
    let b = &overview.body;
    assert!(b.contains(r#"id="count-settled">5<"#), "{b}");
    assert!(b.contains(ALPHA) && b.contains(BRAVO), "{b}");
    assert!(b.contains("quorum-rule") && b.contains("<progress"), "{b}");
    assert!(b.contains("Waiting for a person"), "{b}");
    assert!(
        b.contains("is claimed with no reviewer"),
        "the high-stakes contract: {b}"
    );
    assert!(b.contains("has 1 of"), "the vote short of quorum: {b}");

    let tags = get(&s, "/p/0/tags");
    assert_eq!(tags.status, 200);
    assert!(tags.body.contains("<svg"), "a chart: {}", tags.body);
    assert!(tags.body.contains("Leader changes"), "{}", tags.body);

    let chronicle = get(&s, "/p/0/chronicle");
    assert_eq!(chronicle.status, 200);
    assert!(
        chronicle.body.contains("<tr class=\"finding\""),
        "the bad line is marked: {}",
        chronicle.body
    );
    let filtered = get(&s, &format!("/p/0/chronicle?citizen={ALPHA}"));
    assert!(
        filtered.body.contains("1 of 1 matching lines (3 in all)"),
        "{}",
        filtered.body
    );
    assert!(
        !filtered.body.contains("founded polis</td>"),
        "{}",
        filtered.body
    );

    let c = get(&s, "/p/0/contracts/next-job");
    assert_eq!(c.status, 200);
    assert!(
        c.body.contains("<strong>it</strong>"),
        "markdown body: {}",
        c.body
    );
    assert!(
        c.body.contains("Score breakdown"),
        "routing explanation: {}",
        c.body
    );

    let citizen = get(&s, &format!("/p/0/citizens/{ALPHA}"));
    assert_eq!(citizen.status, 200);
    assert!(
        citizen.body.contains("id=\"hash-state\""),
        "{}",
        citizen.body
    );
    assert!(
        citizen.body.contains("Inbox (1 unread)"),
        "{}",
        citizen.body
    );

    assert_eq!(get(&s, "/p/0/contracts/no-such").status, 404);
    assert_eq!(get(&s, "/p/7/").status, 404);
    assert_eq!(get(&s, "/static/live.js").status, 200);
}

#[test]
fn hostile_agent_text_is_escaped_on_every_page() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    for path in [
        "/p/0/".to_string(),
        "/p/0/contracts/hostile-one".to_string(),
        "/p/0/chronicle".to_string(),
        format!("/p/0/citizens/{ALPHA}"),
    ] {
        let r = get(&s, &path);
        assert_eq!(r.status, 200, "{path}");
        let only_ours = r.body.matches("<script").count() == 1
            && r.body
                .contains(r#"<script src="/static/live.js" defer></script>"#);
        assert!(only_ours, "{path}: a <script> got through: {}", r.body);
        for tag in tags_of(&r.body) {
            let t = tag.to_ascii_lowercase();
            for bad in ["<img", " onerror", " onclick", " onload", "javascript:"] {
                assert!(!t.contains(bad), "{path}: {bad} got through in {tag}");
            }
        }
    }
}

/// Every tag of an HTML text, `<` to `>` (text never holds a raw `<`: it is escaped).
fn tags_of(html: &str) -> Vec<&str> {
    html.split('<')
        .skip(1)
        .map(|rest| &rest[..rest.find('>').unwrap_or(rest.len())])
        .map(|t| &html[t.as_ptr() as usize - html.as_ptr() as usize - 1..][..t.len() + 1])
        .collect()
}

#[test]
fn security_headers_and_read_only() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let r = get(&s, "/p/0/");
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("referrer-policy"), Some("same-origin"));
    let host = format!("127.0.0.1:{}", s.addr.port());
    let post = request(s.addr, "POST", "/p/0/", &host, "Content-Length: 0\r\n");
    assert_eq!(post.status, 405);
    assert!(
        post.header("content-security-policy").is_some(),
        "refusals carry the headers too"
    );
}

#[test]
fn a_rebinding_host_gets_403() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let port = s.addr.port();
    let r = request(
        s.addr,
        "GET",
        "/p/0/",
        &format!("attacker.example:{port}"),
        "",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(!r.body.contains(ALPHA), "nothing of the polis in a refusal");
    assert_eq!(
        request(s.addr, "GET", "/p/0/", &format!("localhost:{port}"), "").status,
        200
    );
}

#[test]
fn off_loopback_without_the_token_gets_401() {
    let p = generated_polis();
    let s = serve(&p, "0.0.0.0:0");
    let host = format!("127.0.0.1:{}", s.addr.port());
    let r = request(s.addr, "GET", "/p/0/", &host, "");
    assert_eq!(r.status, 401, "{}", r.body);
    let mut token = String::new();
    wait_until("the token on stderr", Duration::from_secs(10), || {
        let e = s.stderr.lock().unwrap();
        match e.split("?token=").nth(1) {
            Some(rest) => {
                token = rest.split_whitespace().next().unwrap_or("").to_string();
                true
            }
            None => false,
        }
    });
    assert_eq!(token.len(), 48, "{}", s.stderr.lock().unwrap());
    assert_eq!(
        s.stderr.lock().unwrap().matches(&token).count(),
        1,
        "the token is printed exactly once: {}",
        s.stderr.lock().unwrap()
    );
    assert_eq!(
        s.url,
        format!("http://0.0.0.0:{}/", s.addr.port()),
        "the URL names the address bound"
    );
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r = request(
            s.addr,
            "GET",
            "/p/0/",
            &host,
            &format!("Authorization: {scheme} {token}\r\n"),
        );
        assert_eq!(r.status, 200, "{scheme}: {}", r.body);
    }
    let r = request(s.addr, "GET", &format!("/p/0/?token={token}"), &host, "");
    assert_eq!(r.status, 200);
    let cookie = r.header("set-cookie").unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let by_cookie = request(
        s.addr,
        "GET",
        "/p/0/tags",
        &host,
        &format!("Cookie: polisd_token={token}\r\n"),
    );
    assert_eq!(by_cookie.status, 200);
    let wrong = request(
        s.addr,
        "GET",
        "/p/0/",
        &host,
        "Authorization: Bearer 00\r\n",
    );
    assert_eq!(wrong.status, 401);
}

/// A request for polis 0's event stream, sent; reads wait at most 200 ms.
fn event_stream(s: &Server) -> TcpStream {
    let mut stream = TcpStream::connect(s.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    write!(
        stream,
        "GET /p/0/events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\n\r\n",
        s.addr.port()
    )
    .unwrap();
    stream
}

#[test]
fn the_event_stream_reports_a_settlement() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let mut stream = event_stream(&s);
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let mut read_some = |seen: &mut String| {
        if let Ok(n) = stream.read(&mut buf) {
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    };
    wait_until("the stream's headers", Duration::from_secs(10), || {
        read_some(&mut seen);
        seen.contains("\r\n\r\n")
    });
    assert!(seen.contains("text/event-stream"), "{seen}");
    p.mv(
        "contracts/open/next-job.md",
        "contracts/settled/next-job.md",
    );
    // The first change event may be about another path (the stats file the daemon rewrites);
    // wait for the one that names the moved contract.
    wait_until(
        "a change event naming the contract",
        Duration::from_secs(20),
        || {
            read_some(&mut seen);
            seen.contains("event: change")
                && (seen.contains("contracts/settled/next-job.md")
                    || seen.contains("contracts/open/next-job.md"))
        },
    );
    assert!(
        seen.contains("contracts/settled/next-job.md")
            || seen.contains("contracts/open/next-job.md"),
        "{seen}"
    );
    let overview = get(&s, "/p/0/");
    assert!(
        overview.body.contains(r#"id="count-settled">6<"#),
        "{}",
        overview.body
    );
}

// ---------------------------------------------------------------------------------------------
// Limits: a visitor cannot starve the server or the daemon beside it.

/// Whether `stream` (non-blocking) has been closed by the server: end of file or a reset.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn five_hundred_partial_headers_are_closed_within_ten_seconds_while_the_daemon_works() {
    let p = generated_polis();
    let daemon = p.start_daemon();
    let addr = daemon_dashboard(&p);
    assert_eq!(get_at(addr, "/p/0/").status, 200);
    let started = Instant::now();
    let mut partial: Vec<TcpStream> = (0..500)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            // A connection over the cap is answered and closed at once: writing may fail.
            let _ = write!(
                s,
                "GET /p/0/ HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Slow: ",
                addr.port()
            );
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    // The daemon goes on reacting to files while the dashboard is flooded.
    p.save(
        "contracts/settled/during-flood.md",
        &settled("during-flood", ALPHA, "floodtag", 4, 20),
    );
    let mut open = partial.len();
    while open > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{open} of 500 partial requests still open after 10 s"
        );
        open = partial
            .iter_mut()
            .filter_map(|s| (!closed_by_server(s)).then_some(()))
            .count();
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_until(
        "the daemon to count the contract settled during the flood",
        Duration::from_secs(20),
        || p.read("contracts/routing_stats.yml").contains("floodtag"),
    );
    let after = get_at(addr, "/p/0/");
    assert_eq!(after.status, 200, "{}", daemon.log_text());
}

#[test]
fn connections_and_event_streams_over_their_caps_get_503() {
    let p = generated_polis();
    let s = serve_with(
        &p,
        "127.0.0.1:0",
        "max_connections = 8\nmax_event_streams = 2",
    );
    let open_stream = || {
        let mut stream = event_stream(&s);
        let mut seen = String::new();
        let mut buf = [0u8; 4096];
        wait_until("the stream's headers", Duration::from_secs(10), || {
            if let Ok(n) = stream.read(&mut buf) {
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            seen.contains("\r\n\r\n")
        });
        (stream, seen)
    };
    let (_first, a) = open_stream();
    let (_second, b) = open_stream();
    assert!(
        a.starts_with("HTTP/1.1 200") && b.starts_with("HTTP/1.1 200"),
        "{a}\n{b}"
    );
    let (_third, c) = open_stream();
    assert!(c.starts_with("HTTP/1.1 503"), "{c}");
    assert!(c.contains("too many live-update streams"), "{c}");
    // Pages still work beside the open streams.
    assert_eq!(get(&s, "/p/0/").status, 200);
    // Eight connections held: the ninth is told so and closed.
    let held: Vec<TcpStream> = (0..6)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    let mut refused = String::new();
    wait_until(
        "a 503 for the connection over the cap",
        Duration::from_secs(10),
        || {
            let mut extra = TcpStream::connect(s.addr).unwrap();
            extra
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            refused.clear();
            let _ = extra.read_to_string(&mut refused);
            refused.starts_with("HTTP/1.1 503")
        },
    );
    assert!(refused.contains("too many open connections"), "{refused}");
    drop(held);
}

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
fn daemon_dashboard(p: &TestPolis) -> SocketAddr {
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

fn get_at(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, &format!("127.0.0.1:{}", addr.port()), "")
}

/// The text of the element with `id` (its opening tag to the next closing `</section>`,
/// `</table>`, `</p>` or `</ul>`), for assertions about one part of a page.
fn part<'a>(html: &'a str, id: &str) -> &'a str {
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
        councils().contains("restatement gate (round 0, before 3 rounds) open until")
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
        queue.contains("set `routing.explore_rate` to 0.3"),
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
const BAD_ONE: &str = "contracts/settled/bad-one.md";
const BAD_TWO: &str = "contracts/settled/bad-two.md";

fn save_bad_settled(p: &TestPolis) {
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
fn dashboard_of(p: &TestPolis, daemon: &harness::Daemon) -> SocketAddr {
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

// ---------------------------------------------------------------------------------------------
// Headless Chromium through chromedriver (WebDriver).

/// chromedriver in its own process group; the group (chromedriver and every Chromium process
/// it started) is killed when dropped, pass or fail.
struct Driver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) on our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn chromedriver() -> Driver {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new("chromedriver")
        .arg("--port=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("chromedriver is missing: install Debian's `chromium` and `chromium-driver` (.ci/run does)");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut port = None;
    let mut line = String::new();
    while port.is_none() && out.read_line(&mut line).unwrap_or(0) > 0 {
        port = line
            .split("started successfully on port ")
            .nth(1)
            .and_then(|r| r.trim().trim_end_matches('.').parse().ok());
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Driver {
        child,
        port: port.expect("chromedriver did not say its port"),
        _profile: tempfile::tempdir().unwrap(),
    }
}

const CHROMIUM_FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    // Containers give /dev/shm 64 MiB or less; the renderer then fails to start.
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
];

async fn browser(driver: &Driver) -> fantoccini::Client {
    browser_with(driver, true).await
}

/// A Chromium session; `javascript: false` turns scripts off for every page.
async fn browser_with(driver: &Driver, javascript: bool) -> fantoccini::Client {
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(format!(
        "--user-data-dir={}",
        driver._profile.path().display()
    ));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": "/usr/bin/chromium",
            "args": args,
            "prefs": { "profile.managed_default_content_settings.javascript": if javascript { 1 } else { 2 } },
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    fantoccini::ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("starting headless Chromium through chromedriver")
}

async fn text_of(c: &fantoccini::Client, script: &str) -> String {
    let v = c.execute(script, vec![]).await.unwrap();
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Marks the page in the browser, so that [`assert_not_reloaded`] can tell a live update from
/// a reload.
async fn mark_page(c: &fantoccini::Client) {
    c.execute("window.__marker = 'kept'; return 1", vec![])
        .await
        .unwrap();
}

/// The page [`mark_page`] marked is still the same document: it changed without a reload.
async fn assert_not_reloaded(c: &fantoccini::Client) {
    assert_eq!(
        text_of(c, "return String(window.__marker)").await,
        "kept",
        "the page was reloaded"
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn browser_overview_renders_then_follows_a_settlement_without_reload() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("{}p/0/", s.url)).await.unwrap();
        assert_eq!(
            text_of(
                &c,
                "return document.getElementById('count-settled').textContent"
            )
            .await,
            "5"
        );
        assert_eq!(
            text_of(
                &c,
                "return document.querySelectorAll('#citizens tbody tr').length"
            )
            .await,
            "3"
        );
        let png = c.screenshot().await.unwrap();
        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-overview.png");
        std::fs::write(&shot, &png).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");

        // The live script is connected; a marker shows the page is never reloaded.
        let start = Instant::now();
        loop {
            if text_of(&c, "return document.body.getAttribute('data-live') || ''").await == "on" {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the event stream never opened"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        mark_page(&c).await;
        let moved = Instant::now();
        p.mv(
            "contracts/open/next-job.md",
            "contracts/settled/next-job.md",
        );
        loop {
            if text_of(
                &c,
                "return document.getElementById('count-settled').textContent",
            )
            .await
                == "6"
            {
                break;
            }
            assert!(
                moved.elapsed() < Duration::from_secs(20),
                "the page never showed the settlement"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        eprintln!(
            "settlement on disk -> page updated in {:?}",
            moved.elapsed()
        );
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
}

/// Waits (up to 20 s) until `script` returns `want` (a string compared as is), else fails
/// with `what` and the last value.
async fn wait_for_text(
    c: &fantoccini::Client,
    script: &str,
    want: &dyn Fn(&str) -> bool,
    what: &str,
) {
    let start = Instant::now();
    loop {
        let got = text_of(c, script).await;
        if want(&got) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what}; the page shows: {got}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[test]
fn browser_findings_follow_the_chronicle_under_polisd_run() {
    // Beside the daemon the findings shown after a change are the ones of that change: a bad
    // chronicle line appears through the live update, and goes once a later line retracts it.
    let p = generated_polis();
    let daemon = p.start_daemon();
    let addr = daemon_dashboard(&p);
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("http://127.0.0.1:{}/p/0/", addr.port()))
            .await
            .unwrap();
        let findings = "return document.getElementById('findings').textContent";
        wait_for_text(
            &c,
            "return document.body.getAttribute('data-live') || ''",
            &|t| t == "on",
            "the event stream never opened",
        )
        .await;
        assert!(!text_of(&c, findings).await.contains("no-such-job"));
        mark_page(&c).await;
        p.append(
            "chronicle.md",
            &harness::chronicle_line(ALPHA, "claimed", "[[contracts/open/no-such-job]]", "mine"),
        );
        wait_for_text(
            &c,
            findings,
            &|t| t.contains("no-such-job"),
            "the bad line's finding never showed",
        )
        .await;
        let bad = p.read("chronicle.md").lines().count();
        p.append(
            "chronicle.md",
            &harness::chronicle_line(ALPHA, "retracted line", "-", &format!("line {bad}")),
        );
        wait_for_text(
            &c,
            findings,
            &|t| !t.contains("no-such-job"),
            "the retracted line's finding stayed",
        )
        .await;
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
    drop(daemon);
}

#[test]
fn browser_a_settled_file_s_findings_show_under_polisd_run_until_it_is_fixed() {
    // A settled contract is read once, into the daemon's ledger: its SPEC §6 findings come
    // with that read, appear on the overview and in the human queue, and go live once the
    // file is fixed.
    let p = generated_polis();
    save_bad_settled(&p);
    let daemon = p.start_daemon();
    let addr = dashboard_of(&p, &daemon);
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("http://127.0.0.1:{}/p/0/", addr.port()))
            .await
            .unwrap();
        let findings = "return document.getElementById('findings').textContent";
        let queue = "return Array.from(document.querySelectorAll('#queue [data-key]')).map(li => li.dataset.key).join(' ')";
        let shown = text_of(&c, findings).await;
        assert!(
            shown.contains("P016") && shown.contains(BAD_ONE) && shown.contains("make it `bad-one`"),
            "{shown}"
        );
        assert!(shown.contains("P018") && shown.contains(BAD_TWO), "{shown}");
        let keys = text_of(&c, queue).await;
        assert!(keys.contains(&format!("finding/P016/{BAD_ONE}/")), "{keys}");
        assert!(keys.contains(&format!("finding/P018/{BAD_TWO}/")), "{keys}");
        wait_for_text(
            &c,
            "return document.body.getAttribute('data-live') || ''",
            &|t| t == "on",
            "the event stream never opened",
        )
        .await;
        mark_page(&c).await;
        p.save(BAD_ONE, &settled("bad-one", ALPHA, "rust", 4, 6));
        wait_for_text(
            &c,
            findings,
            &|t| !t.contains(BAD_ONE) && t.contains(BAD_TWO),
            "the fixed file's findings stayed",
        )
        .await;
        wait_for_text(
            &c,
            queue,
            &|t| !t.contains(BAD_ONE) && t.contains(BAD_TWO),
            "the fixed file's queue items stayed",
        )
        .await;
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
    drop(daemon);
}

#[test]
fn browser_hostile_content_never_executes() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        for path in ["p/0/", "p/0/contracts/hostile-one", "p/0/chronicle", &format!("p/0/citizens/{ALPHA}")] {
            c.goto(&format!("{}{path}", s.url)).await.unwrap();
            // Give onerror/onload handlers their chance.
            c.execute("return new Promise(r => setTimeout(() => r(1), 300))", vec![]).await.unwrap();
            assert_eq!(text_of(&c, "return String(window.__pwned)").await, "undefined", "{path}");
            assert_eq!(text_of(&c, "return String(document.scripts.length)").await, "1", "{path}");
            assert_eq!(
                text_of(&c, "return String(document.querySelectorAll('[onerror],[onload],[onclick],a[href^=\"javascript\"],img').length)").await,
                "0",
                "{path}"
            );
        }
        // The hostile title is shown as text.
        c.goto(&format!("{}p/0/contracts/hostile-one", s.url)).await.unwrap();
        let h1 = text_of(&c, "return document.querySelector('h1').textContent").await;
        assert!(h1.starts_with("<script>"), "{h1}");
        c.close().await.unwrap();
    });
}

#[test]
fn browser_pages_work_without_javascript() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser_with(&driver, false).await;
        c.goto(&format!("{}p/0/chronicle", s.url)).await.unwrap();
        // The filter is a plain GET form: choosing and submitting works with scripts off.
        let select = c
            .find(fantoccini::Locator::Css("select[name=citizen]"))
            .await
            .unwrap();
        select.select_by_value(ALPHA).await.unwrap();
        c.find(fantoccini::Locator::Css("form.filter button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let start = Instant::now();
        while !c.current_url().await.unwrap().as_str().contains("citizen=") {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the form did not submit"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let rows = c
            .find_all(fantoccini::Locator::Css("#chronicle tbody tr[data-line]"))
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "only {ALPHA}'s line");
        let body = c.find(fantoccini::Locator::Css("body")).await.unwrap();
        assert_eq!(body.attr("data-live").await.unwrap(), None, "no script ran");
        // Links between pages are plain links too.
        c.find(fantoccini::Locator::Css("nav a[href$=tags]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let h1 = c
            .find(fantoccini::Locator::Css("h1"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(h1, "Tags");
        c.close().await.unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// Static export

#[test]
fn report_md_and_html_are_self_contained_and_redact_hides_ids_and_text() {
    let p = generated_polis();
    let md = p.polisd(&["report", p.root.to_str().unwrap(), "--format", "md"]);
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(
        md.contains("## Waiting for a person") && md.contains(ALPHA) && md.contains("the next job"),
        "{md}"
    );

    let out = p.dir.path().join("report.html");
    let html = p.polisd(&[
        "report",
        p.root.to_str().unwrap(),
        "--format",
        "html",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        html.status.success(),
        "{}",
        String::from_utf8_lossy(&html.stderr)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("<link"),
        "self-contained, no script: {html}"
    );
    assert!(
        html.contains("&lt;script&gt;"),
        "the hostile title is escaped: {html}"
    );

    let redacted = p.polisd(&["report", p.root.to_str().unwrap(), "--redact"]);
    let r = String::from_utf8(redacted.stdout).unwrap();
    for secret in [
        ALPHA,
        BRAVO,
        FOUNDER,
        "the next job",
        "next-job",
        "quorum-rule",
        "pwned",
    ] {
        assert!(!r.contains(secret), "{secret} in the redacted report: {r}");
    }
    assert!(r.contains("citizen-") && r.contains("contract-"), "{r}");
    let again = String::from_utf8(
        p.polisd(&["report", p.root.to_str().unwrap(), "--redact"])
            .stdout,
    )
    .unwrap();
    assert_eq!(
        r.lines()
            .filter(|l| l.contains("citizen-"))
            .collect::<Vec<_>>(),
        again
            .lines()
            .filter(|l| l.contains("citizen-"))
            .collect::<Vec<_>>(),
        "stable pseudonyms"
    );

    let inside = p.root.join("report.md");
    let refused = p.polisd(&[
        "report",
        p.root.to_str().unwrap(),
        "--out",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(!inside.exists(), "nothing written inside the polis");
}

#[test]
fn notify_command_runs_once_for_a_new_human_queue_item() {
    let p = generated_polis();
    let sink = p.dir.path().join("notified.txt");
    std::fs::write(
        p.dir.path().join("polisd.toml"),
        format!(
            "[watch]\ndebounce = \"50ms\"\n\n[log]\nlevel = \"debug\"\n\n[dashboard]\nlisten = \"127.0.0.1:0\"\n\
             notify_command = 'printf \"%s|%s\\n\" \"$POLISD_ITEM_TITLE\" \"$POLISD_ITEM_URL\" >> {}'\n",
            sink.display()
        ),
    )
    .unwrap();
    let daemon = p.start_daemon();
    // Items already waiting at start are not news.
    p.save(
        "contracts/open/urgent-fix.md",
        &contract(
            "urgent-fix",
            "urgent fix",
            Some(BRAVO),
            "claimed",
            &["rust"],
            "",
            "## Intent\n\nx\n",
        ),
    );
    wait_until(
        "the notify_command for the new item",
        Duration::from_secs(30),
        || std::fs::read_to_string(&sink).is_ok_and(|t| t.contains("urgent-fix")),
    );
    let text = std::fs::read_to_string(&sink).unwrap();
    assert_eq!(
        text.lines().count(),
        1,
        "only the new item: {text}\n{}",
        daemon.log_text()
    );
    assert!(text.contains("/p/0/contracts/urgent-fix"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// A team-scale polis: the overview a team lead keeps open.

const VENDORS: [&str; 4] = ["openai", "anthropic", "google", "mistral"];
const TEAM_TAGS: [&str; 4] = ["rust", "docs", "ops", "web"];

fn team_member(i: usize) -> String {
    format!("agent-{i:02}")
}

fn inbox_block(from: &str, stamp: &str, text: &str) -> String {
    format!("\n### {stamp} from {from}\n\n{text}\n\n---\n")
}

/// 12 citizens (the founder and 11 agents), 2,000 settled contracts over the last two weeks
/// (80 of them without a quality score: a week of P007 warnings), 80 open contracts in every
/// state, a guardrail, a reservation, a week of chronicle, and `agent-01` with three notices
/// of which it has read two.
fn team_polis() -> TestPolis {
    let p = TestPolis::init(FOUNDER);
    for i in 1..=11 {
        let tags: Vec<(&str, u8)> = TEAM_TAGS.iter().map(|t| (*t, 3 + (i % 3) as u8)).collect();
        p.citizen(&team_member(i), VENDORS[i % 4], &tags, "medium");
    }
    let today = chrono::Utc::now().date_naive();
    for i in 0..2000usize {
        let day = today - chrono::Duration::days((i % 14) as i64);
        let quality = if i % 25 == 0 {
            String::new()
        } else {
            format!("quality_score: {}\n", 2 + i % 4)
        };
        let id = format!("done-{i:04}");
        p.save(
            &format!("contracts/settled/{id}.md"),
            &contract(
                &id,
                &format!("settled work {i}"),
                Some(&team_member(1 + i % 11)),
                "settled",
                &[TEAM_TAGS[i % 4]],
                &format!("settled_at: '{day} 12:00:00'\n{quality}actual_minutes: 30\n"),
                "## Intent\n\nDone.\n",
            ),
        );
    }
    for i in 0..80usize {
        let (status, owner) = match i % 8 {
            0..=2 => ("claimed", Some(team_member(1 + i % 11))),
            3 | 4 => ("in_progress", Some(team_member(1 + i % 11))),
            5 => ("blocked", Some(team_member(1 + i % 11))),
            6 => ("under_review", Some(team_member(1 + i % 11))),
            _ => ("proposed", None),
        };
        let id = format!("open-{i:02}");
        p.save(
            &format!("contracts/open/{id}.md"),
            &contract(
                &id,
                &format!("open work {i}"),
                owner.as_deref(),
                status,
                &[TEAM_TAGS[i % 4]],
                "",
                "## Intent\n\nDo it.\n",
            ),
        );
    }
    let mut chronicle = String::new();
    let now = chrono::Utc::now().naive_utc();
    for i in 0..280i64 {
        let at = now - chrono::Duration::minutes(36 * (280 - i));
        chronicle.push_str(&format!(
            "- {} | {} | claimed | [[contracts/open/open-{:02}]] | week line {i}\n",
            at.format("%Y-%m-%d %H:%M"),
            team_member(1 + (i as usize) % 11),
            i % 80
        ));
    }
    p.append("chronicle.md", &chronicle);
    let agent = team_member(1);
    p.append(
        &format!("citizens/{agent}/inbox.md"),
        &(inbox_block(FOUNDER, "2026-11-30 10:00", "first note")
            + &inbox_block(FOUNDER, "2026-11-30 11:00", "second note")),
    );
    assert!(p
        .polisd(&["notices", "--as", &agent, "--mark-read"])
        .status
        .success());
    p.append(
        &format!("citizens/{agent}/inbox.md"),
        &inbox_block(FOUNDER, "2026-11-30 12:00", "third note, unread"),
    );
    let guardrail = p.polisd(&[
        "guardrail",
        "add",
        "--text",
        "Run the migrations twice",
        "--tags",
        "ops",
    ]);
    assert!(guardrail.status.success(), "{guardrail:?}");
    let reserve = p.polisd(&[
        "reserve",
        "src/auth.rs",
        "--as",
        &agent,
        "--note",
        "auth rework",
    ]);
    assert!(reserve.status.success(), "{reserve:?}");
    p
}

#[test]
fn the_team_overview_counts_from_claims_and_the_read_cursor_and_shows_what_is_in_force() {
    let p = team_polis();
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/");
    assert_eq!(page.status, 200);
    let b = &page.body;
    assert!(b.contains(r#"id="count-settled">2000<"#), "{b}");
    assert!(b.contains(r#"id="count-open">80<"#), "{b}");
    // agent-01 holds open-00 (claimed) among others; its row names one it works on.
    let row = b
        .split("data-citizen=\"agent-01\"")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or("");
    assert!(row.contains("/p/0/contracts/open-"), "{row}");
    assert!(row.contains("<td class=\"unread\">1</td>"), "{row}");
    // The queue comes in groups with counts, the P007 warnings as one group of 80.
    let queue = b.split("id=\"queue\"").nth(1).unwrap_or("");
    let queue = &queue[..queue.find("</section>").unwrap_or(queue.len())];
    assert!(
        queue.contains("Warnings P007 <span class=\"count\">80</span>"),
        "{queue}"
    );
    assert!(b.contains("data-guardrail="), "the guardrail in force: {b}");
    assert!(part(b, "guardrails").contains("Run the migrations twice"));
    assert!(part(b, "reservations").contains("src/auth.rs"), "{b}");
    // Search finds a contract, a lesson-free polis's chronicle, and a settled id.
    let found = get(&s, "/p/0/search?q=week+line+27");
    assert!(part(&found.body, "chronicle-hits").contains("week line 27"));
    let found = get(&s, "/p/0/search?q=done-0042");
    assert!(part(&found.body, "contract-hits").contains("done-0042"));
    let found = get(&s, "/p/0/search?q=open+work+7");
    assert!(part(&found.body, "contract-hits").contains("open-07"));
    // The chronicle pages back to its first line.
    let first = get(&s, "/p/0/chronicle");
    assert!(first.body.contains("page 1 of 2"), "{}", first.body);
    let older = get(&s, "/p/0/chronicle?page=1");
    assert!(older.body.contains("week line 0</td>"), "{}", older.body);
    assert!(!first.body.contains("week line 0</td>"));
}

#[test]
fn browser_the_team_overview_fits_one_and_a_half_screens() {
    let p = team_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.set_window_size(1440, 900).await.unwrap();
        c.goto(&format!("{}p/0/", s.url)).await.unwrap();
        let height: u32 = text_of(&c, "return String(document.documentElement.scrollHeight)")
            .await
            .parse()
            .unwrap();
        assert!(
            height <= 1350,
            "the overview is {height} px tall: more than 1.5 screens of 900 px"
        );
        // A folded group opens on a click, without script.
        c.execute(
            "document.querySelector('#queue details:not([open]) summary').click(); return 1",
            vec![],
        )
        .await
        .unwrap();
        let opened = text_of(
            &c,
            "return String(document.querySelectorAll('#queue details[open]').length)",
        )
        .await;
        assert_ne!(opened, "0");
        if std::env::var_os("POLISD_SCREENSHOT").is_some() {
            c.goto(&format!("{}p/0/", s.url)).await.unwrap();
            let png = c.screenshot().await.unwrap();
            std::fs::write(std::env::var_os("POLISD_SCREENSHOT").unwrap(), png).unwrap();
        }
        c.close().await.unwrap();
    });
}

#[test]
fn browser_offline_banner_then_a_reconnect_refetches_the_state() {
    let p = generated_polis();
    let mut s = serve(&p, "127.0.0.1:0");
    let port = s.addr.port();
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.goto(&format!("{}p/0/", s.url)).await.unwrap();
        wait_for_text(
            &c,
            "return document.body.getAttribute('data-live') || ''",
            &|t| t == "on",
            "the stream opens",
        )
        .await;
        mark_page(&c).await;
        let _ = s.child.kill();
        let _ = s.child.wait();
        let lost = Instant::now();
        wait_for_text(
            &c,
            "var b = document.getElementById('offline'); return b.hidden ? '' : b.textContent",
            &|t| t.starts_with("Offline"),
            "the offline banner",
        )
        .await;
        assert!(
            lost.elapsed() < Duration::from_secs(5),
            "the banner took {:?}",
            lost.elapsed()
        );
        // Settled while the server was down: no event will ever say so.
        p.mv(
            "contracts/open/next-job.md",
            "contracts/settled/next-job.md",
        );
        s = serve(&p, &format!("127.0.0.1:{port}"));
        wait_for_text(
            &c,
            "return document.getElementById('count-settled').textContent",
            &|t| t == "6",
            "the settlement made while offline, after the reconnect",
        )
        .await;
        let hidden = text_of(
            &c,
            "return String(document.getElementById('offline').hidden)",
        )
        .await;
        assert_eq!(hidden, "true");
        assert_not_reloaded(&c).await;
        c.close().await.unwrap();
    });
    drop(s);
}

// ---------------------------------------------------------------------------------------------
// The console: actions as plain forms, refused without their tokens.

/// A form POST with `cookie` (may be empty) and `extra` headers.
fn post(s: &Server, path: &str, cookie: &str, body: &str, extra: &str) -> Reply {
    let cookie = if cookie.is_empty() {
        String::new()
    } else {
        format!("Cookie: {cookie}\r\n")
    };
    request(
        s.addr,
        "POST",
        path,
        &format!("127.0.0.1:{}", s.addr.port()),
        &format!(
            "{cookie}{extra}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// The CSRF cookie a page sets and the value its forms carry.
fn csrf_of(page: &Reply) -> (String, String) {
    let cookie = page
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .find_map(|(_, v)| v.strip_prefix("polisd_csrf="))
        .and_then(|v| v.split(';').next())
        .expect("a polisd_csrf cookie")
        .to_string();
    assert!(
        page.body
            .contains(&format!("name=\"csrf\" value=\"{cookie}\"")),
        "the forms carry the cookie's token"
    );
    (format!("polisd_csrf={cookie}"), cookie)
}

#[test]
fn console_actions_write_what_the_operations_write_and_need_their_tokens() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, &format!("/p/0/citizens/{BRAVO}"));
    let (cookie, token) = csrf_of(&page);
    let inbox = || p.read(&format!("citizens/{BRAVO}/inbox.md"));
    let before = inbox();
    let message = format!("csrf={token}&back=%2Fp%2F0%2Fcitizens%2F{BRAVO}&as={FOUNDER}&to={BRAVO}&text=please+pick+up+next-job");
    // Refused without the token, with another token, and from another site.
    let no_field = message.replacen(&format!("csrf={token}"), "csrf=", 1);
    assert_eq!(
        post(&s, "/p/0/act/message", &cookie, &no_field, "").status,
        403
    );
    assert_eq!(post(&s, "/p/0/act/message", "", &message, "").status, 403);
    let other = "polisd_csrf=00000000000000000000000000000000";
    assert_eq!(
        post(&s, "/p/0/act/message", other, &message, "").status,
        403
    );
    let cross = post(
        &s,
        "/p/0/act/message",
        &cookie,
        &message,
        "Origin: http://evil.example\r\n",
    );
    assert_eq!(cross.status, 403, "{}", cross.body);
    assert_eq!(
        post(&s, "/p/0/contracts/next-job", &cookie, &message, "").status,
        405
    );
    assert_eq!(inbox(), before, "nothing written by a refused form");
    // Accepted: one block from the founder, and back to the page.
    let done = post(&s, "/p/0/act/message", &cookie, &message, "");
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(
        done.header("location"),
        Some(&*format!("/p/0/citizens/{BRAVO}"))
    );
    let added = inbox()[before.len()..].to_string();
    assert!(
        added.starts_with("\n### ")
            && added.contains(&format!(
                " from {FOUNDER}\n\nplease pick up next-job\n\n---\n"
            )),
        "{added:?}"
    );
    // A review as a person: the file `polisd review` writes and its chronicle line.
    let review = format!(
        "csrf={token}&contract=next-job&as={FOUNDER}&decision=requested_changes&body=needs+tests"
    );
    let done = post(&s, "/p/0/act/review", &cookie, &review, "");
    assert_eq!(done.status, 303, "{}", done.body);
    let reviews: Vec<_> = std::fs::read_dir(p.path("reviews"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with("-next-job.md"))
        .collect();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let text = p.read(&format!("reviews/{}", reviews[0]));
    assert!(
        text.contains("requested_changes") && text.contains("needs tests"),
        "{text}"
    );
    assert!(p
        .read("chronicle.md")
        .contains(&format!("| {FOUNDER} | requested changes |")));
    // A refusal names what to do and writes nothing.
    let stranger = review.replace(FOUNDER, "nobody-here");
    let refused = post(&s, "/p/0/act/review", &cookie, &stranger, "");
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("not a registered citizen"),
        "{}",
        refused.body
    );
}

#[test]
fn off_loopback_a_console_action_needs_the_token_too() {
    let p = generated_polis();
    let s = serve(&p, "0.0.0.0:0");
    let r = post(
        &s,
        "/p/0/act/message",
        "polisd_csrf=00000000000000000000000000000000",
        "csrf=00000000000000000000000000000000&as=a&to=b&text=x",
        "",
    );
    assert_eq!(r.status, 401, "{}", r.body);
}

#[test]
fn the_json_api_gives_the_state_and_the_replay_versioned() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let r = get(&s, "/api/state");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["api_version"], 1);
    let citizens = v["citizens"].as_array().unwrap();
    assert_eq!(citizens.len(), 3, "{v}");
    let alpha = citizens.iter().find(|c| c["id"] == ALPHA).unwrap();
    assert_eq!(alpha["current_contract"], "hostile-one", "{alpha}");
    assert_eq!(alpha["unread"], 1, "{alpha}");
    let bravo = citizens.iter().find(|c| c["id"] == BRAVO).unwrap();
    assert_eq!(bravo["current_contract"], "next-job", "{bravo}");
    let open: Vec<&str> = v["open_contracts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open.contains(&"next-job") && open.contains(&"hostile-one"));
    assert_eq!(v["counts"]["settled"], 5);
    assert_eq!(get(&s, "/p/0/api/state").body, r.body);
    // The same numbers as the overview's rows and cards.
    let overview = get(&s, "/p/0/").body;
    for c in citizens {
        let id = c["id"].as_str().unwrap();
        let row = &overview[overview.find(&format!("data-citizen=\"{id}\"")).unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(
            row.contains(&format!("<td class=\"unread\">{}</td>", c["unread"])),
            "{id}: {row}"
        );
        match c["current_contract"].as_str() {
            Some(k) => assert!(row.contains(&format!("contracts/{k}\"")), "{id}: {row}"),
            None => assert!(row.contains("<td class=\"current\"></td>"), "{id}: {row}"),
        }
    }
    for (card, n) in [
        ("count-open", &v["counts"]["open"]),
        ("count-settled", &v["counts"]["settled"]),
    ] {
        assert!(overview.contains(&format!("id=\"{card}\">{n}<")), "{card}");
    }
    let page: serde_json::Value =
        serde_json::from_str(&get(&s, "/api/replay?from=1&limit=2").body).unwrap();
    assert_eq!(page["api_version"], 1);
    assert_eq!(page["total"], 5);
    assert_eq!(page["settlements"].as_array().unwrap().len(), 2);
    assert_eq!(page["next"], 3);
    assert_eq!(get(&s, "/api/nothing").status, 404);
}

// ---------------------------------------------------------------------------------------------
// Hostile requests

/// A percent-encoded string of arbitrary bytes: NUL, invalid UTF-8, bidi overrides, `../`, huge
/// and negative numbers all reach the server's parsers this way.
fn encoded(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("%{b:02X}")).collect()
}

/// Every page and route, given arbitrary path tails and query strings, answers with a status
/// under 500 and the server keeps serving: the query and path parsers never panic.
#[test]
fn hostile_paths_and_queries_never_reach_a_panic_or_a_5xx() {
    use proptest::prelude::*;
    const ROUTES: [&str; 11] = [
        "/p/0/",
        "/p/0/chronicle",
        "/p/0/search",
        "/p/0/tags",
        "/p/0/councils",
        "/p/0/contracts/",
        "/p/0/citizens/",
        "/p/",
        "/static/",
        "/p/0/api/replay",
        "/p/0/api/",
    ];
    const KEYS: [&str; 7] = ["q", "page", "citizen", "verb", "offset", "limit", "from"];
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let requests = (
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(any::<u8>(), 0..300),
        "[!-~]{0,60}",
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 40,
        ..ProptestConfig::default()
    });
    runner
        .run(&requests, |(tail, value, raw)| {
            for route in ROUTES {
                // The tail only on routes that take one (the others would only 404).
                let tail = if route.ends_with('/') {
                    encoded(&tail)
                } else {
                    String::new()
                };
                let queries = KEYS
                    .iter()
                    .map(|key| format!("{key}={}", encoded(&value)))
                    .chain(std::iter::once(raw.replace('#', "%23")));
                for query in queries {
                    let path = format!("{route}{tail}?{query}");
                    let reply = get(&s, &path);
                    prop_assert!(
                        reply.status < 500,
                        "{path} → {} {}",
                        reply.status,
                        reply.body
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    // Still serving after all of them.
    assert_eq!(get(&s, "/p/0/").status, 200, "{}", s.stderr.lock().unwrap());
}

/// [`generated_polis`] with what each console action acts on: an unowned open contract the
/// router recommended for bravo (to give to alpha instead), a settled contract whose quality defaults (a P007 warning, to silence) and
/// polisd's notice asking for a new citizen in bravo's inbox (to answer).
fn console_polis() -> TestPolis {
    let p = generated_polis();
    p.save(
        "contracts/open/free-job.md",
        &contract(
            "free-job",
            "a free job",
            None,
            "proposed",
            &["docs"],
            &format!("routing:\n  recommended_by_router: {BRAVO}\n  recommendation_score: 0.500\n  exploration: false\n  override: null\n"),
            "## Intent\n\nFree.\n",
        ),
    );
    p.save(
        "contracts/settled/unscored.md",
        &contract(
            "unscored",
            "unscored work",
            Some(ALPHA),
            "settled",
            &["docs"],
            "settled_at: '2026-02-20 12:00:00'\n",
            "## Intent\n\nDone.\n",
        ),
    );
    p.append(
        &format!("citizens/{BRAVO}/inbox.md"),
        "\n### 2026-11-30 09:00 from polis-daemon\n\nA new citizen with the `gpu` capability is asked for by next-job.\n\n\
         [[contracts/open/next-job]]\n<!-- polisd:citizen-needed:0123456789abcdef -->\n\n---\n",
    );
    p
}

/// Fills the console form `form` of the page at `url` (scripts off), after unfolding the
/// `<details>` `open` it sits in: each `(name, value)` is typed into an input or textarea,
/// or chosen in a select; then the form is sent.
async fn send_form(
    c: &fantoccini::Client,
    url: &str,
    open: Option<&str>,
    form: &str,
    fields: &[(&str, &str)],
) {
    use fantoccini::Locator::Css;
    c.goto(url).await.unwrap();
    if let Some(details) = open {
        let d = c.find(Css(details)).await.unwrap();
        if d.attr("open").await.unwrap().is_none() {
            d.find(Css("summary")).await.unwrap().click().await.unwrap();
        }
    }
    let f = c.find(Css(form)).await.unwrap();
    for (name, value) in fields {
        let field = f.find(Css(&format!("[name={name}]"))).await.unwrap();
        if field.tag_name().await.unwrap() == "select" {
            field.select_by_value(value).await.unwrap();
        } else {
            field.send_keys(value).await.unwrap();
        }
    }
    f.find(Css("button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

#[test]
fn browser_every_console_action_works_without_javascript() {
    let p = console_polis();
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    let deadline = Duration::from_secs(20);
    runtime().block_on(async {
        let c = browser_with(&driver, false).await;
        let page = |path: &str| format!("{}p/0/{path}", s.url);
        // Routing overridden, with its reason: what `contract claim --override` writes.
        send_form(
            &c,
            &page("contracts/free-job"),
            None,
            "#override-form form",
            &[("to", ALPHA), ("reason", "alpha wrote the docs")],
        )
        .await;
        wait_until("the override", deadline, || {
            p.read("contracts/open/free-job.md")
                .contains(&format!("owner: {ALPHA}\n"))
        });
        assert_overridden(&p, "free-job", ALPHA, "alpha wrote the docs");
        // A review as a person.
        send_form(
            &c,
            &page("contracts/next-job"),
            None,
            "#review-form form",
            &[
                ("as", FOUNDER),
                ("decision", "signed_off"),
                ("body", "good work"),
            ],
        )
        .await;
        wait_until("the review", deadline, || {
            p.read("chronicle.md")
                .contains(&format!("| {FOUNDER} | signed off |"))
        });
        // A message to an inbox.
        send_form(
            &c,
            &page(&format!("citizens/{ALPHA}")),
            None,
            "#message-form form",
            &[("as", FOUNDER), ("text", "ping from the console")],
        )
        .await;
        wait_until("the message", deadline, || {
            p.read(&format!("citizens/{ALPHA}/inbox.md"))
                .contains(&format!(" from {FOUNDER}\n\nping from the console\n"))
        });
        // A decision of the person's queue: the new citizen accepted, as `polisd queue answer`.
        let (_, decision) = ask_for_a_new_citizen(&p);
        // Once the watcher has told the server of the settled file.
        wait_until("the decision on the overview", deadline, || {
            get(&s, "/p/0/").body.contains(&decision)
        });
        send_form(
            &c,
            &page(""),
            Some("details.group:has(form[action$='act/decide'])"),
            "form[action$='act/decide']",
            &[
                ("by", "Dana Person"),
                ("why", "we need it"),
                ("id", "finance-agent-one"),
                ("vendor", "openai"),
            ],
        )
        .await;
        wait_until("the decision", deadline, || {
            p.exists("citizens/finance-agent-one/capability_card.yml")
        });
        assert!(p
            .read("chronicle.md")
            .contains(&format!("{decision} accept by Dana Person: we need it")));
        // The queue item for the new citizen asked for, answered: bravo reads the answer and
        // the notice leaves the queue.
        let key = format!("notice/{BRAVO}/0123456789abcdef");
        assert!(get(&s, "/p/0/").body.contains(&key));
        send_form(
            &c,
            &page(""),
            Some("details.group:has(form[action$='act/answer'])"),
            "form[action$='act/answer']",
            &[
                ("as", FOUNDER),
                ("text", "no new citizen; alpha learns CUDA"),
            ],
        )
        .await;
        wait_until("the answer", deadline, || {
            p.read(&format!("citizens/{BRAVO}/status.md"))
                .contains("0123456789abcdef")
        });
        let inbox = p.read(&format!("citizens/{BRAVO}/inbox.md"));
        assert!(
            inbox.contains(&format!(" from {FOUNDER}\n\nAnswer to 0123456789abcdef"))
                && inbox.contains("no new citizen; alpha learns CUDA"),
            "{inbox}"
        );
        wait_until("the answered item leaves the queue", deadline, || {
            !get(&s, "/p/0/").body.contains(&key)
        });
        // The class of warning silenced, then back.
        let warned = |body: &str| body.contains("data-key=\"finding/P007/");
        assert!(warned(&get(&s, "/p/0/").body));
        send_form(
            &c,
            &page(""),
            Some("details.group:has(form[action$='act/silence'])"),
            "form[action$='act/silence']",
            &[("as", FOUNDER), ("reason", "we score by hand")],
        )
        .await;
        wait_until("the silence", deadline, || {
            p.exists("silenced.yml") && p.read("silenced.yml").contains("code: P007")
        });
        let silenced = p.read("silenced.yml");
        assert!(
            silenced.contains(&format!("by: {FOUNDER}")) && silenced.contains("we score by hand"),
            "{silenced}"
        );
        wait_until("P007 leaves the queue", deadline, || {
            !warned(&get(&s, "/p/0/").body)
        });
        let check = p.polisd(&["check", "--json"]);
        assert!(
            String::from_utf8_lossy(&check.stdout).contains("P007"),
            "check still reports it"
        );
        send_form(
            &c,
            &page(""),
            Some("#silenced"),
            "#silenced form[action$='act/unsilence']",
            &[("as", FOUNDER)],
        )
        .await;
        wait_until("the silence lifted", deadline, || {
            !p.read("silenced.yml").contains("P007")
        });
        wait_until("P007 back in the queue", deadline, || {
            warned(&get(&s, "/p/0/").body)
        });
        c.close().await.unwrap();
    });
}

#[test]
fn every_console_action_is_refused_without_its_tokens_and_writes_nothing() {
    let p = console_polis();
    let s = serve(&p, "127.0.0.1:0");
    let (cookie, token) = csrf_of(&get(&s, "/p/0/"));
    let forms = [
        (
            "override",
            "contract=free-job&to=alpha-agent&reason=because".to_string(),
        ),
        (
            "answer",
            format!("citizen={BRAVO}&notice=0123456789abcdef&as={FOUNDER}&text=no"),
        ),
        ("silence", format!("code=P007&as={FOUNDER}&reason=fine")),
        ("unsilence", format!("code=P007&as={FOUNDER}")),
        (
            "review",
            format!("contract=next-job&as={FOUNDER}&decision=signed_off&body=ok"),
        ),
        ("message", format!("as={FOUNDER}&to={BRAVO}&text=hi")),
        (
            "decide",
            "key=new-citizen/x/1&answer=accept&by=Dana&id=finance-agent-one".to_string(),
        ),
    ];
    let before = files_of(&p);
    for (action, fields) in &forms {
        let path = format!("/p/0/act/{action}");
        let with = format!("csrf={token}&{fields}");
        let without = format!("csrf=&{fields}");
        assert_eq!(
            post(&s, &path, &cookie, &without, "").status,
            403,
            "{action}"
        );
        assert_eq!(post(&s, &path, "", &with, "").status, 403, "{action}");
        let forged = "polisd_csrf=00000000000000000000000000000000";
        assert_eq!(post(&s, &path, forged, &with, "").status, 403, "{action}");
        let cross = post(&s, &path, &cookie, &with, "Origin: http://evil.example\r\n");
        assert_eq!(cross.status, 403, "{action}");
    }
    assert_eq!(files_of(&p), before, "a refused form writes nothing");
    // A refusal by the operation: one line, nothing written.
    let refused = post(
        &s,
        "/p/0/act/override",
        &cookie,
        &format!("csrf={token}&contract=next-job&to={ALPHA}&reason=x"),
        "",
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("already owned"), "{}", refused.body);
    let empty = post(
        &s,
        "/p/0/act/silence",
        &cookie,
        &format!("csrf={token}&code=P007&as={FOUNDER}&reason=+"),
        "",
    );
    assert_eq!(empty.status, 422, "{}", empty.body);
    assert_eq!(files_of(&p), before);
    // Off loopback, the dashboard token comes first.
    let open = serve(&p, "0.0.0.0:0");
    for (action, fields) in &forms {
        let r = post(
            &open,
            &format!("/p/0/act/{action}"),
            &cookie,
            &format!("csrf={token}&{fields}"),
            "",
        );
        assert_eq!(r.status, 401, "{action}: {}", r.body);
    }
    assert_eq!(files_of(&p), before);
}

/// Every file of the polis with its bytes, to prove that nothing was written.
fn files_of(p: &TestPolis) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    fn walk(
        dir: &std::path::Path,
        out: &mut std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    ) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(&p.path(""), &mut out);
    out
}

#[test]
fn an_override_from_the_console_writes_what_the_command_writes() {
    let by_form = console_polis();
    let by_cli = console_polis();
    let s = serve(&by_form, "127.0.0.1:0");
    let (cookie, token) = csrf_of(&get(&s, "/p/0/contracts/free-job"));
    let done = post(
        &s,
        "/p/0/act/override",
        &cookie,
        &format!("csrf={token}&contract=free-job&to={ALPHA}&reason=alpha+wrote+the+docs"),
        "",
    );
    assert_eq!(done.status, 303, "{}", done.body);
    let out = by_cli.polisd(&[
        "contract",
        "claim",
        "free-job",
        "--as",
        ALPHA,
        "--reason",
        "alpha wrote the docs",
    ]);
    assert!(out.status.success(), "{out:?}");
    let contract = "contracts/open/free-job.md";
    assert_eq!(by_form.read(contract), by_cli.read(contract));
    // The same chronicle lines, but for their minute.
    let added = |p: &TestPolis| -> Vec<String> {
        let text = p.read("chronicle.md");
        text.lines()
            .filter(|l| l.contains("[[contracts/open/free-job]]"))
            .map(|l| l.split_once(" | ").unwrap().1.to_string())
            .collect()
    };
    assert_eq!(added(&by_form), added(&by_cli));
    assert_overridden(&by_cli, "free-job", ALPHA, "alpha wrote the docs");
    // Settled, the override shows on the citizen's page with how the work turned out.
    let out = by_form.polisd(&[
        "contract",
        "settle",
        "free-job",
        "--quality",
        "5",
        "--no-lesson",
        "a test",
        "--review-override",
        "Dana: a high-stakes test",
    ]);
    assert!(out.status.success(), "{out:?}");
    wait_until(
        "the override on alpha's page",
        Duration::from_secs(20),
        || {
            get(&s, &format!("/p/0/citizens/{ALPHA}"))
                .body
                .contains("Overrode the router 1 times (mean quality 5.00)")
        },
    );
}

/// Contract `id` is `owner`'s, claimed against the router's pick for `why`: its
/// `routing.override` holds the reason (as text, or as the `why` of a mapping) and an
/// `overrode routing` line by `owner` gives it.
fn assert_overridden(p: &TestPolis, id: &str, owner: &str, why: &str) {
    let text = p.read(&format!("contracts/open/{id}.md"));
    assert!(text.contains(&format!("owner: {owner}\n")), "{text}");
    assert!(text.contains("status: claimed\n"), "{text}");
    let routing = text
        .split("\nrouting:\n")
        .nth(1)
        .map(|r| r.split("\n---").next().unwrap_or(r))
        .unwrap_or_default();
    let block = &routing[routing.find("override:").unwrap_or(0)..];
    assert!(
        block.contains(why),
        "routing.override without the reason: {text}"
    );
    let chronicle = p.read("chronicle.md");
    assert!(
        chronicle.lines().any(|l| l.contains(&format!(
            "| {owner} | overrode routing | [[contracts/open/{id}]] |"
        )) && l.contains(why)),
        "{chronicle}"
    );
}

#[test]
fn the_redacted_report_of_the_team_shows_no_identity_vendor_tag_date_or_text() {
    let p = team_polis();
    let mut secrets: Vec<String> = (1..=11).map(team_member).collect();
    secrets.push(FOUNDER.into());
    secrets.extend(VENDORS.iter().map(|v| v.to_string()));
    secrets.extend(TEAM_TAGS.iter().map(|t| t.to_string()));
    secrets.extend(
        [
            "settled work",
            "open work",
            "week line",
            "Run the migrations twice",
            "auth rework",
            "src/auth.rs",
            "first note",
            "third note",
            "done-0",
            "open-0",
            "_polis",
        ]
        .map(String::from),
    );
    let date = regex::Regex::new(r"\d{4}-\d{2}-\d{2}").unwrap();
    let style = regex::Regex::new(r"(?s)<style>.*?</style>").unwrap();
    for format in ["md", "html"] {
        let out = p.polisd(&["report", "--format", format, "--redact"]);
        assert!(out.status.success(), "{out:?}");
        let raw = String::from_utf8(out.stdout).unwrap();
        // The inline stylesheet is polisd's own text, not the polis's.
        let text = style.replace_all(&raw, "").to_lowercase();
        assert!(text.len() > 2000, "{format}: a report, not an empty page");
        for secret in &secrets {
            let word =
                regex::Regex::new(&format!(r"\b{}\b", regex::escape(&secret.to_lowercase())))
                    .unwrap();
            assert!(
                !word.is_match(&text),
                "{format}: {secret:?} shows in the redacted report"
            );
        }
        assert!(!date.is_match(&text), "{format}: a date shows");
        // The numbers stay.
        assert!(text.contains("settled (2000)"), "{format}");
    }
}

#[test]
fn frontmatter_is_a_table_and_links_resolve_to_pages_of_the_polis() {
    let p = generated_polis();
    p.save(
        "contracts/open/linked.md",
        &contract(
            "linked",
            "linked work",
            None,
            "proposed",
            &["docs"],
            "",
            &format!(
                "## Intent\n\nAfter [the first](../settled/done-1.md), see [[contracts/open/next-job]], \
                 [[citizens/{ALPHA}/capability_card.yml|alpha's card]], [[chronicle]], \
                 [a lesson](../../lessons/docs/some-lesson.md) and [nothing](../../../../etc/passwd).\n"
            ),
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/contracts/linked").body;
    let body = &page[page.find("<div class=\"md\">").unwrap()..];
    let body = &body[..body.find("</div>").unwrap()];
    let hrefs: Vec<&str> = body
        .split("<a href=\"")
        .skip(1)
        .map(|h| &h[..h.find('"').unwrap()])
        .collect();
    assert_eq!(
        hrefs,
        [
            "/p/0/contracts/done-1",
            "/p/0/contracts/next-job",
            &*format!("/p/0/citizens/{ALPHA}"),
            "/p/0/chronicle",
            "/p/0/search?q=some-lesson",
        ],
        "{body}"
    );
    for href in &hrefs {
        assert_eq!(get(&s, href).status, 200, "{href}");
    }
    assert!(
        body.contains("and nothing.") && !body.contains("passwd\""),
        "a link out of the polis is text: {body}"
    );
    // The contract's frontmatter and an inbox's are tables, not a heading.
    assert!(page.contains("<table class=\"frontmatter\">"), "{page}");
    assert!(
        page.contains("<th>contract_id</th><td>linked</td>"),
        "{page}"
    );
    let citizen = get(&s, &format!("/p/0/citizens/{ALPHA}")).body;
    assert!(
        citizen.contains(&format!("<th>owner</th><td>{ALPHA}</td>")),
        "{citizen}"
    );
    assert!(!citizen.contains("<h2>file_type"), "{citizen}");
}

#[test]
fn browser_a_chart_of_twenty_citizens_has_twenty_colours_and_a_legend_that_fits() {
    let p = TestPolis::init(FOUNDER);
    let ids: Vec<String> = (0..20)
        .map(|i| format!("citizen-with-a-long-name-{i:02}"))
        .collect();
    for (i, id) in ids.iter().enumerate() {
        p.citizen(id, VENDORS[i % 4], &[("rust", 3)], "medium");
        for k in 0..2u32 {
            let cid = format!("work-{i:02}-{k}");
            p.save(
                &format!("contracts/settled/{cid}.md"),
                &settled(
                    &cid,
                    id,
                    "rust",
                    1 + ((i as u32 + k) % 5) as u8,
                    1 + k + i as u32 % 20,
                ),
            );
        }
    }
    let s = serve(&p, "127.0.0.1:0");
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser(&driver).await;
        c.set_window_size(1440, 900).await.unwrap();
        c.goto(&format!("{}p/0/tags", s.url)).await.unwrap();
        let found = text_of(
            &c,
            "var f = document.querySelector('figure.chart'); var l = f.querySelector('.legend');
             var fills = Array.from(l.querySelectorAll('rect')).map(function (r) { return r.getAttribute('fill'); });
             var box = l.getBoundingClientRect(), main = document.querySelector('main').getBoundingClientRect();
             var inside = Array.from(l.querySelectorAll('li')).every(function (li) {
               var b = li.getBoundingClientRect(); return b.left >= box.left - 1 && b.right <= box.right + 1; });
             return JSON.stringify({ entries: l.querySelectorAll('li').length, colours: new Set(fills).size,
               overflow: l.scrollWidth > l.clientWidth + 1, inside: inside, within: box.right <= main.right + 1 });",
        )
        .await;
        let v: serde_json::Value = serde_json::from_str(&found).unwrap();
        assert_eq!(v["entries"], 20, "{v}");
        assert_eq!(v["colours"], 20, "{v}");
        assert_eq!(v["overflow"], false, "{v}");
        assert_eq!(v["inside"], true, "{v}");
        assert_eq!(v["within"], true, "{v}");
        c.close().await.unwrap();
    });
}

/// A settled contract whose Settlement asks for a new citizen, in the seed's words: an item of
/// the person's queue. Returns the contract's id and the item's key.
fn ask_for_a_new_citizen(p: &TestPolis) -> (String, String) {
    let cid = "budget-report";
    let out = p.polisd(&[
        "contract",
        "open",
        "--title",
        "Budget report",
        "--by",
        FOUNDER,
        "--tags",
        "docs",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let opened: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = opened["contract_id"].as_str().unwrap().to_string();
    assert!(id.starts_with(cid), "{id}");
    let out = p.polisd(&["contract", "claim", &id, "--as", ALPHA]);
    assert!(out.status.success(), "{out:?}");
    let rel = format!("contracts/open/{id}.md");
    let text = p
        .read(&rel)
        .replace("status: claimed", "status: settled")
        .replace("quality_score: null", "quality_score: 4")
        .replace("settled_at: null", "settled_at: 2026-03-02 10:00:00");
    p.save(
        &rel,
        &format!(
            "{text}\n## Settlement\n\nDone.\n\n### Suggested new agent\n- **Need**: personal finance\n\
             - **Reason**: no citizen knows budgets\n"
        ),
    );
    p.mv(&rel, &format!("contracts/settled/{id}.md"));
    let key = format!("new-citizen/{id}/1");
    (id, key)
}

/// A settled contract whose Settlement asks for a new citizen, in the seed's words: an item of
/// the person's queue. The overview's `decide` form answers it as `polisd queue answer` does,
/// refusing what the command refuses; a control character in any field is refused too.
#[test]
fn the_console_decides_a_person_queue_item_as_the_queue_command_does() {
    let p = console_polis();
    let (id, key) = ask_for_a_new_citizen(&p);

    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/");
    assert!(
        overview
            .body
            .contains(&format!("name=\"key\" value=\"{key}\"")),
        "the item carries its decide form: {}",
        overview.body
    );
    let (cookie, token) = csrf_of(&overview);
    let chronicle = p.read("chronicle.md");
    // What the command refuses (accepting a new citizen without its id), the form refuses.
    let refused = post(
        &s,
        "/p/0/act/decide",
        &cookie,
        &format!("csrf={token}&key={key}&answer=accept&by=Dana+Person&why=needed"),
        "",
    );
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("--id"), "{}", refused.body);
    // A control character in a field: refused before anything is read.
    let escape = post(
        &s,
        "/p/0/act/decide",
        &cookie,
        &format!("csrf={token}&key={key}&answer=accept&by=Dana%1BPerson&id=finance-agent-one"),
        "",
    );
    assert_eq!(escape.status, 422, "{}", escape.body);
    assert!(escape.body.contains("`by`"), "{}", escape.body);
    assert_eq!(p.read("chronicle.md"), chronicle, "nothing written");

    let done = post(
        &s,
        "/p/0/act/decide",
        &cookie,
        &format!(
            "csrf={token}&key={key}&answer=accept&by=Dana+Person&why=we+need+it&id=finance-agent-one&vendor=openai"
        ),
        "",
    );
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(p.exists("citizens/finance-agent-one/capability_card.yml"));
    let chronicle = p.read("chronicle.md");
    assert!(
        chronicle.contains(&format!(
            "| polis-daemon | answered queue item | [[contracts/settled/{id}]] | {key} accept by Dana Person: we need it"
        )),
        "{chronicle}"
    );
    // Answered: no longer in the queue.
    let queue: serde_json::Value =
        serde_json::from_slice(&p.polisd(&["queue", "--json"]).stdout).unwrap();
    assert!(!queue.to_string().contains(&key), "still queued: {queue}");
}
