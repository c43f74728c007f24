//! The checked plan of a sharded run's manifests: the command after `--`
//! checked as goodput would parse it, the flags that wire the shards
//! together appended, the pods' grace period and keep-alive chosen.
//!
//! `goodput k8s --shards N --image IMAGE [...] -- run|sweep ARGS...`
//! checks the command after `--` as goodput itself would (exit 2 before
//! anything is printed), appends the flags that wire the shards together —
//! `--shards N --coordinator NAME-0.NAME.NS.svc.DOMAIN:PORT --part
//! /results/part-{shard}.jsonl --out /results/result-{shard}.json` — and
//! the manifests run it. The flags it sets are refused in the command (a
//! second `--shards` would contradict the Job), and so are output files
//! outside /results, the pods' only writable directory.

use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::manifests::{Plan, RESULTS_DIR};
use crate::names::SecretEnv;

/// Why no plan: the user's input (exit 2), or goodput's own fault (exit 4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The flags or the command after `--` cannot make manifests; says why.
    #[error("{0}")]
    Usage(String),
    /// A fault of goodput's, not of the input.
    #[error("{0}")]
    Internal(String),
}

fn usage(s: String) -> Error {
    Error::Usage(s)
}

/// What `goodput k8s` was asked for: its flags, already checked one by one
/// by their parsers (names, quantities, secret references).
#[derive(Debug, Clone)]
pub struct ManifestOptions {
    /// `--shards`: pods of the run.
    pub shards: Option<u32>,
    /// `--image`: the container image holding goodput as its entrypoint.
    pub image: Option<String>,
    /// `--name`: the Job's and the headless Service's name.
    pub name: String,
    /// `--namespace`.
    pub namespace: String,
    /// `--port`: the TCP port shard 0 coordinates on.
    pub port: u16,
    /// `--cpu`: a Kubernetes quantity.
    pub cpu: String,
    /// `--memory`: a Kubernetes quantity.
    pub memory: String,
    /// `--results-claim`: a PersistentVolumeClaim for /results.
    pub results_claim: Option<String>,
    /// `--keep-alive`: how long each pod stays up after goodput ended.
    pub keep_alive: Option<Duration>,
    /// `--secret-env`: variables taken from Secrets.
    pub secret_env: Vec<SecretEnv>,
    /// `--cluster-domain`: the tail of the coordinator's address.
    pub cluster_domain: String,
    /// The goodput command every pod runs, after `--`.
    pub command: Vec<String>,
}

/// How the command after `--` parsed as goodput's own command line: as
/// `run` or `sweep` (`Ok(true)`), as another command (`Ok(false)`), or not
/// at all.
pub type Parses<'a> = &'a dyn Fn(&[String]) -> Result<bool, clap::Error>;

/// Shard 0's merged result (`result-0.json`); another shard's `--out` is its part.
const MERGED: &str = "/results/result-{shard}.json";
/// Each shard's part (`{shard}` is the shard's index).
const PART: &str = "/results/part-{shard}.jsonl";

/// Flags the pods get from `goodput k8s`, and what to do instead of
/// giving them after `--`.
const SET_HERE: [(&str, &str); 5] = [
    (
        "--shards",
        "give the number of pods to goodput k8s itself, before --",
    ),
    (
        "--shard",
        "each pod's index comes from the Job, which sets JOB_COMPLETION_INDEX",
    ),
    (
        "--coordinator",
        "every pod is pointed at shard 0's pod, NAME-0.NAME.NS.svc.DOMAIN:PORT (choose the port with goodput k8s --port)",
    ),
    (
        "--part",
        "each shard writes its part to /results/part-{shard}.jsonl",
    ),
    (
        "--out",
        "shard 0 writes the merged result to /results/result-0.json (another shard its part to result-I.json)",
    ),
];

/// Flags naming a file goodput writes: in a pod it must be under /results.
const OUTPUT_FILES: [&str; 3] = ["--records", "--html", "--csv"];

/// Time beyond the drain for goodput to write its files before the
/// kubelet's SIGKILL.
const WRITE_MARGIN: Duration = Duration::from_secs(30);

/// `--keep-alive` without `--results-claim`: time for `kubectl exec` to
/// fetch the results from the pods' emptyDir.
const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(600);

