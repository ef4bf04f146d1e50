//! The pages read as a team lead reads them: what was recorded and what holds now kept apart
//! and explained, states worded as what they mean rather than polisd's internal names.

use super::*;

/// An open contract the router routed to `BRAVO` before the rust work in the generated polis
/// settled (it was opened on 2026-01-05; the settlements are from February).
fn routed_before_the_history(p: &TestPolis) {
    p.save(
        "contracts/open/routed-job.md",
        &contract(
            "routed-job",
            "a job routed long ago",
            None,
            "proposed",
            &["rust"],
            &format!(
                "routing:\n  recommended_by_router: {BRAVO}\n  recommendation_score: 0.410\n  \
                 exploration: false\n  override: null\n"
            ),
            "## Intent\n\nDo it.\n",
        ),
    );
}

/// What `polisd route routed-job --seed 0 --json` answers: the router's pick now.
fn route_now(p: &TestPolis) -> serde_json::Value {
    let cli = harness::ok(p.polisd(&["route", "routed-job", "--seed", "0", "--json"]));
    serde_json::from_slice(&cli.stdout).unwrap()
}

/// `html` with its tags stripped.
fn without_tags(html: &str) -> String {
    let mut text = String::new();
    let mut inside = false;
    for c in html.chars() {
        match c {
            '<' => inside = true,
            '>' => inside = false,
            c if !inside => text.push(c),
            _ => {}
        }
    }
    text
}

/// The text of the element with `id` (its tags stripped), or a panic naming the page.
#[track_caller]
fn element_text(body: &str, id: &str) -> String {
    let start = body
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} on the page: {body}"));
    let open = body[..start].rfind('<').unwrap();
    let tag: String = body[open + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let end = start + body[start..].find(&format!("</{tag}>")).unwrap();
    // From the end of the element's own opening tag.
    let inner = start + body[start..end].find('>').map_or(end - start, |i| i + 1);
    without_tags(&body[inner..end])
}

/// A contract's routing block records the pick polisd made when it routed the contract (and
/// where its notice went); the router has learnt since. The page says which is which, and why
/// they differ: the settlements on its tags since it was opened.
#[test]
fn the_contract_page_tells_the_recorded_pick_from_the_pick_now_and_why_they_differ() {
    let p = generated_polis();
    routed_before_the_history(&p);
    let cli = route_now(&p);
    let now = cli["recommendation"].as_str().unwrap().to_string();
    assert_ne!(
        now, BRAVO,
        "the fixture wants a router that has changed its mind"
    );
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/contracts/routed-job");
    assert_eq!(page.status, 200, "{}", page.body);
    let recorded = element_text(&page.body, "routing-recorded");
    assert!(
        recorded.contains(BRAVO) && recorded.contains("when polisd routed it"),
        "the recorded pick, said to be the recorded one: {recorded}"
    );
    assert!(
        recorded.contains("inbox"),
        "where the notice went: {recorded}"
    );
    let current = element_text(&page.body, "routing-now");
    assert!(
        current.contains(&now) && !current.contains(BRAVO),
        "the pick now, as `polisd route` makes it: {current}"
    );
    let why = element_text(&page.body, "routing-why");
    assert!(
        why.contains("4 contracts on its tags settled since it was opened"),
        "why they differ: {why}"
    );
    for (id, owner, quality) in [("done-1", ALPHA, 4), ("done-4", BRAVO, 2)] {
        assert!(
            why.contains(&format!("{id} ({owner}, quality {quality})")),
            "each settlement it learnt from: {why}"
        );
    }
    assert!(!why.contains("done-5"), "done-5 is on docs: {why}");
}

/// When the router would still pick the recorded citizen, the page says so instead of
/// explaining a difference; a contract polisd has not routed yet says that.
#[test]
fn the_contract_page_says_when_the_router_still_agrees_or_has_not_routed_yet() {
    let p = generated_polis();
    routed_before_the_history(&p);
    let cli = route_now(&p);
    let now = cli["recommendation"].as_str().unwrap().to_string();
    let text = p.read("contracts/open/routed-job.md");
    p.save(
        "contracts/open/routed-job.md",
        &text.replace(
            &format!("recommended_by_router: {BRAVO}"),
            &format!("recommended_by_router: {now}"),
        ),
    );
    p.save(
        "contracts/open/fresh-job.md",
        &contract(
            "fresh-job",
            "fresh",
            None,
            "proposed",
            &["rust"],
            "",
            "## Intent\n\nNew.\n",
        ),
    );
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/contracts/routed-job");
    let why = element_text(&page.body, "routing-why");
    assert!(
        why.contains(&format!("would still pick {now}")),
        "the same pick: {why}"
    );
    let fresh = get(&s, "/p/0/contracts/fresh-job");
    let recorded = element_text(&fresh.body, "routing-recorded");
    assert!(
        recorded.contains("Not routed yet"),
        "no recorded pick: {recorded}"
    );
}

