//! `goodput k8s`: print the Kubernetes manifests of a run sharded over N
//! pods (goodput-k8s builds and checks them), and the helpers those pods
//! use (`pod`).

mod pod;

use anyhow::Context;
use clap::Parser;
use goodput_k8s::ManifestOptions;

use crate::cli::{Cli, Command, K8sArgs, K8sHelper, ManifestArgs};
use crate::exit::{internal, usage, Code, Exit};

pub fn main(args: K8sArgs) -> Result<Code, Exit> {
    match args.helper {
        Some(K8sHelper::Pod(pod)) => pod::main(pod),
        Some(K8sHelper::Cat(cat)) => pod::cat(cat),
        None => print_manifests(args.manifests),
    }
}

/// The flags as goodput-k8s takes them.
fn options(args: ManifestArgs) -> ManifestOptions {
    ManifestOptions {
        shards: args.shards,
        image: args.image,
        name: args.name,
        namespace: args.namespace,
        port: args.port,
        cpu: args.cpu,
        memory: args.memory,
        results_claim: args.results_claim,
        keep_alive: args.keep_alive,
        secret_env: args.secret_env,
        cluster_domain: args.cluster_domain,
        command: args.command,
    }
}

/// The command after `--` as goodput's own parser reads it: `run` or
/// `sweep`, another command, or refused.
fn parses(command: &[String]) -> Result<bool, clap::Error> {
    let argv = std::iter::once("goodput").chain(command.iter().map(String::as_str));
    Cli::try_parse_from(argv).map(|cli| matches!(cli.command, Command::Run(_) | Command::Sweep(_)))
}

fn print_manifests(args: ManifestArgs) -> Result<Code, Exit> {
    let out = args.out.clone();
    let options = options(args);
    let mut note = |n: String| eprintln!("goodput k8s: note: {n}");
    let plan = goodput_k8s::plan(&options, &parses, &mut note)?;
    let fetch = goodput_k8s::results_fetch(&plan);
    let header = goodput_k8s::header(&plan, &options, &fetch);
    let yaml = goodput_k8s::render(&plan, &header)
        .context("rendering the manifests")
        .map_err(internal)?;
    match &out {
        Some(path) => std::fs::write(path, yaml)
            .with_context(|| format!("writing {}", path.display()))
            .map_err(usage)?,
        None => print!("{yaml}"),
    }
    eprintln!("goodput k8s: results: {fetch}");
    Ok(Code::Ok)
}