/// Where the merged result can be read once the run ended, said in the
/// manifests' header and on stderr.
pub fn results_fetch(plan: &Plan) -> String {
    match (&plan.results_claim, plan.keep_alive.is_zero()) {
        (Some(claim), _) => format!("on the claim {claim} (mount it in any pod to read them)"),
        (None, true) => "lost when the pods end, with --keep-alive 0 and no --results-claim (kubectl logs keeps shard 0's summary)".to_string(),
        (None, false) => format!(
            "kubectl exec -n {ns} $(kubectl get pod -n {ns} -l batch.kubernetes.io/job-name={name},batch.kubernetes.io/job-completion-index=0 -o name) -- /goodput k8s cat /results/result-0.json > merged.json (within {keep:?} of the end)",
            ns = plan.namespace,
            name = plan.name,
            keep = plan.keep_alive,
        ),
    }
}

/// The comment lines above the manifests: what runs, where it coordinates,
/// how to apply it and where the results are (`fetch`).
pub fn header(plan: &Plan, args: &ManifestOptions, fetch: &str) -> String {
    format!(
        "# goodput k8s: {n} pods of `goodput {command}`, coordinated at {coordinator}.\n# Apply with kubectl apply -f FILE; the merged result is /results/result-0.json on shard 0.\n# Results: {fetch}\n",
        n = plan.shards,
        command = args.command[0],
        coordinator = coordinator(args),
    )
}

/// Shard 0's address: its pod's DNS name under the headless Service.
pub fn coordinator(args: &ManifestOptions) -> String {
    format!(
        "{name}-0.{name}.{ns}.svc.{domain}:{port}",
        name = args.name,
        ns = args.namespace,
        domain = args.cluster_domain,
        port = args.port
    )
}

/// The checked plan of the manifests; `parses` is goodput's parser, and
/// `note` hears what the user should know (in the order it is found).
pub fn plan(
    args: &ManifestOptions,
    parses: Parses,
    note: &mut dyn FnMut(String),
) -> Result<Plan, Error> {
    // clap requires both unless a helper is named (`subcommand_negates_reqs`).
    let (Some(shards), Some(image)) = (args.shards, args.image.clone()) else {
        return Err(usage("goodput k8s needs --shards and --image".into()));
    };
    let last_host = format!("{}-{}", args.name, shards - 1);
    if last_host.len() > 63 {
        return Err(usage(format!(
            "--name {} is too long for {shards} shards: the hostname of the last pod, {last_host}, would be over 63 characters",
            args.name
        )));
    }
    check_command(&args.command, args.results_claim.is_some(), parses, note)?;
    let drain = drain_of(&args.command)?;
    let grace = (drain + WRITE_MARGIN).as_secs_f64().ceil() as i64;
    let keep_alive = args.keep_alive.unwrap_or(if args.results_claim.is_some() {
        Duration::ZERO
    } else {
        DEFAULT_KEEP_ALIVE
    });
    let mut goodput: Vec<String> = args.command.clone();
    goodput.extend([
        "--shards".to_string(),
        shards.to_string(),
        "--coordinator".to_string(),
        coordinator(args),
        "--part".to_string(),
        PART.to_string(),
        "--out".to_string(),
        MERGED.to_string(),
    ]);
    let container_args = if keep_alive.is_zero() {
        goodput
    } else {
        let mut wrapped = vec![
            "k8s".to_string(),
            "pod".to_string(),
            "--keep-alive".to_string(),
            duration_flag(keep_alive),
            "--".to_string(),
        ];
        wrapped.extend(goodput);
        wrapped
    };
    Ok(Plan {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        shards,
        image,
        port: args.port,
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        results_claim: args.results_claim.clone(),
        secret_env: args.secret_env.clone(),
        grace_period_s: grace,
        keep_alive,
        args: container_args,
    })
}

/// A duration as a flag's value: whole seconds when it is, else milliseconds.
fn duration_flag(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Whether `token` is `flag` or `flag=VALUE`.
fn is_flag(token: &str, flag: &str) -> bool {
    token
        .strip_prefix(flag)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
}

/// The value of the last `flag VALUE` or `flag=VALUE` in `command`.
fn flag_value<'a>(command: &'a [String], flag: &str) -> Option<&'a str> {
    let mut value = None;
    for (i, token) in command.iter().enumerate() {
        if token == flag {
            value = command.get(i + 1).map(String::as_str);
        } else if let Some(v) = token.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            value = Some(v);
        }
    }
    value
}

