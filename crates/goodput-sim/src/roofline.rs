//! Step time from a roofline.
//!
//! One engine step costs
//! `overhead + max(FLOPs / (peak_flops × mfu), bytes / (bandwidth × mbu)) + all-reduce`,
//! where FLOPs count `2 × params` per processed token plus attention over the
//! context (`4 × layers × heads × head_dim` per query–key pair), and bytes
//! count the weights once per step plus the KV cache read by every decoding
//! sequence. Tensor parallelism divides FLOPs and bytes across the GPUs and
//! adds two ring all-reduces of the step's activations per layer.
//! Every step time is multiplied by `time_scale`.

use crate::presets::{HardwareProfile, ModelProfile};

/// What one step processes, summed over its sequences.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchShape {
    /// Tokens processed (prefill chunk tokens plus one per decoding sequence).
    pub new_tokens: u64,
    /// Query–key pairs of attention: for each processed token, the length of
    /// the context it attends to (itself included).
    pub attention_pairs: f64,
    /// Context tokens whose KV cache decoding sequences read this step.
    pub decode_context_tokens: u64,
}

impl BatchShape {
    /// Add a sequence that processes `new` tokens after `context` already
    /// computed ones; `decoding` when it is generating (not prefilling).
    pub fn add(&mut self, context: u64, new: u64, decoding: bool) {
        self.new_tokens += new;
        // Σ_{j=1..new} (context + j)
        let c = context as f64;
        let q = new as f64;
        self.attention_pairs += q * c + q * (q + 1.0) / 2.0;
        if decoding {
            self.decode_context_tokens += context + new;
        }
    }
}

/// The parts of one step's time, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTime {
    pub compute_s: f64,
    pub memory_s: f64,
    pub communication_s: f64,
    pub overhead_s: f64,
    /// `(overhead + max(compute, memory) + communication) × time_scale`.
    pub total_s: f64,
}

/// The roofline of one model on `tensor_parallel` GPUs of one kind.
#[derive(Debug, Clone)]
pub struct Roofline {
    params: f64,
    layers: f64,
    attention_width: f64,
    hidden_size: f64,
    bytes_per_param: f64,
    weight_bytes: f64,
    kv_bytes_per_token: f64,
    tensor_parallel: f64,
    flops_per_s: f64,
    bytes_per_s: f64,
    interconnect_bytes_per_s: f64,
    allreduce_latency_s: f64,
    overhead_s: f64,
    time_scale: f64,
}

impl Roofline {
    pub fn new(
        model: &ModelProfile,
        hardware: &HardwareProfile,
        tensor_parallel: u32,
        time_scale: f64,
    ) -> Self {
        Roofline {
            params: model.params,
            layers: f64::from(model.layers),
            attention_width: model.attention_width(),
            hidden_size: f64::from(model.hidden_size),
            bytes_per_param: model.bytes_per_param,
            weight_bytes: model.weight_bytes(),
            kv_bytes_per_token: model.kv_bytes_per_token(),
            tensor_parallel: f64::from(tensor_parallel.max(1)),
            flops_per_s: hardware.peak_tflops * 1e12 * hardware.mfu,
            bytes_per_s: hardware.bandwidth_gbps * 1e9 * hardware.mbu,
            interconnect_bytes_per_s: hardware.interconnect_gbps * 1e9,
            allreduce_latency_s: hardware.allreduce_latency_us * 1e-6,
            overhead_s: hardware.step_overhead_ms * 1e-3,
            time_scale,
        }
    }

    /// FLOPs of a step, all GPUs together.
    pub fn flops(&self, shape: &BatchShape) -> f64 {
        2.0 * self.params * shape.new_tokens as f64
            + 4.0 * self.layers * self.attention_width * shape.attention_pairs
    }

    /// Bytes moved from device memory in a step, all GPUs together.
    pub fn bytes(&self, shape: &BatchShape) -> f64 {
        self.weight_bytes + self.kv_bytes_per_token * shape.decode_context_tokens as f64
    }

    /// The time of a step of this shape.
    pub fn step_time(&self, shape: &BatchShape) -> StepTime {
        let tp = self.tensor_parallel;
        let compute_s = self.flops(shape) / tp / self.flops_per_s;
        let memory_s = self.bytes(shape) / tp / self.bytes_per_s;
        let communication_s = if tp > 1.0 {
            let payload = shape.new_tokens as f64 * self.hidden_size * self.bytes_per_param;
            let ring = 2.0 * (tp - 1.0) / tp * payload / self.interconnect_bytes_per_s;
            2.0 * self.layers * (self.allreduce_latency_s + ring)
        } else {
            0.0
        };
        let total_s =
            (self.overhead_s + compute_s.max(memory_s) + communication_s) * self.time_scale;
        StepTime {
            compute_s,
            memory_s,
            communication_s,
            overhead_s: self.overhead_s,
            total_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{hardware_by_name, model_by_name};

    fn h100_8b() -> Roofline {
        Roofline::new(
            &model_by_name("llama-3.1-8b").unwrap(),
            &hardware_by_name("h100-sxm").unwrap(),
            1,
            1.0,
        )
    }

    #[test]
    fn single_decode_is_memory_bound_and_reads_the_weights_once() {
        let r = h100_8b();
        let mut shape = BatchShape::default();
        shape.add(999, 1, true);
        let t = r.step_time(&shape);
        assert!(t.memory_s > t.compute_s);
        let expected = (16.06e9 + 1000.0 * 131_072.0) / (3350e9 * 0.80);
        assert!((t.memory_s - expected).abs() / expected < 0.01, "{t:?}");
        assert_eq!(t.communication_s, 0.0);
    }

    #[test]
    fn long_prefill_is_compute_bound() {
        let r = h100_8b();
        let mut shape = BatchShape::default();
        shape.add(0, 8192, false);
        let t = r.step_time(&shape);
        assert!(t.compute_s > t.memory_s, "{t:?}");
        // attention pairs of a fresh 8192-token prompt: n(n+1)/2
        assert_eq!(shape.attention_pairs, 8192.0 * 8193.0 / 2.0);
    }

    #[test]
    fn tensor_parallel_divides_work_and_adds_all_reduce() {
        let m = model_by_name("llama-3.1-70b").unwrap();
        let h = hardware_by_name("h100-sxm").unwrap();
        let mut shape = BatchShape::default();
        shape.add(0, 2048, false);
        let tp4 = Roofline::new(&m, &h, 4, 1.0).step_time(&shape);
        let tp8 = Roofline::new(&m, &h, 8, 1.0).step_time(&shape);
        assert!((tp4.compute_s / tp8.compute_s - 2.0).abs() < 1e-9);
        assert!(tp4.communication_s > 0.0 && tp8.communication_s > tp4.communication_s * 0.9);
    }
}
