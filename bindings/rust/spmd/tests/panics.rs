//! A panic in a shard_map closure reaches the shard_map's error, once, and
//! the panic hook prints nothing on the device threads (no message and
//! backtrace per device); a panic elsewhere still reaches the hook. What a
//! process prints is seen from outside: the test runs this binary again,
//! as a child that does the panicking, and reads its output.
use std::process::Command;

use spmd::{Array, DType, Mesh, Runtime, Sharding, Status};

const CHILD: &str = "SPMD_RUST_PANICS_CHILD";

#[test]
fn closure_panics_are_reported_once_and_not_printed() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the child failed:\n{stdout}\n{stderr}");
    // The error, printed by the child, names the panic once, and where.
    assert_eq!(stdout.matches("every device gives up").count(), 1, "{stdout}");
    assert!(stdout.contains("shard_map closure panicked at ") && stdout.contains("panics.rs:"), "{stdout}");
    // Nothing from the device threads on stderr: no message, no backtrace.
    // The panic outside a closure went to the hook as usual, with its one
    // backtrace.
    assert!(!stderr.contains("every device gives up"), "{stderr}");
    assert_eq!(stderr.matches("a panic outside shard_map").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("stack backtrace").count(), 1, "{stderr}");
}

/// The child's part (a no-op unless run by the test above).
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let rt = Runtime::builder().cpu_devices(8).worker_threads(1).build().unwrap();
    let mesh = Mesh::new(&rt, &[8], &["x"]).unwrap();
    let x = Array::arange(&Sharding::named_text(&mesh, "x").unwrap(), DType::F32, &[8], 0.0, 1.0).unwrap();
    for _ in 0..2 {
        let e = mesh.shard_map(&[&x], &["x"], &["x"], |_| panic!("every device gives up")).unwrap_err();
        assert_eq!(e.status, Status::Callback);
        assert!(e.message.contains("every device gives up"), "{e}");
    }
    let e = mesh.shard_map(&[&x], &["x"], &["x"], |_| panic!("every device gives up")).unwrap_err();
    println!("error: {e}");
    assert!(std::panic::catch_unwind(|| panic!("a panic outside shard_map")).is_err());
}
