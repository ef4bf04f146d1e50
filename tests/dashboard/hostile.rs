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
