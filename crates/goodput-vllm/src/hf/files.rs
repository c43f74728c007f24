//! A Hugging Face dataset's local copy: where it is (a path given, or the
//! Hub cache's snapshot of the id), which of its files hold the split and
//! subset asked (as the `datasets` library resolves a repository without a
//! loading script: a directory named for the subset, the split's name as a
//! word of the path, every file the train split where no name says), and
//! their rows, read lazily (parquet row by row, JSON lines, a JSON array).
//! Nothing is downloaded.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use parquet::file::reader::SerializedFileReader;
use parquet::record::Field;
use serde_json::{Map, Value};

/// The key a binary parquet value (an image's bytes) is kept under, as
/// base64, in a row read as JSON.
pub(super) const BYTES: &str = "$bytes";

/// The Hub cache: `$HF_HUB_CACHE`, `$HF_HOME/hub`, or
/// `~/.cache/huggingface/hub`.
fn hub_cache() -> Option<PathBuf> {
    std::env::var_os("HF_HUB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub"))
        })
}

/// The snapshot of `kind` (`models` or `datasets`) `id` in the Hub cache:
/// the one `refs/main` names, else the newest by name.
pub(crate) fn snapshot(kind: &str, id: &str) -> Option<PathBuf> {
    let repo = hub_cache()?.join(format!("{kind}--{}", id.replace('/', "--")));
    let snapshots = repo.join("snapshots");
    if let Ok(sha) = std::fs::read_to_string(repo.join("refs/main")) {
        let dir = snapshots.join(sha.trim());
        if dir.is_dir() {
            return Some(dir);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(snapshots)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found.pop()
}

/// The split names the `datasets` library knows, and the words that name
/// each in a file's path.
const SPLITS: [(&str, &[&str]); 3] = [
    ("train", &["train", "training"]),
    ("validation", &["validation", "valid", "dev", "val"]),
    ("test", &["test", "testing", "eval", "evaluation"]),
];

/// The split a word names, if any.
fn split_named(word: &str) -> Option<&'static str> {
    let w = word.to_ascii_lowercase();
    SPLITS
        .iter()
        .find(|(_, words)| words.contains(&w.as_str()))
        .map(|(s, _)| *s)
}

/// The split a shard's file name gives: `train_sft` of
/// `train_sft-00000-of-00003.parquet` (a hash may follow the count).
fn sharded_split(path: &Path) -> Option<String> {
    let stem = path.file_name()?.to_str()?.split('.').next()?;
    let parts: Vec<&str> = stem.split('-').collect();
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    (1..parts.len().saturating_sub(2))
        .find(|&j| digits(parts[j]) && parts[j + 1] == "of" && digits(parts[j + 2]))
        .map(|j| parts[..j].join("-"))
}

/// The words of a path below the root: directory names and the file's
/// name cut at every character that is not a letter or digit.
fn words(rel: &Path) -> Vec<String> {
    rel.iter()
        .flat_map(|c| {
            c.to_string_lossy()
                .split(|ch: char| !ch.is_ascii_alphanumeric())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Data files under `root`, in name order: parquet, JSON lines, JSON.
fn data_files(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let hidden = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if p.is_dir() {
            data_files(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("parquet" | "jsonl" | "json")
        ) {
            out.push(p);
        }
    }
}

/// Where a dataset's rows are read from.
#[derive(Debug)]
pub(super) struct Source {
    /// The data files of the split, in order.
    pub files: Vec<PathBuf>,
    /// Where they were found, for the note.
    pub from: PathBuf,
}

/// The files of `split` (and `subset`, a directory of that name) of the
/// dataset at `path` (a file or directory) or, where no such path exists,
/// of the Hub cache's copy of the id `path`.
pub(super) fn locate(path: &str, subset: Option<&str>, split: &str) -> Result<Source, String> {
    let given = Path::new(path);
    if given.is_file() {
        return Ok(Source {
            files: vec![given.to_path_buf()],
            from: given.to_path_buf(),
        });
    }
    let local = path.starts_with(['.', '/', '~'])
        || path.ends_with(".parquet")
        || path.ends_with(".json")
        || path.ends_with(".jsonl");
    if local && !given.is_dir() {
        return Err(format!("--dataset-path {path}: no such file or directory"));
    }
    let root = if given.is_dir() {
        given.to_path_buf()
    } else {
        snapshot("datasets", path).ok_or_else(|| {
            format!(
                "no local copy of the Hugging Face dataset {path}: goodput downloads nothing. Get one with `hf download {path} --repo-type dataset` (it lands in the Hub cache, {}, where this command finds it), or give --dataset-path a directory or a parquet or JSON lines file and --hf-name {path}",
                hub_cache().map_or("~/.cache/huggingface/hub".into(), |h| h.display().to_string())
            )
        })?
    };
    let mut all = Vec::new();
    data_files(&root, &mut all);
    let rel = |p: &PathBuf| p.strip_prefix(&root).unwrap_or(p).to_path_buf();
    if let Some(files) = card_files(&root, &all, subset, split)? {
        return Ok(Source { files, from: root });
    }
    if let Some(sub) = subset {
        all.retain(|p| rel(p).iter().rev().skip(1).any(|c| c == sub));
        if all.is_empty() {
            return Err(format!(
                "{}: no directory named for the subset '{sub}' holds a parquet or JSON file",
                root.display()
            ));
        }
    }
    // The Hub's own layout first: `{split}-00000-of-00003.parquet`, whatever
    // the split's name (`train_sft`).
    let sharded: Vec<(PathBuf, String)> = all
        .iter()
        .filter_map(|p| sharded_split(p).map(|s| (p.clone(), s)))
        .collect();
    if !sharded.is_empty() {
        let mut names: Vec<&str> = sharded.iter().map(|(_, s)| s.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let files: Vec<PathBuf> = sharded
            .iter()
            .filter(|(_, s)| s == split)
            .map(|(p, _)| p.clone())
            .collect();
        if files.is_empty() {
            return Err(format!(
                "{}: no split '{split}' (its files hold {})",
                root.display(),
                names.join(", ")
            ));
        }
        return Ok(Source { files, from: root });
    }
    let wanted = split_named(split);
    let named: Vec<(PathBuf, Option<&str>)> = all
        .iter()
        .map(|p| {
            let ws = words(&rel(p));
            let s = ws.iter().find_map(|w| split_named(w));
            let exact = ws.iter().any(|w| w == split);
            (p.clone(), if exact { Some(split) } else { s })
        })
        .collect();
    let any_named = named.iter().any(|(_, s)| s.is_some());
    let files: Vec<PathBuf> = named
        .into_iter()
        .filter(|(_, s)| match s {
            Some(s) => *s == split || Some(*s) == wanted,
            // No file says its split: every file is the train split.
            None => !any_named && wanted == Some("train"),
        })
        .map(|(p, _)| p)
        .collect();
    if files.is_empty() {
        return Err(format!(
            "{}: no parquet or JSON file of the split '{split}'{} (file names carry their split, e.g. data/{split}-00000-of-00001.parquet)",
            root.display(),
            subset.map_or(String::new(), |s| format!(" in the subset '{s}'"))
        ));
    }
    Ok(Source { files, from: root })
}

/// `*` matches any run of characters but `/`; `**` any run at all.
fn glob(pattern: &str, path: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == path,
        Some((head, tail)) => {
            let Some(rest) = path.strip_prefix(head) else {
                return false;
            };
            let (deep, tail) = match tail.strip_prefix('*') {
                Some(t) => (true, t),
                None => (false, tail),
            };
            // `**/` also matches no directory at all.
            let none = deep && tail.starts_with('/') && glob(&tail[1..], rest);
            none || (0..=rest.len())
                .filter(|&i| rest.is_char_boundary(i))
                .take_while(|&i| deep || !rest[..i].contains('/'))
                .any(|i| glob(tail, &rest[i..]))
        }
    }
}

fn config_name(c: &serde_norway::Value) -> Option<String> {
    c.get("config_name")
        .and_then(|n| n.as_str())
        .map(str::to_string)
}

/// The card's config named `subset`, else the one marked `default`, else
/// the one named `default`, else the only one.
fn config<'a>(
    root: &Path,
    configs: &'a [serde_norway::Value],
    subset: Option<&str>,
) -> Result<&'a serde_norway::Value, String> {
    let Some(sub) = subset else {
        let chosen = configs
            .iter()
            .find(|c| c.get("default").and_then(|d| d.as_bool()) == Some(true))
            .or_else(|| {
                configs
                    .iter()
                    .find(|c| config_name(c).as_deref() == Some("default"))
            });
        return match (chosen, configs) {
            (Some(c), _) | (None, [c]) => Ok(c),
            // As the datasets library: several configs and none the
            // default is a question only --hf-subset answers.
            _ => {
                let names: Vec<String> = configs.iter().filter_map(config_name).collect();
                Err(format!(
                    "{}: the dataset has several configs and none is the default: name one with --hf-subset ({})",
                    root.display(),
                    names.join(", ")
                ))
            }
        };
    };
    configs
        .iter()
        .find(|c| config_name(c).as_deref() == Some(sub))
        .ok_or_else(|| {
            let names: Vec<String> = configs.iter().filter_map(config_name).collect();
            format!(
                "{}: the dataset card has no config '{sub}' (it has {})",
                root.display(),
                names.join(", ")
            )
        })
}

/// The files the dataset card's `configs` give the split, as the
/// datasets library reads them: the card's YAML front matter (README.md),
/// the config named `subset` (else the one marked `default`, else the
/// first), its `data_files` (a path, a list, or `split`/`path` entries;
/// a bare path is the train split). `None` where the card has no configs.
fn card_files(
    root: &Path,
    all: &[PathBuf],
    subset: Option<&str>,
    split: &str,
) -> Result<Option<Vec<PathBuf>>, String> {
    let Ok(card) = std::fs::read_to_string(root.join("README.md")) else {
        return Ok(None);
    };
    let Some(yaml) = card
        .strip_prefix("---")
        .and_then(|r| r.split_once("\n---").map(|(y, _)| y))
    else {
        return Ok(None);
    };
    let Ok(meta) = serde_norway::from_str::<serde_norway::Value>(yaml) else {
        return Ok(None);
    };
    let Some(configs) = meta
        .get("configs")
        .and_then(|c| c.as_sequence())
        .filter(|c| !c.is_empty())
    else {
        return Ok(None);
    };
    let config = config(root, configs, subset)?;
    let strings = |v: &serde_norway::Value| -> Vec<String> {
        match v {
            serde_norway::Value::String(s) => vec![s.clone()],
            serde_norway::Value::Sequence(l) => l
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    // A config without data_files (a data_dir, a builder's arguments):
    // the files' names say their split, as for a card without configs.
    if config.get("data_files").is_none() {
        return Ok(None);
    }
    let mut patterns = Vec::new();
    match config.get("data_files") {
        Some(serde_norway::Value::Sequence(entries))
            if entries.iter().any(|e| e.get("split").is_some()) =>
        {
            for e in entries {
                if e.get("split").and_then(|s| s.as_str()) == Some(split) {
                    patterns.extend(e.get("path").map(strings).unwrap_or_default());
                }
            }
        }
        Some(v) if split == "train" => patterns.extend(strings(v)),
        _ => {}
    }
    if patterns.is_empty() {
        return Err(format!(
            "{}: the dataset card's config{} has no split '{split}'",
            root.display(),
            config_name(config).map_or(String::new(), |n| format!(" '{n}'"))
        ));
    }
    let files: Vec<PathBuf> = all
        .iter()
        .filter(|p| {
            let rel = p
                .strip_prefix(root)
                .unwrap_or(p)
                .to_string_lossy()
                .replace('\\', "/");
            patterns
                .iter()
                .any(|pat| glob(pat.trim_start_matches("./"), &rel))
        })
        .cloned()
        .collect();
    if files.is_empty() {
        return Err(format!(
            "{}: no local file matches the dataset card's {} for the split '{split}' (a partial download?)",
            root.display(),
            patterns.join(", ")
        ));
    }
    Ok(Some(files))
}

/// A parquet value as JSON: binary values as `{"$bytes": base64}`.
fn field(f: &Field) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => Value::from(*n),
        Field::Long(n) => Value::from(*n),
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float(x) => Value::from(f64::from(*x)),
        Field::Double(x) => Value::from(*x),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(b.data());
            Value::Object(Map::from_iter([(BYTES.to_string(), Value::String(b64))]))
        }
        Field::Group(row) => Value::Object(
            row.get_column_iter()
                .map(|(k, v)| (k.clone(), field(v)))
                .collect(),
        ),
        Field::ListInternal(list) => Value::Array(list.elements().iter().map(field).collect()),
        Field::MapInternal(map) => Value::Object(
            map.entries()
                .iter()
                .map(|(k, v)| match field(k) {
                    Value::String(s) => (s, field(v)),
                    other => (other.to_string(), field(v)),
                })
                .collect(),
        ),
        other => Value::String(other.to_string()),
    }
}

/// One file's rows, lazily.
fn file_rows(path: &Path) -> Box<dyn Iterator<Item = Result<Value, String>>> {
    let shown = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext == "parquet" {
        let reader = std::fs::File::open(path)
            .map_err(|e| e.to_string())
            .and_then(|f| SerializedFileReader::new(f).map_err(|e| e.to_string()));
        return match reader {
            Ok(r) => Box::new(r.into_iter().map(move |row| {
                let row = row.map_err(|e| format!("{shown}: {e}"))?;
                Ok(Value::Object(
                    row.get_column_iter()
                        .map(|(k, v)| (k.clone(), field(v)))
                        .collect(),
                ))
            })),
            Err(e) => Box::new(std::iter::once(Err(format!("{shown}: {e}")))),
        };
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Box::new(std::iter::once(Err(format!("{shown}: {e}")))),
    };
    if ext == "json" && text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Vec<Value>>(&text) {
            Ok(rows) => Box::new(rows.into_iter().map(Ok)),
            Err(e) => Box::new(std::iter::once(Err(format!("{shown}: not JSON: {e}")))),
        };
    }
    let lines: Vec<(usize, String)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i, l.to_string()))
        .collect();
    Box::new(lines.into_iter().map(move |(i, l)| {
        serde_json::from_str(&l).map_err(|e| format!("{shown}, line {}: not JSON: {e}", i + 1))
    }))
}

