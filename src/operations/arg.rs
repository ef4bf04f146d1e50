//! The arguments and the next actions a refusal names, as data each front end spells its own
//! way. They live in `protocol::arg`, where the pure texts (the primer, the notices) reach them
//! too; the operations' refusals name them from here.

pub use crate::protocol::arg::*;
