//! Drives `bench measure-child`, the helper every client is started through:
//! it must report the child's own exit code, CPU and peak RSS as JSON, and
//! its own memory (the floor added to every peak RSS) must stay small.

use std::process::Command;

#[test]
fn reports_the_cost_of_its_child_as_json() {
    let dir = std::env::temp_dir().join(format!("goodput-bench-mc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (out, err) = (dir.join("child.out"), dir.join("child.err"));
    let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo counted; exit 3";
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["measure-child", "--time-limit-ms", "60000", "--stdout"])
        .arg(&out)
        .arg("--stderr")
        .arg(&err)
        .args(["--", "sh", "-c", script])
        .output()
        .expect("bench measure-child runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let usage: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(
        usage["exit_code"], 3,
        "the child's exit code, not the helper's"
    );
    assert_eq!(usage["timed_out"], false);
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "counted");
    let cpu = usage["user_ns"].as_u64().unwrap() + usage["sys_ns"].as_u64().unwrap();
    assert!(cpu > 0);
    let floor = usage["floor_rss_kib"].as_u64().unwrap();
    let peak = usage["max_rss_kib"].as_u64().unwrap();
    assert!(floor > 0 && floor < 32 * 1024, "helper floor {floor} KiB");
    // The floor is the helper's own peak, an upper bound on what exec can
    // carry over; a small child (sh) may peak below it in a debug build.
    assert!(peak > 0, "peak {peak} KiB");
    std::fs::remove_dir_all(&dir).unwrap();
}