/// What a tally would do to an amendment is a sentence, not the status word it would write:
/// short of quorum it stays open, at quorum it would be ratified.
#[test]
fn what_a_tally_now_would_do_reads_as_a_sentence() {
    let p = generated_polis();
    amendment_at_quorum(&p);
    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/");
    let short = get(&s, "/p/0/amendments/quorum-rule");
    let met = get(&s, "/p/0/amendments/second-rule");
    for b in [&overview.body, &short.body, &met.body] {
        for word in ["pending", "ratified", "expired", "rejected"] {
            assert!(
                !b.contains(&format!("would {word}"))
                    && !b.contains(&format!("would <strong>{word}")),
                "`would {word}`: {b}"
            );
        }
    }
    assert!(
        short.body.contains("a tally now would leave it open"),
        "{}",
        short.body
    );
    assert!(
        met.body.contains("a tally now would ratify it"),
        "{}",
        met.body
    );
    assert!(
        overview.body.contains("a tally now would leave it open")
            && overview.body.contains("a tally now would ratify it"),
        "{}",
        overview.body
    );
}

/// A council's phase reads the same on the overview, the contract page and the councils page,
/// in words (the open round and when it closes), never the state file's `rounds` or `round 0`.
#[test]
fn a_council_s_phase_reads_alike_on_every_page_and_in_words() {
    let p = generated_polis();
    harness::ok(p.polisd(&["council", "start", "hostile-one", "--mode", "duo"]));
    let s = serve(&p, "127.0.0.1:0");
    let councils = get(&s, "/p/0/councils");
    let phase = element_text(&councils.body, "phase-hostile-one");
    assert!(
        phase.contains("open until"),
        "the councils page's phase: {phase}"
    );
    let overview = element_text(&get(&s, "/p/0/").body, "councils-now");
    let contract = element_text(&get(&s, "/p/0/contracts/hostile-one").body, "council");
    for (page, text) in [("overview", &overview), ("contract", &contract)] {
        assert!(
            text.contains(&phase),
            "the {page} page words the phase as the councils page does ({phase}): {text}"
        );
        assert!(
            !text.contains("phase rounds") && !text.contains("· rounds ·"),
            "the {page} page names the state file's phase: {text}"
        );
    }
}

fn status_md(id: &str, state: &str, last_active: &str) -> String {
    format!("---\nagent_id: {id}\nlast_active: {last_active}\nstate: {state}\ncurrent_contract: null\n---\n\n# Status of {id}\n")
}

/// The citizens' table says how long ago each citizen was last seen, and marks one silent past
/// the activity window (out of every quorum); a state a citizen wrote itself that a claim
/// contradicts (`idle` while it owns work in progress) is said to be its own word.
#[test]
fn the_citizens_table_shows_who_has_gone_silent_and_whose_state_a_claim_contradicts() {
    let p = generated_polis();
    let ago = |days: i64| {
        (chrono::Local::now().naive_local() - chrono::Duration::days(days))
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    };
    for (id, days) in [("charlie-agent", 20), ("delta-agent1", 5)] {
        p.citizen(id, "meta", &[("rust", 2)], "low");
        p.save(
            &format!("citizens/{id}/status.md"),
            &status_md(id, "idle", &ago(days)),
        );
    }
    // BRAVO owns `next-job`, in progress, and says it is idle.
    p.save(
        &format!("citizens/{BRAVO}/status.md"),
        &status_md(BRAVO, "idle", &ago(0)),
    );
    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/").body;
    let row = |id: &str| {
        let start = overview
            .find(&format!("<tr data-citizen=\"{id}\">"))
            .unwrap_or_else(|| panic!("no row for {id}: {overview}"));
        let end = start + overview[start..].find("</tr>").unwrap();
        without_tags(&overview[start..end])
    };
    let quiet = row("charlie-agent");
    assert!(
        quiet.contains("20 days ago") && quiet.contains("not counted for quorum"),
        "silent past the activity window: {quiet}"
    );
    let recent = row("delta-agent1");
    assert!(
        recent.contains("5 days ago") && !recent.contains("quorum"),
        "silent, within the window: {recent}"
    );
    let bravo = row(BRAVO);
    assert!(
        bravo.contains("idle, says its status.md") && bravo.contains("next-job"),
        "its own word against its claim: {bravo}"
    );
}

