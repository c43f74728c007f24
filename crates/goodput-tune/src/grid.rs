//! The grid of a server command: `{a,b,c}` is an axis of values, `{port}`
//! the port goodput picks; every combination of the axes' values is one
//! configuration.

/// One configuration of the grid: its command (with `{port}` still in it)
/// and its values, named.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The command with every axis replaced by this configuration's value.
    pub command: String,
    /// `name=value` for each axis, in the command's order.
    pub values: Vec<(String, String)>,
}

impl Config {
    /// `max-num-seqs=8, tp=2`: how the configuration is named.
    pub fn name(&self) -> String {
        if self.values.is_empty() {
            return "the command".into();
        }
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A piece of the template: text, or an axis's values.
enum Piece {
    Text(String),
    Axis(String, Vec<String>),
}

/// The configurations of `template`, the last axis varying fastest. An
/// axis is named by the flag before it (`--max-num-seqs {8,32}`:
/// `max-num-seqs`), else by its position (`axis1`). Err: an unclosed
/// brace or an empty value.
pub fn expand(template: &str) -> Result<Vec<Config>, String> {
    let mut pieces = Vec::new();
    let mut rest = template;
    let mut axes = 0;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|c| open + c)
            .ok_or_else(|| format!("an unclosed brace in --serve: {template}"))?;
        let inner = &rest[open + 1..close];
        let text = &rest[..open];
        if inner == "port" || !inner.contains(',') {
            // `{port}`, and braces that are not a list, stay as they are.
            pieces.push(Piece::Text(rest[..=close].to_string()));
        } else {
            axes += 1;
            let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
            if values.iter().any(String::is_empty) {
                return Err(format!("an empty value in {{{inner}}} of --serve"));
            }
            pieces.push(Piece::Text(text.to_string()));
            pieces.push(Piece::Axis(axis_name(text, axes), values));
        }
        rest = &rest[close + 1..];
    }
    pieces.push(Piece::Text(rest.to_string()));
    let mut configs = vec![Config {
        command: String::new(),
        values: Vec::new(),
    }];
    for piece in &pieces {
        configs = match piece {
            Piece::Text(t) => configs
                .into_iter()
                .map(|mut c| {
                    c.command.push_str(t);
                    c
                })
                .collect(),
            Piece::Axis(name, values) => configs
                .iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.command.push_str(v);
                        c.values.push((name.clone(), v.clone()));
                        c
                    })
                })
                .collect(),
        };
    }
    Ok(configs)
}

/// The flag an axis follows: `--max-num-seqs ` → `max-num-seqs`,
/// `--parallel=` → `parallel`; else `axisN`.
fn axis_name(before: &str, n: usize) -> String {
    let flag = before.trim_end().trim_end_matches('=');
    let word = flag.rsplit(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_start_matches('-');
    if word.is_empty() || !flag.ends_with(word) {
        format!("axis{n}")
    } else {
        word.to_string()
    }
}

/// `command` with `{port}` replaced by `port`.
pub fn with_port(command: &str, port: u16) -> String {
    command.replace("{port}", &port.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_is_a_configuration_named_by_its_flags() {
        let c = expand("vllm serve M --max-num-seqs {64,128} --tp={1,2} --port {port}").unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[1].command,
            "vllm serve M --max-num-seqs 64 --tp=2 --port {port}"
        );
        assert_eq!(c[1].name(), "max-num-seqs=64, tp=2");
        assert_eq!(
            with_port(&c[3].command, 8001),
            "vllm serve M --max-num-seqs 128 --tp=2 --port 8001"
        );
        let one = expand("server {a,b}").unwrap();
        assert_eq!(one[0].name(), "server=a");
        let bare = expand("{x,y} --port {port}").unwrap();
        assert_eq!(bare[1].name(), "axis1=y");
        assert_eq!(expand("s --port {port}").unwrap().len(), 1);
        assert!(expand("s {8,32").is_err());
        assert!(expand("s {8,,32}").is_err());
    }
}
