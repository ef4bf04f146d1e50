//! Amendments: the protocol changing itself, by vote (the tally) and from evidence (reflection).

pub mod amendment;
pub mod reflection;
