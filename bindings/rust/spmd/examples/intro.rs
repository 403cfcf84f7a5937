//! The first seed notebook ("Device parallelism for SPMD") end to end,
//! printing each cell as the C tour (examples/c/tour.c) does: the Python it
//! reproduces after ">>> " and "... ", then what the notebook shows.
//!
//!     cargo run --example intro
use spmd::{Array, DType, Mesh, Runtime, ShardMapOptions, Sharding};

fn cell(python: &str) {
    println!("\n>>> {python}");
}

/// Prints text the library made, ending it with a newline.
fn show(text: String) {
    if text.ends_with('\n') {
        print!("{text}");
    } else {
        println!("{text}");
    }
}

fn main() -> spmd::Result<()> {
    let rt = Runtime::new()?;
    println!("libspmd {} Rust intro", spmd::version_string());
    println!("\n=== Device parallelism for SPMD ===");

    cell("jax.devices()");
    show(rt.devices_string()?);

    let dev0 = Sharding::single_device(&rt, 0)?;
    let dev1 = Sharding::single_device(&rt, 1)?;
    cell("a = jnp.arange(5); a.device");
    let a = Array::arange(&dev0, DType::I32, &[5], 0.0, 1.0)?;
    show(rt.device_string(a.device()?)?);
    cell("b = jnp.array([2,3,4], device=jax.devices()[1]); b.device");
    let b = Array::from_host(&dev1, &[3], &[2i32, 3, 4])?;
    show(rt.device_string(b.device()?)?);
    cell("a.sharding");
    show(a.sharding()?.to_string());
    cell("jax.debug.visualize_array_sharding(a)");
    show(a.visualize()?);
    cell("jax.debug.visualize_array_sharding(b)");
    show(b.visualize()?);

    cell("mesh = jax.make_mesh((3,), ('x',))\n... sharding = jax.sharding.NamedSharding(mesh, PartitionSpec('x',)); print(sharding)");
    let mesh = Mesh::new(&rt, &[3], &["x"])?;
    let sharding = Sharding::named_text(&mesh, "P('x',)")?;
    show(sharding.to_string());

    cell("arr = jnp.arange(24.0).reshape(3, 8); arr.shape");
    let arr = Array::arange(&dev0, DType::F32, &[3, 8], 0.0, 1.0)?;
    let shape = arr.shape()?;
    println!("({}, {})", shape[0], shape[1]);

    cell("arr_sharded = jax.device_put(arr, sharding); arr_sharded.sharding");
    let arr_sharded = arr.reshard(&sharding)?;
    show(arr_sharded.sharding()?.to_string());
    cell("jax.debug.visualize_array_sharding(arr_sharded)");
    show(arr_sharded.visualize()?);

    cell("@jax.jit\n... def f(x):\n...     return 2 * jnp.sin(x) + 1\n... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
    // Each op returns a Result (hence the ?s); the temporaries are donated.
    let result = ((2.0 * arr_sharded.sin()?)? + 1.0)?;
    show(result.visualize()?);
    cell("arr_sharded.sharding == result.sharding");
    println!("{}", if arr_sharded.sharding()? == result.sharding()? { "True" } else { "False" });

    cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=0)\n... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
    show(arr_sharded.sum(&[0])?.visualize()?);
    cell("arr.sum(axis=1)");
    show(arr.sum(&[1])?.repr()?);
    cell("@jax.jit\n... def f(x):\n...     return x.sum(axis=1)\n... result = f(arr_sharded); jax.debug.visualize_array_sharding(result)");
    show(arr_sharded.sum(&[1])?.visualize()?);

    println!("\n=== Manual partitioning with shard_map ===");
    cell(concat!(
        "mesh = jax.make_mesh((3,), ('x',))\n",
        "... @jax.jit\n",
        "... def f_elementwise(x):\n",
        "...     jax.debug.print(str(x.shape))\n",
        "...     return 2 * jnp.sin(x) + 1\n",
        "... f_elementwise_sharded = shard_map(f_elementwise, mesh=mesh,\n",
        "...                                   in_specs=PartitionSpec('x'), out_specs=PartitionSpec('x'))\n",
        "... arr = jnp.arange(24)\n",
        "... f_elementwise_sharded(arr)"
    ));
    let ints = Array::arange(&dev0, DType::I32, &[24], 0.0, 1.0)?;
    let y = mesh.shard_map(&[&ints], &["x"], &["x"], |ctx| {
        let x = ctx.input(0)?;
        spmd::debug_print!(ctx, "({},)", x.shape()[0])?;
        let mut out = ctx.alloc(DType::F32, x.shape())?;
        for (o, &v) in out.as_mut_slice::<f32>()?.iter_mut().zip(x.as_slice::<i32>()?) {
            *o = 2.0 * (v as f32).sin() + 1.0;
        }
        ctx.set_output(0, &out)
    })?;
    show(y[0].repr()?);

    cell(concat!(
        "def f(x):\n",
        "...     sum_in_shard = x.sum()\n",
        "...     return jax.lax.psum(sum_in_shard, 'x')\n",
        "... result = shard_map(f, mesh=mesh, in_specs=PartitionSpec('x'),\n",
        "...                    out_specs=PartitionSpec())(arr_sharded)\n",
        "... result"
    ));
    let rows = Sharding::named_text(&mesh, "x")?;
    let arr_sharded = Array::arange(&rows, DType::F32, &[3, 8], 0.0, 1.0)?;
    let check_rep = ShardMapOptions::new().check_rep(true);
    let total = mesh.shard_map_with(&[&arr_sharded], &["x"], &[""], &check_rep, |ctx| {
        let x = ctx.input(0)?;
        let sum: f32 = x.as_slice::<f32>()?.iter().sum();
        let local = ctx.alloc_from(&[], &[sum])?;
        let total = ctx.psum(&local, "x")?;
        ctx.set_output(0, &total)
    })?;
    show(total[0].repr()?);
    cell("result.sharding");
    show(total[0].sharding()?.to_string());
    Ok(())
}
