//! The console: the few actions a person takes from the dashboard, each a plain HTML form
//! (`POST /p/{n}/act/{action}`) that works without JavaScript. [`security::guard`] has
//! already checked the Host, the token off loopback and the `Origin`; here the form's CSRF
//! field must match the visitor's cookie (403 otherwise). Each action calls the operation the
//! CLI calls (`operations::console`), then answers 303 back to the page it came from, or 422
//! with the operation's one-line refusal.
//!
//! Actions: `review` (sign off, request changes or reject a contract's work, as a citizen, as
//! `polisd review` does), `message` (write to a citizen's inbox), `override` (give an open,
//! unowned contract to a citizen against the router's pick, with a reason, as `polisd
//! contract claim --override` does), `answer` (answer a queue item standing for a notice:
//! a new citizen asked for, a deferred follow-up), `decide` (answer an item of the person's
//! queue, as `polisd queue answer` does), `silence` and `unsilence` (a class of warning out of
//! or back into the human queue).

use super::security::Csrf;
use super::Site;
use crate::operations::arg::{Arg, Spell};
use axum::extract::{Extension, Form, Path as UrlPath, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::Arc;

/// Most characters of a form's field (a reason, a message, an id): as a message may hold.
const MAX_FIELD_CHARS: usize = crate::operations::console::MAX_MESSAGE_CHARS;
/// Most characters of a review's body, which is a file of its own.
const MAX_BODY_CHARS: usize = 64_000;

/// Handles `POST /p/{polis}/act/{action}`.
pub async fn act(
    State(site): State<Arc<Site>>,
    Extension(csrf): Extension<Csrf>,
    UrlPath(params): UrlPath<HashMap<String, String>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if !csrf.accepts(form.get("csrf").map(String::as_str)) {
        return (
            StatusCode::FORBIDDEN,
            "this form's CSRF token is missing or stale: reload the page and send the form again\n",
        )
            .into_response();
    }
    let action = params.get("action").cloned().unwrap_or_default();
    // What a person types is held to the rule agents' text is held to (no control or bidi
    // characters), as on the command line and in MCP.
    for (name, value) in &form {
        if let Err(e) = crate::protocol::input::check_text(&field_named(&action, name), value) {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("refused, nothing written: {e}\n"),
            )
                .into_response();
        }
    }
    // And to a length a person types: a reason or a note of megabytes would go whole into a
    // contract's frontmatter and a chronicle line. A review's body is a file of its own.
    for (name, value) in &form {
        let (most, most_text) = if name == "body" {
            (MAX_BODY_CHARS, "64,000")
        } else {
            (MAX_FIELD_CHARS, "4,000")
        };
        let chars = value.chars().count();
        if chars > most {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "refused, nothing written: {} is {chars} characters, over the {most_text} a \
                     field may hold; shorten it, or point to a file\n",
                    field_named(&action, name)
                ),
            )
                .into_response();
        }
    }
    let Some((n, view)) = super::polis_of(&site, &params) else {
        return (StatusCode::NOT_FOUND, "no such polis\n").into_response();
    };
    let root = view.root.clone();
    let field = move |k: &str| form.get(k).map(String::as_str).unwrap_or("").to_string();
    // Where to go when done, settled before anything is written: only a page of this polis
    // (never an open redirect), and only as the pages write their links, visible ASCII (a
    // newline, which no `Location` header can carry, answered 500 after the action wrote).
    let back = field("back");
    let prefix = format!("/p/{n}/");
    let to = if back.starts_with(&prefix)
        && !back.contains("//")
        && !back.contains('\\')
        && back.bytes().all(|b| b.is_ascii_graphic())
    {
        back
    } else {
        prefix
    };
    let done = tokio::task::spawn_blocking(move || run(&root, &action, &field)).await;
    match done {
        Ok(Ok(())) => (StatusCode::SEE_OTHER, [(header::LOCATION, to)], "done\n").into_response(),
        Ok(Err(Refused::Unknown)) => (StatusCode::NOT_FOUND, "no such action\n").into_response(),
        Ok(Err(Refused::Op(why))) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("refused, nothing written: {why}\n"),
        )
            .into_response(),
        Err(e) => {
            tracing::error!("dashboard: an action failed: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the action failed; see polisd's log\n",
            )
                .into_response()
        }
    }
}

