//! The Kubernetes objects of a sharded run, built as typed objects
//! (`k8s-openapi`, Kubernetes 1.33's API: nothing newer is used, so the
//! manifests apply to any cluster from 1.33 on) and rendered as one
//! multi-document YAML stream.
//!
//! The wiring they guarantee, which `tests/k8s.rs` checks on the printed
//! YAML:
//!
//! - A headless Service NAME (`clusterIP: None`) selects the Job's pods by
//!   the labels of the pod template and publishes them before they are
//!   ready, so shard I can resolve shard 0 as soon as shard 0's pod has an
//!   address.
//! - An Indexed Job NAME runs N pods at once (`completions = parallelism =
//!   N`); pod I gets the hostname NAME-I, and with `subdomain: NAME` the
//!   DNS name NAME-I.NAME.NS.svc.DOMAIN, which is the coordinator address
//!   every pod is given. The Job controller sets `JOB_COMPLETION_INDEX` in
//!   each pod; goodput reads it as `--shard`, so nothing here sets it.
//! - `backoffLimitPerIndex: 0`: no pod is retried, a failed pod does not
//!   end the others, and the Job ends `Failed` (reason `FailedIndexes`)
//!   once every pod has ended, if any failed. A replacement pod could not
//!   rejoin: the coordinator registers the shards and starts them once,
//!   and a shard started late would send a different load than the one
//!   asked for. A plain `backoffLimit: 0` would have the Job controller
//!   kill every other pod at the first failure, shard 0's results and the
//!   other pods' logs with them.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec, PodTemplateSpec,
    ResourceRequirements, SeccompProfile, SecretKeySelector, SecurityContext, Service, ServicePort,
    ServiceSpec, TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::names::SecretEnv;

/// Where the results volume is mounted in every pod.
pub const RESULTS_DIR: &str = "/results";

/// The user and group the pods run as: the image's `USER` (65532, the
/// "nonroot" user of distroless images), and the group that owns the
/// results volume (`fsGroup`), so goodput can write to a claim.
const RUN_AS: i64 = 65532;

/// Name of the coordinator's port, on the Service and the container.
const PORT_NAME: &str = "coordinator";

/// Everything the manifests are built from, checked by the caller.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The Job's and the headless Service's name.
    pub name: String,
    /// Their namespace.
    pub namespace: String,
    /// Pods of the Indexed Job, run at once.
    pub shards: u32,
    /// The container image; its entrypoint is goodput.
    pub image: String,
    /// The coordinator's port, on the Service and the container.
    pub port: u16,
    /// CPU of each pod, requested and limited alike.
    pub cpu: String,
    /// Memory of each pod, requested and limited alike.
    pub memory: String,
    /// A PersistentVolumeClaim for /results; an emptyDir without one.
    pub results_claim: Option<String>,
    /// Variables of every pod taken from Secrets' keys.
    pub secret_env: Vec<SecretEnv>,
    /// `terminationGracePeriodSeconds`: the drain, and time to write the results.
    pub grace_period_s: i64,
    /// How long each pod stays up after goodput ended (0: goodput is the
    /// container's process; else `goodput k8s pod` wraps it).
    pub keep_alive: std::time::Duration,
    /// The container's arguments (the image's entrypoint is goodput).
    pub args: Vec<String>,
}

/// The labels of the pod template, which the Service selects on (the
/// Kubernetes recommended labels: the application and this run of it).
fn labels(plan: &Plan) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "goodput".to_string()),
        ("app.kubernetes.io/instance".to_string(), plan.name.clone()),
    ])
}

fn metadata(plan: &Plan) -> ObjectMeta {
    ObjectMeta {
        name: Some(plan.name.clone()),
        namespace: Some(plan.namespace.clone()),
        labels: Some(labels(plan)),
        ..ObjectMeta::default()
    }
}