/// Every row of the files, in order, lazily.
pub(super) fn rows(files: Vec<PathBuf>) -> impl Iterator<Item = Result<Value, String>> {
    files.into_iter().flat_map(|p| file_rows(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_subsets_are_found_by_the_words_of_their_paths() {
        let root = std::env::temp_dir().join(format!("goodput-hf-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in [
            "main/train-00000-of-00001.parquet",
            "main/test-00000-of-00001.parquet",
            "socratic/test-00000-of-00001.parquet",
            "README.md",
            ".cache/x.parquet",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        }
        let r = root.to_str().unwrap();
        let s = locate(r, Some("main"), "test").unwrap();
        assert_eq!(s.files, [root.join("main/test-00000-of-00001.parquet")]);
        assert_eq!(locate(r, None, "test").unwrap().files.len(), 2);
        assert!(locate(r, Some("other"), "test")
            .unwrap_err()
            .contains("subset 'other'"));
        assert!(locate(r, None, "validation")
            .unwrap_err()
            .contains("split 'validation'"));
        // No file names its split: all of them are the train split.
        let flat = root.join("flat");
        std::fs::create_dir_all(&flat).unwrap();
        std::fs::write(flat.join("sharegpt_part1.json"), b"[]").unwrap();
        let f = flat.to_str().unwrap();
        assert_eq!(locate(f, None, "train").unwrap().files.len(), 1);
        assert!(locate(f, None, "test").is_err());
        // A dataset card's configs name the files of each split.
        let carded = root.join("carded");
        std::fs::create_dir_all(carded.join("data")).unwrap();
        for f in [
            "mmstar.parquet",
            "data/other.parquet",
            "data/more-0.parquet",
        ] {
            std::fs::write(carded.join(f), b"").unwrap();
        }
        std::fs::write(
            carded.join("README.md"),
            "---\nconfigs:\n- config_name: val\n  default: true\n  data_files:\n  - split: val\n    path: mmstar.parquet\n- config_name: extra\n  data_files: data/*\n---\n# MMStar\n",
        )
        .unwrap();
        let c = carded.to_str().unwrap();
        assert_eq!(
            locate(c, None, "val").unwrap().files,
            [carded.join("mmstar.parquet")]
        );
        assert_eq!(locate(c, Some("extra"), "train").unwrap().files.len(), 2);
        assert!(locate(c, None, "test")
            .unwrap_err()
            .contains("no split 'test'"));
        // The Hub's shard names carry any split's name.
        let sft = root.join("sft/data");
        std::fs::create_dir_all(&sft).unwrap();
        for f in [
            "train_sft-00000-of-00001.parquet",
            "train_gen-00000-of-00001.parquet",
        ] {
            std::fs::write(sft.join(f), b"").unwrap();
        }
        let t = root.join("sft");
        let t = t.to_str().unwrap();
        assert_eq!(
            locate(t, None, "train_sft").unwrap().files,
            [sft.join("train_sft-00000-of-00001.parquet")]
        );
        assert!(locate(t, None, "train")
            .unwrap_err()
            .contains("no split 'train'"));
        assert!(glob("data/train-*", "data/train-00000-of-00001.parquet"));
        assert!(!glob("*.parquet", "data/x.parquet"));
        assert!(glob("**/*.parquet", "a/b/x.parquet"));
        assert!(glob("data/**/*.parquet", "data/x.parquet"));
        assert_eq!(
            sharded_split(Path::new("d/train_sft-00000-of-00003-abc.parquet")).as_deref(),
            Some("train_sft")
        );
        assert_eq!(sharded_split(Path::new("d/train.parquet")), None);
        let e = locate("nobody/nothing-here", None, "train").unwrap_err();
        assert!(
            e.contains("hf download nobody/nothing-here --repo-type dataset"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
