//! vLLM's result file, written from a `goodput run`'s results and records
//! files ([`goodput_core::output::vllm`] shapes it).

use std::io::Write;
use std::path::{Path, PathBuf};

use goodput_core::output::vllm::VllmMeta;
use serde_json::Value;

use crate::SaveTo;

/// Read a run's results and records files and write vLLM's result file
/// where and as `save` says (written whole, or appended as a JSON line);
/// its path.
pub fn write_result(
    meta: &VllmMeta,
    save: &SaveTo,
    results: &Path,
    records: &Path,
) -> Result<PathBuf, String> {
    let read =
        |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let doc: Value = serde_json::from_str(&read(results)?)
        .map_err(|e| format!("reading {}: {e}", results.display()))?;
    let lines: Vec<Value> = read(records)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["phase"] == "measure")
        .collect();
    let mut meta = meta.clone();
    if meta.model_id.is_empty() {
        meta.model_id = doc["model_id"].as_str().unwrap_or_default().to_string();
    }
    let out = goodput_core::output::vllm::document(&doc, &lines, &meta);
    let name = save
        .file_name
        .clone()
        .unwrap_or_else(|| goodput_core::output::vllm::default_file_name(&meta));
    let path = match &save.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
            dir.join(name)
        }
        None => PathBuf::from(name),
    };
    let text =
        serde_json::to_string(&out).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let written = (|| -> std::io::Result<()> {
        if save.append {
            // vLLM: opened for appending, a newline before the object when
            // the file is not empty: JSON lines.
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            if f.metadata()?.len() > 0 {
                f.write_all(b"\n")?;
            }
            f.write_all(text.as_bytes())
        } else {
            std::fs::write(&path, text.as_bytes())
        }
    })();
    written.map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}
