//! vLLM's `--dataset-name hf`: a Hugging Face dataset by id, read from a
//! local copy ([`files`]) as vLLM's dataset class for that id reads it:
//! which columns make the prompt, the default split and output length, the
//! validity filter on lengths counted from the completion, the shuffle
//! (the streaming loader's buffer of 1,000 rows, or a whole shuffle with
//! `--no-stream`) and the oversampling. The rows are sent in order as a
//! JSONL dataset. Classes whose prompt is a long template of vLLM's, video,
//! audio and function-calling sets are refused by name.

mod files;

pub(super) use files::snapshot;

use base64::Engine as _;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::cli::VllmServeArgs;

use super::refused::refuse;
use super::Row;

/// Where vLLM applies the model's chat template on the client.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Template {
    Never,
    /// Unless `--skip-chat-template`.
    Unless,
    Always,
}

/// How a row becomes a prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// `conversations[0].value`, its completion `conversations[1].value`
    /// (and the row's `image` where it has one).
    Conversation,
    /// The first message of the first turn (`conversation`, or `turns` in
    /// vision-arena-bench), `images[0]`.
    Arena,
    /// A text column (`turns` takes its first entry).
    Column(&'static str),
    /// `input`, `instruction` and an instruction to answer in code.
    InstructCoder,
    /// `problem`, its completion `solution`.
    Aimo,
    /// `system_prompt` and `question`, the completion `output`.
    MlPerf,
    /// `question` before its `Options:`, `image`.
    MmStar,
}

/// One of vLLM's Hugging Face dataset classes.
struct Class {
    ids: &'static [&'static str],
    shape: Shape,
    split: &'static str,
    /// The subset used when none is given.
    subset: Option<&'static str>,
    /// The class ignores `--hf-subset`.
    no_subset: bool,
    /// The class takes `--hf-split` (vLLM sets the split of the others).
    any_split: bool,
    images: bool,
    template: Template,
    /// The output length without `--hf-output-len`; `None`: the
    /// completion's tokens, the row kept only where its lengths are valid.
    output: Option<u32>,
}

const fn class(ids: &'static [&'static str], shape: Shape, split: &'static str) -> Class {
    Class {
        ids,
        shape,
        split,
        subset: None,
        no_subset: false,
        any_split: false,
        images: false,
        template: Template::Never,
        output: None,
    }
}

/// vLLM's classes, in the order its `get_samples` tries them.
const CLASSES: [Class; 9] = [
    Class {
        images: true,
        no_subset: true,
        any_split: true,
        output: Some(128),
        ..class(
            &[
                "lmarena-ai/VisionArena-Chat",
                "lmarena-ai/vision-arena-bench-v0.1",
            ],
            Shape::Arena,
            "train",
        )
    },
    Class {
        template: Template::Unless,
        output: Some(200),
        ..class(&["likaixin/InstructCoder"], Shape::InstructCoder, "train")
    },
    Class {
        template: Template::Unless,
        output: Some(256),
        ..class(&["philschmid/mt-bench"], Shape::Column("turns"), "train")
    },
    Class {
        template: Template::Unless,
        output: Some(256),
        ..class(
            &["openai/openai_humaneval"],
            Shape::Column("prompt"),
            "test",
        )
    },
    Class {
        template: Template::Unless,
        output: Some(256),
        subset: Some("main"),
        ..class(&["openai/gsm8k"], Shape::Column("question"), "test")
    },
    Class {
        images: true,
        any_split: true,
        ..class(
            &["lmms-lab/LLaVA-OneVision-Data"],
            Shape::Conversation,
            "train",
        )
    },
    Class {
        any_split: true,
        ..class(
            &["Aeala/ShareGPT_Vicuna_unfiltered"],
            Shape::Conversation,
            "train",
        )
    },
    class(
        &[
            "AI-MO/aimo-validation-aime",
            "AI-MO/NuminaMath-1.5",
            "AI-MO/NuminaMath-CoT",
        ],
        Shape::Aimo,
        "train",
    ),
    Class {
        template: Template::Always,
        ..class(
            &[
                "mgoin/mlperf-inference-llama2-data",
                "mgoin/mlperf-inference-llama3.1-data",
            ],
            Shape::MlPerf,
            "train",
        )
    },
];

