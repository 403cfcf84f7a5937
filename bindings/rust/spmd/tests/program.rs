//! Programs (experimental): a closure of ops recorded once over abstract
//! inputs and run many times gives, bit for bit and in layout, what the
//! same ops give eagerly.
//! One test at a time, each checked for leaks (common/mod.rs).
mod common;

use common::{no_leak, serial};

use spmd::{Array, DType, InputSpec, Key, Mesh, Program, RecordOptions, Result, Runtime, Sharding, Status};

/// A runtime of 8 CPU devices and a 2 x 4 mesh ("x", "y") of them.
fn mesh8() -> (Runtime, Mesh) {
    let rt = Runtime::builder().cpu_devices(8).worker_threads(2).build().unwrap();
    let mesh = Mesh::new(&rt, &[2, 4], &["x", "y"]).unwrap();
    (rt, mesh)
}

/// The tour's f, 2 * sin(x) + 1, written as it is eagerly: the temporaries
/// are passed by value, which donates them, eagerly and while recording.
fn sin_chain(x: &Array) -> Result<Array> {
    (2.0 * x.sin()?)? + 1.0
}

/// Deterministic values, different for each seed.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 + seed * 13) as f64).sin() as f32 * 3.0).collect()
}

/// got and want agree in dtype, shape, sharding and every bit.
fn assert_same(got: &Array, want: &Array, what: &str) {
    assert_eq!(got.dtype().unwrap(), want.dtype().unwrap(), "{what}: dtype");
    assert_eq!(got.shape().unwrap(), want.shape().unwrap(), "{what}: shape");
    assert_eq!(got.sharding().unwrap(), want.sharding().unwrap(), "{what}: sharding");
    let (g, w) = (got.to_host::<f32>().unwrap(), want.to_host::<f32>().unwrap());
    let differ = g.iter().zip(&w).position(|(a, b)| a.to_bits() != b.to_bits());
    assert_eq!(differ, None, "{what}: values differ: {g:?} against {w:?}");
}

#[test]
fn a_recorded_program_runs_as_the_ops_do() {
    let _g = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let shape = [8, 16];
        let f = Program::record(&rt, &[InputSpec::new(&s, DType::F32, &shape)], |x| {
            assert_eq!(x.len(), 1);
            assert_eq!(x[0].shape().unwrap(), vec![8, 16]);
            assert!(x[0].to_host::<f32>().is_err(), "an abstract array has no values");
            Ok(vec![sin_chain(&x[0])?])
        })
        .unwrap();
        assert_eq!((f.input_count().unwrap(), f.output_count().unwrap()), (1, 1));
        for seed in 1..=2 {
            let data = values(8 * 16, seed);
            let x = Array::from_host(&s, &shape, &data).unwrap();
            let got = f.run(&[&x]).unwrap();
            assert_eq!(got.len(), 1);
            let want = sin_chain(&x).unwrap();
            assert_same(&got[0], &want, &format!("run {seed}"));
            let y = got[0].to_host::<f32>().unwrap();
            for (v, d) in y.iter().zip(&data) {
                assert!((*v as f64 - (2.0 * (*d as f64).sin() + 1.0)).abs() < 1e-5, "{v} for x = {d}");
            }
        }
        let text = f.to_string();
        assert!(text.starts_with("program: 1 input, 1 output"), "{text}");
        assert!(text.contains("fused into 1 pass"), "{text}");
        assert!(text.contains("sin, mul, add in one pass per shard"), "{text}");
        assert_eq!(f.text().unwrap(), text);
    });
}

