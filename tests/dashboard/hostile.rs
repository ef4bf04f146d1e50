//! Hostile requests: arbitrary paths and queries never reach a panic or a 5xx.

use super::*;

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
    // Every page the dashboard has (a page added later is walked too: `/contracts/{id}`
    // becomes `/p/0/contracts/` and takes the hostile tail), then the routes that are not
    // pages.
    let routes: Vec<String> = polisd::dashboard::pages::PAGES
        .iter()
        .map(|page| format!("/p/0{}", page.route.split('{').next().unwrap_or_default()))
        .chain(
            ["/p/", "/static/", "/p/0/api/replay", "/p/0/api/"]
                .into_iter()
                .map(String::from),
        )
        .collect();
    assert!(
        routes.iter().any(|r| r == "/p/0/lessons/"),
        "the pages' routes: {routes:?}"
    );
    const KEYS: [&str; 8] = [
        "q", "page", "citizen", "verb", "tag", "offset", "limit", "from",
    ];
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
            for route in &routes {
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

/// An inbox the page cannot show whole (over the read limit, or not valid UTF-8) still shows
/// its newest messages, says why it is cut or altered, and counts its unread notices: it never
/// reads "No inbox.md." while the file is there.
#[test]
fn an_inbox_too_big_or_not_utf8_is_shown_with_a_note_not_hidden() {
    let p = generated_polis();
    let inbox = p.path(&format!("citizens/{ALPHA}/inbox.md"));
    let mut big = b"---\nfile_type: inbox\nowner: alpha-agent\n---\n\n".to_vec();
    let old =
        b"### 2026-01-01 10:00 from bravo-agent\n\nan old message, padding the file.\n\n---\n\n";
    while big.len() < 4_300_000 {
        big.extend_from_slice(old);
    }
    big.extend_from_slice(b"### 2026-01-02 10:00 from bravo-agent\n\nthe-newest-message\n\n---\n");
    std::fs::write(&inbox, &big).unwrap();
    let mut bad = b"---\nfile_type: inbox\nowner: bravo-agent\n---\n\n".to_vec();
    bad.extend_from_slice(
        b"### 2026-01-02 10:00 from alpha-agent\n\nbad \xff byte, then the-bravo-message\n\n---\n",
    );
    std::fs::write(p.path(&format!("citizens/{BRAVO}/inbox.md")), &bad).unwrap();
    let s = serve(&p, "127.0.0.1:0");
    let big_page = get(&s, &format!("/p/0/citizens/{ALPHA}"));
    assert_eq!(big_page.status, 200);
    assert!(
        !big_page.body.contains("No inbox.md"),
        "the big inbox is hidden"
    );
    assert!(
        big_page.body.contains("the-newest-message"),
        "its newest message is not shown"
    );
    assert!(
        big_page.body.contains("only its last"),
        "no note says it is cut"
    );
    let bad_page = get(&s, &format!("/p/0/citizens/{BRAVO}"));
    assert!(
        !bad_page.body.contains("No inbox.md"),
        "the non-UTF-8 inbox is hidden"
    );
    assert!(bad_page.body.contains("the-bravo-message"));
    assert!(
        bad_page.body.contains("not valid UTF-8"),
        "no note says it was altered"
    );
}

/// A chronicle polisd cannot read (here one byte that is not UTF-8) shows no lines, and its
/// page says why instead of "0 in all".
#[test]
fn an_unreadable_chronicle_s_page_says_why_it_shows_no_lines() {
    let p = generated_polis();
    let path = p.path("chronicle.md");
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(b"- 2026-01-03 10:00 | alpha-agent | noted | - | bad \xff byte\n");
    std::fs::write(&path, text).unwrap();
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/chronicle");
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("not valid UTF-8"),
        "the page does not say why it shows no lines"
    );
}
