//! The routing bench (issue 7): policies, world generator, and the default policy's targets.

use polisd::simulation::{run_bench, BenchOptions, Scenario};

/// Full bench, printed: `cargo test --release --test routing_bench -- --ignored --nocapture`.
#[test]
#[ignore]
fn print_bench() {
    let scenario: Scenario = std::env::var("BENCH_SCENARIO")
        .unwrap_or_else(|_| "default".into())
        .parse()
        .unwrap();
    let mut opts = BenchOptions {
        scenario,
        ..BenchOptions::default()
    };
    if let Ok(v) = std::env::var("BENCH_PLOT") {
        opts.plot = Some(v.into());
    }
    if let Ok(v) = std::env::var("BENCH_SEEDS") {
        opts.seeds = polisd::simulation::parse_seeds(&v).unwrap();
    }
    if let Ok(v) = std::env::var("BENCH_PARAMS") {
        let p: Vec<f64> = v.split(',').map(|x| x.parse().unwrap()).collect();
        opts.posterior.prior_weight = p[0];
        opts.posterior.noise = p[1];
        opts.posterior.drift = p[2];
        opts.posterior.sample_scale = p[3];
    }
    let mut out = Vec::new();
    run_bench(&opts, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    if std::env::var("BENCH_QUIET").is_ok() {
        let line = text.lines().find(|l| l.starts_with("| posterior")).unwrap();
        println!(
            "{} {line}",
            std::env::var("BENCH_PARAMS").unwrap_or_default()
        );
    } else {
        println!("{text}");
    }
}
