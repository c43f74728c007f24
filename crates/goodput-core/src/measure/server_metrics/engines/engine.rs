//! Which engine served a scrape, told from the prefixes of its metric
//! names (`vllm:`, `sglang:`, `tgi_`, `llamacpp:`), and the names the
//! results and the notes give it.

use crate::measure::server_metrics::parse::Sample;

/// Which server produced a scrape, from the metric-name prefixes it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Vllm,
    Sglang,
    Tgi,
    LlamaCpp,
    Unknown,
}

impl Engine {
    const KNOWN: [(Engine, &'static str); 4] = [
        (Engine::Vllm, "vllm:"),
        (Engine::Sglang, "sglang:"),
        (Engine::Tgi, "tgi_"),
        (Engine::LlamaCpp, "llamacpp:"),
    ];

    /// The name the results use for it (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
            Engine::LlamaCpp => "llama_cpp",
            Engine::Unknown => "unknown",
        }
    }

    /// The prefix of its series' names; `None` for `Unknown`.
    pub fn prefix(self) -> Option<&'static str> {
        Self::KNOWN
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, p)| *p)
    }

    /// The name its series carry in notes (`vLLM`, `llama.cpp`).
    pub fn display(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Tgi => "TGI",
            Engine::LlamaCpp => "llama.cpp",
            Engine::Unknown => "the server",
        }
    }

    /// The engine whose prefix most samples carry (a gateway such as Dynamo
    /// may add its own series next to the engine's); `Unknown` when none
    /// does, `None` for an empty scrape.
    pub fn detect(samples: &[Sample]) -> Option<Engine> {
        if samples.is_empty() {
            return None;
        }
        let mut best = (Engine::Unknown, 0);
        for (engine, prefix) in Self::KNOWN {
            let n = samples
                .iter()
                .filter(|s| s.name.starts_with(prefix))
                .count();
            if n > best.1 {
                best = (engine, n);
            }
        }
        Some(best.0)
    }
}
