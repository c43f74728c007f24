use std::path::PathBuf;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::*;
use crate::load::workload::files::scratch;
use crate::request::protocol::Message;

fn tiktoken() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| Tokenizer::from_spec("tiktoken:o200k_base").expect("built-in encoding"))
}

fn none() -> Tokenizer {
    Tokenizer::from_spec("none").expect("none tokenizer")
}

fn opts(num: usize) -> DatasetOptions {
    DatasetOptions {
        num,
        ..DatasetOptions::default()
    }
}

fn load(path: &Path, opts: &DatasetOptions) -> Result<Dataset, FileError> {
    load_dataset(path, opts, tiktoken())
}

fn texts(ds: &Dataset) -> Vec<String> {
    ds.rows
        .iter()
        .map(|r| match &r.prompt {
            RowPrompt::Text(t) => t.clone(),
            RowPrompt::Messages(m) => format!("<{} messages>", m.len()),
        })
        .collect()
}

/// A JSONL file of `n` rows `p0`, `p1`, ... with output_tokens 1..=n.
fn numbered(n: usize) -> PathBuf {
    let body: String = (0..n)
        .map(|i| format!("{{\"prompt\": \"p{i}\", \"output_tokens\": {}}}\n", i + 1))
        .collect();
    scratch::file("numbered.jsonl", body)
}

fn err(path: &Path, opts: &DatasetOptions) -> FileError {
    load(path, opts).expect_err("the file should be rejected")
}

#[test]
fn jsonl_reads_prompts_messages_and_optional_fields() {
    let path = scratch::file(
        "data.jsonl",
        concat!(
            "{\"prompt\": \"hello world\", \"output_tokens\": 7, \"reference\": \"hi\", \"id\": 3}\n",
            "\n",
            "   \n",
            "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hello world\"}], \"output_tokens\": null}\r\n",
            "{\"prompt\": \"last\"}"
        ),
    );
    let ds = load(&path, &opts(3)).unwrap();
    assert_eq!(ds.rows.len(), 3);
    let first = &ds.rows[0];
    assert_eq!(first.prompt, RowPrompt::Text("hello world".into()));
    assert_eq!(first.input_tokens, Some(2));
    assert_eq!(first.output_tokens, Some(7));
    assert_eq!(first.reference.as_deref(), Some("hi"));
    assert_eq!(first.line, 1);
    let second = &ds.rows[1];
    let RowPrompt::Messages(m) = &second.prompt else {
        panic!("expected messages, got {:?}", second.prompt);
    };
    assert_eq!(m[1], Message::user("hello world"));
    assert_eq!(second.input_tokens, Some(2 + 2), "sum over the contents");
    assert_eq!((second.output_tokens, second.line), (None, 4));
    assert_eq!(ds.rows[2].line, 5);
    let s = &ds.stats;
    assert_eq!((s.rows_read, s.rows_eligible, s.rows_selected), (3, 3, 3));
    assert_eq!(s.rows_without_output_length, 2);
    assert_eq!(
        (s.name.as_str(), s.format),
        ("data.jsonl", DatasetFormat::Jsonl)
    );
    let digest = Sha256::digest(std::fs::read(&path).unwrap());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(s.sha256, hex);
}

