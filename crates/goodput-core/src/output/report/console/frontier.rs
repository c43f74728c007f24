//! A sweep's deployment frontier in the console: each point's system
//! throughput beside the three "per user" figures of the field, the
//! Pareto corners, and where the points fall short of MLPerf Endpoints'
//! point rules.

use std::fmt::Write;

use super::layout::{line, num, rule};
use crate::plan::sweep::{Frontier, Region};

/// The section, or nothing for a sweep without a frontier.
pub(super) fn frontier_section(out: &mut String, f: Option<&Frontier>) {
    let Some(f) = f else {
        return;
    };
    rule(out, " Frontier (MLPerf Endpoints) ", '-');
    let agents = f.x == "e2e_interactivity";
    let _ = writeln!(
        out,
        "{:>7}  {:<9} {:>12} {:>11} {:>21} {:>10} {:>10} {:>9} {:>9}  {:<4} frontier",
        "load",
        "region",
        "system tok/s",
        "tok/s/GPU",
        if agents {
            "e2e tok/s a user"
        } else {
            "tok/s/user (p90)"
        },
        "(p50)",
        "tok/s ÷ c",
        "p90 TTFT",
        "$/1M tok",
        "SLO",
    );
    let opt = |x: Option<f64>| x.map(num).unwrap_or_else(|| "-".into());
    for p in &f.points {
        let load = match p.concurrency {
            Some(c) => format!("c={c}"),
            None => format!("{}/s", num(p.offered)),
        };
        let region = match p.region {
            Some(Region::UltraLow) => "ultra-low",
            Some(Region::Low) => "low",
            Some(Region::Medium) => "medium",
            Some(Region::High) => "high",
            None => "-",
        };
        let user = match (p.tps_per_user, p.tps_per_user_interval) {
            (Some(v), Some((lo, hi))) => format!("{} [{}, {}]", num(v), opt(lo), opt(hi)),
            (v, _) => opt(v),
        };
        let slo = match p.meets {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "-",
        };
        let _ = writeln!(
            out,
            "{load:>7}  {region:<9} {:>12} {:>11} {user:>21} {:>10} {:>10} {:>9} {:>9}  {slo:<4} {}",
            num(p.system_tps),
            num(p.system_tps_per_gpu),
            opt(p.tps_per_user_p50),
            opt(p.tps_per_user_by_concurrency),
            opt(p.ttft_p90_ms),
            opt(p.cost_per_million_output_tokens),
            if p.on_frontier { "*" } else { "" },
        );
    }
    let corners: Vec<String> = f
        .steps
        .iter()
        .filter_map(|&i| f.points.get(i))
        .map(|p| {
            format!(
                "{} tok/s at {} tok/s a user",
                num(p.system_tps),
                opt(p.tps_per_user)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "  (tok/s/user: MLPerf's 1000 / p90 TPOT{}; (p50): InferenceX's 1000 / p50 TPOT; tok/s ÷ c: vLLM plot_pareto's; GPUs: {})",
        if agents {
            ", here e2e_interactivity: Σ output tokens / Σ E2EL"
        } else {
            ""
        },
        f.gpus
    );
    line(out, "Frontier, by tok/s a user rising:", corners.join("; "));
    if f.mlperf_unmet.is_empty() {
        line(out, "MLPerf point rules:", "met");
    } else {
        line(out, "MLPerf point rules:", f.mlperf_unmet.join("; "));
    }
}
