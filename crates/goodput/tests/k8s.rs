//! `goodput k8s`: the printed manifests read back into k8s-openapi's typed
//! `Service` and `Job`, and their wiring checked — the Indexed Job's pods
//! reach shard 0 under the headless Service's name, at the port the
//! Service exposes, with the results volume mounted — and a round trip
//! (YAML → typed → YAML equals the printed YAML) so that a misspelled
//! field, which typed deserialization would silently drop, fails. Then the
//! two helpers the pods use: `k8s pod` passes signals and exit codes on
//! and keeps the pod up, `k8s cat` prints files.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, PodSpec, Service};
use serde::Deserialize;
use serde_json::Value;

/// The printed YAML documents, each as an untyped value.
fn documents(yaml: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).expect("each document is YAML"))
        .collect()
}

/// The one document of this kind.
fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in {docs:#?}");
    found[0]
}

/// The document as the typed object, after checking that the typed object
/// says exactly what the document says: no field the type does not know
/// (a misspelling), none it would render differently.
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let object: T = serde_json::from_value(doc.clone()).expect("the typed object reads it");
    let back = serde_json::to_value(&object).unwrap();
    assert_eq!(&back, doc, "YAML -> typed -> YAML changed the document");
    object
}

/// `goodput k8s ARGS`: (Service, Job, the printed YAML); the command must succeed.
fn manifests(args: &[&str]) -> (Service, Job, String) {
    let mut argv = vec!["k8s"];
    argv.extend(args);
    let (code, stdout, stderr) = goodput(&argv);
    assert_eq!(code, 0, "goodput k8s failed: {stderr}");
    let docs = documents(&stdout);
    assert_eq!(docs.len(), 2, "a Service and a Job: {stdout}");
    let service = typed::<Service>(of_kind(&docs, "Service"));
    let job = typed::<Job>(of_kind(&docs, "Job"));
    (service, job, stdout)
}

fn pod_spec(job: &Job) -> &PodSpec {
    job.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
}

fn container(job: &Job) -> &Container {
    let containers = &pod_spec(job).containers;
    assert_eq!(containers.len(), 1);
    &containers[0]
}

/// The value after `flag` in `args`, which must hold it once.
fn value_of<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at: Vec<usize> = (0..args.len()).filter(|&i| args[i] == flag).collect();
    assert_eq!(at.len(), 1, "{flag} once in {args:?}");
    &args[at[0] + 1]
}

const RUN: [&str; 7] = [
    "run",
    "--url",
    "http://vllm.default.svc:8000",
    "--request-rate",
    "2000",
    "--duration",
    "60s",
];