#[test]
fn sharegpt_pairs_the_first_human_turn_with_the_next_gpt_turn() {
    let path = scratch::file(
        "sg.json",
        r#"[
  {"id": "a", "conversations": [
      {"from": "human", "value": "hello world"},
      {"from": "gpt", "value": "one two three"},
      {"from": "human", "value": "ignored"}]},
  {"id": "b", "conversations": [{"from": "gpt", "value": "greeting"}]},
  {"id": "c", "conversations": []},
  {"id": "d", "conversations": [
      {"from": "system", "value": "sys"},
      {"from": "gpt", "value": "early"},
      {"from": "human", "value": "question"},
      {"from": "gpt", "value": "answer"}]},
  {"id": "e", "conversations": [{"from": "human", "value": ""}, {"from": "gpt", "value": "x"}]},
  {"id": "f", "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": ""}]}
]
"#,
    );
    let ds = load(&path, &opts(2)).unwrap();
    assert_eq!(texts(&ds), ["hello world", "question"]);
    assert_eq!(ds.rows[0].line, 2);
    assert_eq!(ds.rows[1].line, 8);
    assert_eq!(ds.rows[0].reference.as_deref(), Some("one two three"));
    assert_eq!(
        ds.rows[0].output_tokens,
        Some(3),
        "token count of the reply"
    );
    assert_eq!(ds.rows[1].output_tokens, Some(1));
    let s = &ds.stats;
    assert_eq!((s.rows_read, s.rows_skipped, s.rows_eligible), (6, 4, 2));
    assert_eq!(s.format, DatasetFormat::ShareGpt);

    // Under `none` the reply cannot be counted: no output length, counted.
    let ds = load_dataset(&path, &opts(2), &none()).unwrap();
    assert_eq!(ds.rows[0].output_tokens, None);
    assert_eq!(ds.rows[0].input_tokens, None);
    assert_eq!(ds.stats.rows_without_output_length, 2);
}

#[test]
fn csv_reads_quoted_prompts_and_optional_columns() {
    let path = scratch::file(
        "d.csv",
        "id,text,output_tokens,reference\n1,\"hello, world\",5,ref\n2,\"two\nlines\",,\n3,plain, 9 ,\n",
    );
    let o = DatasetOptions {
        prompt_column: "text".into(),
        ..opts(3)
    };
    let ds = load(&path, &o).unwrap();
    assert_eq!(texts(&ds), ["hello, world", "two\nlines", "plain"]);
    assert_eq!(
        ds.rows.iter().map(|r| r.line).collect::<Vec<_>>(),
        [2, 3, 5],
        "file line where each record starts"
    );
    assert_eq!(ds.rows[0].output_tokens, Some(5));
    assert_eq!(ds.rows[0].reference.as_deref(), Some("ref"));
    assert_eq!(
        (ds.rows[1].output_tokens, ds.rows[1].reference.as_ref()),
        (None, None)
    );
    assert_eq!(ds.rows[2].output_tokens, Some(9));

    // Random sampling re-reads records by seeking; they must come back whole.
    let o = DatasetOptions {
        sampling: Sampling::Random,
        ..o
    };
    let mut got = texts(&load(&path, &o).unwrap());
    got.sort();
    assert_eq!(got, ["hello, world", "plain", "two\nlines"]);
}

#[test]
fn malformed_jsonl_names_line_and_field() {
    let cases: &[(&str, u64, Option<&str>, &str)] = &[
        ("{\"prompt\": \"a\",}", 2, None, "invalid JSON at column"),
        (
            "{\"prompt\": 5}",
            2,
            Some("prompt"),
            "expected a non-empty string, found 5",
        ),
        ("{\"output_tokens\": 3}", 2, Some("prompt"), "missing"),
        (
            "{\"prompt\": \"a\", \"output_tokens\": 0}",
            2,
            Some("output_tokens"),
            "expected a whole number >= 1, found 0",
        ),
        (
            "{\"prompt\": \"a\", \"output_tokens\": 2.5}",
            2,
            Some("output_tokens"),
            "found 2.5",
        ),
        (
            "{\"prompt\": \"a\", \"reference\": [1]}",
            2,
            Some("reference"),
            "expected a string, found an array",
        ),
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": [1]}]}",
            2,
            Some("messages[0].content"),
            "expected a string",
        ),
        ("{\"messages\": []}", 2, Some("messages"), "at least one"),
        ("{\"prompt\": \"a\", \"messages\": []}", 2, None, "keep one"),
        ("[1, 2]", 2, None, "expected a JSON object, found an array"),
    ];
    for &(bad, line, field, problem) in cases {
        let path = scratch::file("bad.jsonl", format!("{{\"prompt\": \"ok\"}}\n{bad}\n"));
        let e = err(&path, &opts(1));
        assert_eq!(e.line, Some(line), "{bad}: {e}");
        assert_eq!(e.field.as_deref(), field, "{bad}: {e}");
        assert!(e.problem.contains(problem), "{bad}: {e}");
    }
    let path = scratch::file(
        "data.jsonl",
        "\n{\"prompt\": \"a\", \"output_tokens\": \"abc\"}\n",
    );
    let e = err(&path, &opts(1));
    assert!(
        e.to_string().ends_with(
            "data.jsonl:2: field 'output_tokens': expected a whole number >= 1, found \"abc\""
        ),
        "{e}"
    );
}

