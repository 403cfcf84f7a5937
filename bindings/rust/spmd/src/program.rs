//! Programs, recorded once and run many times: `jax.jit` for Rust.
//!
//! Experimental (`spmd/experimental/program.h`): the C functions behind
//! this module may change in any release, and so may this module.
use std::fmt;

use crate::error::{check, out_string, Error, Result};
use crate::{c_sizes, from_c_size, out_value, ptr_or_null, sys};
use crate::{Array, DType, Runtime, Sharding};

crate::handle!(
    /// A recorded, compiled program (`jax.jit(f)` lowered and compiled):
    /// made by [`Program::record`], run by [`Program::run`] as often as
    /// needed, from any number of threads at once. `Display` prints it for
    /// people: each value's layout, the data each op moves, the fused
    /// passes and the totals.
    ///
    /// Experimental (`spmd/experimental/program.h`): it may change in any
    /// release.
    ///
    /// ```no_run
    /// # fn main() -> spmd::Result<()> {
    /// use spmd::{Array, DType, InputSpec, Mesh, Program, Runtime, Sharding};
    /// let rt = Runtime::new()?;
    /// let mesh = Mesh::new(&rt, &[2, 4], &["x", "y"])?;
    /// let s = Sharding::named_text(&mesh, "x, y")?;
    /// let f = Program::record(&rt, &[InputSpec::new(&s, DType::F32, &[8, 16])], |x| {
    ///     Ok(vec![((2.0 * x[0].sin()?)? + 1.0)?]) // 2 * jnp.sin(x) + 1, one fused pass
    /// })?;
    /// let a = Array::arange(&s, DType::F32, &[8, 16], 0.0, 1.0)?;
    /// let y = f.run(&[&a])?;
    /// println!("{f}\n{}", y[0]);
    /// # Ok(()) }
    /// ```
    Program,
    sys::spmd_x_program,
    sys::spmd_x_program_destroy
);

thread_local! {
    // How many Program::record closures run on this thread.
    static RECORDING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether a [`Program::record`] closure runs on this thread: a shard_map
/// there is refused, since the library would call its closure at every run
/// of the program, after the closure is gone.
pub(crate) fn recording_on_this_thread() -> bool {
    RECORDING.with(|r| r.get() > 0)
}

// Marks the thread as recording while it lives (a panic included).
struct RecordingOnThisThread;

impl RecordingOnThisThread {
    fn new() -> Self {
        RECORDING.with(|r| r.set(r.get() + 1));
        RecordingOnThisThread
    }
}

impl Drop for RecordingOnThisThread {
    fn drop(&mut self) {
        RECORDING.with(|r| r.set(r.get() - 1));
    }
}

/// One input of a program: the sharding, dtype and global shape every
/// array [`Program::run`] binds to it must have.
#[derive(Clone, Copy, Debug)]
pub struct InputSpec<'a> {
    /// The input's layout, on the program's runtime.
    pub sharding: &'a Sharding,
    /// The element type.
    pub dtype: DType,
    /// The global shape.
    pub shape: &'a [usize],
}

impl<'a> InputSpec<'a> {
    /// An input of this layout, dtype and shape.
    pub fn new(sharding: &'a Sharding, dtype: DType, shape: &'a [usize]) -> InputSpec<'a> {
        InputSpec { sharding, dtype, shape }
    }
}

/// The options of [`Program::record_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RecordOptions<'a> {
    /// The layouts the outputs are brought to (`jax.jit`'s out_shardings):
    /// empty, or one per output the closure returns, `None` keeping the
    /// layout the program places that output in.
    pub out_shardings: &'a [Option<&'a Sharding>],
    /// The inputs whose arrays every [`Program::run`] consumes (`jax.jit`'s
    /// donate_argnums): after the run, calls on those arrays fail with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) (drop
    /// them), and the op reading one last may write its result into its
    /// memory.
    pub donate: &'a [usize],
}

impl<'a> RecordOptions<'a> {
    /// The defaults: every output in the layout the program places it in.
    pub fn new() -> RecordOptions<'a> {
        RecordOptions::default()
    }

    /// Asks for the outputs' layouts, one per output.
    pub fn out_shardings(mut self, shardings: &'a [Option<&'a Sharding>]) -> RecordOptions<'a> {
        self.out_shardings = shardings;
        self
    }

    /// Donates these inputs' arrays to every run.
    pub fn donate(mut self, inputs: &'a [usize]) -> RecordOptions<'a> {
        self.donate = inputs;
        self
    }
}

/// `err` with `what` (the binding's name of the failing part) in front.
fn naming(what: String) -> impl FnOnce(Error) -> Error {
    move |e| Error::new(e.status, format!("{what}: {}", e.message))
}