#[test]
fn the_indexed_job_reaches_shard_0_through_the_headless_service() {
    let mut args = vec![
        "--shards",
        "4",
        "--image",
        "ghcr.io/o/goodput:1",
        "--name",
        "bench",
        "--namespace",
        "llm",
        "--port",
        "7171",
        "--",
    ];
    args.extend(RUN);
    let (service, job, _) = manifests(&args);

    let meta = (&service.metadata, &job.metadata);
    assert_eq!(meta.0.name.as_deref(), Some("bench"));
    assert_eq!(meta.1.name.as_deref(), Some("bench"));
    assert_eq!(meta.0.namespace.as_deref(), Some("llm"));
    assert_eq!(meta.1.namespace.as_deref(), Some("llm"));

    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(4));
    assert_eq!(spec.parallelism, Some(4));
    // No retry, and no pod ends the others by failing: the Job fails at
    // the end, with every pod's files and logs.
    assert_eq!(spec.backoff_limit_per_index, Some(0));
    assert_eq!(spec.max_failed_indexes, None);
    assert_eq!(spec.backoff_limit, None);
    let pod = pod_spec(&job);
    assert_eq!(
        pod.subdomain.as_deref(),
        Some("bench"),
        "the Service's name"
    );
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));

    let s = service.spec.as_ref().unwrap();
    assert_eq!(s.cluster_ip.as_deref(), Some("None"), "headless");
    assert_eq!(s.publish_not_ready_addresses, Some(true));
    let selector = s.selector.as_ref().expect("a selector");
    assert!(!selector.is_empty());
    let pod_labels = spec.template.metadata.as_ref().unwrap().labels.clone();
    let pod_labels: BTreeMap<String, String> = pod_labels.unwrap_or_default();
    for (k, v) in selector {
        assert_eq!(pod_labels.get(k), Some(v), "the selector's {k} on the pods");
    }

    let ports = s.ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    let c = container(&job);
    let args = c.args.as_ref().unwrap();
    assert_eq!(value_of(args, "--shards"), "4");
    let coordinator = value_of(args, "--coordinator");
    assert_eq!(coordinator, "bench-0.bench.llm.svc.cluster.local:7171");
    let port: i32 = coordinator.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(
        port, ports[0].port,
        "the coordinator dials the Service's port"
    );
    let container_ports = c.ports.as_ref().unwrap();
    assert_eq!(container_ports[0].container_port, port);
    assert!(
        args.iter().all(|a| a != "--shard"),
        "the Job gives the index"
    );
    let env = c.env.clone().unwrap_or_default();
    assert!(
        env.iter().all(|e| e.name != "JOB_COMPLETION_INDEX"),
        "the Job controller sets JOB_COMPLETION_INDEX; overriding it would give every pod one index"
    );
    // The user's command, then the flags that wire the shards, in order.
    let run_at = args.iter().position(|a| a == "run").unwrap();
    assert_eq!(&args[run_at..run_at + RUN.len()], &RUN.map(String::from));
    assert_eq!(value_of(args, "--part"), "/results/part-{shard}.jsonl");
    assert_eq!(value_of(args, "--out"), "/results/result-{shard}.json");
}

#[test]
fn pods_have_resources_a_results_volume_and_time_to_drain() {
    let mut args = vec![
        "--shards", "2", "--image", "img:1", "--cpu", "1500m", "--memory", "2Gi", "--",
    ];
    args.extend(RUN);
    args.extend(["--timeout", "2m"]);
    let (_, job, _) = manifests(&args);
    let c = container(&job);
    assert_eq!(c.image.as_deref(), Some("img:1"));
    let resources = c.resources.as_ref().unwrap();
    for side in [&resources.requests, &resources.limits] {
        let side = side.as_ref().expect("requests and limits");
        assert_eq!(side["cpu"].0, "1500m");
        assert_eq!(side["memory"].0, "2Gi");
    }
    let mounts = c.volume_mounts.as_ref().unwrap();
    let mount = mounts.iter().find(|m| m.mount_path == "/results").unwrap();
    let pod = pod_spec(&job);
    let volume = pod.volumes.as_ref().unwrap();
    let volume = volume.iter().find(|v| v.name == mount.name).unwrap();
    assert!(volume.empty_dir.is_some(), "an emptyDir without a claim");
    // The drain lasts up to --timeout (2 min) when no --drain-timeout is given.
    let grace = pod.termination_grace_period_seconds.unwrap();
    assert!((120..=300).contains(&grace), "grace {grace} s");
    // Without a claim the files live as long as the pod: it stays up.
    let args = c.args.as_ref().unwrap();
    assert_eq!(&args[..2], ["k8s", "pod"]);
    assert_eq!(value_of(args, "--keep-alive"), "600s");
    assert_eq!(args[4], "--");
    assert_eq!(args[5], "run");
}

#[test]
fn a_results_claim_is_mounted_and_needs_no_wait() {
    let mut args = vec![
        "--shards",
        "3",
        "--image",
        "img:1",
        "--results-claim",
        "bench-results",
        "--secret-env",
        "OPENAI_API_KEY=llm-api:key",
        "--",
    ];
    args.extend(RUN);
    args.extend(["--records", "/results/records.jsonl"]);
    let (_, job, _) = manifests(&args);
    let pod = pod_spec(&job);
    let volume = &pod.volumes.as_ref().unwrap()[0];
    let claim = volume.persistent_volume_claim.as_ref().expect("the claim");
    assert_eq!(claim.claim_name, "bench-results");
    let c = container(&job);
    let args = c.args.as_ref().unwrap();
    assert_eq!(args[0], "run", "goodput runs directly: {args:?}");
    let env = c.env.as_ref().unwrap();
    let key = env[0].value_from.as_ref().unwrap().secret_key_ref.as_ref();
    assert_eq!(env[0].name, "OPENAI_API_KEY");
    assert_eq!(
        key.map(|k| (k.name.as_str(), k.key.as_str())),
        Some(("llm-api", "key"))
    );
    assert!(env[0].value.is_none(), "no key in the manifests");
}

