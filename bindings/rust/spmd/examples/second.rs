//! The second program: a sum, a matmul and a shard_map over a 2 x 4 mesh,
//! each printed with its sharding, as docs/second-program/second.py prints
//! them in JAX.
//!
//!     cargo run --example second
use spmd::{Array, DType, Mesh, Runtime, Sharding};

/// print(a); print(a.sharding)
fn show(a: &Array) -> spmd::Result<()> {
    println!("{a}\n{}", a.sharding()?);
    Ok(())
}

fn main() -> spmd::Result<()> {
    let rt = Runtime::new()?;
    let mesh = Mesh::new(&rt, &[2, 4], &["x", "y"])?;
    let a = Array::arange(&Sharding::named_text(&mesh, "P('x', 'y')")?, DType::F32, &[4, 8], 0.0, 1.0)?;
    println!("{}", a.sharding()?);

    show(&a.sum(&[1])?)?;
    show(&a.matmul(&a.transpose(&[])?)?)?;

    // def block_sum(block): return jax.lax.psum(block.sum(), ('x', 'y'))
    let t = mesh.shard_map(&[&a], &["P('x', 'y')"], &["P()"], |ctx| {
        let sum: f32 = ctx.input(0)?.as_slice::<f32>()?.iter().sum();
        let total = ctx.psum(&ctx.alloc_from(&[], &[sum])?, "('x', 'y')")?;
        ctx.set_output(0, &total)
    })?;
    show(&t[0])
}
