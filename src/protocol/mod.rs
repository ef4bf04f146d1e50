//! The Polis Protocol's rules (docs/protocol.md), pure: text and parsed values in, findings and outputs
//! out. Nothing here opens a file, reads the clock, spawns a thread or names the shell; the
//! architecture test fails if it does.

pub mod amendments;
pub mod arg;
pub mod chronicle;
pub mod citizens;
pub mod clock;
pub mod contracts;
pub mod council;
pub mod delivery;
pub mod digest;
pub mod finding;
pub mod frontmatter;
pub mod input;
pub mod layout;
pub mod merge;
pub mod migration;
pub mod routing;
pub mod settings;
pub mod silenced;
