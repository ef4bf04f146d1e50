//! `polisd queue`: what waits for a person, and `polisd queue answer KEY accept|decline|later
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
            finish(&a.opts, Ok(serde_json::json!({ "items": items })), |_| {
                if items.is_empty() {
                    return "nothing waits for a person".to_string();
                }
                items
                    .iter()
                    .map(|i| format!("{}\n  {}\n  answer: {}", i.key, i.title, i.answer_command))
                    .collect::<Vec<_>>()
                    .join("\n")
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
