//! Limits: a visitor cannot starve the server or the daemon beside it.

use super::http::event_stream;
use super::under_run::{daemon_dashboard, get_at};
use super::*;

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

/// Connections that send requests and never read the answers (pipelined GETs, so the
/// answers fill the socket's buffers) are closed once a write has waited too long, as
/// partial headers are: they do not hold every connection slot for good.
#[test]
fn connections_that_never_read_their_answers_give_their_slots_back() {
    let p = generated_polis();
    let s = serve_with(&p, "127.0.0.1:0", "max_connections = 4");
    let page = format!(
        "GET /p/0/ HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        s.addr.port()
    );
    // Each writes requests until the server stops reading them (its answers, unread, fill
    // the buffers first), and never reads.
    let stuck: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.set_nonblocking(true).unwrap();
            let started = Instant::now();
            while c.write(page.as_bytes()).is_ok_and(|n| n > 0) {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "the server kept reading requests whose answers are not read"
                );
            }
            c
        })
        .collect();
    // A visitor is served again once the stuck writes time out.
    let served = |c: &mut TcpStream| {
        let _ = write!(
            c,
            "GET /p/0/ HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            s.addr.port()
        );
        let mut answer = String::new();
        let _ = c.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    };
    wait_until(
        "a page for a visitor while four connections do not read",
        Duration::from_secs(30),
        || {
            let mut c = TcpStream::connect(s.addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            served(&mut c)
        },
    );
    drop(stuck);
}

/// A form whose body never comes is answered 503 within the request timeout wherever it is
/// sent: an action's address that ends in `/events`, like the event stream's, is no exception.
#[test]
fn a_form_whose_body_never_comes_is_answered_503_even_at_an_address_ending_in_events() {
    let p = generated_polis();
    let s = serve(&p, "127.0.0.1:0");
    for path in ["/p/0/act/message", "/p/0/act/events"] {
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(25))).unwrap();
        write!(
            c,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ncsrf=",
            s.addr.port()
        )
        .unwrap();
        let mut answer = [0u8; 64];
        let n = c.read(&mut answer).unwrap_or(0);
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(answer.starts_with("HTTP/1.1 503"), "{path}: {answer:?}");
    }
}

/// A runaway chronicle line (100 KB on one line) is quoted by its start and size in the
/// overview's findings, as `polisd check` quotes it: the table stays a few lines.
#[test]
fn a_runaway_chronicle_line_is_quoted_short_in_the_findings() {
    let p = TestPolis::init(FOUNDER);
    let line = format!(
        "-2026-03-01 10:00 | {FOUNDER} | worked | - | {}",
        "agent text ".repeat(9_400)
    );
    p.append("chronicle.md", &format!("{line}\n"));
    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/");
    assert_eq!(overview.status, 200);
    let b = &overview.body;
    let start = b.find(r#"<section id="findings">"#).unwrap_or(0);
    let end = b[start..].find("</section>").map_or(b.len(), |e| start + e);
    let findings = &b[start..end];
    let shown: String = findings.chars().take(300).collect();
    assert!(findings.len() < 4096, "{} bytes: {shown}", findings.len());
    assert!(findings.contains("C001"), "{shown}");
    assert!(
        findings.contains(&format!("({} bytes)", line.len())),
        "{shown}"
    );
    // Nor does the human queue, or any other part of the page, repeat it whole.
    assert!(!b.contains(&line), "{} bytes", b.len());
}
