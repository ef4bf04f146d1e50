//! A team-scale polis: the overview a team lead keeps open.

use super::chromium::{
    assert_not_reloaded, browser, chromedriver, mark_page, runtime, text_of, wait_for_text,
};
use super::under_run::part;
use super::*;

pub(crate) const VENDORS: [&str; 4] = ["openai", "anthropic", "google", "mistral"];
pub(crate) const TEAM_TAGS: [&str; 4] = ["rust", "docs", "ops", "web"];

pub(crate) fn team_member(i: usize) -> String {
    format!("agent-{i:02}")
}

fn inbox_block(from: &str, stamp: &str, text: &str) -> String {
    format!("\n### {stamp} from {from}\n\n{text}\n\n---\n")
}

/// 12 citizens (the founder and 11 agents), 2,000 settled contracts over the last two weeks
/// (80 of them without a quality score: a week of P007 warnings), 80 open contracts in every
/// state, a guardrail, a reservation, a week of chronicle, and `agent-01` with three notices
/// of which it has read two.
pub(crate) fn team_polis() -> TestPolis {
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
