//! `goodput bench serve --config FILE.yaml`: vLLM's parser reads a flat YAML
//! mapping of flag names to values and puts them on the command line after
//! the subcommand and before the flags given there, so that a flag on the
//! command line wins over the file, and the file over the defaults.
//!
//! As vLLM's `FlexibleArgumentParser` turns each entry into flags: `true`
//! is the flag alone, `false` nothing, a list the flag and each item, a
//! mapping the flag and its JSON, anything else the flag and its value.
//! The file must end in `.yaml` or `.yml`; one `--config` at most.

use std::ffi::OsString;

use serde_norway::Value;

/// `argv` with a `bench serve` command line's `--config FILE` (or
/// `--config=FILE`) replaced by the file's flags, put right after `bench
/// serve`. Other commands' arguments pass unchanged.
pub fn with_config(argv: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let bench_serve =
        argv.get(1).is_some_and(|a| a == "bench") && argv.get(2).is_some_and(|a| a == "serve");
    if !bench_serve {
        return Ok(argv);
    }
    let is_config = |a: &OsString| {
        a.to_str()
            .is_some_and(|s| s == "--config" || s.starts_with("--config="))
    };
    let at: Vec<usize> = (3..argv.len()).filter(|&i| is_config(&argv[i])).collect();
    let Some(&i) = at.first() else {
        return Ok(argv);
    };
    if at.len() > 1 {
        return Err("More than one config file specified! (--config is given twice)".into());
    }
    let arg = argv[i].to_string_lossy().into_owned();
    let (path, taken) = match arg.strip_prefix("--config=") {
        Some(p) => (p.to_string(), 1),
        None => match argv.get(i + 1) {
            Some(p) => (p.to_string_lossy().into_owned(), 2),
            None => return Err("No config file specified! (--config needs a YAML file)".into()),
        },
    };
    let flags = load(&path)?;
    let mut out: Vec<OsString> = argv[..3].to_vec();
    out.extend(flags.into_iter().map(OsString::from));
    out.extend(argv[3..i].iter().cloned());
    out.extend(argv[i + taken..].iter().cloned());
    Ok(out)
}

/// The flags of a config file.
fn load(path: &str) -> Result<Vec<String>, String> {
    if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
        return Err(format!(
            "--config {path}: config file must be of a yaml/yml type"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config {path}: {e}"))?;
    let config: Value = serde_norway::from_str(&text)
        .map_err(|e| format!("--config {path}: not a YAML mapping of flags: {e}"))?;
    let Value::Mapping(entries) = config else {
        return Err(format!(
            "--config {path}: expected a mapping of flag names to values"
        ));
    };
    let mut flags = Vec::new();
    for (key, value) in entries {
        let Some(key) = scalar(&key) else {
            return Err(format!("--config {path}: a key that is not a flag name"));
        };
        let flag = format!("--{}", key.trim_start_matches('-'));
        match value {
            Value::Bool(true) => flags.push(flag),
            Value::Bool(false) | Value::Null => {}
            Value::Sequence(items) if items.is_empty() => {}
            Value::Sequence(items) => {
                flags.push(flag);
                for item in &items {
                    flags.push(scalar(item).unwrap_or_else(|| json(item)));
                }
            }
            Value::Mapping(_) => {
                flags.push(flag);
                flags.push(json(&value));
            }
            other => {
                flags.push(flag);
                flags.push(scalar(&other).unwrap_or_else(|| json(&other)));
            }
        }
    }
    Ok(flags)
}

/// A string, number or boolean as its text.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn strings(v: Vec<OsString>) -> Vec<String> {
        v.into_iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_config_file_s_flags_come_before_the_command_line_s() {
        let dir = std::env::temp_dir().join(format!("goodput-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bench.yaml");
        std::fs::write(
            &path,
            "num-prompts: 10\nrequest_rate: 4.5\nignore-eos: true\nsave-result: false\n\
             metadata: [gpu=H100, tp=1]\nrandom-range-ratio: {input: 0.1, output: 0.2}\n",
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let out = with_config(argv(&[
            "goodput",
            "bench",
            "serve",
            "--seed",
            "3",
            "--config",
            p,
            "--num-prompts",
            "20",
        ]))
        .unwrap();
        assert_eq!(
            strings(out),
            [
                "goodput",
                "bench",
                "serve",
                "--num-prompts",
                "10",
                "--request_rate",
                "4.5",
                "--ignore-eos",
                "--metadata",
                "gpu=H100",
                "tp=1",
                "--random-range-ratio",
                r#"{"input":0.1,"output":0.2}"#,
                "--seed",
                "3",
                "--num-prompts",
                "20",
            ]
        );
        let eq = with_config(argv(&[
            "goodput",
            "bench",
            "serve",
            &format!("--config={p}"),
        ]))
        .unwrap();
        assert_eq!(strings(eq)[3], "--num-prompts");
        // Other commands, and a command line without --config, pass as given.
        let run = argv(&["goodput", "run", "--config", p]);
        assert_eq!(with_config(run.clone()).unwrap(), run);
        let e =
            with_config(argv(&["goodput", "bench", "serve", "--config", "x.json"])).unwrap_err();
        assert!(e.contains("yaml/yml"), "{e}");
        let e = with_config(argv(&["goodput", "bench", "serve", "--config"])).unwrap_err();
        assert!(e.contains("No config file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
