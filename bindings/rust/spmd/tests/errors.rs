//! Bad input surfaces as spmd::Error with the library's message and status,
//! without a crash or a leaked handle.
//! One test at a time, each checked for leaks (common/mod.rs).
mod common;

use common::{no_leak, serial};

use spmd::{sys, Array, DType, Mesh, Runtime, Sharding, Spec, Status};

fn runtime() -> Runtime {
    Runtime::builder().cpu_devices(4).worker_threads(1).build().unwrap()
}

/// A mesh of 4 devices along "x", an arange(8) split along it and P('x')
/// (the mesh keeps its runtime alive).
fn split_along_x() -> (Mesh, Array, Spec) {
    let mesh = Mesh::new(&runtime(), &[4], &["x"]).unwrap();
    let x = Array::arange(&Sharding::named_text(&mesh, "x").unwrap(), DType::F32, &[8], 0.0, 1.0).unwrap();
    (mesh, x, Spec::parse("x").unwrap())
}

#[test]
fn a_bad_spec_is_refused_with_its_column() {
    let _g = serial();
    no_leak(|| {
        let e = Spec::parse("x,,y").unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("column 3"), "{e}");
        let rt = runtime();
        let mesh = Mesh::new(&rt, &[2, 2], &["data", "model"]).unwrap();
        let e = Sharding::named_text(&mesh, "data, modle").unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("modle"), "{e}");
        let mut spec = Spec::parse("data").unwrap();
        let e = spec.append(&["data"]).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("data"), "{e}");
        assert_eq!(spec.ndim().unwrap(), 1, "a refused append leaves the spec unchanged");
        eprintln!("{e}");
    });
}

#[test]
fn a_wrong_length_host_slice_is_refused() {
    let _g = serial();
    no_leak(|| {
        let rt = runtime();
        let s = Sharding::single_device(&rt, 0).unwrap();
        let e = Array::from_host(&s, &[2, 3], &[1.0f32; 5]).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        eprintln!("{e}");
        assert!(e.message.contains("nbytes"), "{e}");
        let mut a = Array::zeros(&s, DType::F32, &[2, 3]).unwrap();
        let e = a.shard_write(0, &[0.0f32; 7]).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        eprintln!("{e}");
        let e = a.to_host::<i32>().unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("float32"), "{e}");
    });
}

#[test]
fn a_destroyed_handle_is_refused_by_the_c_layer() {
    let _g = serial();
    no_leak(|| unsafe {
        // In safe Rust a use after drop does not compile (see the
        // compile_fail example in the crate docs); the sys layer shows the
        // library's own check.
        let mut rt: *mut sys::spmd_runtime = std::ptr::null_mut();
        assert_eq!(sys::spmd_runtime_create(std::ptr::null(), &mut rt), sys::SPMD_OK);
        sys::spmd_runtime_destroy(rt);
        let mut n = 0;
        let st = sys::spmd_runtime_device_count(rt, &mut n);
        assert_eq!(st, sys::SPMD_ERR_INVALID_ARGUMENT);
        let msg = spmd::last_error();
        eprintln!("{msg}");
        assert!(msg.contains("destroyed"), "{msg}");
        sys::spmd_runtime_destroy(rt); // destroying twice is harmless
        spmd::clear_error();
        assert_eq!(spmd::last_error(), "");
    });
}

#[test]
fn a_panic_in_a_shard_map_closure_fails_that_device() {
    let _g = serial();
    no_leak(|| {
        let (mesh, x, spec) = split_along_x();
        let e = mesh
            .shard_map(&[&x], &[&spec], &[&spec], |ctx| {
                if ctx.device_id()? == 2 {
                    panic!("device two gives up");
                }
                let b = ctx.input(0)?;
                ctx.set_output(0, &b)
            })
            .unwrap_err();
        eprintln!("{e}");
        assert_eq!(e.status, Status::Callback);
        assert!(e.message.contains("device two gives up"), "{e}");
        assert!(e.message.contains("panicked"), "{e}");
    });
}

#[test]
fn an_error_returned_by_a_closure_fails_the_shard_map() {
    let _g = serial();
    no_leak(|| {
        let (mesh, x, spec) = split_along_x();
        // Device 1 fails before the psum the others wait in: they fail at once.
        let e = mesh
            .shard_map(&[&x], &[&spec], &[&spec], |ctx| {
                if ctx.axis_index("x")? == 1 {
                    return Err(spmd::Error::new(Status::InvalidArgument, "block 1 is not welcome"));
                }
                let b = ctx.input(0)?;
                let s = ctx.psum(&b, "x")?;
                ctx.set_output(0, &s)
            })
            .unwrap_err();
        eprintln!("{e}");
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("block 1 is not welcome"), "{e}");

        // A failing context call, propagated with `?`, keeps its status.
        let e = mesh
            .shard_map(&[&x], &[&spec], &[&spec], |ctx| {
                let b = ctx.input(5)?;
                ctx.set_output(0, &b)
            })
            .unwrap_err();
        eprintln!("{e}");
        assert_eq!(e.status, Status::OutOfRange);

        // Outputs left unset.
        let e = mesh.shard_map(&[&x], &[&spec], &[&spec], |_| Ok(())).unwrap_err();
        eprintln!("{e}");
        assert_eq!(e.status, Status::InvalidArgument);
    });
}
