//! The flags of `goodput k8s`: the Kubernetes manifests of a sharded run
//! (the default form), and the two helpers the pods of that run use
//! (`goodput k8s pod`, `goodput k8s cat`), with the grammar of every value
//! a manifest takes (names, quantities, secret references).
//!
//! Every value is checked here, before anything is printed, against the
//! rule the API server would apply: a manifest goodput prints is one
//! `kubectl apply` accepts, or goodput exits 2 and says why.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::parse::duration;

/// `goodput k8s`.
#[derive(Args, Debug, Clone)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Example: goodput k8s --shards 4 --image ghcr.io/OWNER/goodput:TAG -- run --url http://vllm.default.svc:8000 --request-rate 2000 --duration 60s | kubectl apply -f -\nEach pod runs the command after -- with --shards N --coordinator NAME-0.NAME.NAMESPACE.svc.CLUSTER_DOMAIN:PORT --part /results/part-{shard}.jsonl --out /results/result-{shard}.json appended; the Job sets JOB_COMPLETION_INDEX, which goodput reads as --shard."
)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub helper: Option<K8sHelper>,
    #[command(flatten)]
    pub manifests: ManifestArgs,
}

/// The commands a pod of the run uses; `goodput k8s` itself prints the manifests.
#[derive(Subcommand, Debug, Clone)]
pub enum K8sHelper {
    /// Inside a pod: run the goodput command after --, pass SIGTERM and SIGINT on to it, then
    /// stay up --keep-alive so the files it wrote can be fetched; exit with its code.
    Pod(PodArgs),
    /// Inside a pod: print files to stdout (the image has no shell and no cat):
    /// kubectl exec POD -- /goodput k8s cat /results/result-0.json > merged.json
    Cat(CatArgs),
}

/// `goodput k8s --shards N --image IMAGE ... -- run|sweep ARGS...`.
#[derive(Args, Debug, Clone)]
pub struct ManifestArgs {
    /// Pods (shards) of the run; each sends its share of the load. At most 100000, the
    /// Kubernetes limit of an Indexed Job.
    #[arg(long, value_name = "N", required = true, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub shards: Option<u32>,
    /// Container image holding goodput as its entrypoint (the repository's Dockerfile), e.g.
    /// ghcr.io/OWNER/goodput:TAG.
    #[arg(long, value_name = "IMAGE", required = true, value_parser = image)]
    pub image: Option<String>,
    /// Name of the Job and of its headless Service; pod I is reachable as NAME-I.NAME.
    #[arg(long, value_name = "NAME", default_value = "goodput", value_parser = dns_label)]
    pub name: String,
    /// Namespace of the Job and the Service. Written into both, and into the coordinator's
    /// address: `kubectl apply -n OTHER` refuses them rather than break the address.
    #[arg(long, value_name = "NS", default_value = "default", value_parser = dns_label)]
    pub namespace: String,
    /// TCP port shard 0 coordinates on (the Service's port and the container's).
    #[arg(long, value_name = "PORT", default_value_t = 7070, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// CPU of each pod, requested and limited alike (Kubernetes quantity: 2, 500m, 1.5).
    #[arg(long, value_name = "QUANTITY", default_value = "2", value_parser = quantity)]
    pub cpu: String,
    /// Memory of each pod, requested and limited alike (Kubernetes quantity: 1Gi, 512Mi).
    #[arg(long, value_name = "QUANTITY", default_value = "1Gi", value_parser = quantity)]
    pub memory: String,
    /// Mount this PersistentVolumeClaim at /results instead of an emptyDir (it must be
    /// ReadWriteMany when the pods may land on several nodes). The results outlive the pods.
    #[arg(long, value_name = "CLAIM", value_parser = dns_subdomain)]
    pub results_claim: Option<String>,
    /// How long each pod stays up after its goodput finished, so that `kubectl exec POD --
    /// /goodput k8s cat FILE` can fetch its files; 0 ends the pod at once [default: 10m, or 0
    /// with --results-claim]. A SIGTERM (kubectl delete) ends the wait.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub keep_alive: Option<Duration>,
    /// Environment variable of every pod taken from a Secret's key, VAR=SECRET:KEY
    /// (repeatable), e.g. OPENAI_API_KEY=llm-api:key, so no key is written in the manifests.
    #[arg(long, value_name = "VAR=SECRET:KEY", value_parser = secret_env)]
    pub secret_env: Vec<SecretEnv>,
    /// DNS domain of the cluster, the tail of the coordinator's address.
    #[arg(long, value_name = "DOMAIN", default_value = "cluster.local", value_parser = dns_subdomain)]
    pub cluster_domain: String,
    /// Write the manifests to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The goodput command every pod runs: run or sweep, and its flags, after `--`.
    #[arg(last = true, required = true, value_name = "run|sweep ARGS")]
    pub command: Vec<String>,
}

/// `goodput k8s pod [--keep-alive D] -- run|sweep ARGS...`.
#[derive(Args, Debug, Clone)]
pub struct PodArgs {
    /// Stay up this long after the command ended (a SIGTERM ends the wait).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration)]
    pub keep_alive: Duration,
    /// The goodput command to run, after `--`.
    #[arg(last = true, required = true, value_name = "ARGS")]
    pub command: Vec<String>,
}

