//! `polisd lesson file --as ID --tags a,b [--contract CID] --impact N TEXT`.

use crate::commands::agent::{finish, warnings, Env};
use crate::commands::cli::Deferred;
use crate::commands::cli::{split_tags, LessonCommand};
use crate::operations::lesson::{self, LessonRequest};

pub fn run(command: LessonCommand) -> anyhow::Result<u8> {
    let LessonCommand::File(Deferred(a)) = command;
    let env = Env::open(&a.opts)?;
    let req = LessonRequest {
        by: a.citizen,
        tags: split_tags(&a.tags),
        contract: a.contract,
        impact: a.impact,
        text: a.text,
    };
    let r = lesson::file(&env.writer, &env.now, &req);
    finish(&a.opts, r, |f| {
        format!(
            "Filed lesson {} -> {}{}",
            f.lesson_id,
            f.path,
            warnings(Some(&f.chronicle))
        )
    })
}