#[test]
fn the_round_trip_catches_a_field_the_types_do_not_know() {
    let mut args = vec!["--shards", "2", "--image", "img:1", "--"];
    args.extend(RUN);
    let (_, _, yaml) = manifests(&args);
    assert!(yaml.contains("subdomain: goodput"));
    let misspelled = yaml.replace("subdomain: goodput", "subDomain: goodput");
    let docs = documents(&misspelled);
    let job = of_kind(&docs, "Job").clone();
    let caught = std::panic::catch_unwind(|| typed::<Job>(&job));
    assert!(caught.is_err(), "a misspelled field passed the round trip");
}

#[test]
fn flags_goodput_k8s_sets_are_refused_after_the_double_dash() {
    for (flag, extra) in [
        ("--shards", vec!["--shards", "2"]),
        ("--shards", vec!["--shards=2"]),
        ("--shard", vec!["--shard", "1"]),
        ("--coordinator", vec!["--coordinator", "h:1"]),
        ("--out", vec!["--out", "/results/x.json"]),
    ] {
        let mut args = vec!["k8s", "--shards", "4", "--image", "img:1", "--"];
        args.extend(RUN);
        args.extend(&extra);
        let (code, stdout, stderr) = goodput(&args);
        assert_eq!(code, 2, "{extra:?}: {stderr}");
        assert!(stdout.is_empty(), "nothing printed: {stdout}");
        assert!(
            stderr.contains(&format!("{flag} is set by goodput k8s")),
            "{extra:?}: {stderr}"
        );
    }
}

