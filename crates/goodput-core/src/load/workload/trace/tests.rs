use super::*;
use crate::load::workload::files::scratch;

fn load(path: &Path) -> Result<Trace, FileError> {
    load_trace(path, &TraceOptions::default())
}

fn with(path: &Path, opts: TraceOptions) -> Result<Trace, FileError> {
    load_trace(path, &opts)
}

fn ms(opts: TraceOptions) -> TraceOptions {
    TraceOptions {
        time_unit: Some(TimeUnit::Ms),
        ..opts
    }
}

fn times(trace: &Trace) -> Vec<f64> {
    trace.rows.iter().map(|r| r.at_s).collect()
}

const AZURE: &str = "\
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,0
2023-11-16 18:15:51.3910170,91,16
";

#[test]
fn azure_dates_become_exact_offsets_and_zero_lengths_are_counted() {
    let path = scratch::file("AzureLLMInferenceTrace_conv.csv", AZURE);
    let trace = load(&path).unwrap();
    assert_eq!(trace.stats.format, TraceFormat::Azure);
    // Differences of the 100 ns ticks in the file, to the microsecond and
    // beyond: 50.9951690 - 46.6805900 = 4.3145790 s.
    assert_eq!(times(&trace), [0.0, 4.314579, 4.541877, 4.710427]);
    let row = &trace.rows[1];
    assert_eq!(
        (row.input_tokens, row.output_tokens, row.line),
        (396, 109, 3)
    );
    assert_eq!(
        trace.rows[2].output_tokens, 1,
        "0 generated tokens raised to 1"
    );
    let s = &trace.stats;
    assert_eq!((s.rows_output_clamped, s.rows_input_clamped), (1, 0));
    assert_eq!((s.rows_read, s.rows_in_slice), (4, 4));
    assert_eq!(s.span_s, 4.710427);
    assert_eq!(s.time_unit, None);
    assert_eq!(s.sha256.len(), 64);
}

#[test]
fn bad_azure_date_names_line_and_field() {
    let path = scratch::file(
        "azure.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,1,1\n11/16/2023 18:15,1,1\n",
    );
    let e = load(&path).unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("TIMESTAMP")));
    assert!(
        e.problem.contains("expected a date-time like 2023-11-16"),
        "{e}"
    );

    let o = TraceOptions {
        time_unit: Some(TimeUnit::S),
        ..TraceOptions::default()
    };
    assert!(with(&path, o)
        .unwrap_err()
        .problem
        .contains("does not apply"));
}

#[test]
fn mooncake_is_detected_by_hash_ids_and_read_in_ms() {
    let path = scratch::file(
        "mooncake_trace.jsonl",
        concat!(
            "{\"timestamp\": 0, \"input_length\": 6755, \"output_length\": 500, \"hash_ids\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}\n",
            "{\"timestamp\": 3052, \"input_length\": 2287, \"output_length\": 316, \"hash_ids\": [0, 42, 43, 44, 45]}\n",
            "\n",
            "{\"timestamp\": 3052, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [7, 8]}\n",
            "{\"timestamp\": 3100.5, \"input_length\": 600, \"output_length\": 2, \"hash_ids\": [9]}\n",
        ),
    );
    let trace = load(&path).unwrap();
    assert_eq!(trace.stats.format, TraceFormat::Mooncake);
    assert_eq!(trace.stats.time_unit, Some(TimeUnit::Ms));
    assert_eq!(trace.stats.block_tokens, Some(512));
    assert_eq!(times(&trace), [0.0, 3.052, 3.052, 3.1005]);
    assert_eq!(trace.rows[1].hash_ids, [0, 42, 43, 44, 45]);
    assert_eq!(trace.rows[2].line, 4);
    assert_eq!(
        trace.stats.rows_tail_unhashed, 1,
        "600 tokens with one id: the partial second block has none"
    );

    // With 256-token blocks the same ids cover too little.
    let o = TraceOptions {
        block_tokens: 256,
        ..TraceOptions::default()
    };
    let e = with(&path, o).unwrap_err();
    assert_eq!(
        (e.line, e.field.as_deref()),
        (Some(1), Some("input_length"))
    );
    assert!(e.problem.contains(flags::TRACE_BLOCK_TOKENS), "{e}");
}

#[test]
fn mooncake_rejects_ids_the_input_cannot_fill_and_bad_fields() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "\"input_length\": 512, \"output_length\": 1, \"hash_ids\": [1, 2]",
            "hash_ids",
            "need more than 512",
        ),
        (
            "\"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1, -2]",
            "hash_ids[1]",
            "found -2",
        ),
        (
            "\"input_length\": 10, \"output_length\": 1, \"hash_ids\": \"1\"",
            "hash_ids",
            "expected an array",
        ),
        (
            "\"input_length\": 10, \"output_length\": 1.5, \"hash_ids\": [1]",
            "output_length",
            "whole number",
        ),
        (
            "\"input_length\": 10, \"hash_ids\": [1]",
            "output_tokens",
            "missing",
        ),
        (
            "\"input_length\": 10, \"input_tokens\": 10, \"output_length\": 1, \"hash_ids\": [1]",
            "input_tokens",
            "keep one",
        ),
    ];
    for &(fields, field, problem) in cases {
        let path = scratch::file(
            "m.jsonl",
            format!(
                "{{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}}\n{{\"timestamp\": 1, {fields}}}\n"
            ),
        );
        let e = load(&path).unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some(field)), "{e}");
        assert!(e.problem.contains(problem), "{e}");
    }
}

