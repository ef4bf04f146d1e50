//! `polisd route`: recommend a citizen for an open contract (SPEC §7), and explain why.

pub use crate::operations::route::explain;
