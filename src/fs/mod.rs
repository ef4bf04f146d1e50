//! The shell's access to a polis on disk: reading it into parsed values ([`snapshot`]), every
//! write into `_polis/` ([`writer`], the only module that opens a file there for writing),
//! finding the polis from a path ([`locate`]), and the machine-local state kept outside it
//! ([`state`]) with the daemon's activity log ([`activity`]).

pub mod activity;
pub mod locate;
pub mod snapshot;
pub mod state;
pub mod writer;
