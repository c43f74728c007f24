//! Image files a dataset row sends with its chat request: a JSONL row's
//! `images: ["cat.png", ...]`, paths relative to the dataset file. Each
//! file is read once when the dataset is loaded (a file named by several
//! rows is read once for all), and sent as a data URL whose media type
//! comes from its extension: png, jpg/jpeg, webp, gif.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::load::workload::files::{describe, FileError};
use goodput_common::image::{data_url, media_type};

/// Most image files a row may name.
const MAX_PER_ROW: usize = 64;

/// One image file, ready to send.
#[derive(Debug, PartialEq, Eq)]
pub struct LocalImage {
    /// `data:{media type};base64,...`
    pub data_url: String,
    /// The file's size.
    pub bytes: u64,
}

/// A row's `images`: a list of file names with a known image extension.
/// The error names the field (`images[1]`).
pub(super) fn paths(value: Value) -> Result<Vec<String>, (String, String)> {
    let Value::Array(items) = value else {
        return Err((
            "images".into(),
            format!(
                "expected an array of image file paths, found {}",
                describe(&value)
            ),
        ));
    };
    if items.len() > MAX_PER_ROW {
        return Err((
            "images".into(),
            format!("{} images: at most {MAX_PER_ROW} a row", items.len()),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) if media_type(Path::new(&s)).is_some() => Ok(s),
            Value::String(s) => Err((
                format!("images[{i}]"),
                format!("'{s}' is not a .png, .jpg, .jpeg, .webp or .gif file"),
            )),
            other => Err((
                format!("images[{i}]"),
                format!("expected a file path string, found {}", describe(&other)),
            )),
        })
        .collect()
}

/// Reads the images of a dataset's rows, each file once.
pub(super) struct Reader<'a> {
    dataset: &'a Path,
    read: HashMap<PathBuf, Arc<LocalImage>>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(dataset: &'a Path) -> Self {
        Reader {
            dataset,
            read: HashMap::new(),
        }
    }

    /// The images `files` (as the row at `line` names them, relative to
    /// the dataset file), read.
    pub(super) fn read(
        &mut self,
        files: &[String],
        line: u64,
    ) -> Result<Vec<Arc<LocalImage>>, FileError> {
        let dir = self.dataset.parent().unwrap_or(Path::new(""));
        let mut out = Vec::with_capacity(files.len());
        for (i, f) in files.iter().enumerate() {
            let path = dir.join(f);
            if let Some(image) = self.read.get(&path) {
                out.push(image.clone());
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| {
                FileError::field(
                    self.dataset,
                    line,
                    &format!("images[{i}]"),
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            // `paths` accepted only known extensions.
            let kind = media_type(&path).unwrap_or("application/octet-stream");
            let image = Arc::new(LocalImage {
                data_url: data_url(kind, &bytes),
                bytes: bytes.len() as u64,
            });
            self.read.insert(path, image.clone());
            out.push(image);
        }
        Ok(out)
    }
}
