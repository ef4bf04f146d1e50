//! Routing a contract to a citizen (SPEC §7): the score of every candidate ([`score`]) and the
//! policy that picks one ([`policy`]).

pub mod policy;
pub mod score;
