//! polisd: keeps a Polis Protocol folder (`_polis/`) current while AI agents edit plain files.
//!
//! The protocol core (everything under "core" below) is pure: text and parsed values in,
//! findings and outputs out, no I/O. The daemon and the one-shot commands gather inputs from
//! disk, call the core, and hand every write to [`writer`].

// Core: the protocol, no I/O.
pub mod amendment;
pub mod card;
pub mod chronicle;
pub mod citizen;
pub mod clock;
pub mod contract;
pub mod finding;
pub mod frontmatter;
pub mod inbox;
pub mod lesson;
pub mod policy;
pub mod polis;
pub mod review;
pub mod router;
pub mod settings;
pub mod simulation;
pub mod stats;
pub mod yaml;

// Shell: reading a polis, writing to it, watching it, running as a service.
pub mod actions;
pub mod cli;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod engine;
pub mod service;
pub mod snapshot;
pub mod state;
pub mod watch;
pub mod writer;