#[test]
fn malformed_csv_names_line_and_field() {
    let path = scratch::file("a.csv", "question,answer\nhi,there\n");
    let e = err(&path, &opts(1));
    assert_eq!((e.line, e.field.as_deref()), (Some(1), Some("prompt")));
    assert!(e.problem.contains("\"question\", \"answer\""), "{e}");
    assert!(e.problem.contains(flags::DATASET_PROMPT_COLUMN), "{e}");

    let path = scratch::file("b.csv", "prompt,output_tokens\nhi,3\nno comma here\n");
    let e = err(&path, &opts(1));
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.problem.contains("expected 2 fields"), "{e}");

    let path = scratch::file("c.csv", "prompt,output_tokens\nhi,3\nthere,x\n");
    let e = err(&path, &opts(1));
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(3), Some("output_tokens"))
    );

    let path = scratch::file("d.csv", "prompt\n\"\"\n");
    let e = err(&path, &opts(1));
    assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("prompt")));
}

#[test]
fn malformed_sharegpt_names_the_row_line() {
    let path = scratch::file("o.json", "{\"conversations\": []}");
    let e = err(&path, &opts(1));
    assert!(e.problem.contains("expected a ShareGPT file"), "{e}");

    let path = scratch::file(
        "t.json",
        "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": \"gpt\", \"value\": \"a\"}]},\n\n {\"conversations\": \"oops\"}\n]",
    );
    let e = err(&path, &opts(1));
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(4), Some("conversations"))
    );

    let path = scratch::file(
        "v.json",
        "[{\"conversations\": [{\"from\": \"human\", \"value\": 3}]}]",
    );
    let e = err(&path, &opts(1));
    assert_eq!(e.field.as_deref(), Some("conversations[0].value"));

    let path = scratch::file(
        "j.json",
        "[\n {\"conversations\": []},\n {\"conversations\": [}\n]",
    );
    let e = err(&path, &opts(1));
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.problem.contains("invalid JSON"), "{e}");

    let path = scratch::file("trail.json", "[] x");
    assert!(err(&path, &opts(1)).problem.contains("trailing"));
}

#[test]
fn unknown_extension_and_missing_file() {
    let path = scratch::file("data.txt", "{}");
    let e = err(&path, &opts(1));
    assert!(
        e.problem.contains("--dataset-format sharegpt|jsonl|csv"),
        "{e}"
    );
    let o = DatasetOptions {
        format: Some(DatasetFormat::Jsonl),
        ..opts(1)
    };
    let path = scratch::file("data.txt", "{\"prompt\": \"x\"}\n");
    assert_eq!(load(&path, &o).unwrap().rows.len(), 1, "the override wins");

    let missing = path.with_file_name("absent.jsonl");
    let e = err(&missing, &opts(1));
    assert_eq!(e.path, missing);
    assert!(e.problem.starts_with("cannot read the file"), "{e}");
}