#[test]
fn generic_jsonl_needs_a_time_unit_and_reads_aliases_and_prompts() {
    let path = scratch::file(
        "t.jsonl",
        concat!(
            "{\"timestamp\": 100, \"input_tokens\": 10, \"output_tokens\": 5, \"prompt\": \"hi\"}\n",
            "{\"timestamp\": 250, \"input_length\": 0, \"output_length\": 7}\n",
        ),
    );
    let e = load(&path).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("timestamp"));
    assert!(e.problem.contains("--trace-time-unit s|ms|us"), "{e}");

    let trace = with(&path, ms(TraceOptions::default())).unwrap();
    assert_eq!(trace.stats.format, TraceFormat::Jsonl);
    assert_eq!(times(&trace), [0.0, 0.15]);
    assert_eq!(trace.rows[0].prompt.as_deref(), Some("hi"));
    assert_eq!(trace.rows[1].input_tokens, 1);
    assert_eq!(trace.stats.rows_input_clamped, 1);
    for (unit, second) in [(TimeUnit::S, 150.0), (TimeUnit::Us, 0.00015)] {
        let o = TraceOptions {
            time_unit: Some(unit),
            ..TraceOptions::default()
        };
        assert_eq!(times(&with(&path, o).unwrap()), [0.0, second]);
    }
}

#[test]
fn generic_csv_reads_columns_by_name() {
    let path = scratch::file(
        "t.csv",
        "prompt,output_length,timestamp,input_length\nhello,3,1.5,4\n,2,2.25,8\n",
    );
    let o = TraceOptions {
        time_unit: Some(TimeUnit::S),
        ..TraceOptions::default()
    };
    let trace = with(&path, o.clone()).unwrap();
    assert_eq!(trace.stats.format, TraceFormat::Csv);
    assert_eq!(times(&trace), [0.0, 0.75]);
    let row = &trace.rows[0];
    assert_eq!(
        (row.input_tokens, row.output_tokens, row.prompt.as_deref()),
        (4, 3, Some("hello"))
    );
    assert_eq!(trace.rows[1].prompt, None);

    let path = scratch::file("u.csv", "time,input_tokens,output_tokens\n1,2,3\n");
    let e = with(&path, o.clone()).unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (Some(1), Some("timestamp")));
    assert!(e.problem.contains("\"time\""), "{e}");

    let path = scratch::file(
        "v.csv",
        "timestamp,input_tokens,output_tokens\n1,2,3\nsoon,2,3\n",
    );
    let e = with(&path, o.clone()).unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("timestamp")));

    let path = scratch::file(
        "w.csv",
        "timestamp,input_tokens,output_tokens\n1,2,3\n2,3\n",
    );
    assert_eq!(with(&path, o).unwrap_err().line, Some(3));
}

#[test]
fn timestamps_going_back_are_an_error_naming_the_line() {
    let path = scratch::file(
        "t.jsonl",
        "{\"timestamp\": 5, \"input_tokens\": 1, \"output_tokens\": 1}\n{\"timestamp\": 5, \"input_tokens\": 1, \"output_tokens\": 1}\n{\"timestamp\": 4, \"input_tokens\": 1, \"output_tokens\": 1}\n",
    );
    let e = with(&path, ms(TraceOptions::default())).unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("timestamp")));
    assert!(
        e.problem.contains("line 2") && e.problem.contains("sorted"),
        "{e}"
    );
}

#[test]
fn slicing_keeps_the_window_and_rebases_to_its_first_row() {
    let body: String = (0..10)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_tokens\": 1, \"output_tokens\": 1}}\n",
                1000 + i * 500
            )
        })
        .collect();
    let path = scratch::file("t.jsonl", body);
    let o = ms(TraceOptions {
        start: Duration::from_millis(1200),
        window: Some(Duration::from_secs(2)),
        ..TraceOptions::default()
    });
    let trace = with(&path, o).unwrap();
    // File offsets 0, 0.5, ..., 4.5 s; the slice [1.2, 3.2) keeps 1.5 .. 3.0.
    let file: Vec<f64> = trace.rows.iter().map(|r| r.file_s).collect();
    assert_eq!(file, [1.5, 2.0, 2.5, 3.0]);
    assert_eq!(times(&trace), [0.0, 0.5, 1.0, 1.5]);
    assert_eq!(trace.rows[0].line, 4);
    let s = &trace.stats;
    assert_eq!((s.rows_read, s.rows_in_slice, s.span_s), (10, 4, 1.5));
    assert_eq!((s.start_s, s.window_s), (1.2, Some(2.0)));

    let o = ms(TraceOptions {
        start: Duration::from_secs(60),
        ..TraceOptions::default()
    });
    let e = with(&path, o).unwrap_err();
    assert!(
        e.problem
            .contains("no row falls in the slice from 60 s to the end; the trace spans 0 to 4.5 s"),
        "{e}"
    );
}

#[test]
fn formats_come_from_the_extension_or_the_override() {
    let path = scratch::file("trace.txt", AZURE);
    let e = load(&path).unwrap_err();
    assert!(
        e.problem
            .contains("--trace-format azure|mooncake|jsonl|csv"),
        "{e}"
    );
    let o = TraceOptions {
        format: Some(TraceFormat::Azure),
        ..TraceOptions::default()
    };
    assert_eq!(with(&path, o).unwrap().rows.len(), 4);

    let path = scratch::file("trace.jsonl", "");
    assert!(with(&path, ms(TraceOptions::default()))
        .unwrap_err()
        .problem
        .contains("no rows"));

    let e = load(&path.with_file_name("missing.csv")).unwrap_err();
    assert!(e.problem.starts_with("cannot read the file"), "{e}");
}
