//! One program, several processes (JAX's multi-controller model): every
//! process runs this same code on a runtime spanning them all, each holding
//! its own devices, as a JAX program does after
//! `jax.distributed.initialize()`.
//!
//!     SPMD_DISTRIBUTED=mpi SPMD_CPU_DEVICES=4 mpirun -np 2 target/debug/examples/distributed
//!
//! A mesh ("p", "d") of shape (process_count, local_device_count) puts
//! process p's devices on row p; a float32 array laid out P('p', 'd') from
//! host data every process holds leaves each process one row of blocks; so
//! does the same array made from each process's own rows
//! (make_array_from_process_local_data).
//! Global ops (sums along each axis) and a shard_map whose psums cross
//! processes run on it, and their results, spread over the processes, are
//! read with process_allgather (every process takes part; process 0
//! prints). Every line starts with "[process index] ". The program checks
//! the numbers itself and exits 1 when one is wrong. Without mpirun it runs
//! as one process of 8 devices.
use std::process::ExitCode;

use spmd::{Array, Mesh, Runtime, Sharding, Status};

/// The expected values, from the host data: x[i][j] = cols * i + j.
struct Expected {
    col_sums: Vec<f32>,
    row_sums: Vec<f32>,
    psum_p: Vec<f32>,
    total: f32,
}

fn expected(host: &[f32], processes: usize, rows: usize, cols: usize) -> Expected {
    let at = |i: usize, j: usize| host[i * cols + j];
    let block_rows = rows / processes;
    Expected {
        col_sums: (0..cols).map(|j| (0..rows).map(|i| at(i, j)).sum()).collect(),
        row_sums: (0..rows).map(|i| (0..cols).map(|j| at(i, j)).sum()).collect(),
        // psum over "p" of each device's block: the blocks of one column of
        // the mesh added, a (block_rows, cols) array.
        psum_p: (0..block_rows * cols)
            .map(|k| (0..processes).map(|p| at(p * block_rows + k / cols, k % cols)).sum())
            .collect(),
        total: host.iter().sum(),
    }
}

fn run() -> spmd::Result<bool> {
    // Distributed when SPMD_DISTRIBUTED=mpi says so.
    let rt = Runtime::new()?;
    let (me, processes, local) = (rt.process_index()?, rt.process_count()?, rt.local_device_count()?);
    println!("[{me}] process {me} of {processes}: {local} local devices, {} in all", rt.device_count()?);

    // jax.make_mesh((jax.process_count(), jax.local_device_count()), ('p', 'd'))
    let mesh = Mesh::new(&rt, &[processes, local], &["p", "d"])?;
    let (rows, cols) = (2 * processes, 2 * local);
    let host: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
    // jax.device_put of the same host data everywhere: each process puts
    // only the blocks of its own devices.
    let sharding = Sharding::named_text(&mesh, "p, d")?;
    let shape = [rows, cols];
    let x = Array::from_host(&sharding, &shape, &host)?;
    // jax.make_array_from_process_local_data: each process gives only its
    // part, here its row of blocks (rows me*rows/processes onwards).
    let local_shape = sharding.process_local_shape(&shape)?;
    let part: usize = local_shape.iter().product();
    let y = Array::from_process_local_data(&sharding, &shape, &host[me * part..(me + 1) * part])?;
    println!("[{me}] process_local_shape = {local_shape:?}");
    let full = x.is_fully_addressable()?;
    // np.asarray(x) needs every block here: refused over several processes.
    let refused = x.to_host::<f32>().err().map(|e| e.status);
    let to_host = refused.map_or("ok".to_string(), |status| format!("{status:?}"));
    if me == 0 {
        println!("[0] mesh {mesh}");
        println!("[0] x: {}, fully addressable: {full}, to_host: {to_host}", x.sharding()?);
    }

    // Global ops across the processes' devices.
    let col_sums = x.sum(&[0])?;
    let row_sums = x.sum(&[1])?;

    // shard_map: each device's block summed over "p" (one device of every
    // process), and its sum over every device.
    let sums = mesh.shard_map(&[&x], &["p, d"], &["None, d", ""], |ctx| {
        let block = ctx.input(0)?;
        let over_p = ctx.psum(&block, "p")?;
        ctx.set_output(0, &over_p)?;
        let sum: f32 = block.as_slice::<f32>()?.iter().sum();
        let local = ctx.alloc_from(&[], &[sum])?;
        let total = ctx.psum(&local, "(p, d)")?;
        ctx.set_output(1, &total)
    })?;

    // multihost_utils.process_allgather: every process calls it, in the
    // same order.
    let got = Expected {
        col_sums: col_sums.process_allgather::<f32>()?,
        row_sums: row_sums.process_allgather::<f32>()?,
        psum_p: sums[0].process_allgather::<f32>()?,
        total: sums[1].process_allgather::<f32>()?[0],
    };
    let gathered = x.process_allgather::<f32>()?;
    let from_parts = y.process_allgather::<f32>()?;
    if me == 0 {
        println!("[0] process_allgather(x) == host data: {}", gathered == host);
        println!("[0] process_allgather(y) == host data: {}", from_parts == host);
        println!("[0] x.sum(axis=0) = {:?}", got.col_sums);
        println!("[0] x.sum(axis=1) = {:?}", got.row_sums);
        println!("[0] shard_map psum over 'p' = {:?}", got.psum_p);
        println!("[0] shard_map psum of block sums over ('p', 'd') = {:?}", got.total);
    }

    let want = expected(&host, processes, rows, cols);
    let one = processes == 1;
    let mut ok = gathered == host
        && from_parts == host
        && local_shape == [shape[0] / processes, shape[1]]
        && full == one
        && refused == if one { None } else { Some(Status::Unsupported) };
    for (what, got, want) in [
        ("x.sum(axis=0)", &got.col_sums[..], &want.col_sums[..]),
        ("x.sum(axis=1)", &got.row_sums[..], &want.row_sums[..]),
        ("psum over 'p'", &got.psum_p[..], &want.psum_p[..]),
        ("psum over ('p', 'd')", std::slice::from_ref(&got.total), std::slice::from_ref(&want.total)),
    ] {
        if got != want {
            eprintln!("[{me}] {what}: got {got:?}, want {want:?}");
            ok = false;
        }
    }
    if !ok {
        eprintln!("[{me}] wrong results (full {full}, to_host {to_host})");
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