/// `goodput k8s cat FILE...`.
#[derive(Args, Debug, Clone)]
pub struct CatArgs {
    /// Files to print, in order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `--secret-env VAR=SECRET:KEY`: an environment variable read from a Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretEnv {
    pub var: String,
    pub secret: String,
    pub key: String,
}

/// `--image`: any reference without whitespace (the registry is the judge of the rest).
fn image(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().any(char::is_whitespace) {
        return Err(format!(
            "invalid image '{s}': expected a reference such as ghcr.io/OWNER/goodput:TAG"
        ));
    }
    Ok(s.to_string())
}

/// A DNS-1035 label (`--name`, `--namespace`): what a Service name must be.
/// Lower-case letters, digits and '-', starting with a letter, ending with a
/// letter or digit, at most 63 characters.
pub(crate) fn dns_label(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("invalid name '{s}': expected at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit"))
    }
}

/// A DNS-1123 subdomain (`--results-claim`, `--cluster-domain`, a Secret's
/// name): dot-separated labels of lower-case letters, digits and '-', each
/// starting and ending with a letter or digit, at most 253 characters.
fn dns_subdomain(s: &str) -> Result<String, String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !s.is_empty() && s.len() <= 253 && s.split('.').all(label_ok) {
        Ok(s.to_string())
    } else {
        Err(format!("invalid name '{s}': expected lower-case letters, digits, '-' and '.', each dot-separated part starting and ending with a letter or digit"))
    }
}

/// A Kubernetes quantity (`--cpu`, `--memory`): a decimal number, then a
/// binary suffix (Ki Mi Gi Ti Pi Ei), a decimal one (m k M G T P E), an
/// exponent (e3, E-2) or nothing. The number must be above zero.
fn quantity(s: &str) -> Result<String, String> {
    let bad = || {
        format!("invalid quantity '{s}': expected a number above 0 with an optional suffix, e.g. 2, 500m, 1.5, 1Gi, 512Mi")
    };
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let digits_ok = number.chars().filter(|&c| c == '.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    let suffix_ok = match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            true
        }
        e => e
            .strip_prefix(['e', 'E'])
            .map(|x| x.strip_prefix(['+', '-']).unwrap_or(x))
            .is_some_and(|x| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit())),
    };
    let positive = number.parse::<f64>().is_ok_and(|v| v > 0.0);
    if digits_ok && suffix_ok && positive {
        Ok(s.to_string())
    } else {
        Err(bad())
    }
}

/// `--secret-env VAR=SECRET:KEY`.
fn secret_env(s: &str) -> Result<SecretEnv, String> {
    let bad = |why: &str| {
        format!("invalid --secret-env '{s}': {why}; expected VAR=SECRET:KEY, e.g. OPENAI_API_KEY=llm-api:key")
    };
    let (var, reference) = s.split_once('=').ok_or_else(|| bad("no '='"))?;
    let (secret, key) = reference.split_once(':').ok_or_else(|| bad("no ':'"))?;
    let var_ok = var.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !var_ok {
        return Err(bad("the variable's name is letters, digits and '_'"));
    }
    dns_subdomain(secret).map_err(|_| bad("the Secret's name is not a valid name"))?;
    let key_ok = !key.is_empty()
        && key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !key_ok {
        return Err(bad("a Secret's key is letters, digits, '-', '_' and '.'"));
    }
    Ok(SecretEnv {
        var: var.to_string(),
        secret: secret.to_string(),
        key: key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_the_api_servers_grammar() {
        for ok in [
            "2", "500m", "1.5", "1Gi", "512Mi", "1e3", "2E-1", "0.5", ".5", "4k",
        ] {
            assert_eq!(quantity(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "", "0", "-1", "1GB", "1.2.3", "Gi", "1 Gi", "1e", "two", "1gi",
        ] {
            assert!(quantity(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn names_are_dns_labels() {
        assert!(dns_label("goodput-run-2").is_ok());
        for bad in ["", "Goodput", "2run", "run-", "a_b", "a.b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad} accepted");
        }
        assert!(dns_subdomain("cluster.local").is_ok());
        assert!(dns_subdomain("results-1").is_ok());
        for bad in ["", "a..b", "-a.b", "A.b", "a_b"] {
            assert!(dns_subdomain(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn secret_env_names_a_variable_a_secret_and_a_key() {
        assert_eq!(
            secret_env("OPENAI_API_KEY=llm-api:key"),
            Ok(SecretEnv {
                var: "OPENAI_API_KEY".into(),
                secret: "llm-api".into(),
                key: "key".into()
            })
        );
        for bad in [
            "OPENAI_API_KEY",
            "K=secret",
            "1K=s:k",
            "K=Bad:k",
            "K=s:",
            "K=s:a/b",
        ] {
            let e = secret_env(bad).unwrap_err();
            assert!(e.contains("VAR=SECRET:KEY"), "{bad}: {e}");
        }
    }
}