#[test]
fn filters_drop_and_count_rows() {
    let path = scratch::file(
        "f.jsonl",
        concat!(
            "{\"prompt\": \"one\", \"output_tokens\": 5}\n",
            "{\"prompt\": \"one two three four\", \"output_tokens\": 5}\n",
            "{\"prompt\": \"one two\", \"output_tokens\": 50}\n",
            "{\"prompt\": \"one two\"}\n",
            "{\"prompt\": \"one two three\", \"output_tokens\": 10}\n",
        ),
    );
    let o = DatasetOptions {
        input_filter: Some((2, 3)),
        output_filter: Some((1, 10)),
        exhausted: Exhausted::Truncate,
        ..opts(10)
    };
    let ds = load(&path, &o).unwrap();
    assert_eq!(texts(&ds), ["one two", "one two three"]);
    let s = &ds.stats;
    assert_eq!(s.rows_dropped_input_filter, 2);
    assert_eq!(s.rows_dropped_output_filter, 1);
    assert_eq!(s.rows_without_output_length, 1, "kept by the output filter");
    assert_eq!((s.rows_eligible, s.rows_selected), (2, 2));
    assert_eq!(s.input_filter_tokens, Some([2, 3]));

    let e = load_dataset(&path, &o, &none()).unwrap_err();
    assert!(e.problem.contains("--tokenizer none"), "{e}");

    let e = err(
        &path,
        &DatasetOptions {
            output_filter: Some((9, 3)),
            ..opts(1)
        },
    );
    assert!(e.problem.contains("empty"), "{e}");
}

#[test]
fn too_few_rows_fail_by_default_naming_counts_and_flags() {
    let path = numbered(4);
    let e = err(&path, &opts(10));
    for needle in [
        "4 rows are eligible but 10 were requested",
        "--num-prompts 4",
        "--dataset-exhausted cycle",
        "truncate",
        "--dataset-sampling replacement",
    ] {
        assert!(e.problem.contains(needle), "{needle:?} missing from: {e}");
    }
    let o = DatasetOptions {
        input_filter: Some((100, 200)),
        ..opts(1)
    };
    let e = err(&path, &o);
    assert!(
        e.problem
            .contains("no row is eligible (4 read, 4 outside the input filter)"),
        "{e}"
    );
    assert!(e.problem.contains("widen"), "{e}");
}

#[test]
fn cycle_repeats_the_selection_in_the_same_order() {
    let path = numbered(3);
    let o = DatasetOptions {
        exhausted: Exhausted::Cycle,
        ..opts(7)
    };
    let ds = load(&path, &o).unwrap();
    assert_eq!(texts(&ds), ["p0", "p1", "p2", "p0", "p1", "p2", "p0"]);
    assert!(ds.stats.cycled && !ds.stats.truncated);
    assert_eq!(ds.stats.rows_selected, 7);

    let o = DatasetOptions {
        sampling: Sampling::Random,
        seed: 3,
        ..o
    };
    let got = texts(&load(&path, &o).unwrap());
    assert_eq!(got[..3], got[3..6], "the random order repeats as it was");
    assert_eq!(got[0], got[6]);
    let mut once = got[..3].to_vec();
    once.sort();
    assert_eq!(once, ["p0", "p1", "p2"]);
}

#[test]
fn truncate_returns_only_the_eligible_rows() {
    let o = DatasetOptions {
        exhausted: Exhausted::Truncate,
        ..opts(10)
    };
    let ds = load(&numbered(3), &o).unwrap();
    assert_eq!(texts(&ds), ["p0", "p1", "p2"]);
    assert!(ds.stats.truncated && !ds.stats.cycled);
    assert_eq!((ds.stats.rows_requested, ds.stats.rows_selected), (10, 3));
}

#[test]
fn sequential_takes_the_first_rows_in_file_order() {
    let ds = load(&numbered(50), &opts(3)).unwrap();
    assert_eq!(texts(&ds), ["p0", "p1", "p2"]);
    assert_eq!(ds.rows[2].output_tokens, Some(3));
    assert_eq!(ds.rows[2].line, 3);
}