/// `GET /p/{polis}/act/{action}`: an action opened as a link (a bookmark, a typed address)
/// does nothing, and says so.
pub async fn opened_by_link() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST")],
        "this address takes a console form (POST) and does nothing when opened as a link; \
         use the form on the dashboard's page\n",
    )
        .into_response()
}

enum Refused {
    Unknown,
    Op(String),
}

fn run(
    root: &std::path::Path,
    action: &str,
    field: &dyn Fn(&str) -> String,
) -> Result<(), Refused> {
    use crate::operations::console;
    let outcome = match action {
        "review" => {
            let other = field("decision");
            let Some(decision) = crate::protocol::contracts::review::Decision::named(&other) else {
                return Err(Refused::Op(format!(
                    "`{other}` is not a decision: in {}, pick sign off, request changes or reject",
                    field_named(action, "decision")
                )));
            };
            console::review(
                root,
                &field("contract"),
                &field("as"),
                &decision,
                field("body").trim(),
            )
            .map(drop)
        }
        "message" => {
            console::write_to_inbox(root, &field("as"), &field("to"), &field("text")).map(drop)
        }
        "override" => {
            console::override_routing(root, &field("contract"), &field("to"), &field("reason"))
                .map(drop)
        }
        "answer" => console::answer_notice(
            root,
            &field("citizen"),
            &field("notice"),
            &field("as"),
            &field("text"),
        )
        .map(drop),
        "decide" => {
            use crate::protocol::contracts::person_queue::Answer;
            let Some(answer) = Answer::parse(&field("answer")) else {
                return Err(Refused::Op(format!(
                    "`{}` is not an answer: in {}, pick accept, decline or later",
                    field("answer"),
                    field_named(action, "answer")
                )));
            };
            let optional = |k: &str| Some(field(k).trim().to_string()).filter(|v| !v.is_empty());
            console::decide(
                root,
                &crate::operations::queue::AnswerRequest {
                    key: field("key"),
                    answer,
                    by: field("by").trim().to_string(),
                    why: field("why").trim().to_string(),
                    agent_id: optional("id"),
                    vendor: optional("vendor"),
                    model: optional("model"),
                    tags: Vec::new(),
                },
            )
            .map(drop)
        }
        "silence" => {
            console::silence(root, &field("code"), &field("as"), &field("reason")).map(drop)
        }
        "unsilence" => console::unsilence(root, &field("code"), &field("as")).map(drop),
        _ => return Err(Refused::Unknown),
    };
    // The operation's refusal names its arguments as this form's fields, not as the flags
    // its `Display` gives the command line.
    outcome.map_err(|e| Refused::Op(e.spelled(&|arg| named(action, arg))))
}

/// The label a person sees on `action`'s form for its field `field` (the text beside it, or
/// its placeholder where it has none), which the pages show and the refusals name; `None`
/// for a hidden field.
pub(super) fn label(action: &str, field: &str) -> Option<&'static str> {
    Some(match (action, field) {
        ("review" | "answer" | "silence" | "unsilence", "as") => "as",
        ("review", "decision") => "decision",
        ("review", "body") => "review",
        ("message", "as") => "from",
        ("message", "text") => "message",
        ("override", "to") => "give it to",
        ("override", "reason") => "because",
        ("answer", "text") => "what was decided",
        ("silence", "reason") => "why it needs nobody",
        ("decide", "answer") => "answer",
        ("decide", "by") => "your name",
        ("decide", "why") => "why",
        ("decide", "id") => "new citizen's id",
        ("decide", "vendor") => "vendor",
        ("decide", "model") => "model",
        _ => return None,
    })
}

