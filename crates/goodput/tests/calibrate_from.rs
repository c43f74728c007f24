//! `goodput calibrate --from FILE...` against the built-in simulator
//! through the real binary: a sweep and a run saved by `--out` give a fit
//! whose weight-bound floor (`weights_ms`, what every decode step costs at
//! least) is within 15 % of the live experiment's on the same simulator;
//! results that observe no step (open loop only) exit 2 saying why, and
//! write no profile.

mod common;

use common::*;
use goodput_sim::calibrate::Profile;

fn weights_ms(profile: &std::path::Path) -> f64 {
    Profile::read(profile).unwrap().step.weights_ms
}

#[test]
fn saved_sweep_and_run_fit_the_floor_of_the_live_experiment() {
    // The live experiment, cut short (a smaller burst and fewer shapes)
    // but with the decodes that fix the floor.
    let live = tmp("live.toml");
    let (code, out, err) = goodput(&[
        "calibrate",
        "--prompt-lengths",
        "256,1024,4096",
        "--contexts",
        "128,1024",
        "--batches",
        "1,4,16",
        "--burst",
        "32",
        "--quiet",
        "--out",
        live.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "live calibrate failed:\n{out}\n{err}");

    let sweep = tmp("a.json");
    let (code, out, err) = goodput(&[
        "sweep",
        "--concurrencies",
        "1,4,16",
        "--input-tokens",
        "256",
        "--output-tokens",
        "64",
        "--point-time",
        "3s",
        "--quiet",
        "--out",
        sweep.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "sweep failed:\n{out}\n{err}");
    let run = tmp("b.json");
    let (code, out, err) = goodput(&[
        "run",
        "--concurrency",
        "1",
        "--input-tokens",
        "2048",
        "--output-tokens",
        "16",
        "--num-prompts",
        "8",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "run failed:\n{out}\n{err}");

    let from = tmp("from.toml");
    let (code, out, err) = goodput(&[
        "calibrate",
        "--from",
        sweep.to_str().unwrap(),
        run.to_str().unwrap(),
        "--out",
        from.to_str().unwrap(),
    ]);
    // Two prefill lengths, one of them compute-bound, cannot give both the
    // prefill slope and its intercept (which of the prefill terms is left
    // unidentified turns on the noise): the profile is written, and the
    // exit says what to add.
    assert_eq!(code, 2, "calibrate --from:\n{out}\n{err}");
    assert!(err.contains("cannot identify"), "{err}");
    assert!(err.contains("add `goodput run --concurrency 1"), "{err}");
    // Every point is listed with what it gave.
    assert!(
        out.contains("decode of 16 sequences at context 288"),
        "{out}"
    );
    assert!(out.contains("prefill of 2048 prompt tokens"), "{out}");

    let (live_w, from_w) = (weights_ms(&live), weights_ms(&from));
    assert!(
        (from_w / live_w - 1.0).abs() < 0.15,
        "weights_ms from files {from_w} against live {live_w}\n{out}"
    );
}

#[test]
fn open_loop_results_alone_exit_2_saying_why() {
    let open = tmp("open.json");
    let (code, out, err) = goodput(&[
        "run",
        "--request-rate",
        "20",
        "--num-prompts",
        "20",
        "--input-tokens",
        "256",
        "--output-tokens",
        "32",
        "--quiet",
        "--out",
        open.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "run failed:\n{out}\n{err}");
    let profile = tmp("never.toml");
    let (code, out, err) = goodput(&[
        "calibrate",
        "--from",
        open.to_str().unwrap(),
        "--out",
        profile.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(out.contains("skipped: open-loop arrivals"), "{out}");
    assert!(err.contains("open-loop arrivals (1)"), "{err}");
    assert!(!profile.exists(), "no profile from no observation");

    // A file set and a server are two sources: clap refuses both.
    let (code, _, err) = goodput(&[
        "calibrate",
        "--from",
        open.to_str().unwrap(),
        "--url",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
