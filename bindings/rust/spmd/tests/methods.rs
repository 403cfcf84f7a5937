//! Arrays' methods and operators, OpOptions' builder, shard_map's specs as
//! text or Spec, and debug_print!, values checked against plain Rust.
use std::sync::Mutex;

use spmd::{
    Array, BinaryOp, DType, Mesh, OpOptions, ReduceOp, Runtime, ShardMapOptions, Sharding, Spec, Status, UnaryOp,
};

fn runtime() -> Runtime {
    Runtime::builder().cpu_devices(4).worker_threads(1).build().unwrap()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * (1.0 + y.abs()))
}

/// [[1 2 3 4] [5 6 7 8]] split over a 2x2 mesh, and its values.
fn grid(rt: &Runtime) -> (Mesh, Array, Vec<f32>) {
    let mesh = Mesh::new(rt, &[2, 2], &["x", "y"]).unwrap();
    let x = Array::arange(&Sharding::named_text(&mesh, "x, y").unwrap(), DType::F32, &[2, 4], 1.0, 1.0).unwrap();
    (mesh, x, (1..=8).map(|v| v as f32).collect())
}

fn values(a: &Array) -> Vec<f32> {
    a.to_host::<f32>().unwrap()
}

fn map(host: &[f32], f: impl Fn(f32) -> f32) -> Vec<f32> {
    host.iter().map(|&v| f(v)).collect()
}

#[test]
fn operators_on_arrays_and_scalars() -> spmd::Result<()> {
    let rt = runtime();
    let (_mesh, x, host) = grid(&rt);
    let y = (&x * 2.0)?;
    assert_eq!(values(&y), map(&host, |v| v * 2.0));
    assert_eq!(values(&(&x + &y)?), map(&host, |v| v * 3.0));
    assert_eq!(values(&(&y - &x)?), host);
    assert_eq!(values(&(&x * &y)?), map(&host, |v| 2.0 * v * v));
    assert_eq!(values(&(&y / &x)?), vec![2.0; 8]);
    assert_eq!(values(&(-&x)?), map(&host, |v| -v));
    // Scalars on either side, f64 or i32: 1 - x, 2 / x, x + 1.
    assert_eq!(values(&(1.0 - &x)?), map(&host, |v| 1.0 - v));
    assert_eq!(values(&(2 / &x)?), map(&host, |v| 2.0 / v));
    assert_eq!(values(&(&x + 1)?), map(&host, |v| v + 1.0));
    assert_eq!(values(&(&x / 4.0)?), map(&host, |v| v / 4.0));
    // Scalars are weakly typed, as Python's in JAX: int32 * 3 stays int32,
    // int32 * 0.5 is float32, float32 * 2.0 float32.
    let ints = x.astype(DType::I32)?;
    assert_eq!((&ints * 3)?.dtype()?, DType::I32);
    assert_eq!((&ints * 0.5)?.dtype()?, DType::F32);
    assert_eq!(y.dtype()?, DType::F32);
    // Owned operands are donated; chained, as 2 * jnp.sin(x) + 1 reads.
    let f = ((2.0 * x.sin()?)? + 1.0)?;
    assert!(close(&values(&f), &map(&host, |v| 2.0 * v.sin() + 1.0)));
    assert!(f.sharding()? == x.sharding()?);
    let g = (x.exp()? - x.exp()?)?;
    assert_eq!(values(&g), vec![0.0; 8]);
    let h = (-(&x + 1.0)?)?;
    assert_eq!(values(&h), map(&host, |v| -(v + 1.0)));
    // Broadcasting, as NumPy's.
    let row = Array::from_host(&x.sharding()?, &[4], &[10.0f32, 20.0, 30.0, 40.0]);
    assert!(row.is_err(), "a rank 1 array does not take the rank 2 spec");
    let row = Array::from_host(&Sharding::single_device(&rt, 0)?, &[4], &[10.0f32, 20.0, 30.0, 40.0])?;
    let replicated = row.reshard(&Sharding::replicated(&_mesh)?)?;
    assert_eq!(values(&(&x + &replicated)?), vec![11.0, 22.0, 33.0, 44.0, 15.0, 26.0, 37.0, 48.0]);
    Ok(())
}

#[test]
fn operator_errors_are_results() {
    let rt = runtime();
    let (mesh, x, _) = grid(&rt);
    let three = Array::zeros(&Sharding::replicated(&mesh).unwrap(), DType::F32, &[3]).unwrap();
    let e = (&x + &three).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("broadcast"), "{e}");
    // Arrays on another mesh.
    let other = Mesh::new(&rt, &[4], &["z"]).unwrap();
    let z = Array::zeros(&Sharding::named_text(&other, "z").unwrap(), DType::F32, &[2, 4]).unwrap();
    assert_eq!((&x * &z).unwrap_err().status, Status::InvalidArgument);
}

