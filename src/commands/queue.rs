//! `polisd queue`: what waits for a person (the decisions it answers, then the rest of the
//! dashboard's human queue), and `polisd queue answer KEY accept|decline|later
//! --by NAME`: the person's answer, through `operations::queue::answer`.

use crate::commands::agent::{finish, Env};
use crate::commands::cli::{AnswerArg, QueueArgs, QueueCommand};
use crate::operations::queue;
use crate::protocol::contracts::person_queue::Answer;

pub fn run(a: QueueArgs) -> anyhow::Result<u8> {
    let env = Env::open(&a.opts)?;
    match a.action {
        None => {
            let items = queue::list(&env.root);
            // The rest of the dashboard's human queue (amendments to apply to CONSTITUTION.md,
            // findings, conflict copies…): not answered here, but a person must act on them,
            // and "nothing waits" beside a dashboard that lists them would mislead.
            let others: Vec<serde_json::Value> = crate::dashboard::view::read(&env.root, 0)
                .queue
                .iter()
                .filter(|i| i.decision().is_none())
                .map(|i| serde_json::json!({"key": i.key, "title": i.title, "action": i.action}))
                .collect();
            let answer = serde_json::json!({ "items": items, "to_act_on": others });
            finish(&a.opts, Ok(answer), |_| {
                let mut out: Vec<String> = items
                    .iter()
                    .map(|i| format!("{}\n  {}\n  answer: {}", i.key, i.title, i.answer_command))
                    .collect();
                if items.is_empty() {
                    out.push(if others.is_empty() {
                        "nothing waits for a person".to_string()
                    } else {
                        "no decision to answer".to_string()
                    });
                }
                if !others.is_empty() {
                    out.push(format!("to act on ({}):", others.len()));
                    for o in &others {
                        out.push(format!(
                            "  {}\n    {}",
                            o["title"].as_str().unwrap_or(""),
                            o["action"].as_str().unwrap_or("")
                        ));
                    }
                }
                out.join("\n")
            })
        }
        Some(QueueCommand::Answer(q)) => {
            let answer = match q.answer {
                AnswerArg::Accept => Answer::Accept,
                AnswerArg::Decline => Answer::Decline,
                AnswerArg::Later => Answer::Later,
            };
            let tags = match &q.tags {
                Some(t) => crate::protocol::citizens::register::parse_tags(t)
                    .map_err(|e| crate::commands::Usage(e.to_string()))?,
                None => Vec::new(),
            };
            let r = queue::answer(
                &env.writer,
                &env.now,
                &queue::AnswerRequest {
                    key: q.key,
                    answer,
                    by: q.by,
                    why: q.why,
                    agent_id: q.agent_id,
                    vendor: q.vendor,
                    model: q.model,
                    tags,
                },
            );
            finish(&a.opts, r, |x| {
                let mut out = format!("{} {}", x.key, x.answer.as_str());
                if let Some(r) = &x.registered {
                    out.push_str(&format!("; registered {}", r.agent_id));
                }
                if let Some(id) = &x.opened {
                    out.push_str(&format!("; opened contracts/open/{id}.md"));
                }
                out
            })
        }
    }
}
