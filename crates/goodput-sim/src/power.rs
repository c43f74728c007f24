//! What the simulated GPUs draw, served at `/dcgm/metrics` with a DCGM
//! exporter's names, so that a run against the simulator reads measured
//! energy the way it would from a real deployment's exporter.
//!
//! The model: each of the deployment's `tensor_parallel` GPUs draws its
//! idle power ([`HardwareProfile::idle_w`]) all the time, and during a step
//! `idle + (tdp − idle) × activity`, where the activity weighs the step's
//! parts by how hard each drives the chip: compute-bound GEMMs 1.0,
//! weight- and KV-bound reads (the GEMMs of a small batch, attention) 0.6,
//! the tensor-parallel all-reduces 0.4, the CPU's own share of the step
//! (scheduling, sampling) 0.15. So a decode step of a few sequences draws
//! a little over half of the board's limit and a long prefill nearly all
//! of it; the weights are assumptions, not a measurement of any one card. The energy counter is exact for the
//! model (integrated step by step); the power gauge is the last step's, or
//! the idle power once the engine has nothing to do.

use std::fmt::Write;
use std::time::Instant;

use crate::presets::HardwareProfile;
use crate::roofline::StepTime;

/// The power model and what it has drawn since the server started (per GPU).
#[derive(Debug, Clone)]
pub struct PowerState {
    idle_w: f64,
    tdp_w: f64,
    gpus: u32,
    /// `modelName`: the hardware preset's name.
    model_name: String,
    memory_used_mib: f64,
    started: Instant,
    /// Energy above idle, J a GPU.
    above_idle_j: f64,
    /// When the last step ended, how long it took, and its power.
    last_step: Option<(Instant, f64, f64)>,
}

impl Default for PowerState {
    fn default() -> Self {
        PowerState::new(&crate::presets::builtin_hardware()[0], 1, 0.9)
    }
}

impl PowerState {
    /// `gpus` of `hw`, each holding `memory_share` of its memory (vLLM
    /// takes its share at start).
    pub fn new(hw: &HardwareProfile, gpus: u32, memory_share: f64) -> PowerState {
        PowerState {
            idle_w: hw.idle_w,
            tdp_w: hw.tdp_w,
            gpus: gpus.max(1),
            model_name: format!("{} (goodput-sim)", hw.name),
            memory_used_mib: hw.memory_gib * 1024.0 * memory_share,
            started: Instant::now(),
            above_idle_j: 0.0,
            last_step: None,
        }
    }

    /// One GPU's power during a step of these parts, W.
    pub fn step_watts(&self, t: &StepTime) -> f64 {
        let gemm = if t.gemm_compute_bound { 1.0 } else { 0.6 };
        let parts = t.gemm_s + t.attention_s + t.communication_s + t.overhead_s;
        let activity = if parts > 0.0 {
            (gemm * t.gemm_s + 0.6 * t.attention_s + 0.4 * t.communication_s + 0.15 * t.overhead_s)
                / parts
        } else {
            0.0
        };
        self.idle_w + (self.tdp_w - self.idle_w) * activity
    }

    /// A step that took `t.total_s` and ended `at`.
    pub fn step(&mut self, t: &StepTime, at: Instant) {
        let w = self.step_watts(t);
        self.above_idle_j += (w - self.idle_w) * t.total_s;
        self.last_step = Some((at, t.total_s, w));
    }

    /// One GPU's power at `now`: the last step's while steps follow each
    /// other, else idle.
    pub fn watts_at(&self, now: Instant) -> f64 {
        match self.last_step {
            Some((end, step_s, w))
                if now.saturating_duration_since(end).as_secs_f64()
                    <= (2.0 * step_s).max(0.005) =>
            {
                w
            }
            _ => self.idle_w,
        }
    }

    /// One GPU's energy since the server started, J.
    pub fn energy_j_at(&self, now: Instant) -> f64 {
        self.idle_w * now.saturating_duration_since(self.started).as_secs_f64() + self.above_idle_j
    }