#[test]
fn out_shardings_and_constraints_place_the_outputs() {
    let _g = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let cols = Sharding::named_text(&mesh, "None, y").unwrap();
        let replicated = Sharding::replicated(&mesh).unwrap();
        let f = Program::record_with(
            &rt,
            &[InputSpec::new(&s, DType::F32, &[8, 16])],
            &RecordOptions::new().out_shardings(&[Some(&cols), None]),
            |x| {
                let t = x[0].tanh()?;
                let r = t.reshard(&replicated)?; // with_sharding_constraint
                Ok(vec![t, r])
            },
        )
        .unwrap();
        let x = Array::arange(&s, DType::F32, &[8, 16], 0.0, 0.01).unwrap();
        let out = f.run(&[&x]).unwrap();
        assert_eq!(out[0].sharding().unwrap(), cols);
        assert_eq!(out[1].sharding().unwrap(), replicated);
        assert_eq!(out[0].to_host::<f32>().unwrap(), x.tanh().unwrap().to_host::<f32>().unwrap());
        assert_eq!(out[1].to_host::<f32>().unwrap(), out[0].to_host::<f32>().unwrap());

        let e = Program::record_with(
            &rt,
            &[InputSpec::new(&s, DType::F32, &[8, 16])],
            &RecordOptions::new().out_shardings(&[Some(&cols)]),
            |x| Ok(vec![x[0].exp()?, x[0].cos()?]),
        )
        .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("out_shardings: 1 shardings for 2 outputs"), "{e}");
    });
}

#[test]
fn a_program_runs_on_many_threads_at_once() {
    let _g = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x").unwrap();
        let f =
            Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8, 4])], |x| Ok(vec![sin_chain(&x[0])?])).unwrap();
        let x = Array::arange(&s, DType::F32, &[8, 4], 0.0, 1.0).unwrap();
        let want = sin_chain(&x).unwrap().to_host::<f32>().unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..5 {
                        let y = f.run(&[&x]).unwrap();
                        assert_eq!(y[0].to_host::<f32>().unwrap(), want);
                    }
                });
            }
        });
    });
}

#[test]
fn mistakes_are_errors_that_name_their_place() {
    let _g = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let f =
            Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8, 16])], |x| Ok(vec![sin_chain(&x[0])?])).unwrap();

        // Run: an input of another shape, a wrong count.
        let wrong = Array::zeros(&s, DType::F32, &[8, 8]).unwrap();
        let e = f.run(&[&wrong]).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("inputs[0]: float32[8,8] where the program was recorded with float32[8,16]"), "{e}");
        let e = f.run(&[]).unwrap_err();
        assert!(e.message.contains("n_inputs: 0 inputs for a program of 1"), "{e}");

        // Record: a bad input, an op's own check (returned by the closure),
        // an output that is not a value of the program, no output.
        let e = Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8])], |x| Ok(vec![x[0].exp()?])).unwrap_err();
        assert!(e.message.starts_with("Program::record: inputs[0]: "), "{e}");
        let e = Program::record(
            &rt,
            &[InputSpec::new(&s, DType::F32, &[8, 16]), InputSpec::new(&s, DType::F32, &[8, 8])],
            |x| Ok(vec![(&x[0] + &x[1])?]),
        )
        .unwrap_err();
        assert!(e.message.contains("do not broadcast"), "{e}");
        let e =
            Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8, 16])], |_| Ok(vec![wrong.exp()?])).unwrap_err();
        assert!(e.message.starts_with("Program::record: outputs[0]: "), "{e}");
        assert!(e.message.contains("an array with values"), "{e}");
        let e = Program::record(&rt, &[], |_| Ok(vec![])).unwrap_err();
        assert!(e.message.contains("no arrays"), "{e}");

        // A panic in the closure unwinds to the caller, leaking nothing
        // (no_leak); recording works as before afterwards.
        let caught = std::panic::catch_unwind(|| {
            let _ = Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8, 16])], |x| {
                let _y = x[0].sin();
                panic!("boom");
            });
        });
        assert!(caught.is_err());
        let e = Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8, 16])], |x| {
            let y = x[0].sin()?;
            Ok(vec![y])
        });
        assert!(e.is_ok(), "{e:?}");
    });
}

/// A shard_map inside the recording closure is refused: the library would
/// call its closure at every run, after the closure is gone.
#[test]
fn a_shard_map_is_not_recorded_from_rust() {
    let _serial = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x").unwrap();
        let err = Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8])], |x| {
            mesh.shard_map(&[&x[0]], &["x"], &["x"], |ctx| {
                let b = ctx.input(0)?;
                ctx.set_output(0, &b)
            })
        })
        .unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument);
        assert!(err.message.contains("inside Program::record"), "{}", err.message);
    });
}

