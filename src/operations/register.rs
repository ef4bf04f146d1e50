//! Registering a citizen (`polisd register`): its stamped card, status, inbox and journal, and
//! its `joined polis` chronicle line, written so that polisd has nothing to complain about (a
//! copied card would draw `card-changed` notices until someone ran `verify --fix`).

use crate::fs::writer::{WriteError, Writer};
use crate::protocol::citizens::register::{NewCitizen, RegisterError};
use crate::protocol::clock::PolisTime;
use crate::protocol::layout;
use std::path::Path;

/// Why a citizen was not registered. Nothing was written: a write refused halfway (a full
/// disk) takes back the files and the folder the registration had created, so the same
/// command succeeds once the cause is fixed.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Invalid(#[from] RegisterError),
    #[error(
        "`{0}` is already taken: citizens/{0}/ exists. Choose another id, or edit that \
         citizen's card and run `polisd verify --fix`"
    )]
    Taken(String),
    #[error("{0}")]
    Write(#[from] WriteError),
}

/// What a registration wrote (or, dry, would write), relative to `_polis/`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Registered {
    pub agent_id: String,
    pub files: Vec<String>,
    pub chronicle_line: String,
}

/// Registers `citizen` in the polis at `root`. With `writer` None (a dry run) only checks and
/// reports what it would write.
pub fn register(
    root: &Path,
    writer: Option<&Writer>,
    citizen: &NewCitizen,
    now: &PolisTime,
) -> Result<Registered, Refusal> {
    let files = citizen.files(now)?;
    let id = &citizen.agent_id;
    let folder = root.join(layout::CITIZENS_DIR).join(id);
    if std::fs::symlink_metadata(&folder).is_ok() {
        return Err(Refusal::Taken(id.clone()));
    }
    let line = citizen.joined_line(now);
    let registered = Registered {
        agent_id: id.clone(),
        files: files.iter().map(|(rel, _)| rel.clone()).collect(),
        chronicle_line: line.trim_end().to_string(),
    };
    let Some(writer) = writer else {
        return Ok(registered);
    };
    // The `joined polis` line is the registration's last write: refused now if it could not
    // be appended, so no citizen is left on disk without it.
    writer.check_writable(layout::CHRONICLE)?;
    // The card first, created exclusively: it claims the id against a second registration
    // racing this one.
    let mut files = files.into_iter();
    let (card_rel, card) = files.next().expect("the card is the first file");
    let mut created = Vec::new();
    let written = (|| {
        if !writer.create_new(&card_rel, card.as_bytes())? {
            return Ok(false);
        }
        created.push(card_rel.clone());
        for (rel, text) in files {
            if writer.create_new(&rel, text.as_bytes())? {
                created.push(rel);
            }
        }
        writer.append_locked(layout::CHRONICLE, line.as_bytes())?;
        Ok(true)
    })();
    match written {
        Ok(true) => Ok(registered),
        Ok(false) => Err(Refusal::Taken(id.clone())),
        Err(e) => {
            // Best effort: a file or folder that cannot be taken back stays, and the id with it.
            for rel in created.iter().rev() {
                let _ = writer.remove(rel);
            }
            let _ = writer.remove_empty_folder(Path::new(layout::CITIZENS_DIR).join(id));
            Err(Refusal::Write(e))
        }
    }
}
