//! vLLM's `sonnet` dataset: prompts that ask the model to pick lines from a
//! poem, built from a local text file as vLLM's `SonnetDataset` builds them.
//!
//! The base prompt `Pick as many lines as you can from these poem lines:\n`
//! is followed by the file's first lines (the shared prefix, about
//! `--sonnet-prefix-len` tokens) and lines drawn at random with replacement
//! up to about `--sonnet-input-len` tokens, the line count from the mean
//! tokens of a line; a prompt longer than the input length is drawn again.
//! vLLM measures the base and each prompt after the model's chat template;
//! goodput applies none (the server does, on the chat route), so its lengths
//! count the text alone: with a template each prompt is a few tokens
//! longer, and the server's usage counts what was sent.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use goodput_core::tokenizer::Tokenizer;

const BASE_PROMPT: &str = "Pick as many lines as you can from these poem lines:\n";

/// Draws of a prompt before giving up on one that fits.
const DRAWS: usize = 10_000;

/// The sonnet dataset's shape, as vLLM's flags give it.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub input_len: usize,
    pub prefix_len: usize,
    pub prompts: usize,
    pub seed: u64,
}

/// What to know of the prompts' lengths, counted by `tokenizer`.
pub fn counted_note(tokenizer: &str) -> String {
    format!(
        "sonnet prompts counted with {tokenizer} on their text alone (vLLM counts them after the model's chat template, a few tokens more); the server's usage counts what was sent"
    )
}

/// `shape.prompts` prompts from `text` (the file's lines, each with its
/// line ending, as Python's `readlines` keeps them), counted by
/// `tokenizer`.
pub fn prompts(text: &str, tokenizer: &Tokenizer, shape: Shape) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.is_empty() {
        return Err("the sonnet file has no lines".into());
    }
    let count = |s: &str| {
        tokenizer.count(s).ok_or_else(|| {
            "the sonnet dataset needs a tokenizer (not --tokenizer none)".to_string()
        })
    };
    let mut total = 0;
    for l in &lines {
        total += count(l)?;
    }
    let mean_line = total as f64 / lines.len() as f64;
    let base = count(BASE_PROMPT)?;
    if shape.input_len <= base {
        return Err(format!(
            "--sonnet-input-len {} must be more than the base prompt's {base} tokens (as vLLM requires)",
            shape.input_len
        ));
    }
    let lines_for = |len: usize| (len.saturating_sub(base) as f64 / mean_line).round() as usize;
    let input_lines = lines_for(shape.input_len);
    let prefix_lines = lines_for(shape.prefix_len)
        .min(input_lines)
        .min(lines.len());
    let prefix: String = lines[..prefix_lines].concat();
    let mut rng = StdRng::seed_from_u64(shape.seed);
    let mut out = Vec::with_capacity(shape.prompts);
    while out.len() < shape.prompts {
        let mut fitted = None;
        for _ in 0..DRAWS {
            let mut p = format!("{BASE_PROMPT}{prefix}");
            for _ in prefix_lines..input_lines {
                p.push_str(lines[rng.random_range(0..lines.len())]);
            }
            if count(&p)? <= shape.input_len {
                fitted = Some(p);
                break;
            }
        }
        out.push(fitted.ok_or_else(|| {
            format!(
                "no prompt of the sonnet file's lines fits --sonnet-input-len {} in {DRAWS} draws",
                shape.input_len
            )
        })?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of 10 to 14 words, so that some draws fit a length and others
    /// do not.
    fn poem() -> String {
        (0..40)
            .map(|i| {
                let extra = " and more".repeat(i % 3);
                format!("Line {i} of a sonnet that the model picks from{extra},\n")
            })
            .collect()
    }

    #[test]
    fn prompts_share_the_prefix_and_fit_the_input_length() {
        let t = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
        let shape = Shape {
            input_len: 200,
            prefix_len: 60,
            prompts: 20,
            seed: 0,
        };
        let p = prompts(&poem(), &t, shape).unwrap();
        assert_eq!(p.len(), 20);
        let prefix = format!("{BASE_PROMPT}Line 0 of a sonnet");
        for x in &p {
            assert!(x.starts_with(&prefix), "{x}");
            let n = t.count(x).unwrap();
            assert!((150..=200).contains(&n), "{n} tokens");
        }
        // Seeded: the same prompts again, others with another seed.
        assert_eq!(p, prompts(&poem(), &t, shape).unwrap());
        assert_ne!(p, prompts(&poem(), &t, Shape { seed: 1, ..shape }).unwrap());
    }

    #[test]
    fn an_input_length_under_the_base_prompt_is_refused() {
        let t = Tokenizer::from_spec("tiktoken:o200k_base").unwrap();
        let shape = Shape {
            input_len: 5,
            prefix_len: 0,
            prompts: 1,
            seed: 0,
        };
        let e = prompts(&poem(), &t, shape).unwrap_err();
        assert!(e.contains("base prompt"), "{e}");
    }
}
