//! Why the chavruta review holds an action back (a review of one's own work, a settle before
//! the sign-off or the council's verdict), as data an [`OpError`](super::OpError) carries.

use crate::operations::arg::{Action, Names};

/// Why the chavruta review holds an action back, as data: each suggests what to do next as an
/// [`Action`], which every front end names its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// The reviewer owns the contract at `link`.
    OwnWork {
        reviewer: String,
        cid: String,
        link: String,
    },
    /// A council reviews the contract and has no verdict yet.
    UnderCouncil(String),
    /// `stakes: high`, and its reviewer requested changes.
    ChangesRequested(String),
    /// `stakes: high`, and its review rejected it.
    Rejected(String),
    /// `stakes: high`, and no other citizen signed it off.
    NoSignOff(String),
}

impl Gate {
    /// The refusal, with its actions named by `names`.
    pub fn worded(&self, names: Names) -> String {
        let sign_off = |cid: &str| {
            names.action(&Action::SignOff {
                cid: cid.to_string(),
            })
        };
        match self {
            Gate::OwnWork {
                reviewer,
                cid,
                link,
            } => format!(
                "`{reviewer}` owns contract `{cid}`: a chavruta review is another citizen's (ideally of another vendor); ask one with {}",
                names.action(&Action::AskReview {
                    by: reviewer.clone(),
                    link: link.clone()
                })
            ),
            Gate::UnderCouncil(cid) => format!(
                "contract `{cid}` is under council review; it settles after the verdict ({})",
                names.action(&Action::CouncilStatus { cid: cid.clone() })
            ),
            Gate::ChangesRequested(cid) => format!(
                "contract `{cid}` is stakes: high and its reviewer requested changes; revise, then ask for a second round ({})",
                sign_off(cid)
            ),
            // The override is a person's decision, taken on the command line only: it stays
            // a command for every front end.
            Gate::Rejected(cid) => format!(
                "contract `{cid}` is stakes: high and its review rejected it; escalate (a person may settle it with `polisd contract settle {cid} --review-override \"PERSON: WHY\"`) or abandon it ({})",
                names.action(&Action::Abandon { cid: cid.clone() })
            ),
            Gate::NoSignOff(cid) => format!(
                "contract `{cid}` is stakes: high: it settles after another citizen (ideally of another vendor) signs off its review ({})",
                sign_off(cid)
            ),
        }
    }
}
