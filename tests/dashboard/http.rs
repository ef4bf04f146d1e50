//! Every page over HTTP: rendering, escaping, security headers, the Host and token checks, the
//! event stream, and frontmatter and links.

use super::*;

#[test]
fn every_page_renders_the_generated_polis() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/");
    assert_eq!(overview.status, 200, "{}", overview.body);
    let b = &overview.body;
    // An empty list stays folded: its count says all there is.
    assert!(
        b.contains(r#"<section id="councils-now"><details><summary>Councils "#),
        "{b}"
    );
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

/// The contract page's routing is what `polisd route` says, learnt from the settled work: the
/// page reads a polis whose settled contracts are kept apart, and must still hand the router
/// their history.
#[test]
fn the_contract_page_routes_from_the_settled_work_as_the_command_does() {
    let p = generated_polis();
    let cli = harness::ok(p.polisd(&["route", "next-job", "--explain", "--seed", "0"]));
    let cli = String::from_utf8_lossy(&cli.stdout).into_owned();
    let posterior: Vec<&str> = cli
        .lines()
        .filter(|l| l.contains("posterior_mean"))
        .collect();
    assert!(
        posterior
            .iter()
            .any(|l| l.contains(ALPHA) && l.contains("settlements 2")),
        "{ALPHA} settled two rust contracts: {cli}"
    );
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/contracts/next-job");
    assert_eq!(page.status, 200, "{}", page.body);
    for line in posterior {
        assert!(
            page.body.contains(line),
            "the page's routing lacks `{line}`: {}",
            page.body
        );
    }
}

/// An amendment has a page of its own, linked from the overview: where it stands against its
/// quorum, who voted what and where the vote is written, and its file (agent text escaped).
/// Links to the file from markdown reach it too; an unknown amendment is a 404.
#[test]
fn an_amendment_has_a_page_linked_from_the_overview() {
    let p = generated_polis();
    p.append(
        "amendments/proposed/quorum-rule.md",
        &format!(
            "\n## Response from {BRAVO} (disagree)\n\n<script>alert(1)</script> too strict.\n"
        ),
    );
    p.save(
        &format!("amendments/votes/quorum-rule/{ALPHA}.md"),
        "---\nvote: agree\n---\n",
    );
    p.append(
        "chronicle.md",
        &harness::chronicle_line(
            FOUNDER,
            "proposed amendment",
            "[[amendments/proposed/quorum-rule]]",
            "a quorum rule",
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let chronicle = get(&s, "/p/0/chronicle");
    assert!(
        chronicle
            .body
            .contains(r#"href="/p/0/amendments/quorum-rule""#),
        "the chronicle line links the page: {}",
        chronicle.body
    );
    let overview = get(&s, "/p/0/");
    assert!(
        overview
            .body
            .contains(r#"<a href="/p/0/amendments/quorum-rule">quorum-rule</a>"#),
        "{}",
        overview.body
    );
    let page = get(&s, "/p/0/amendments/quorum-rule");
    assert_eq!(page.status, 200, "{}", page.body);
    let b = &page.body;
    assert!(b.contains("<h1>a quorum rule</h1>"), "{b}");
    assert!(b.contains("a tally now would"), "{b}");
    assert!(
        b.contains(&format!(r#"<a href="/p/0/citizens/{BRAVO}">{BRAVO}</a></td><td>disagree</td><td class="muted">a response block, line "#)),
        "the vote and where it is written: {b}"
    );
    assert!(
        b.contains(&format!(
            "<td>agree</td><td class=\"muted\">amendments/votes/quorum-rule/{ALPHA}.md</td>"
        )),
        "a vote file is named: {b}"
    );
    assert!(
        b.contains(&format!(
            r#"<a href="/p/0/citizens/{FOUNDER}">{FOUNDER}</a> proposed it and counts as agreeing"#
        )),
        "{b}"
    );
    assert!(b.contains("too strict."), "the file: {b}");
    assert_eq!(
        b.matches("<script").count(),
        1,
        "only the page's own script: {b}"
    );
    assert_eq!(get(&s, "/p/0/amendments/no-such").status, 404);
}

/// A lesson filed by `lesson file` (its text a `# ` heading and a paragraph).
fn lesson(id: &str, by: &str, extra: &str, text: &str) -> String {
    format!(
        "---\nlesson_id: {id}\nfiled_by: {by}\nfiled_at: '2026-02-03 10:00:00'\n\
         capability_tags:\n- rust\nrelated_contracts:\n- next-job\nquality_impact: 4\n{extra}---\n\n{text}"
    )
}

/// A lesson has a page of its own: its title, who filed it, the tags and contract it is
/// about, its text as markdown (agent text escaped) and what it weighs on in routing. The
/// contract it names, search and the chronicle's `[[lessons/…]]` links lead there; an unknown
/// id, or one aiming outside the polis, is a 404.
#[test]
fn a_lesson_has_a_page_linked_from_its_contract_search_and_the_chronicle() {
    let p = generated_polis();
    let id = "2026-02-03-check-the-store";
    p.save(
        &format!("lessons/rust/{id}.md"),
        &lesson(
            id,
            ALPHA,
            &format!("routing_effect:\n- {{citizen: {ALPHA}, tags: [rust], delta: 0.1}}\n"),
            "# Check the store first\n\nRead **the store** before the cache.\n\n<script>window.__pwned=11</script>\n",
        ),
    );
    p.append(
        "chronicle.md",
        &harness::chronicle_line(
            ALPHA,
            "filed lesson",
            &format!("[[lessons/rust/{id}]]"),
            "Check the store first",
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let link = format!(r#"<a href="/p/0/lessons/{id}">{id}</a>"#);
    let contract = get(&s, "/p/0/contracts/next-job");
    assert!(contract.body.contains(&link), "{}", contract.body);
    let search = get(&s, "/p/0/search?q=store");
    assert!(search.body.contains(&link), "{}", search.body);
    let chronicle = get(&s, "/p/0/chronicle");
    assert!(
        chronicle
            .body
            .contains(&format!(r#"href="/p/0/lessons/{id}""#)),
        "the chronicle line links the page: {}",
        chronicle.body
    );

    let page = get(&s, &format!("/p/0/lessons/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let b = &page.body;
    assert!(b.contains("<h1>Check the store first</h1>"), "{b}");
    assert!(
        b.contains(&format!(
            r#"filed by <a href="/p/0/citizens/{ALPHA}">{ALPHA}</a>"#
        )),
        "{b}"
    );
    assert!(
        b.contains(r#"<td id="lesson-contracts"><a href="/p/0/contracts/next-job">next-job</a>"#),
        "{b}"
    );
    assert!(b.contains("<strong>the store</strong>"), "markdown: {b}");
    assert!(
        b.contains("&lt;script&gt;window.__pwned=11"),
        "the script shown as text: {b}"
    );
    assert_eq!(
        b.matches("<script").count(),
        1,
        "only the page's own script: {b}"
    );
    assert!(b.contains("Weighs on routing"), "{b}");
    assert!(
        b.contains(&format!(
            r#"<td><a href="/p/0/citizens/{ALPHA}">{ALPHA}</a></td><td>rust</td><td>+0.1</td>"#
        )),
        "the routing effect: {b}"
    );

    assert_eq!(get(&s, "/p/0/lessons/no-such").status, 404);
    for hostile in [
        "..%2F..%2Fpolis.yml",
        "%2E%2E",
        "rust%2F2026-02-03-check-the-store",
        "..%2Fcontracts%2Fopen%2Fnext-job",
        "%00",
    ] {
        let r = get(&s, &format!("/p/0/lessons/{hostile}"));
        assert_eq!(r.status, 404, "{hostile}: {}", r.body);
    }
}

/// Lessons polisd cannot take as they are never break their page: broken frontmatter shows
/// the finding and the file as written, a text far over a paragraph is shown cut with a note,
/// and a lesson that is not accepted says it does not weigh on routing.
#[test]
fn a_broken_huge_or_unaccepted_lesson_s_page_says_so() {
    let p = generated_polis();
    p.save(
        "lessons/rust/2026-02-04-broken.md",
        "---\nlesson_id: [unclosed\nfiled_by: <b>x</b>\n---\n\n<script>window.__pwned=12</script>\n",
    );
    let huge = format!("# Huge\n\n{}the-end\n", "padding words. ".repeat(40_000));
    p.save(
        "lessons/rust/2026-02-05-huge.md",
        &lesson(
            "2026-02-05-huge",
            "nobody-here",
            "status: proposed\n",
            &huge,
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let broken = get(&s, "/p/0/lessons/2026-02-04-broken");
    assert_eq!(broken.status, 200, "{}", broken.body);
    assert!(
        broken.body.contains("could not read this lesson"),
        "{}",
        broken.body
    );
    assert!(broken.body.contains("P002"), "the finding: {}", broken.body);
    assert!(
        broken.body.contains("&lt;script&gt;window.__pwned=12"),
        "the file as written: {}",
        broken.body
    );
    assert_eq!(broken.body.matches("<script").count(), 1, "{}", broken.body);

    let big = get(&s, "/p/0/lessons/2026-02-05-huge");
    assert_eq!(big.status, 200, "{}", big.body);
    assert!(big.body.contains("only its start is shown"), "no note");
    assert!(!big.body.contains("the-end"), "the text is not cut");
    assert!(
        big.body.contains("filed by nobody-here"),
        "a filer who is no citizen is not linked"
    );
    assert!(big.body.contains("Does not weigh on routing"), "proposed");
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

/// An address the dashboard does not have is a page saying so with a way back, and a console
/// action opened as a link (GET) says it takes a form, with `Allow: POST`: neither is an
/// empty or plain-text answer a person cannot act on.
#[test]
fn unknown_pages_and_actions_opened_by_link_answer_a_page_that_says_so() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    for path in [
        "/p/0/no-such-page",
        "/nowhere",
        "/p/7/",
        "/p/0/citizens/a/b",
        // No polis number, or an id no file can have (not UTF-8 once decoded): no such page
        // either, said the same way, never the router's plain "Invalid URL".
        "/p/abc",
        "/p/-1",
        "/p/%FF/",
        "/p/0/contracts/%FF",
        "/p/0/citizens/%C0%AE%C0%AE",
    ] {
        let r = get(&s, path);
        assert_eq!(r.status, 404, "{path}");
        assert!(
            r.header("content-type")
                .is_some_and(|t| t.starts_with("text/html")),
            "{path}: {:?}",
            r.header("content-type")
        );
        assert!(
            r.body.contains("Not found") && r.body.contains("href=\"/\""),
            "{path}: {}",
            r.body
        );
    }
    let r = get(&s, "/p/0/act/message");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    assert!(r.body.contains("form"), "{:?}", r.body);
    // Another method at an action's address is told the same, never "only GET and HEAD here"
    // where GET is refused too.
    let host = format!("127.0.0.1:{}", s.addr.port());
    for method in ["PUT", "DELETE", "PATCH"] {
        let r = request(
            s.addr,
            method,
            "/p/0/act/message",
            &host,
            "Content-Length: 0\r\n",
        );
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("POST"), "{method}");
        assert!(r.body.contains("form"), "{method}: {:?}", r.body);
    }
    let r = request(s.addr, "PUT", "/p/0/", &host, "Content-Length: 0\r\n");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
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
pub(crate) fn event_stream(s: &Server) -> TcpStream {
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
    p.save(
        "lessons/docs/some-lesson.md",
        "---\nfiled_by: alpha-agent\ncapability_tags: [docs]\n---\n\nA lesson.\n",
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
            "/p/0/lessons/some-lesson",
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

/// The chronicle page links each line's record to its page, and shows polisd's own lines
/// without the id marker that is there for merges and replays.
#[test]
fn the_chronicle_page_links_records_and_hides_polisd_s_line_ids() {
    let p = generated_polis();
    p.append(
        "chronicle.md",
        "- 2026-03-02 14:05 | polis-daemon | routed contract | [[contracts/open/next-job]] | \
         to alpha <!-- polisd:chronicle:0123456789abcdef -->\n",
    );
    let s = serve(&p, "127.0.0.1:0");
    let linked = r#"<a href="/p/0/contracts/next-job">contracts/open/next-job</a>"#;
    // The part of a page from the element `id` on.
    let from = |path: &str, id: &str| {
        let body = get(&s, path).body;
        let at = body
            .find(id)
            .unwrap_or_else(|| panic!("no {id} on {path}: {body}"));
        body[at..].to_string()
    };
    let page = from("/p/0/chronicle", r#"id="chronicle""#);
    assert!(page.contains(&format!("<td>{linked}</td>")), "{page}");
    // The note's cell holds the note alone (a finding about the line still quotes it whole).
    assert!(page.contains("<td>to alpha</td>"), "{page}");
    // A search and the contract's own page show the line the same way.
    let hits = from("/p/0/search?q=to+alpha", "chronicle-hits");
    assert!(hits.contains(&format!("{linked} to alpha</div>")), "{hits}");
    let listed = from("/p/0/contracts/next-job", "contract-chronicle");
    assert!(
        listed.contains(&format!("{linked} to alpha</li>")),
        "{listed}"
    );
}