/// A donated input is consumed by the run; the result is what it would be.
#[test]
fn a_donated_input_is_consumed_by_the_run() {
    let _serial = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let shape = [8, 16];
        let f = Program::record_with(
            &rt,
            &[InputSpec::new(&s, DType::F32, &shape)],
            &RecordOptions::new().donate(&[0]),
            |x| Ok(vec![sin_chain(&x[0])?]),
        )
        .unwrap();
        let data = values(8 * 16, 5);
        let x = Array::from_host(&s, &shape, &data).unwrap();
        let copy = Array::from_host(&s, &shape, &data).unwrap();
        let got = f.run(&[&x]).unwrap();
        assert_same(&got[0], &sin_chain(&copy).unwrap(), "donated");
        let err = x.to_host::<f32>().unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument);
        assert!(err.message.contains("donated to spmd_x_program_run"), "{}", err.message);
        let e = Program::record_with(
            &rt,
            &[InputSpec::new(&s, DType::F32, &shape)],
            &RecordOptions::new().donate(&[1]),
            |x| Ok(vec![x[0].sin()?]),
        )
        .unwrap_err();
        assert!(e.message.contains("input: 1 for a program of 1 input"), "{}", e.message);
    });
}

/// Draws from key data (`Key::data`) are the draws from the key, bit for
/// bit; a key array that is not uint32\[2\] is named.
#[test]
fn draws_from_key_data_are_the_draws_from_the_key() {
    let _serial = serial();
    no_leak(|| {
        let (_rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let replicated = Sharding::replicated(&mesh).unwrap();
        let shape = [8, 4];
        let key = Key::new(42).fold_in(7);
        let data = key.data(&replicated).unwrap();
        assert_eq!(data.to_host::<u32>().unwrap(), key.words());

        let got = Key::normal_from(&data, &s, DType::F32, &shape).unwrap();
        assert_same(&got, &key.normal(&s, DType::F32, &shape).unwrap(), "normal_from");
        let got = Key::uniform_from(&data, &s, DType::F32, &shape, -1.0, 2.0).unwrap();
        assert_same(&got, &key.uniform(&s, DType::F32, &shape, -1.0, 2.0).unwrap(), "uniform_from");
        let got = Key::truncated_normal_from(&data, &s, DType::F32, &shape, -0.5, 1.0).unwrap();
        assert_same(&got, &key.truncated_normal(&s, DType::F32, &shape, -0.5, 1.0).unwrap(), "truncated_normal_from");
        let got = Key::bits_from(&data, &s, DType::U32, &shape).unwrap();
        let want = key.bits(&s, DType::U32, &shape).unwrap();
        assert_eq!(got.to_host::<u32>().unwrap(), want.to_host::<u32>().unwrap(), "bits_from");

        let floats = Array::from_host(&replicated, &[2], &[0.0f32, 42.0]).unwrap();
        let e = Key::normal_from(&floats, &s, DType::F32, &shape).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: float32[2] where key data is uint32[2]"), "{e}");
        let three = Array::from_host(&replicated, &[3], &[0u32, 42, 7]).unwrap();
        let e = Key::bits_from(&three, &s, DType::U32, &shape).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: uint32[3]"), "{e}");
    });
}

/// A program whose input is key data draws from the key each run is
/// given, as `jax.jit(lambda k: jax.random.normal(k, shape))` does.
#[test]
fn a_program_draws_from_the_key_data_it_is_given() {
    let _serial = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let replicated = Sharding::replicated(&mesh).unwrap();
        let shape = [8, 4];
        let f = Program::record(&rt, &[InputSpec::new(&replicated, DType::U32, &[2])], |k| {
            Ok(vec![Key::normal_from(&k[0], &s, DType::F32, &shape)?])
        })
        .unwrap();
        let base = Key::new(0);
        let runs: Vec<Array> = (1..=2)
            .map(|step| {
                let key = base.fold_in(step);
                let mut out = f.run(&[&key.data(&replicated).unwrap()]).unwrap();
                assert_same(&out[0], &key.normal(&s, DType::F32, &shape).unwrap(), &format!("run {step}"));
                out.remove(0)
            })
            .collect();
        assert_ne!(runs[0].to_host::<f32>().unwrap(), runs[1].to_host::<f32>().unwrap(), "two keys, one draw");

        // A key input that is not uint32[2] fails the draw that reads it.
        let e = Program::record(&rt, &[InputSpec::new(&replicated, DType::F32, &[2])], |k| {
            Ok(vec![Key::normal_from(&k[0], &s, DType::F32, &shape)?])
        })
        .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: float32[2]"), "{e}");
    });
}