/// The headless Service that gives each pod its DNS name.
fn service(plan: &Plan) -> Service {
    Service {
        metadata: metadata(plan),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            selector: Some(labels(plan)),
            // Shard I dials shard 0 while shard 0 may not be ready yet (a
            // pod without a readiness probe is ready once its container
            // started, which is later than its address is known).
            publish_not_ready_addresses: Some(true),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_string()),
                port: i32::from(plan.port),
                target_port: Some(IntOrString::Int(i32::from(plan.port))),
                protocol: Some("TCP".to_string()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The Indexed Job: N pods of goodput, all at once, none retried.
fn job(plan: &Plan) -> Job {
    let n = i32::try_from(plan.shards).unwrap_or(i32::MAX);
    Job {
        metadata: metadata(plan),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".to_string()),
            completions: Some(n),
            parallelism: Some(n),
            backoff_limit_per_index: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(plan)),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec(plan)),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

fn pod_spec(plan: &Plan) -> PodSpec {
    let volume = match &plan.results_claim {
        Some(claim) => Volume {
            name: "results".to_string(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                ..PersistentVolumeClaimVolumeSource::default()
            }),
            ..Volume::default()
        },
        None => Volume {
            name: "results".to_string(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    };
    PodSpec {
        subdomain: Some(plan.name.clone()),
        restart_policy: Some("Never".to_string()),
        termination_grace_period_seconds: Some(plan.grace_period_s),
        // goodput never talks to the API server.
        automount_service_account_token: Some(false),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(RUN_AS),
            run_as_group: Some(RUN_AS),
            fs_group: Some(RUN_AS),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_string(),
                ..SeccompProfile::default()
            }),
            ..PodSecurityContext::default()
        }),
        // One shard per node where the cluster has room: a load generator
        // shares nothing with another shard but the network. Preferred,
        // never required, so a small cluster still runs the Job.
        topology_spread_constraints: Some(vec![TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "kubernetes.io/hostname".to_string(),
            when_unsatisfiable: "ScheduleAnyway".to_string(),
            label_selector: Some(LabelSelector {
                match_labels: Some(labels(plan)),
                ..LabelSelector::default()
            }),
            ..TopologySpreadConstraint::default()
        }]),
        containers: vec![container(plan)],
        volumes: Some(vec![volume]),
        ..PodSpec::default()
    }
}

fn container(plan: &Plan) -> Container {
    // Requests equal to limits: the pod's QoS class is Guaranteed, the last
    // to be evicted, and with whole CPUs and the static CPU manager it gets
    // cores of its own. A shard that needs more CPU than it has is
    // throttled, and its schedule lag says so.
    let resources = BTreeMap::from([
        ("cpu".to_string(), Quantity(plan.cpu.clone())),
        ("memory".to_string(), Quantity(plan.memory.clone())),
    ]);
    let env: Vec<EnvVar> = plan
        .secret_env
        .iter()
        .map(|s| EnvVar {
            name: s.var.clone(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: s.secret.clone(),
                    key: s.key.clone(),
                    ..SecretKeySelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        })
        .collect();
    Container {
        name: "goodput".to_string(),
        image: Some(plan.image.clone()),
        args: Some(plan.args.clone()),
        env: (!env.is_empty()).then_some(env),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.to_string()),
            container_port: i32::from(plan.port),
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        resources: Some(ResourceRequirements {
            requests: Some(resources.clone()),
            limits: Some(resources),
            ..ResourceRequirements::default()
        }),
        // The results volume is the only place goodput writes.
        volume_mounts: Some(vec![VolumeMount {
            name: "results".to_string(),
            mount_path: RESULTS_DIR.to_string(),
            ..VolumeMount::default()
        }]),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_string()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

/// The Service then the Job, as one YAML stream (the Service first, so the
/// pods' DNS names exist when they start), below `header` (comment lines).
pub fn render(plan: &Plan, header: &str) -> Result<String, serde_norway::Error> {
    let mut out = String::from(header);
    out.push_str("---\n");
    out.push_str(&serde_norway::to_string(&service(plan))?);
    out.push_str("---\n");
    out.push_str(&serde_norway::to_string(&job(plan))?);
    Ok(out)
}
