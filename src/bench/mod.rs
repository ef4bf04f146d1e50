//! `polisd bench routing`: simulated polises that compare routing policies, and the chart of
//! their learning curves.

pub mod chart;
pub mod simulation;