/// The command after `--`: `run` or `sweep`, without the flags set here,
/// writing only under /results, and valid as goodput would parse it.
fn check_command(
    command: &[String],
    has_claim: bool,
    parses: Parses,
    note: &mut dyn FnMut(String),
) -> Result<(), Error> {
    let verb = command.first().map(String::as_str);
    if !matches!(verb, Some("run" | "sweep")) {
        return Err(usage(format!(
            "the command after -- must be run or sweep, e.g. -- run --url http://vllm.default.svc:8000 --request-rate 100 (got '{}')",
            command.join(" ")
        )));
    }
    for token in command {
        if let Some((flag, instead)) = SET_HERE.iter().find(|(f, _)| is_flag(token, f)) {
            return Err(usage(format!(
                "{flag} is set by goodput k8s, not after --: {instead}"
            )));
        }
    }
    for flag in OUTPUT_FILES {
        if let Some(path) = flag_value(command, flag) {
            if !path.starts_with(&format!("{RESULTS_DIR}/")) {
                return Err(usage(format!(
                    "{flag} {path}: a pod writes only under {RESULTS_DIR} (its root filesystem is read-only), e.g. {flag} {RESULTS_DIR}/{}",
                    path.rsplit('/').next().unwrap_or(path)
                )));
            }
        }
    }
    if flag_value(command, "--url").is_none() && flag_value(command, "--base-url").is_none() {
        note("no --url after --: every pod benchmarks a built-in simulator of its own".into());
    }
    check_parses(command, has_claim, parses, note)
}

/// The command parses as goodput's own `run` or `sweep` (a file it reads
/// at parse time may be missing here when it is on the results claim,
/// where only the pods see it).
fn check_parses(
    command: &[String],
    has_claim: bool,
    parses: Parses,
    note: &mut dyn FnMut(String),
) -> Result<(), Error> {
    match parses(command) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::Internal(
            "run or sweep parsed as another command".into(),
        )),
        Err(e) => match refused_path(&e) {
            Some(path) if has_claim && path.contains(&format!("{RESULTS_DIR}/")) => {
                note(format!(
                    "not checked here, the pods will: {}",
                    first_paragraph(&e)
                ));
                Ok(())
            }
            Some(_) => Err(usage(format!(
                "the command after --: {} (a pod reads files only from its image, and from {RESULTS_DIR} when it is a --results-claim)",
                first_paragraph(&e)
            ))),
            None => Err(usage(format!(
                "the command after --: {}",
                first_paragraph(&e)
            ))),
        },
    }
}

/// The value clap refused, when it names a file (a certificate, a
/// tokenizer, an `empirical:` length file, which goodput reads as it parses
/// the flag). Under /results on a claim, the file is where only the pods
/// see it: its absence here is no error.
fn refused_path(e: &clap::Error) -> Option<&str> {
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(v))
            if v.starts_with(['/', '.']) || v.starts_with("empirical:") =>
        {
            Some(v.as_str())
        }
        _ => None,
    }
}

/// clap's message without its `error:` prefix and its usage lines.
fn first_paragraph(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    text.split("\n\n").next().unwrap_or(text).trim().to_string()
}

/// How long the pods' goodput may drain on SIGTERM: `--drain-timeout`,
/// else `--timeout`, else `--timeout`'s default (600 s).
fn drain_of(command: &[String]) -> Result<Duration, Error> {
    let value = flag_value(command, "--drain-timeout")
        .or_else(|| flag_value(command, "--timeout"))
        .unwrap_or("600s");
    goodput_common::units::parse_duration(value)
        .map_err(|e| usage(format!("the command after --: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_are_matched_whole_with_or_without_equals() {
        assert!(is_flag("--shard", "--shard"));
        assert!(is_flag("--shard=1", "--shard"));
        assert!(!is_flag("--shards", "--shard"));
        assert!(!is_flag("--shard-timeout", "--shard"));
        let c = strings(&["run", "--timeout", "5s", "--timeout=7s", "--drain-timeout"]);
        assert_eq!(flag_value(&c, "--timeout"), Some("7s"));
        assert_eq!(flag_value(&c, "--drain-timeout"), None);
    }

    #[test]
    fn the_drain_comes_from_drain_timeout_then_timeout() {
        let d = |v: &[&str]| drain_of(&strings(v)).ok();
        assert_eq!(d(&["run"]), Some(Duration::from_secs(600)));
        assert_eq!(
            d(&["run", "--timeout", "2m"]),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            d(&["run", "--timeout=2m", "--drain-timeout", "45s"]),
            Some(Duration::from_secs(45))
        );
    }
}
