//! `polisd bench routing`: simulated polises that compare routing policies, and the chart of
//! their learning curves.

mod png;
pub mod simulation;