/// MMStar comes last in vLLM's order, after classes refused here.
const MMSTAR: Class = Class {
    images: true,
    no_subset: true,
    output: Some(128),
    ..class(&["Lin-Chen/MMStar"], Shape::MmStar, "val")
};

/// vLLM's classes goodput does not read, by id, and why.
const REFUSED: [(&[&str], &str); 5] = [
    (&["yale-nlp/MMVU"], "its questions are about videos, which goodput does not send"),
    (&["zed-industries/zeta"], "its prompts are built with vLLM's edit-prediction template, which goodput does not reproduce"),
    (
        &[
            "openslr/librispeech_asr", "facebook/voxpopuli", "LIUM/tedlium", "edinburghcstr/ami",
            "speechcolab/gigaspeech", "kensho/spgispeech", "ArtificialAnalysis/Earnings22-Cleaned-AA",
            "D4nt3/esb-datasets-earnings22-validation-tiny-filtered",
        ],
        "audio is not benchmarked here",
    ),
    (&["vdaita/edit_5k_char", "vdaita/edit_10k_char"], "its prompts are built with vLLM's code-edit template, which goodput does not reproduce"),
    (&["gorilla-llm/Berkeley-Function-Calling-Leaderboard"], "function-calling requests are not built from it here"),
];

/// The class for the dataset's id (`--dataset-path` or `--hf-name`).
fn class_of(a: &VllmServeArgs) -> Result<&'static Class, String> {
    let path = a.dataset_path.as_deref().unwrap_or_default();
    let named = |ids: &[&str]| {
        ids.contains(&path) || a.hf_name.as_deref().is_some_and(|n| ids.contains(&n))
    };
    if let Some((ids, why)) = REFUSED.iter().find(|(ids, _)| named(ids)) {
        return Err(refuse(&format!("--dataset-name hf for {}", ids[0]), why));
    }
    if let Some(c) = CLASSES.iter().find(|c| named(c.ids)) {
        return Ok(c);
    }
    if named(MMSTAR.ids) {
        return Ok(&MMSTAR);
    }
    let mut all: Vec<&str> = CLASSES
        .iter()
        .chain([&MMSTAR])
        .flat_map(|c| c.ids.iter().copied())
        .collect();
    all.sort();
    Err(format!(
        "Unsupported dataset path: {path} (as vLLM says). goodput bench serve reads these Hugging Face datasets from a local copy: {}; a local directory or file needs --hf-name with one of them",
        all.join(", ")
    ))
}

/// The id the class keys its prompt on (VisionArena's two layouts).
fn id_of<'a>(a: &'a VllmServeArgs, c: &Class) -> &'a str {
    let path = a.dataset_path.as_deref().unwrap_or_default();
    match &a.hf_name {
        Some(n) if c.ids.contains(&n.as_str()) => n,
        _ => path,
    }
}

/// A row's prompt, its system prompt, its completion and its image, or
/// why it has none.
type Parsed = (String, Option<String>, Option<String>, Option<Vec<u8>>);

fn text(v: &Value, what: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("a row without the text {what}"))
}

/// An image column's bytes: the datasets library's `{"bytes", "path"}`.
fn image(v: &Value) -> Result<Vec<u8>, String> {
    let b64 = v
        .get("bytes")
        .and_then(|b| b.get(files::BYTES))
        .and_then(Value::as_str)
        .ok_or("an image column without its bytes (only embedded images are read)")?;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| e.to_string())
}