/// The field of `action`'s form that carries `arg`, if the form asks for it.
fn field_of(action: &str, arg: Arg) -> Option<&'static str> {
    Some(match (action, arg) {
        ("override", Arg::Citizen | Arg::SessionCitizen) => "to",
        (
            "review" | "message" | "answer" | "silence" | "unsilence",
            Arg::Citizen | Arg::SessionCitizen,
        ) => "as",
        ("review", Arg::Body) => "body",
        ("message" | "answer", Arg::Text) => "text",
        ("decide", Arg::By) => "by",
        ("decide", Arg::AgentId) => "id",
        ("decide", Arg::Vendor) => "vendor",
        ("decide", Arg::Model) => "model",
        ("decide", Arg::Why) => "why",
        ("override" | "silence", Arg::Reason) => "reason",
        _ => return None,
    })
}

/// `field` of `action`'s form as a refusal names it: by its label on the page.
fn field_named(action: &str, field: &str) -> String {
    match label(action, field) {
        Some(label) => format!("the \"{label}\" field"),
        // Not typed by the person (the contract, the notice, the token): the page put it there,
        // or the client made it up, so it is quoted as a value polisd did not write.
        None => format!(
            "the form's hidden field `{}`",
            crate::protocol::finding::quoted(field)
        ),
    }
}

/// `arg` as the console names it for `action`: the field that carries it; one no form of the
/// console asks for is the command line's, named with its whole command for a person with a
/// shell.
fn named(action: &str, arg: Arg) -> String {
    if let Some(field) = field_of(action, arg) {
        return field_named(action, field);
    }
    let command = match arg {
        Arg::Force => "polisd contract claim",
        Arg::Tags if action == "decide" => "polisd queue answer",
        _ => "polisd",
    };
    format!("`{command} {}` on the command line", arg.flag())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACTIONS: [&str; 7] = [
        "review",
        "message",
        "override",
        "answer",
        "decide",
        "silence",
        "unsilence",
    ];
    const ARGS: [Arg; 22] = [
        Arg::Citizen,
        Arg::SessionCitizen,
        Arg::Title,
        Arg::Body,
        Arg::Text,
        Arg::Tags,
        Arg::Contract,
        Arg::Force,
        Arg::Lesson,
        Arg::Impact,
        Arg::NoLesson,
        Arg::Suggest,
        Arg::By,
        Arg::AgentId,
        Arg::Vendor,
        Arg::Model,
        Arg::Accept,
        Arg::Deadline,
        Arg::ReviewOverride,
        Arg::Reason,
        Arg::Note,
        Arg::Why,
    ];

    /// A field an argument is named by is one the person sees, and an argument no form asks
    /// for is named only inside a whole command: never a bare flag.
    #[test]
    fn an_argument_is_a_labelled_field_or_a_whole_command() {
        for action in ACTIONS {
            for arg in ARGS {
                let name = named(action, arg);
                match field_of(action, arg) {
                    Some(field) => {
                        let label = label(action, field).expect("a field an argument names");
                        assert_eq!(name, format!("the \"{label}\" field"));
                    }
                    None => assert!(
                        name.starts_with("`polisd ") && name.ends_with("` on the command line"),
                        "{action} {arg:?}: {name}"
                    ),
                }
            }
        }
        assert_eq!(named("override", Arg::Citizen), "the \"give it to\" field");
        assert_eq!(named("message", Arg::Citizen), "the \"from\" field");
        assert_eq!(
            named("override", Arg::Force),
            "`polisd contract claim --force` on the command line"
        );
    }

    /// A field no form has is named by what the client sent, quoted as every message quotes a
    /// value it did not write: a name of 100 KB makes a refusal of a line, not of 100 KB.
    #[test]
    fn a_field_no_form_has_is_named_by_a_short_quote() {
        let name = "n".repeat(100_000);
        let said = field_named("message", &name);
        assert!(said.len() < 400, "{} bytes", said.len());
        assert!(said.contains("(100000 bytes)"), "{said}");
        assert_eq!(
            field_named("message", "back"),
            "the form's hidden field `back`"
        );
    }
}