/// A `stakes: high` contract that is claimed and has no review decision yet waits for review,
/// whatever its `status` says: the person's queue asks a reviewer for it, and the overview's
/// "Waiting for review" (its fold and its count) lists it too, beside what says `under_review`.
/// One signed off waits for nothing.
#[test]
fn waiting_for_review_lists_the_high_stakes_claims_the_queue_asks_a_reviewer_for() {
    let p = generated_polis();
    // `hostile-one` (claimed) and `next-job` (in progress) are high stakes with no reviewer.
    p.save(
        "contracts/open/signed-job.md",
        &contract(
            "signed-job",
            "signed off already",
            Some(ALPHA),
            "in_progress",
            &["rust"],
            &format!("review:\n  required: true\n  reviewer: {BRAVO}\n  status: signed_off\n"),
            "## Intent\n\nDone soon.\n",
        ),
    );
    p.save(
        "contracts/open/asked-job.md",
        &contract(
            "asked-job",
            "a reviewer asked",
            Some(BRAVO),
            "claimed",
            &["rust"],
            &format!("review:\n  required: true\n  reviewer: {ALPHA}\n  status: null\n"),
            "## Intent\n\nPlan first.\n",
        ),
    );
    p.save(
        "contracts/open/told-job.md",
        &contract(
            "told-job",
            "said to be under review",
            Some(BRAVO),
            "under_review",
            &["docs"],
            "",
            "## Intent\n\nDone.\n",
        )
        .replace("stakes: high", "stakes: low"),
    );
    let s = serve(&p, "127.0.0.1:0");
    let body = get(&s, "/p/0/").body;
    let queue = element_text(&body, "queue");
    for id in ["hostile-one", "next-job"] {
        assert!(
            queue.contains(&format!(
                "High-stakes contract {id} is claimed with no reviewer"
            )),
            "the queue asks a reviewer for {id}: {queue}"
        );
    }
    let waiting = element_text(&body, "reviews");
    for id in ["hostile-one", "next-job", "asked-job", "told-job"] {
        assert!(waiting.contains(id), "{id} waits for review: {waiting}");
    }
    assert!(!waiting.contains("signed-job"), "signed off: {waiting}");
    assert!(
        waiting.starts_with("Waiting for review 4"),
        "the fold's count: {waiting}"
    );
    assert!(
        waiting.contains("no reviewer yet") && waiting.contains(&format!("{ALPHA} asked")),
        "what each waits for: {waiting}"
    );
    assert!(
        waiting.contains("stakes: high") && waiting.contains("under_review"),
        "the fold says what it counts: {waiting}"
    );
    assert_eq!(
        element_text(&body, "count-reviews"),
        "4",
        "the count card agrees with the fold"
    );
}

/// An amendment at quorum is not ratified until something tallies it: with no daemon
/// watching, the page says to run `polisd tally`; with a daemon watching, that it ratifies it
/// on its next pass.
#[test]
fn an_amendment_a_tally_would_ratify_says_who_tallies_it() {
    let p = generated_polis();
    amendment_at_quorum(&p);
    {
        let s = serve(&p, "127.0.0.1:0");
        for page in ["/p/0/", "/p/0/amendments/second-rule"] {
            let body = get(&s, page).body;
            assert!(
                body.contains("a tally now would ratify it: no daemon watches this polis; run <code>polisd tally</code>"),
                "{page}: {body}"
            );
            assert!(
                !body.contains("leave it open: no daemon")
                    && !body.contains("leave it open: the daemon"),
                "an amendment short of quorum needs nobody to act: {page}: {body}"
            );
        }
    }
    // This test process stands in for a daemon watching the polis (`daemon.json`, a live pid).
    let state = polisd::fs::state::State::load_in(&p.state_dir, &p.root).unwrap();
    state
        .write_status(&state.status("2026-11-30T09:00:00Z", "native"))
        .unwrap();
    let s = serve(&p, "127.0.0.1:0");
    for page in ["/p/0/", "/p/0/amendments/second-rule"] {
        let body = get(&s, page).body;
        assert!(
            body.contains(&format!(
                "a tally now would ratify it: the daemon watching this polis (<code>polisd run</code>, pid {}) does on its next pass",
                std::process::id()
            )),
            "{page}: {body}"
        );
    }
}

/// `polisd council status` words a council's phase as the pages do (`phase_words`), never
/// "the restatement gate", and its `--json` keeps its fields.
#[test]
fn council_status_words_the_phase_as_the_pages_do() {
    let p = generated_polis();
    let started = harness::ok(p.polisd(&["council", "start", "hostile-one", "--mode", "duo"]));
    let started = String::from_utf8_lossy(&started.stdout).to_string();
    let cli = harness::ok(p.polisd(&["council", "status", "hostile-one"]));
    let cli = String::from_utf8_lossy(&cli.stdout).to_string();
    let json = harness::ok(p.polisd(&["council", "status", "hostile-one", "--json"]));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    for key in [
        "phase",
        "phase_words",
        "round",
        "rounds",
        "closes_at",
        "word_limit",
    ] {
        assert!(json.get(key).is_some(), "--json keeps `{key}`: {json}");
    }
    let s = serve(&p, "127.0.0.1:0");
    let phase = element_text(&get(&s, "/p/0/councils").body, "phase-hostile-one");
    let words = json["phase_words"].as_str().unwrap();
    assert!(
        phase.contains(words),
        "the page: {phase}, the JSON: {words}"
    );
    for (what, text) in [("status", &cli), ("start", &started)] {
        assert!(
            text.contains(words),
            "`council {what}` words the phase as the pages do ({words}): {text}"
        );
        assert!(
            !text.contains("restatement gate"),
            "`council {what}` names the phase its own way: {text}"
        );
    }
}

