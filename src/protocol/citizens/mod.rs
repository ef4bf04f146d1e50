//! Citizens: capability cards, the status a citizen declares, and a new citizen's files.

pub mod card;
pub mod citizen;
pub mod register;
