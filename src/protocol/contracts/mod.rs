//! Contracts and the work around them: a contract's frontmatter and edits, dependencies and the
//! ready queue, the records agents write by hand (reviews, lessons, guardrails), file
//! reservations, and the handoff chains that open one contract from another.

pub mod contract;
pub mod dependency;
pub mod guardrail;
pub mod handoff;
pub mod lesson;
pub mod person_queue;
pub mod record_check;
pub mod reservation;
pub mod reservation_check;
pub mod review;