#[test]
fn a_command_goodput_would_refuse_is_refused_before_anything_is_printed() {
    let cases: [(&[&str], &str); 4] = [
        (&["run", "--reqest-rate", "3"], "--reqest-rate"),
        (&["sim"], "must be run or sweep"),
        (
            &["run", "--records", "records.jsonl"],
            "only under /results",
        ),
        (&["run", "--request-rate", "fast"], "--request-rate"),
    ];
    for (command, says) in cases {
        let mut args = vec!["k8s", "--shards", "2", "--image", "img:1", "--"];
        args.extend(command);
        let (code, stdout, stderr) = goodput(&args);
        assert_eq!(code, 2, "{command:?}: {stderr}");
        assert!(stdout.is_empty(), "{command:?}: {stdout}");
        assert!(stderr.contains(says), "{command:?}: {stderr}");
    }
    let (code, _, stderr) = goodput(&[
        "k8s", "--shards", "2", "--image", "img:1", "--cpu", "2GB", "--", "run",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("invalid quantity"), "{stderr}");
}

#[test]
fn out_writes_the_manifests_to_a_file() {
    let path = tmp("manifests.yaml");
    let p = path.to_str().unwrap();
    let mut args = vec!["k8s", "--shards", "2", "--image", "img:1", "--out", p, "--"];
    args.extend(RUN);
    let (code, stdout, stderr) = goodput(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty());
    let docs = documents(&std::fs::read_to_string(&path).unwrap());
    typed::<Job>(of_kind(&docs, "Job"));
}

#[test]
fn cat_prints_the_files_and_refuses_a_missing_one() {
    let a = tmp("a.json");
    let b = a.with_file_name("b.jsonl");
    std::fs::write(&a, "{\"a\":1}\n").unwrap();
    std::fs::write(&b, "{\"b\":2}\n").unwrap();
    let (code, stdout, _) = goodput(&["k8s", "cat", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, "{\"a\":1}\n{\"b\":2}\n"));
    let missing = a.with_file_name("missing.json");
    let (code, _, stderr) = goodput(&["k8s", "cat", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("missing.json"), "{stderr}");
}

#[test]
fn pod_passes_the_commands_exit_code_on() {
    let (code, _, stderr) = goodput(&["k8s", "pod", "--", "run", "--bogus-flag"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--bogus-flag"),
        "goodput's own message: {stderr}"
    );
}

/// Start `goodput k8s pod --keep-alive 10m -- run ...` against the built-in
/// simulator; returns the child once `out` exists (goodput creates it as it
/// starts).
fn spawn_pod(out: &std::path::Path, run: &[&str]) -> std::process::Child {
    let mut cmd = goodput_command();
    cmd.args([
        "k8s",
        "pod",
        "--keep-alive",
        "10m",
        "--",
        "run",
        "--quiet",
        "--warmup",
        "0",
    ])
    .args(run)
    .args(["--out", out.to_str().unwrap()])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn goodput");
    let start = Instant::now();
    while !out.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "goodput never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Wait for the child, at most `limit`: (exit code, stderr).
fn wait_at_most(mut child: std::process::Child, limit: Duration) -> (i32, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return (status.code().unwrap_or(-1), stderr);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sigterm(child: &std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

#[test]
fn pod_passes_sigterm_on_and_then_does_not_wait() {
    // A 10-minute run stopped by SIGTERM a moment after it started: goodput
    // stops sending, drains, writes its results, and the pod ends at once
    // instead of staying up its 10-minute keep-alive.
    let out = tmp("stopped.json");
    let child = spawn_pod(&out, &["--request-rate", "5", "--duration", "10m"]);
    std::thread::sleep(Duration::from_secs(2));
    sigterm(&child);
    let (code, stderr) = wait_at_most(child, Duration::from_secs(120));
    // 0 once measuring had begun; 130 if the signal came before (a slow
    // start): either way goodput's own code, passed on.
    assert!(code == 0 || code == 130, "{code}: {stderr}");
    assert!(
        stderr.contains("goodput: stopping"),
        "goodput saw the signal: {stderr}"
    );
    assert!(!stderr.contains("staying up"), "{stderr}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(results.is_object(), "the results were written: {results:#}");
}

#[test]
fn pod_stays_up_after_the_command_until_sigterm() {
    let out = tmp("kept.json");
    let mut child = spawn_pod(&out, &["--num-prompts", "4", "--request-rate", "20"]);
    // The run takes seconds; the keep-alive, ten minutes.
    let start = Instant::now();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("staying up") {
        use std::io::Read;
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "ended without staying up: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        assert!(start.elapsed() < Duration::from_secs(120), "{seen}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "the pod stays up");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        results["completed"], 4,
        "the files are complete while it waits"
    );
    sigterm(&child);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "SIGTERM ends the wait"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        status.code(),
        Some(0),
        "the command's code, not the signal's"
    );
}

/// The pod's goodput command line is one goodput takes: run as shard 1 of
/// the manifests (its index from `JOB_COMPLETION_INDEX`, as the Job gives
/// it) against a local simulator, it parses, prepares its target and dials
/// the coordinator's name, which does not resolve here: exit 6, naming the
/// coordinator, not a usage error.
#[test]
fn the_pods_command_line_is_one_goodput_runs_as_a_shard() {
    let sim = goodput_sim::SimServer::spawn(
        goodput_sim::SimConfig::default(),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .unwrap();
    let mut args = vec![
        "--shards",
        "4",
        "--image",
        "i:1",
        "--keep-alive",
        "0s",
        "--",
    ];
    args.extend(RUN);
    let (_, job, _) = manifests(&args);
    let mut argv: Vec<String> = container(&job).args.clone().unwrap();
    let run_at = argv.iter().position(|a| a == "run").unwrap();
    argv.drain(..run_at);
    let url = argv.iter().position(|a| a == "--url").unwrap() + 1;
    argv[url] = format!("http://{}", sim.local_addr());
    let dir = std::env::temp_dir().join(format!("goodput-k8s-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for a in argv.iter_mut() {
        *a = a.replace("/results", dir.to_str().unwrap());
    }
    argv.extend([
        "--coordinator-timeout".into(),
        "1s".into(),
        "--quiet".into(),
    ]);
    let out = goodput_command()
        .args(&argv)
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{argv:?}\n{stderr}");
    assert!(
        stderr.contains("goodput-0.goodput.default.svc.cluster.local:7070"),
        "{stderr}"
    );
}
