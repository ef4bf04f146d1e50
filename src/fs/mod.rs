//! The shell's access to a polis on disk: reading it into parsed values ([`snapshot`]), every
//! write into `_polis/` ([`writer`], the only module that opens a file there for writing),
//! finding the polis from a path ([`locate`]), the chronicle copies a long-running reader keeps
//! ([`chronicle_copy`]) or the lines it reads one at a time ([`chronicle_lines`]), the
//! machine-local state kept outside it ([`state`]) with the daemon's activity log
//! ([`activity`]), and the git repository around it ([`git`]).

pub mod activity;
pub mod chronicle_copy;
pub mod chronicle_lines;
pub mod git;
pub mod locate;
pub mod snapshot;
pub mod state;
pub mod writer;