/// What `council write` says, its refusals and `status`'s councils name the open round as
/// `phase_words` does: the question being restated before the rounds, never "round 0".
#[test]
fn council_write_and_status_name_the_round_as_the_pages_do() {
    let p = generated_polis();
    harness::ok(p.polisd(&["council", "start", "hostile-one", "--mode", "duo"]));
    let json = harness::ok(p.polisd(&["council", "status", "hostile-one", "--json"]));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let words = json["phase_words"].as_str().unwrap().to_string();
    assert!(words.starts_with("restating the question"), "{words}");
    let seat = json["seats"][0]["id"].as_str().unwrap().to_string();
    let file = p.dir.path().join("contribution.md");
    std::fs::write(&file, "1) The question. 2) Another frame.\n").unwrap();
    let file = file.to_str().unwrap();
    let wrote = harness::ok(p.polisd(&["council", "write", "hostile-one", "--as", &seat, file]));
    let wrote = String::from_utf8_lossy(&wrote.stdout).to_string();
    assert!(
        wrote.starts_with(
            "Wrote your contribution to restating the question -> reviews/hostile-one/round-0/"
        ),
        "{wrote}"
    );
    std::fs::write(file, "word ".repeat(101)).unwrap();
    let refused = p.polisd(&["council", "write", "hostile-one", "--as", &seat, file]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let refused = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(
        refused.contains("over twice the limit of 50 for restating the question"),
        "{refused}"
    );
    let status = harness::ok(p.polisd(&["status"]));
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        status.contains(&format!("hostile-one (duo): {words}")),
        "`status` words the council as the pages do ({words}): {status}"
    );
    for text in [&wrote, &refused, &status] {
        assert!(!text.contains("round 0"), "{text}");
    }
}

/// A polis just made by `polisd init`: the overview says what to do next (open a contract: the
/// command and the template) instead of a Work section of zeros, and the chart says nothing
/// settled instead of drawing an axis with a made-up maximum.
#[test]
fn an_empty_polis_says_what_to_do_next_and_draws_no_empty_chart() {
    let p = TestPolis::init(FOUNDER);
    let s = serve(&p, "127.0.0.1:0");
    let body = get(&s, "/p/0/").body;
    let trend = element_text(&body, "trend");
    assert!(
        !trend.contains("max 1/day") && !body.contains("<svg class=\"bars\""),
        "an empty chart: {trend}"
    );
    assert!(
        trend.contains("Nothing settled in the last 14 days"),
        "the chart says it has nothing to show: {trend}"
    );
    let work = element_text(&body, "work");
    assert!(
        work.contains("No contract is open")
            && work.contains("polisd contract open --title")
            && work.contains(&format!("--by {FOUNDER}"))
            && work.contains("contracts/TEMPLATE.md"),
        "the next step: {work}"
    );
    // With work in the polis, the chart is drawn and the hint is gone.
    let busy = generated_polis();
    let s = serve(&busy, "127.0.0.1:0");
    let body = get(&s, "/p/0/").body;
    assert!(!element_text(&body, "work").contains("No contract is open"));
}

/// The contract page says what each number is: the recorded `recommendation_score` is the
/// picked citizen's score `total` when polisd routed it (the breakdown's `total` is the same
/// score computed now), and a policy's `value` is what it ranked by, recorded nowhere.
#[test]
fn the_contract_page_says_which_score_is_which() {
    let p = generated_polis();
    routed_before_the_history(&p);
    let cli = route_now(&p);
    let bravo_now = cli["scores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["citizen"] == BRAVO)
        .map(|s| s["total"].as_f64().unwrap())
        .unwrap();
    let s = serve(&p, "127.0.0.1:0");
    let page = get(&s, "/p/0/contracts/routed-job").body;
    let recorded = element_text(&page, "routing-recorded");
    assert!(
        recorded.contains(&format!(
            "score total 0.410 then; {bravo_now:.3} now, as the breakdown's total"
        )),
        "the recorded score beside the same score now: {recorded}"
    );
    let breakdown = element_text(&page, "routing-breakdown");
    assert!(
        breakdown.contains("total is the routing score")
            && breakdown.contains("recommendation_score")
            && breakdown.contains("value is what the policy ranked by"),
        "the breakdown names its scales: {breakdown}"
    );
}
