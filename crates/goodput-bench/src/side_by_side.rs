//! The side-by-side tables of goodput, vllm-bench and the floor (issue 22):
//! one row per run with its TTFT tail after the first wave and TPOT error
//! ([`crate::tails`]), then medians per load and client with CPU per token
//! against the floor's median. Pure: runs in, markdown out.

use crate::experiments::{ClientKind, ClientRun};
use crate::report::{count, num, table};
use crate::stats::Spread;
use crate::tails::Tails;

/// The side-by-side tables: one row per run, then medians per load and client
/// with CPU per token against the floor's median.
pub fn report(runs: &[ClientRun]) -> String {
    let mut out = String::from("### Side by side: TTFT tail after the first wave, TPOT error\n\n");
    let with: Vec<(&ClientRun, &Tails)> = runs
        .iter()
        .filter_map(|r| Some((r, r.extras.tails.as_ref()?)))
        .collect();
    let rows: Vec<Vec<String>> = with
        .iter()
        .map(|(run, t)| {
            vec![
                run.client.name().to_string(),
                count(run.streams as u64),
                (run.repetition + 1).to_string(),
                count(t.ttft_error_all.n as u64),
                num(t.ttft_error_all.p99, 2),
                count(t.ttft_error_after.n as u64),
                num(t.ttft_error_after.p99, 2),
                num(t.ttft_error_after_kernel.p99, 2),
                format!(
                    "{} / {}",
                    num(t.tpot_error.p50, 3),
                    num(t.tpot_error.p99, 3)
                ),
                num(run.cpu_per_token_us(), 2),
                crate::report::opt(run.extras.busy_core_cpu.map(|d| d.as_secs_f64()), 2),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "client",
            "streams",
            "run",
            "requests joined",
            "TTFT error p99, all (ms)",
            "requests after the first wave",
            "TTFT error p99, after the first wave (ms)",
            "the same, server read lateness removed (ms)",
            "TPOT error p50 / p99 (ms)",
            "CPU per token (µs)",
            "busy-core process CPU (s)",
        ],
        &rows,
    );
    out.push_str(&medians(&with));
    out.push_str(
        "TTFT error = client TTFT − server TTFT (first token write − moment the whole request had been \
         read), signed. All = every request the client sent (goodput's warm-up of one request per \
         stream included, which the accuracy tables leave out). The first wave = the first `streams` \
         requests by the client's own send time; \"after the first wave\" = every later one. TPOT error = client TPOT − server TPOT per request \
         ((last − first content event) / (server tokens − 1), against the same of the server's writes), \
         signed. Server read lateness removed: client TTFT − (first token write − the kernel's receive time \
         of the request), the client's own share: the one-thread reference server reads a burst of \
         requests late, and how bunched a client's sends are decides how late (see the decomposition \
         above). The floor's last content event is the read that brought the start of its last token \
         event. vllm-bench's TTFT is its own: from right before reqwest's `send` (connection set-up \
         included) to its first chunk with a non-empty `choices`. Busy-core process CPU: with \
         `--busy-core`, the CPU of the `bench spin` process that kept one core busy during the run \
         (not charged to the client).\n\n",
    );
    out
}

/// Medians over repetitions per (streams, client), CPU per token against the
/// floor's median at the same streams.
fn medians(with: &[(&ClientRun, &Tails)]) -> String {
    let mut loads: Vec<(usize, ClientKind)> = Vec::new();
    for (run, _) in with {
        if !loads.contains(&(run.streams, run.client)) {
            loads.push((run.streams, run.client));
        }
    }
    let median = |client: ClientKind, at: usize, figure: &dyn Fn(&ClientRun, &Tails) -> f64| {
        let values: Vec<f64> = with
            .iter()
            .filter(|(r, _)| r.client == client && r.streams == at)
            .map(|(r, t)| figure(r, t))
            .collect();
        (values.len(), Spread::of(&values).p50)
    };
    let rows: Vec<Vec<String>> = loads
        .iter()
        .map(|&(at, client)| {
            let (runs, cpu) = median(client, at, &|r, _| r.cpu_per_token_us());
            let (floor_runs, floor) =
                median(ClientKind::BytesOnly, at, &|r, _| r.cpu_per_token_us());
            let ratio = if client == ClientKind::BytesOnly || floor_runs == 0 {
                "–".to_string()
            } else {
                format!("{}×", num(cpu / floor, 2))
            };
            let (_, rss) = median(client, at, &|r, _| r.usage.max_rss_kib as f64 / 1024.0);
            let (_, all) = median(client, at, &|_, t| t.ttft_error_all.p99);
            let (_, after) = median(client, at, &|_, t| t.ttft_error_after.p99);
            let (_, own) = median(client, at, &|_, t| t.ttft_error_after_kernel.p99);
            let (_, tpot) = median(client, at, &|_, t| t.tpot_error.p99);
            vec![
                count(at as u64),
                client.name().to_string(),
                runs.to_string(),
                num(cpu, 2),
                ratio,
                num(rss, 1),
                num(all, 2),
                num(after, 2),
                num(own, 2),
                num(tpot, 3),
            ]
        })
        .collect();
    let mut out = String::from("Medians over the repetitions:\n\n");
    table(
        &mut out,
        &[
            "streams",
            "client",
            "runs",
            "CPU per token (µs)",
            "vs bytes-only",
            "peak RSS (MiB)",
            "p99 TTFT error, all (ms)",
            "p99 TTFT error, after the first wave (ms)",
            "the same, server read lateness removed (ms)",
            "p99 TPOT error (ms)",
        ],
        &rows,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(client: ClientKind, repetition: usize, cpu_ms: u64, p99_all: f64) -> ClientRun {
        let spread = |p99: f64| Spread::of(&[p99]);
        ClientRun {
            client,
            streams: 256,
            repetition,
            requests: 768,
            server_requests: 768,
            tokens: 1_000_000,
            usage: crate::child::ChildUsage {
                command: client.name().to_string(),
                wall: Duration::from_secs(6),
                user: Duration::from_millis(cpu_ms / 2),
                sys: Duration::from_millis(cpu_ms / 2),
                max_rss_kib: 20 * 1024,
                rss_floor_kib: 1024,
                exit_code: Some(0),
                spawn_monotonic_ns: None,
                stdout: String::new(),
                stderr: String::new(),
            },
            server_cpu: Duration::from_secs(1),
            other_cpu: None,
            busy_before: None,
            server_slip: Spread::of(&[]),
            notes: Vec::new(),
            accuracy: None,
            open_loop: None,
            extras: crate::tails::RunExtras {
                tails: Some(Tails {
                    ttft_error_all: spread(p99_all),
                    ttft_error_after: spread(4.0),
                    ttft_error_after_kernel: spread(1.0),
                    tpot_error: spread(0.02),
                }),
                busy_core_cpu: Some(Duration::from_secs(5)),
                first_requests: None,
            },
        }
    }

    #[test]
    fn medians_compare_each_client_with_the_floor_median() {
        let mut runs = Vec::new();
        for (r, floor_ms, vllm_ms) in [(0, 5_000, 9_000), (1, 6_000, 12_000), (2, 7_000, 12_000)] {
            runs.push(run(ClientKind::BytesOnly, r, floor_ms, 3.0));
            runs.push(run(ClientKind::VllmBench, r, vllm_ms, 1000.0));
        }
        let markdown = report(&runs);
        // Every table is rectangular.
        for block in markdown.split("\n\n").filter(|b| b.starts_with('|')) {
            let cells: Vec<usize> = block.lines().map(|l| l.matches('|').count()).collect();
            assert!(cells.iter().all(|&n| n == cells[0]), "{block}");
        }
        // Medians: floor 6 µs a token, vllm-bench 12: 2×; its p99 over all
        // requests beside the one after the first wave.
        assert!(
            markdown.contains(
                "| 256 | vllm-bench | 3 | 12.00 | 2.00× | 20.0 | 1000.00 | 4.00 | 1.00 | 0.020 |"
            ),
            "{markdown}"
        );
        assert!(
            markdown.contains("| 5.00 |"),
            "busy-core CPU per run: {markdown}"
        );
    }
}