impl Program {
    /// Records `f` as a program over `inputs` and compiles it: `jax.jit(f)`
    /// traced with abstract arguments of these shardings, dtypes and
    /// shapes.
    ///
    /// `f` receives one abstract [`Array`] per input, arrays with a layout
    /// but no values, as JAX's tracers: every op applied to them (methods,
    /// operators, [`ops`](crate::ops)) records itself into the program
    /// instead of running, and [`Array::reshard`] records a layout
    /// constraint. Each op is checked and placed as it would be eagerly, so
    /// a mistake is the `Err` of the op that makes it, which `f` returns
    /// with `?` and `record` passes on. The arrays `f` returns are the
    /// outputs. Arrays with values that `f` uses are kept as constants.
    ///
    /// Values answer [`Array::shape`], [`Array::dtype`] and the other
    /// questions of layout; what needs values ([`Array::to_host`],
    /// [`Mesh::shard_map`](crate::Mesh::shard_map)) fails on them. They are
    /// no use once `record` returns, since ops on them then fail. Inside
    /// `f` an operand passed by value (`2.0 * x.sin()?`) is donated as it
    /// is eagerly: the value is consumed, and the program decides which
    /// buffers to reuse, so expressions read as they do eagerly.
    ///
    /// Compiling fuses chains of elementwise ops of one shape and layout
    /// into one pass per shard. Errors: a bad input (the message names
    /// `inputs[k]`), an output that is not a value of this program
    /// (`outputs[k]`), no output, or `f`'s own.
    pub fn record<F>(runtime: &Runtime, inputs: &[InputSpec<'_>], f: F) -> Result<Program>
    where
        F: FnOnce(&[Array]) -> Result<Vec<Array>>,
    {
        Program::record_with(runtime, inputs, &RecordOptions::new(), f)
    }

    /// [`Program::record`] with options: the outputs' shardings.
    pub fn record_with<F>(
        runtime: &Runtime,
        inputs: &[InputSpec<'_>],
        options: &RecordOptions<'_>,
        f: F,
    ) -> Result<Program>
    where
        F: FnOnce(&[Array]) -> Result<Vec<Array>>,
    {
        // SAFETY: a live runtime and a valid out pointer.
        let program = Program::from_call(|out| unsafe { sys::spmd_x_program_create(runtime.as_ptr(), out) })?;
        let mut values = Vec::with_capacity(inputs.len());
        for (k, spec) in inputs.iter().enumerate() {
            let shape = c_sizes("shape", spec.shape).map_err(naming(format!("Program::record: inputs[{k}]")))?;
            // SAFETY: live handles; shape holds ndim sizes.
            let value = Array::from_call(|out| unsafe {
                sys::spmd_x_program_input(
                    program.ptr,
                    spec.sharding.as_ptr(),
                    spec.dtype.to_raw(),
                    shape.len(),
                    ptr_or_null(&shape),
                    out,
                )
            })
            .map_err(naming(format!("Program::record: inputs[{k}]")))?;
            values.push(value);
        }
        let outputs = {
            let _recording = RecordingOnThisThread::new();
            f(&values)?
        };
        if outputs.is_empty() {
            return Err(Error::invalid(
                "Program::record: the closure returned no arrays; a program needs at least one output",
            ));
        }
        let shardings = options.out_shardings;
        if !shardings.is_empty() && shardings.len() != outputs.len() {
            return Err(Error::invalid(format!(
                "Program::record: out_shardings: {} shardings for {} outputs",
                shardings.len(),
                outputs.len()
            )));
        }
        for (k, value) in outputs.iter().enumerate() {
            let sharding = shardings.get(k).copied().flatten().map_or(std::ptr::null(), |s| s.as_ptr() as *const _);
            // SAFETY: live handles; a NULL sharding keeps the placed layout.
            check(unsafe { sys::spmd_x_program_output(program.ptr, value.as_ptr(), sharding) })
                .map_err(naming(format!("Program::record: outputs[{k}]")))?;
        }
        for &k in options.donate {
            // SAFETY: a live program.
            check(unsafe { sys::spmd_x_program_donate(program.ptr, k) })
                .map_err(naming("Program::record: donate".to_string()))?;
        }
        // SAFETY: a live program.
        check(unsafe { sys::spmd_x_program_compile(program.ptr) })?;
        Ok(program)
    }

    /// Runs the program: `inputs[k]` is bound to input k, an array with
    /// values of its shape and dtype, laid out by its sharding (left as it
    /// is). Returns the outputs, each what the recorded ops give eagerly,
    /// in values and layout. As with the ops, work may still be running:
    /// [`Array::block_until_ready`] or a copy to the host waits for it.
    /// Errors: a wrong number of inputs, an input of another shape, dtype,
    /// layout or runtime (the message names `inputs[k]`), an op's own.
    pub fn run(&self, inputs: &[&Array]) -> Result<Vec<Array>> {
        let n = self.output_count()?;
        let ptrs: Vec<*const sys::spmd_array> = inputs.iter().map(|a| a.as_ptr() as *const _).collect();
        let mut outs: Vec<*mut sys::spmd_array> = vec![std::ptr::null_mut(); n];
        // SAFETY: live handles; ptrs holds n_inputs handles, outs room for
        // n_outputs, written only on success.
        check(unsafe { sys::spmd_x_program_run(self.ptr, ptrs.len(), ptr_or_null(&ptrs), n, outs.as_mut_ptr()) })?;
        // SAFETY: on success each is a new array handle that we own.
        Ok(outs.into_iter().map(|p| unsafe { Array::from_raw(p) }).collect())
    }

    /// The number of inputs [`Program::run`] takes.
    pub fn input_count(&self) -> Result<usize> {
        // SAFETY: a live program and a valid out pointer.
        from_c_size(out_value(|n| unsafe { sys::spmd_x_program_input_count(self.ptr, n) })?)
    }

    /// The number of outputs [`Program::run`] returns.
    pub fn output_count(&self) -> Result<usize> {
        // SAFETY: a live program and a valid out pointer.
        from_c_size(out_value(|n| unsafe { sys::spmd_x_program_output_count(self.ptr, n) })?)
    }

    /// The program for people, what `Display` prints
    /// (`jax.jit(f).lower(...).as_text()` and `.cost_analysis()`, written
    /// to be read): each value's dtype, shape and partition spec, each op
    /// with the data it moves and its flops, the fused passes and the
    /// totals.
    pub fn text(&self) -> Result<String> {
        // SAFETY: a live program and a valid out pointer.
        out_string(|s| unsafe { sys::spmd_x_program_text(self.ptr, s) })
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text().map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
