//! The shell's access to a polis on disk: reading it into parsed values ([`snapshot`]), every
//! write into `_polis/` ([`writer`], the only module that opens a file there for writing),
//! finding the polis from a path ([`locate`]), the machine-local state kept outside it
//! ([`state`]) with the daemon's activity log ([`activity`]), and the git repository around it
//! ([`git`]).

pub mod activity;
pub mod git;
pub mod locate;
pub mod snapshot;
pub mod state;
pub mod writer;