fn parse(shape: Shape, id: &str, row: &Value) -> Result<Parsed, String> {
    Ok(match shape {
        Shape::Conversation => {
            let c = &row["conversations"];
            let img = match row.get("image") {
                Some(v) if !v.is_null() => Some(image(v)?),
                _ => None,
            };
            (
                text(&c[0]["value"], "conversations[0].value")?,
                None,
                Some(text(&c[1]["value"], "conversations[1].value")?),
                img,
            )
        }
        Shape::Arena => {
            let field = if id.ends_with("vision-arena-bench-v0.1") {
                "turns"
            } else {
                "conversation"
            };
            let prompt = text(
                &row[field][0][0]["content"],
                &format!("{field}[0][0].content"),
            )?;
            (prompt, None, None, Some(image(&row["images"][0])?))
        }
        Shape::Column(col) => {
            let v = if col == "turns" {
                &row[col][0]
            } else {
                &row[col]
            };
            (text(v, col)?, None, None, None)
        }
        Shape::InstructCoder => {
            let input = text(&row["input"], "input")?;
            let instruction = text(&row["instruction"], "instruction")?;
            let prompt = format!(
                "{input}\n\n{instruction} Just output the code, do not include any explanation."
            );
            (prompt, None, None, None)
        }
        Shape::Aimo => (
            text(&row["problem"], "problem")?,
            None,
            Some(text(&row["solution"], "solution")?),
            None,
        ),
        Shape::MlPerf => (
            text(&row["question"], "question")?,
            Some(text(&row["system_prompt"], "system_prompt")?),
            Some(text(&row["output"], "output")?),
            None,
        ),
        Shape::MmStar => {
            let q = row["question"].as_str().unwrap_or_default();
            let q = q
                .split_once("Options:")
                .map_or(q, |(before, _)| before)
                .trim();
            (q.to_string(), None, None, Some(image(&row["image"])?))
        }
    })
}

/// vLLM's `is_valid_sequence`: both lengths at least 4, the prompt at
/// most `max_prompt`, the two at most `max_total`.
fn valid(prompt: usize, output: usize, max_prompt: usize, max_total: usize) -> bool {
    prompt >= 4 && output >= 4 && prompt <= max_prompt && prompt + output <= max_total
}

/// The class's checks against the backend, before anything is read.
fn check_backend(a: &VllmServeArgs, c: &Class) -> Result<(), String> {
    if c.images && a.backend != "openai-chat" {
        return Err(format!(
            "Multi-modal content is not supported on backend '{}'; use one of ['openai-audio', 'openai-chat'] (as vLLM says; goodput runs openai-chat)",
            a.backend
        ));
    }
    Ok(())
}

/// vLLM's class for the id applies the model's chat template on the
/// client (where the backend is a completions one, goodput asks the
/// server to: `super::template`).
pub(super) fn templated(a: &VllmServeArgs) -> bool {
    class_of(a).is_ok_and(|c| match c.template {
        Template::Never => false,
        Template::Unless => !a.skip_chat_template,
        Template::Always => true,
    })
}

/// HF's streaming shuffle: a buffer of `size` rows, each new row taking
/// the place of one drawn from it, the rest shuffled at the end.
fn buffered<I: Iterator>(it: I, size: usize, mut rng: StdRng) -> impl Iterator<Item = I::Item> {
    let mut buffer: Vec<I::Item> = Vec::with_capacity(size);
    let mut it = it.fuse();
    let mut tail: Option<std::vec::IntoIter<I::Item>> = None;
    std::iter::from_fn(move || loop {
        if let Some(t) = tail.as_mut() {
            return t.next();
        }
        match it.next() {
            Some(x) if buffer.len() < size => buffer.push(x),
            Some(x) => {
                let i = rng.random_range(0..size);
                return Some(std::mem::replace(&mut buffer[i], x));
            }
            None => {
                let mut rest = std::mem::take(&mut buffer);
                rest.shuffle(&mut rng);
                tail = Some(rest.into_iter());
            }
        }
    })
}

/// The rows in the order they are read: as stored with
/// `--disable-shuffle`, all shuffled with `--no-stream`, else through the
/// streaming loader's buffer of 1,000.
fn shuffled(
    a: &VllmServeArgs,
    read: impl Iterator<Item = Result<Value, String>> + 'static,
    rng: &mut StdRng,
) -> Box<dyn Iterator<Item = Result<Value, String>>> {
    if a.disable_shuffle {
        Box::new(read)
    } else if a.no_stream {
        let mut all: Vec<_> = read.collect();
        all.shuffle(rng);
        Box::new(all.into_iter())
    } else {
        Box::new(buffered(read, 1000, StdRng::seed_from_u64(rng.random())))
    }
}

