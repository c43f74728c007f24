//! The flags of `goodput k8s`: the Kubernetes manifests of a sharded run
//! (the default form), and the two helpers the pods of that run use
//! (`goodput k8s pod`, `goodput k8s cat`).
//!
//! Every value is checked as it is parsed, before anything is printed, by
//! goodput-k8s' grammar of the value (names, quantities, secret
//! references): a manifest goodput prints is one `kubectl apply` accepts,
//! or goodput exits 2 and says why.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use goodput_k8s::{dns_label, dns_subdomain, image, quantity, secret_env, SecretEnv};

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
