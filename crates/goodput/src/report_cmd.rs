//! `goodput report FILE...`: saved results (runs and sweeps alike) turned
//! back into the console summary and, on request, an HTML report and a CSV
//! file.

use std::path::PathBuf;

use anyhow::anyhow;

use goodput_core::output::Saved;
use goodput_core::output::{self, Exporter};

use crate::cli::ReportArgs;
use crate::exit::{usage, Code, Exit};

/// Every file's label (its name; the path where two names collide) and result.
pub fn read_all(files: &[PathBuf]) -> Result<Vec<(String, Saved)>, Exit> {
    let mut items = Vec::new();
    for path in files {
        let saved = Saved::read(path).map_err(|e| usage(anyhow!(e)))?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        items.push((name, saved));
    }
    let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
    for (i, (label, _)) in items.iter_mut().enumerate() {
        if names.iter().filter(|n| **n == names[i]).count() > 1 {
            *label = files[i].display().to_string();
        }
    }
    Ok(items)
}

pub fn main(args: ReportArgs) -> Result<Code, Exit> {
    let items = read_all(&args.files)?;
    if !args.quiet {
        // Each result's summary, under `# label` when there are several.
        print!(
            "{}",
            String::from_utf8_lossy(&output::Console.to_bytes(&items))
        );
    }
    if let Some(path) = &args.html {
        std::fs::write(path, output::Html.to_bytes(&items))
            .map_err(|e| usage(anyhow!("writing {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, output::Csv.to_bytes(&items))
            .map_err(|e| usage(anyhow!("writing {}: {e}", path.display())))?;
    }
    Ok(Code::Ok)
}