    /// The DCGM exporter's text for every GPU at `now`.
    pub fn render(&self, now: Instant) -> String {
        let w = self.watts_at(now);
        let busy = w > self.idle_w;
        let mj = self.energy_j_at(now) * 1e3;
        let mut out = String::with_capacity(2048);
        let series: [(&str, &str, &str, f64); 4] = [
            ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", w),
            (
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "counter",
                "Total energy consumption since boot (in mJ).",
                mj.floor(),
            ),
            (
                "DCGM_FI_DEV_GPU_UTIL",
                "gauge",
                "GPU utilization (in %).",
                if busy { 100.0 } else { 0.0 },
            ),
            (
                "DCGM_FI_DEV_FB_USED",
                "gauge",
                "Framebuffer memory used (in MiB).",
                self.memory_used_mib.round(),
            ),
        ];
        for (name, kind, help, v) in series {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for gpu in 0..self.gpus {
                let _ = writeln!(
                    out,
                    "{name}{{gpu=\"{gpu}\",UUID=\"GPU-goodput-sim-{gpu}\",device=\"nvidia{gpu}\",modelName=\"{}\",Hostname=\"goodput-sim\"}} {v}",
                    self.model_name
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(gemm_compute_bound: bool, gemm_s: f64, overhead_s: f64) -> StepTime {
        StepTime {
            gemm_s,
            gemm_compute_bound,
            attention_s: 0.0,
            communication_s: 0.0,
            overhead_s,
            total_s: gemm_s + overhead_s,
        }
    }

    #[test]
    fn a_prefill_draws_the_limit_and_a_decode_less() {
        let hw = crate::presets::builtin_hardware()[0].clone();
        let p = PowerState::new(&hw, 2, 0.9);
        assert_eq!(p.step_watts(&step(true, 0.02, 0.0)), hw.tdp_w);
        let decode = p.step_watts(&step(false, 0.006, 0.0015));
        assert!(decode > hw.idle_w && decode < 0.7 * hw.tdp_w, "{decode}");
    }

    #[test]
    fn the_counter_integrates_the_steps_over_idle() {
        let hw = crate::presets::builtin_hardware()[0].clone();
        let mut p = PowerState::new(&hw, 2, 0.9);
        let t0 = p.started;
        let s = step(true, 0.5, 0.0);
        p.step(&s, t0 + std::time::Duration::from_millis(500));
        let at = t0 + std::time::Duration::from_secs(2);
        let want = hw.idle_w * 2.0 + (hw.tdp_w - hw.idle_w) * 0.5;
        assert!((p.energy_j_at(at) - want).abs() < 1e-9);
        // Idle again 1.5 s after the step.
        assert_eq!(p.watts_at(at), hw.idle_w);
        let text = p.render(at);
        assert_eq!(text.matches("DCGM_FI_DEV_POWER_USAGE{").count(), 2);
        assert!(
            text.contains(&format!("{}", (want * 1e3).floor())),
            "{text}"
        );
    }
}

#[cfg(test)]
mod preset_tests {
    use super::*;
    use crate::roofline::BatchShape;

    /// The README's figures: the default preset's decode of 8 sequences
    /// at 1k context, and a 1k-token prefill.
    #[test]
    fn the_default_presets_draw_is_what_the_readme_says() {
        let c = crate::config::SimConfig::default();
        let roofline = c.roofline();
        let p = PowerState::new(&c.hardware, 1, 0.9);
        let mut decode = BatchShape::default();
        for _ in 0..8 {
            decode.add(1024, 1, true);
        }
        let mut prefill = BatchShape::default();
        prefill.add(0, 1024, false);
        let (d, f) = (
            p.step_watts(&roofline.step_time(&decode)),
            p.step_watts(&roofline.step_time(&prefill)),
        );
        assert!((380.0..400.0).contains(&d), "decode {d} W");
        assert!((620.0..660.0).contains(&f), "prefill {f} W");
    }
}
