//! The model filter: which samples of a scrape belong to the run's model,
//! and the fallback on every model's series (with a note) where none is
//! labelled with it.

use super::engine::Engine;
use crate::measure::server_metrics::parse::Sample;

/// Labels that carry the served model's name.
pub const MODEL_LABELS: [&str; 2] = ["model_name", "model"];

/// The samples to read for `model`: those whose model labels equal it,
/// with the unlabelled ones. Where no series of the engine's family (its
/// name prefix) carries `model` but some carry another model's name (a
/// LoRA adapter, a second `--served-model-name`, a gateway naming it its
/// own way), every sample is kept, so the figures are summed over all the
/// models the server labels, and the note returned says which those were.
pub fn select_model<'a>(
    samples: &'a [Sample],
    engine: Option<Engine>,
    model: Option<&str>,
) -> (Vec<&'a Sample>, Option<String>) {
    let all = || samples.iter().collect::<Vec<_>>();
    let Some(model) = model else {
        return (all(), None);
    };
    let prefix = engine.and_then(Engine::prefix);
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for s in samples
        .iter()
        .filter(|s| prefix.is_none_or(|p| s.name.starts_with(p)))
    {
        for key in MODEL_LABELS {
            match s.label(key) {
                Some(v) if v == model => {
                    let keep = |s: &&Sample| {
                        MODEL_LABELS
                            .iter()
                            .all(|k| s.label(k).is_none_or(|v| v == model))
                    };
                    return (samples.iter().filter(keep).collect(), None);
                }
                Some(v) if !seen.contains(&(key, v)) => seen.push((key, v)),
                _ => {}
            }
        }
    }
    let Some((key, _)) = seen.first().copied() else {
        return (all(), None);
    };
    let mut names: Vec<&str> = seen.iter().map(|(_, v)| *v).collect();
    names.sort_unstable();
    names.dedup();
    let who = engine.map_or("the server", Engine::display);
    let note = format!(
        "{who} labels no series {key}=\"{model}\" (a LoRA adapter or another served name of the model?): the server's figures are summed over every model it labels: {}",
        names.join(", ")
    );
    (all(), Some(note))
}