#[test]
fn elementwise_methods() -> spmd::Result<()> {
    let rt = runtime();
    let (_mesh, x, host) = grid(&rt);
    let cases: Vec<(&str, Array, Vec<f32>)> = vec![
        ("negative", x.negative()?, map(&host, |v| -v)),
        ("abs", x.negative()?.abs()?, host.clone()),
        ("exp", x.exp()?, map(&host, f32::exp)),
        ("log", x.log()?, map(&host, f32::ln)),
        ("sin", x.sin()?, map(&host, f32::sin)),
        ("cos", x.cos()?, map(&host, f32::cos)),
        ("tanh", x.tanh()?, map(&host, f32::tanh)),
        ("sqrt", x.sqrt()?, map(&host, f32::sqrt)),
        ("rsqrt", x.rsqrt()?, map(&host, |v| 1.0 / v.sqrt())),
        ("relu", (&x - 4.5)?.relu()?, map(&host, |v| (v - 4.5).max(0.0))),
        ("sigmoid", x.sigmoid()?, map(&host, |v| 1.0 / (1.0 + (-v).exp()))),
        ("unary", x.unary(UnaryOp::Exp)?, map(&host, f32::exp)),
        ("maximum", x.maximum(4.5)?, map(&host, |v| v.max(4.5))),
        ("minimum", x.minimum(&x.negative()?)?, map(&host, |v| -v)),
        ("power", x.power(2.0)?, map(&host, |v| v * v)),
        ("binary", x.binary(BinaryOp::Sub, 1)?, map(&host, |v| v - 1.0)),
    ];
    for (name, got, want) in cases {
        assert!(close(&values(&got), &want), "{name}: {:?} != {want:?}", values(&got));
        assert!(got.sharding()? == x.sharding()?, "{name} keeps the sharding");
    }
    // gelu, both forms, against erf's and tanh's definitions at a few points.
    let gelu = values(&x.gelu()?);
    let tanh_form =
        |v: f32| 0.5 * v * (1.0 + ((2.0 / std::f32::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh());
    assert!(close(&gelu, &map(&host, tanh_form)));
    let exact = values(&x.gelu_exact()?);
    assert!(exact.iter().zip(&gelu).all(|(e, t)| (e - t).abs() < 1e-3));
    Ok(())
}

#[test]
fn comparisons_and_select() -> spmd::Result<()> {
    let rt = runtime();
    let (_mesh, x, host) = grid(&rt);
    let flags = |a: Array| a.to_host::<bool>().unwrap();
    assert_eq!(flags(x.greater(4.5)?), map(&host, |v| v).iter().map(|&v| v > 4.5).collect::<Vec<_>>());
    assert_eq!(flags(x.greater_equal(5)?), host.iter().map(|&v| v >= 5.0).collect::<Vec<_>>());
    assert_eq!(flags(x.less(3.0)?), host.iter().map(|&v| v < 3.0).collect::<Vec<_>>());
    assert_eq!(flags(x.less_equal(3.0)?), host.iter().map(|&v| v <= 3.0).collect::<Vec<_>>());
    assert_eq!(flags(x.equal(&x)?), vec![true; 8]);
    assert_eq!(flags(x.not_equal(&x)?), vec![false; 8]);
    assert_eq!(flags(x.equal(2)?), host.iter().map(|&v| v == 2.0).collect::<Vec<_>>());
    // jnp.where(x > 4.5, x, -x)
    let picked = x.greater(4.5)?.select(&x, &x.negative()?)?;
    assert_eq!(values(&picked), map(&host, |v| if v > 4.5 { v } else { -v }));
    Ok(())
}

#[test]
fn reductions_and_options() -> spmd::Result<()> {
    let rt = runtime();
    let (mesh, x, _) = grid(&rt);
    assert_eq!(values(&x.sum(&[])?), vec![36.0]);
    assert_eq!(values(&x.sum(&[1])?), vec![10.0, 26.0]);
    assert_eq!(values(&x.sum(&[-2])?), vec![6.0, 8.0, 10.0, 12.0]);
    assert_eq!(values(&x.mean(&[1])?), vec![2.5, 6.5]);
    assert_eq!(values(&x.max(&[0])?), vec![5.0, 6.0, 7.0, 8.0]);
    assert_eq!(values(&x.min(&[-1])?), vec![1.0, 5.0]);
    assert_eq!(values(&x.sum(&[0, 1])?), vec![36.0]);
    let kept = x.reduce(ReduceOp::Max, &[0], true)?;
    assert_eq!(kept.shape()?, vec![1, 4]);
    assert_eq!(x.argmax(1)?.to_host::<i32>()?, vec![3, 3]);
    assert_eq!(x.argmax(-2)?.to_host::<i32>()?, vec![1; 4]);
    assert_eq!(x.argmin(1)?.to_host::<i32>()?, vec![0, 0]);
    assert_eq!(x.cumsum(1)?.to_host::<f32>()?, vec![1.0, 3.0, 6.0, 10.0, 5.0, 11.0, 18.0, 26.0]);
    assert_eq!(x.take(&x.argmax(1)?, 1)?.to_host::<f32>()?, vec![4.0, 4.0, 8.0, 8.0]);
    let (last, picked) = (x.argmax(1)?, x.take(&x.argmax(1)?, 1)?);
    assert_eq!(values(&x.scatter_add(&last, &picked, 1)?), vec![1.0, 2.0, 3.0, 12.0, 5.0, 6.0, 7.0, 24.0]);
    assert_eq!(x.argmax(1)?.one_hot(4, DType::I32)?.to_host::<i32>()?, vec![0, 0, 0, 1, 0, 0, 0, 1]);
    let sm = values(&x.softmax(-1)?);
    assert!((sm[..4].iter().sum::<f32>() - 1.0).abs() < 1e-5);
    assert!((values(&x.log_softmax(-1)?)[0] - sm[0].ln()).abs() < 1e-5);

    // Options through the builder: the result's sharding.
    let replicated = Sharding::replicated(&mesh)?;
    let rows = x.sum_with(&[1], OpOptions::new().out_sharding(&replicated))?;
    assert!(rows.sharding()? == replicated);
    assert_eq!(values(&rows), vec![10.0, 26.0]);
    let by_x = Sharding::named_text(&mesh, "x")?;
    assert!(x.mean_with(&[1], OpOptions::new().out_sharding(&by_x))?.sharding()? == by_x);
    assert!(x.max_with(&[1], OpOptions::new().out_sharding(&by_x))?.sharding()? == by_x);
    assert!(x.min_with(&[1], OpOptions::new().out_sharding(&by_x))?.sharding()? == by_x);
    let neg = x.unary_with(UnaryOp::Neg, OpOptions::new().out_sharding(&replicated))?;
    assert!(neg.sharding()? == replicated);
    let sum = x.binary_with(BinaryOp::Add, &x, OpOptions::new().out_sharding(&replicated))?;
    assert!(sum.sharding()? == replicated);
    assert!(x.astype_with(DType::F64, OpOptions::new().out_sharding(&replicated))?.sharding()? == replicated);
    assert!(x.argmax_with(0, OpOptions::new().out_sharding(&replicated))?.sharding()? == replicated);
    // The defaults are those of OpOptions::default().
    assert!(OpOptions::new().out_sharding.is_none());
    Ok(())
}

#[test]
fn a_bad_axis_is_an_error_naming_it() {
    let rt = runtime();
    let (_mesh, x, _) = grid(&rt);
    // The library's message names the argument: "spmd_reduce: axes[0]: 2
    // is out of range for an array of 2 dimensions".
    for (e, argument) in [
        (x.sum(&[2]).unwrap_err(), "axes[0]: 2 is out of range"),
        (x.mean(&[0, -3]).unwrap_err(), "axes[1]: -3 is out of range"),
        (x.sum(&[1, -1]).unwrap_err(), "axes: dimension 1 appears twice"),
        (x.argmax(5).unwrap_err(), "axis: 5 is out of range"),
        (x.log_softmax(-3).unwrap_err(), "axis: -3 is out of range"),
        (x.cumsum(2).unwrap_err(), "axis: 2 is out of range"),
    ] {
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        assert!(e.message.contains(argument), "{e}");
    }
    let e = x.transpose(&[0, 0]).unwrap_err();
    assert!(e.message.contains("perm"), "{e}");
    let e = x.reshape(&[3, -1]).unwrap_err();
    assert!(e.message.contains("shape"), "{e}");
}

#[test]
fn structural_methods() -> spmd::Result<()> {
    let rt = runtime();
    let (mesh, x, host) = grid(&rt);
    let t = x.transpose(&[])?;
    assert_eq!((t.shape()?, values(&t)[..3].to_vec()), (vec![4, 2], vec![1.0, 5.0, 2.0]));
    assert_eq!(x.transpose(&[-1, 0])?.shape()?, vec![4, 2]);
    let r = x.reshape(&[4, -1])?;
    assert_eq!((r.shape()?, values(&r)), (vec![4, 2], host.clone()));
    let replicated = Sharding::replicated(&mesh)?;
    assert!(x.reshape_with(&[8], OpOptions::new().out_sharding(&replicated))?.sharding()? == replicated);
    assert!(x.transpose_with(&[], OpOptions::new().out_sharding(&replicated))?.sharding()? == replicated);
    let w = Array::arange(&Sharding::named_text(&mesh, "y")?, DType::F32, &[4, 2], 0.0, 1.0)?;
    let want = vec![40.0, 50.0, 88.0, 114.0];
    assert_eq!(values(&x.matmul(&w)?), want);
    assert!(x.matmul_with(&w, OpOptions::new().out_sharding(&replicated))?.sharding()? == replicated);
    let dims = spmd::DotDims { lhs_contract: &[1], rhs_contract: &[0], ..Default::default() };
    assert_eq!(values(&x.dot_general(&w, &dims)?), want);
    assert_eq!(values(&x.slice(&[1, 1], &[2, 3])?), vec![6.0, 7.0]);
    assert_eq!(values(&x.slice_strided(&[0, 0], &[2, 4], &[1, 2])?), vec![1.0, 3.0, 5.0, 7.0]);
    assert_eq!(values(&x.dynamic_slice(&[-1, 9], &[1, 2])?), vec![7.0, 8.0]);
    let b = x.sum(&[0])?.broadcast_to(&[3, 4])?;
    assert_eq!(values(&b)[8..], [6.0, 8.0, 10.0, 12.0]);
    assert_eq!(x.astype(DType::I32)?.to_host::<i32>()?, (1..=8).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn ops_apply_to_the_blocks_of_a_body() -> spmd::Result<()> {
    let rt = runtime();
    let mesh = Mesh::new(&rt, &[4], &["x"])?;
    let x = Array::arange(&Sharding::named_text(&mesh, "x")?, DType::F32, &[8], 0.0, 1.0)?;
    // psum(sum(2 * sin(block))) with the ops on each device's block.
    let out = mesh.shard_map(&[&x], &["x"], &[""], |ctx| {
        let block = ctx.array(&ctx.input(0)?)?;
        let local = (2.0 * &block.sin()?)?.sum(&[])?;
        let total = ctx.psum(&ctx.block(&local)?, "x")?;
        ctx.set_output(0, &total)
    })?;
    let want = (2.0 * &x.sin()?)?.sum(&[])?.to_host::<f32>()?[0];
    assert!((out[0].to_host::<f32>()?[0] - want).abs() < 1e-5);
    Ok(())
}

#[test]
fn shard_map_specs_as_text_or_spec() -> spmd::Result<()> {
    let rt = runtime();
    let mesh = Mesh::new(&rt, &[4], &["x"])?;
    let x = Array::arange(&Sharding::named_text(&mesh, "x")?, DType::F32, &[8], 0.0, 1.0)?;
    let total = |ctx: &mut spmd::ShardContext| {
        let block = ctx.input(0)?;
        let local = ctx.alloc_from(&[], &[block.as_slice::<f32>()?.iter().sum::<f32>()])?;
        let sum = ctx.psum(&local, "x")?;
        ctx.set_output(0, &sum)
    };
    let by_text = mesh.shard_map(&[&x], &["x"], &[""], total)?;
    let (by_x, none) = (Spec::parse("x")?, Spec::parse("")?);
    let by_spec = mesh.shard_map(&[&x], &[&by_x], &[&none], total)?;
    let owned = mesh.shard_map(&[&x], &["x".to_string()], &[String::new()], total)?;
    let mixed = mesh.shard_map(&[&x], &[&by_x], &["P()"], total)?;
    for out in [&by_text, &by_spec, &owned, &mixed] {
        assert_eq!(out[0].to_host::<f32>()?, vec![28.0]);
    }
    // A bad text spec is named, with its place among the specs.
    let e = mesh.shard_map(&[&x], &[&by_x], &["x,,"], total).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("out_specs[0]"), "{e}");
    let e = mesh.shard_map(&[&x], &["x,,"], &[""], total).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    Ok(())
}

#[test]
fn shard_map_options_and_debug_print() -> spmd::Result<()> {
    let rt = runtime();
    let mesh = Mesh::new(&rt, &[4], &["x"])?;
    let x = Array::arange(&Sharding::named_text(&mesh, "x")?, DType::I32, &[8], 0.0, 1.0)?;
    let lines = Mutex::new(Vec::new());
    let sink = |device: usize, text: &str| lines.lock().unwrap().push(format!("{device}: {text}"));
    let options = ShardMapOptions::new().check_rep(true).timeout_ms(10_000).print(&sink);
    let y = mesh.shard_map_with(&[&x], &["x"], &["x"], &options, |ctx| {
        let block = ctx.input(0)?;
        spmd::debug_print!(ctx, "({},) {:?}", block.shape()[0], block.as_slice::<i32>()?)?;
        ctx.set_output(0, &block)
    })?;
    assert_eq!(y[0].to_host::<i32>()?, (0..8).collect::<Vec<_>>());
    let mut lines = lines.into_inner().unwrap();
    lines.sort();
    assert_eq!(lines, vec!["0: (2,) [0, 1]", "1: (2,) [2, 3]", "2: (2,) [4, 5]", "3: (2,) [6, 7]"]);
    Ok(())
}