/// The rows to send, in order, and a note on where they came from.
pub(super) fn rows(
    a: &VllmServeArgs,
    tokenizer: &goodput_core::tokenizer::Tokenizer,
) -> Result<(Vec<Row>, String), String> {
    let c = class_of(a)?;
    check_backend(a, c)?;
    let id = id_of(a, c);
    let split = match a.hf_split.as_deref() {
        Some(s) if c.any_split => s,
        _ => c.split,
    };
    let subset = if c.no_subset {
        None
    } else {
        a.hf_subset.as_deref().or(c.subset)
    };
    let path = a.dataset_path.as_deref().unwrap_or(id);
    let source = files::locate(path, subset, split)?;
    let from = source.from.display().to_string();
    let want = super::datasets::positive("--num-prompts", a.num_prompts)? as usize;
    let fixed = match a.hf_output_len {
        Some(n) => Some(super::datasets::positive("--hf-output-len", n)? as u32),
        None => c.output,
    };
    let count = |t: &str| {
        tokenizer.count(t).ok_or_else(|| {
            format!("{id}: the output length is the completion's tokens, which need a tokenizer (give --tokenizer or --hf-output-len)")
        })
    };
    let mut rng = StdRng::seed_from_u64(a.seed.max(0) as u64);
    let read = files::rows(source.files);
    let mut ordered = shuffled(a, read, &mut rng);
    let mut out: Vec<Row> = Vec::new();
    while out.len() < want {
        let Some(row) = ordered.next() else { break };
        let row = row?;
        // ShareGPT-shaped sets keep rows of at least two turns.
        if c.shape == Shape::Conversation
            && row["conversations"].as_array().is_none_or(|t| t.len() < 2)
        {
            continue;
        }
        let (prompt, system, completion, image) =
            parse(c.shape, id, &row).map_err(|e| format!("{from}: {e}"))?;
        let output = match (fixed, &completion) {
            (Some(n), _) if c.shape != Shape::MlPerf => n,
            (given, Some(done)) => {
                // MLPerf's prompt is its system prompt and question (vLLM
                // counts them after the template, a few tokens more).
                let system = system.as_deref().map_or(Ok(0), count)?;
                let (p, o) = (
                    count(&prompt)? + system,
                    given.map_or_else(|| count(done), |n| Ok(n as usize))?,
                );
                let (max_p, max_t) = if c.shape == Shape::Aimo {
                    (2048, 32_000)
                } else {
                    (1024, 2048)
                };
                if !valid(p, o, max_p, max_t) {
                    continue;
                }
                o as u32
            }
            (given, None) => given.unwrap_or(256),
        };
        out.push(Row {
            prompt,
            output: Some(output),
            system,
            image,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "{from}: no row of {id}'s split '{split}' could be sent"
        ));
    }
    if !a.no_oversample {
        super::questions::oversample(&mut out, want, &mut rng);
    }
    let note = format!(
        "{id} read from the local copy {from} (split '{split}'{}): {} rows{}",
        subset.map_or(String::new(), |s| format!(", subset '{s}'")),
        out.len(),
        if a.disable_shuffle {
            ""
        } else {
            ", shuffled with goodput's seeded generator (vLLM's is the datasets library's)"
        }
    );
    Ok((out, note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::tests::args;

    fn o200k() -> goodput_core::tokenizer::Tokenizer {
        goodput_core::tokenizer::Tokenizer::from_spec("tiktoken:o200k_base").unwrap()
    }

    /// A ShareGPT-shaped set as a local directory named by `--hf-name`:
    /// rows of fewer than two turns skipped, each answer's length its
    /// completion's tokens, rows whose lengths vLLM finds invalid dropped,
    /// a short set oversampled unless told not to.
    #[test]
    fn a_conversation_set_is_read_as_vllm_s_class_reads_it() {
        let dir = std::env::temp_dir().join(format!("goodput-hf-conv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let turn = |from: &str, v: &str| serde_json::json!({"from": from, "value": v});
        let set = serde_json::json!([
            {"conversations": [turn("human", "Tell me about the sea and its tides."), turn("gpt", "The sea rises and falls twice a day with the moon.")]},
            {"conversations": [turn("human", "Only one turn here, never sent.")]},
            {"conversations": [turn("human", "Hi"), turn("gpt", "Hello there, how are you today?")]},
            {"conversations": [turn("human", "Name three primary colours please."), turn("gpt", "Red, blue and yellow are the three.")]},
        ]);
        std::fs::write(dir.join("sharegpt_part.json"), set.to_string()).unwrap();
        let d = dir.to_str().unwrap();
        let read = |extra: &[&str]| {
            let mut v = vec![
                "--dataset-name",
                "hf",
                "--dataset-path",
                d,
                "--hf-name",
                "Aeala/ShareGPT_Vicuna_unfiltered",
                "--disable-shuffle",
            ];
            v.extend_from_slice(extra);
            rows(&args(&v), &o200k())
        };
        let (got, note) = read(&["--num-prompts", "2", "--no-oversample"]).unwrap();
        // "Hi" is under 4 tokens: vLLM's filter drops the row.
        let prompts: Vec<&str> = got.iter().map(|r| r.prompt.as_str()).collect();
        assert_eq!(
            prompts,
            [
                "Tell me about the sea and its tides.",
                "Name three primary colours please."
            ]
        );
        let tide = o200k()
            .count("The sea rises and falls twice a day with the moon.")
            .unwrap();
        assert_eq!(got[0].output, Some(tide as u32));
        assert!(note.contains("split 'train'"), "{note}");
        assert_eq!(
            read(&["--num-prompts", "5", "--no-oversample"])
                .unwrap()
                .0
                .len(),
            2
        );
        assert_eq!(read(&["--num-prompts", "5"]).unwrap().0.len(), 5);
        // --hf-output-len replaces the completion's length and the filter.
        let (fixed, _) = read(&[
            "--num-prompts",
            "3",
            "--hf-output-len",
            "7",
            "--no-oversample",
        ])
        .unwrap();
        assert_eq!(fixed.len(), 3);
        assert!(fixed.iter().all(|r| r.output == Some(7)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ids_vllm_does_not_know_and_those_refused_here_say_so() {
        let e = |extra: &[&str]| {
            let mut v = vec!["--dataset-name", "hf", "--num-prompts", "2"];
            v.extend_from_slice(extra);
            rows(&args(&v), &o200k()).unwrap_err()
        };
        assert!(e(&["--dataset-path", "someone/else"])
            .contains("Unsupported dataset path: someone/else"));
        assert!(e(&["--dataset-path", "yale-nlp/MMVU"]).contains("videos"));
        assert!(e(&["--dataset-path", "vdaita/edit_5k_char"]).contains("code-edit template"));
        let arena = e(&["--dataset-path", "lmarena-ai/VisionArena-Chat"]);
        assert!(
            arena.contains("Multi-modal content is not supported on backend 'openai'"),
            "{arena}"
        );
        // Where vLLM's client templates, a completions backend asks the
        // server to (MLPerf's class templates even with the flag).
        let mt = |extra: &[&str]| {
            let mut v = vec!["--dataset-name", "hf", "--dataset-path"];
            v.extend_from_slice(extra);
            templated(&args(&v))
        };
        assert!(mt(&["philschmid/mt-bench"]));
        assert!(!mt(&["philschmid/mt-bench", "--skip-chat-template"]));
        assert!(mt(&[
            "mgoin/mlperf-inference-llama2-data",
            "--skip-chat-template"
        ]));
        assert!(!mt(&["AI-MO/aimo-validation-aime"]));
        // Known, allowed, but not here: how to get a copy.
        let missing = e(&["--dataset-path", "philschmid/mt-bench"]);
        assert!(
            missing.contains("hf download philschmid/mt-bench --repo-type dataset"),
            "{missing}"
        );
    }

    #[test]
    fn the_streaming_shuffle_sends_every_row_once() {
        let rng = StdRng::seed_from_u64(3);
        let mut out: Vec<u32> = buffered(0..2500u32, 1000, rng).collect();
        assert_ne!(out, (0..2500).collect::<Vec<_>>());
        // The first row sent is one of the buffer's first 1,001.
        assert!(out[0] <= 1000);
        out.sort_unstable();
        assert_eq!(out, (0..2500).collect::<Vec<_>>());
        assert_eq!(buffered(0..3u32, 1000, StdRng::seed_from_u64(1)).count(), 3);
    }
}
