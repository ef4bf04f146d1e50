//! `polisd bench routing`: simulated polises that compare routing policies, and the chart of
//! their learning curves; `polisd bench learning`: the reference's repeat-error simulation.

pub mod chart;
pub mod learning;
pub mod linucb;
pub mod simulation;
pub mod world;
