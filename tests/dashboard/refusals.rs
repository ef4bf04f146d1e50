//! The console's refusals in the form's words: every refusal a console action can reach that
//! names what to change names the field as the page labels it, never a command-line flag a
//! person at a web form cannot pass. A whole command the console has no form for may stay, in
//! its code span, for a person with a shell.

use super::chromium::{browser_with, chromedriver, runtime};
use super::console::{ask_for_a_new_citizen, console_polis, csrf_of, post, send_form, url_encoded};
use super::*;

/// A settled contract with no required tags whose Settlement asks for a new citizen: accepting
/// it has no tag to give the stub.
fn ask_for_an_untagged_citizen(p: &TestPolis) -> String {
    p.save(
        "contracts/settled/untagged-job.md",
        &contract(
            "untagged-job",
            "untagged work",
            Some(ALPHA),
            "settled",
            &[],
            "quality_score: 4\nsettled_at: '2026-03-02 10:00:00'\n",
            "## Intent\n\nDone.\n\n## Settlement\n\nDone.\n\n### Suggested new agent\n\
             - **Need**: personal finance\n- **Reason**: no citizen knows budgets\n",
        ),
    );
    "new-citizen/untagged-job/1".to_string()
}

/// `text` outside its code spans that start with `polisd ` (a whole command, kept for a
/// person with a shell).
fn outside_commands(text: &str) -> String {
    text.split('`')
        .enumerate()
        .filter(|(i, part)| i % 2 == 0 || !part.starts_with("polisd "))
        .map(|(_, part)| part)
        .collect::<Vec<_>>()
        .join("`")
}

/// Why `body`, a refusal of `action`, is not in the form's words, if it is not.
fn not_form_worded(action: &str, body: &str, label: &str) -> Option<String> {
    let why = if !body.starts_with("refused, nothing written: ") {
        "not a refusal"
    } else if outside_commands(body).contains("--") {
        "a flag outside a whole command"
    } else if !body.contains(label) {
        "the field's label missing"
    } else {
        return None;
    };
    Some(format!("{action}: {why} (want {label}): {body}"))
}

/// Each action, driven to each refusal it can reach that names what to change: the field is
/// named by its label on the page, and no flag appears.
#[test]
fn console_refusals_name_the_form_s_fields_never_a_flag() {
    let p = console_polis();
    let (_, key) = ask_for_a_new_citizen(&p);
    let untagged = ask_for_an_untagged_citizen(&p);
    let s = serve(&p, "127.0.0.1:0");
    let overview = get(&s, "/p/0/");
    assert!(overview.body.contains(&untagged), "{}", overview.body);
    let (cookie, token) = csrf_of(&overview);
    let escape = "a%1Bb";
    let long = "x".repeat(4001);
    let new_citizen = format!("key={key}&answer=accept&by=Dana+Person&why=needed");
    let cases: Vec<(&str, String, &str)> = vec![
        // The console's own checks: a control character, an overlong field, a choice not offered.
        (
            "message",
            format!("as={FOUNDER}&to={BRAVO}&text={escape}"),
            "the \"message\" field",
        ),
        (
            "message",
            format!("as={FOUNDER}&to={BRAVO}&text={long}"),
            "the \"message\" field",
        ),
        (
            "review",
            format!("contract=next-job&as={FOUNDER}&decision=signed_off&body={escape}"),
            "the \"review\" field",
        ),
        (
            "review",
            format!("contract=next-job&as={FOUNDER}&decision=approve"),
            "the \"decision\" field",
        ),
        (
            "override",
            format!("contract=free-job&to={ALPHA}&reason={escape}"),
            "the \"because\" field",
        ),
        (
            "answer",
            format!("citizen={BRAVO}&notice=0123456789abcdef&as={FOUNDER}&text={escape}"),
            "the \"what was decided\" field",
        ),
        (
            "silence",
            format!("code=P007&as={FOUNDER}&reason={escape}"),
            "the \"why it needs nobody\" field",
        ),
        (
            "unsilence",
            format!("code=P007&as=founder{escape}"),
            "the \"as\" field",
        ),
        (
            "decide",
            format!("key={key}&answer=maybe&by=Dana"),
            "the \"answer\" field",
        ),
        // The operations' refusals.
        (
            "override",
            format!(
                "contract=free-job&to={ALPHA}&reason={}",
                url_encoded("mine\n## Forged heading")
            ),
            "the \"because\" field holds a line break",
        ),
        (
            "decide",
            format!(
                "key={key}&answer=decline&by=Dana&why={}",
                url_encoded("no\n## Forged heading")
            ),
            "the \"why\" field holds a line break",
        ),
        (
            "override",
            format!("contract=next-job&to={ALPHA}&reason=x"),
            "on the command line",
        ),
        (
            "decide",
            format!("key={key}&answer=accept&by=+&id=finance-agent-one"),
            "the \"your name\" field",
        ),
        (
            "decide",
            format!("key={key}&answer=accept&by={ALPHA}&id=finance-agent-one"),
            "the \"your name\" field",
        ),
        (
            "decide",
            new_citizen.clone(),
            "the \"new citizen's id\" field",
        ),
        (
            "decide",
            format!(
                "{new_citizen}&id=finance-agent-one&vendor={}",
                url_encoded("open\nai")
            ),
            "the \"vendor\" field",
        ),
        (
            "decide",
            format!(
                "{new_citizen}&id=finance-agent-one&model={}",
                url_encoded("gpt\n5")
            ),
            "the \"model\" field",
        ),
        (
            "decide",
            format!("key={untagged}&answer=accept&by=Dana&id=finance-agent-one"),
            "on the command line",
        ),
    ];
    let chronicle = p.read("chronicle.md");
    let mut wrong = Vec::new();
    for (action, fields, label) in &cases {
        let r = post(
            &s,
            &format!("/p/0/act/{action}"),
            &cookie,
            &format!("csrf={token}&{fields}"),
            "",
        );
        assert_eq!(r.status, 422, "{action} {fields}: {}", r.body);
        // The first line: the refusal is one line.
        let line = r.body.lines().next().unwrap_or_default();
        wrong.extend(not_form_worded(action, line, label));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(p.read("chronicle.md"), chronicle, "nothing written");
    assert!(!p.exists("citizens/finance-agent-one"));
}

/// In Chromium, a queue decision sent without the new citizen's id shows the refusal in the
/// form's words.
#[test]
fn browser_a_refused_console_form_shows_its_own_words() {
    let p = console_polis();
    let (_, key) = ask_for_a_new_citizen(&p);
    let s = serve(&p, "127.0.0.1:0");
    assert!(get(&s, "/p/0/").body.contains(&key));
    let driver = chromedriver();
    runtime().block_on(async {
        let c = browser_with(&driver, false).await;
        send_form(
            &c,
            &format!("{}p/0/", s.url),
            Some("details.group:has(form[action$='act/decide'])"),
            "form[action$='act/decide']",
            &[("by", "Dana Person"), ("why", "we need it")],
        )
        .await;
        let start = Instant::now();
        let shown = loop {
            let text = match c.find(fantoccini::Locator::Css("body")).await {
                Ok(body) => body.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if text.contains("refused") {
                break text;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no refusal shown: {text}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        assert!(
            shown.contains("the new citizen's id is empty")
                && shown.contains("the \"new citizen's id\" field"),
            "{shown}"
        );
        assert!(!shown.contains("--id"), "{shown}");
        c.close().await.unwrap();
    });
    assert!(!p.exists("citizens/finance-agent-one"));
}