#[test]
fn random_sampling_is_reproducible_for_a_seed_and_differs_between_seeds() {
    let path = numbered(100);
    let with_seed = |seed| {
        let o = DatasetOptions {
            sampling: Sampling::Random,
            seed,
            ..opts(10)
        };
        texts(&load(&path, &o).unwrap())
    };
    let a = with_seed(1);
    assert_eq!(a, with_seed(1));
    assert_ne!(a, with_seed(2));
    let mut distinct = a.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 10, "without replacement: {a:?}");
    assert_ne!(a, texts(&load(&path, &opts(10)).unwrap()), "not file order");
}

#[test]
fn replacement_may_repeat_rows_and_ignores_exhaustion() {
    let path = numbered(3);
    let o = DatasetOptions {
        sampling: Sampling::Replacement,
        seed: 9,
        ..opts(30)
    };
    let ds = load(&path, &o).unwrap();
    assert_eq!(ds.rows.len(), 30);
    assert!(!ds.stats.cycled && !ds.stats.truncated);
    let got = texts(&ds);
    for p in ["p0", "p1", "p2"] {
        assert!(got.iter().filter(|t| *t == p).count() > 1, "{got:?}");
    }
    assert_eq!(got, texts(&load(&path, &o).unwrap()));
    for row in &ds.rows {
        let RowPrompt::Text(t) = &row.prompt else {
            unreachable!()
        };
        assert_eq!(Some(row.line), t[1..].parse::<u64>().ok().map(|i| i + 1));
    }
}

/// A 20,000-row ShareGPT file read for 10 rows: the reader walks the array
/// one element at a time (see `sharegpt`) and keeps only the offsets of
/// eligible rows, then re-reads the 10 it chose. Memory is not measured
/// here; what is checked is that every row was seen and only 10 kept.
#[test]
fn sharegpt_streams_a_large_file_and_keeps_only_the_sample() {
    let mut body = String::from("[");
    for i in 0..20_000 {
        if i > 0 {
            body.push_str(",\n");
        }
        let human = if i % 4 == 3 { "system" } else { "human" };
        body.push_str(&format!(
            "{{\"id\": {i}, \"conversations\": [{{\"from\": \"{human}\", \"value\": \"question {i}\"}}, {{\"from\": \"gpt\", \"value\": \"answer {i}\"}}]}}"
        ));
    }
    body.push(']');
    let path = scratch::file("big.json", &body);
    let o = DatasetOptions {
        sampling: Sampling::Random,
        seed: 5,
        ..opts(10)
    };
    let ds = load_dataset(&path, &o, &none()).unwrap();
    assert_eq!(ds.rows.len(), 10);
    let s = &ds.stats;
    assert_eq!(
        (s.rows_read, s.rows_skipped, s.rows_eligible),
        (20_000, 5_000, 15_000)
    );
    for row in &ds.rows {
        let RowPrompt::Text(t) = &row.prompt else {
            unreachable!()
        };
        let i: u64 = t.trim_start_matches("question ").parse().unwrap();
        assert_eq!(row.line, i + 1, "row {i} starts on its own line");
        assert_eq!(row.reference, Some(format!("answer {i}")));
    }
}

#[test]
fn choice_names_parse_and_list_the_valid_spellings() {
    assert_eq!(
        "ShareGPT".parse::<DatasetFormat>(),
        Ok(DatasetFormat::ShareGpt)
    );
    assert_eq!("cycle".parse::<Exhausted>(), Ok(Exhausted::Cycle));
    let e = "shuffle".parse::<Sampling>().unwrap_err();
    assert!(e.contains("sequential, random, replacement"), "{e}");
    assert_eq!(
        serde_json::to_string(&Sampling::Replacement).unwrap(),
        "\"replacement\""
    );
}