/// Key data derives key data as the key derives keys: `split_from` and
/// `fold_in_from` give the words of `split`'s and `fold_in`'s keys, laid out
/// as the key data they read; a key array that is not uint32\[2\] is named.
#[test]
fn key_data_splits_and_folds_as_the_key() {
    let _serial = serial();
    no_leak(|| {
        let (_rt, mesh) = mesh8();
        let replicated = Sharding::replicated(&mesh).unwrap();
        let by_x = Sharding::named_text(&mesh, "x").unwrap();
        let key = Key::new(42).fold_in(7);
        for layout in [&replicated, &by_x] {
            let data = key.data(layout).unwrap();
            let keys = Key::split_from(&data, 3).unwrap();
            let want = key.split(3);
            assert_eq!(keys.len(), want.len(), "split_from: one array per key");
            for (i, (got, want)) in keys.iter().zip(&want).enumerate() {
                assert_eq!(got.to_host::<u32>().unwrap(), want.words(), "split_from {layout}: key {i}");
                assert_eq!(&got.sharding().unwrap(), layout, "split_from: key {i} laid out as the key");
            }
            let folded = Key::fold_in_from(&data, 3).unwrap();
            assert_eq!(folded.to_host::<u32>().unwrap(), key.fold_in(3).words(), "fold_in_from {layout}");
            assert_eq!(&folded.sharding().unwrap(), layout, "fold_in_from: laid out as the key");
            assert!(Key::split_from(&data, 0).unwrap().is_empty(), "split_from(key, 0) makes none");
        }

        let floats = Array::from_host(&replicated, &[2], &[0.0f32, 42.0]).unwrap();
        let e = Key::split_from(&floats, 2).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: float32[2] where key data is uint32[2]"), "{e}");
        let e = Key::fold_in_from(&floats, 3).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: float32[2] where key data is uint32[2]"), "{e}");
    });
}

/// A program derives each run's keys from its key input: split in two, 3
/// folded into the second, a draw from each, as under `jax.jit`.
#[test]
fn a_program_derives_keys_from_the_key_data_it_is_given() {
    let _serial = serial();
    no_leak(|| {
        let (rt, mesh) = mesh8();
        let s = Sharding::named_text(&mesh, "x, y").unwrap();
        let replicated = Sharding::replicated(&mesh).unwrap();
        let shape = [8, 4];
        let f = Program::record(&rt, &[InputSpec::new(&replicated, DType::U32, &[2])], |k| {
            let keys = Key::split_from(&k[0], 2)?;
            let folded = Key::fold_in_from(&keys[1], 3)?;
            Ok(vec![
                Key::normal_from(&keys[0], &s, DType::F32, &shape)?,
                Key::uniform_from(&folded, &s, DType::F32, &shape, -1.0, 2.0)?,
            ])
        })
        .unwrap();
        let base = Key::new(0);
        let firsts: Vec<Vec<f32>> = (1..=2)
            .map(|step| {
                let key = base.fold_in(step);
                let out = f.run(&[&key.data(&replicated).unwrap()]).unwrap();
                let keys = key.split(2);
                let folded = keys[1].fold_in(3);
                let normal = keys[0].normal(&s, DType::F32, &shape).unwrap();
                let uniform = folded.uniform(&s, DType::F32, &shape, -1.0, 2.0).unwrap();
                assert_same(&out[0], &normal, &format!("run {step}: normal"));
                assert_same(&out[1], &uniform, &format!("run {step}: uniform"));
                out[0].to_host::<f32>().unwrap()
            })
            .collect();
        assert_ne!(firsts[0], firsts[1], "two keys, one draw");

        // A key input that is not uint32[2] fails the split that reads it.
        let e = Program::record(&rt, &[InputSpec::new(&replicated, DType::F32, &[2])], |k| Key::split_from(&k[0], 2))
            .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: float32[2]"), "{e}");
        let e = Program::record(&rt, &[InputSpec::new(&replicated, DType::F32, &[2])], |k| {
            Ok(vec![Key::fold_in_from(&k[0], 3)?])
        })
        .unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("key: float32[2]"), "{e}");
    });
}
