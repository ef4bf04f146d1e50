//! `polisd bench routing`: simulated polises that compare routing policies, and the chart of
//! their learning curves.

mod chart;
pub mod simulation;
