//! The Polis Protocol's rules (docs/protocol.md), pure: text and parsed values in, findings and outputs
//! out. Nothing here opens a file, reads the clock, spawns a thread or names the shell; the
//! architecture test fails if it does.

pub mod agent_hooks;
pub mod amendment;
pub mod card;
pub mod chronicle;
pub mod citizen;
pub mod claims;
pub mod clock;
pub mod contract;
pub mod council;
pub mod dependency;
pub mod digest;
pub mod finding;
pub mod frontmatter;
pub mod guardrail;
pub mod handoff;
pub mod inbox;
pub mod input;
pub mod layout;
pub mod lesson;
pub mod merge;
pub mod notice;
pub mod primer;
pub mod record_check;
pub mod reflection;
pub mod register;
pub mod reservation;
pub mod resolution;
pub mod review;
pub mod routing;
pub mod settings;
pub mod stats;
