//! goodput-k8s: the Kubernetes manifests of a run sharded over N pods.
//!
//! `goodput k8s --shards N --image IMAGE -- run|sweep ARGS` prints a
//! headless Service and an Indexed Job whose pods run the command as the
//! shards of one run, coordinated by shard 0 and merged into one result.
//! This crate holds what that takes besides the command line itself:
//!
//! - the grammar of every value a manifest takes ([`dns_label`],
//!   [`dns_subdomain`], [`quantity`], [`image`], [`secret_env`]), which the
//!   binary's flags parse with;
//! - the checked [`plan`] of a run: the command after `--` checked as goodput
//!   would parse it (the binary's parser is passed in), the flags that wire
//!   the shards together appended, the grace period and keep-alive chosen;
//! - the typed objects of that plan (`k8s-openapi`, Kubernetes 1.33's API)
//!   rendered as one YAML stream ([`render`]).
//!
//! - what runs inside a pod besides goodput's own commands, where the image
//!   has no shell: [`supervise`] (`goodput k8s pod`: the command as a child,
//!   signals passed on, the pod kept up for its files) and [`cat`].

#![deny(missing_docs)]

mod manifests;
mod names;
mod plan;
mod pod;

pub use manifests::{render, Plan, RESULTS_DIR};
pub use names::{dns_label, dns_subdomain, image, quantity, secret_env, SecretEnv};
pub use plan::{coordinator, header, plan, results_fetch, Error, ManifestOptions, Parses};
pub use pod::{cat, describe, supervise};
