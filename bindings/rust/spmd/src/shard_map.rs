//! shard_map: a closure run on every device of a mesh at once, seeing its
//! local blocks, with explicit collectives.
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fmt;
use std::io::Write;
use std::marker::PhantomData;
use std::mem::{size_of, ManuallyDrop};
use std::ops::Deref;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::Once;

use crate::error::{c_string, check, from_c, Error, Result};
use crate::{c_sizes, from_c_size, init_struct, mut_ptr_or_null, out_value, ptr_or_null, sys};
use crate::{Array, CStrings, DType, Element, Mesh, Spec};
use crate::{MemoryKind, Status, MAX_NDIM};

/// Options of a shard_map.
#[derive(Clone, Copy, Default)]
pub struct ShardMapOptions<'a> {
    /// Like check_rep: verify that outputs are equal along every mesh axis
    /// their out_spec leaves out.
    pub check_rep: bool,
    /// How long a collective waits for its peers, in milliseconds (0:
    /// `$SPMD_COLLECTIVE_TIMEOUT_MS` if set, else 60000).
    pub timeout_ms: i64,
    /// Where [`ShardContext::print`] goes: called with the device and the
    /// text, from device threads, one call at a time. `None`: one line per
    /// call on Rust's stdout (so it interleaves correctly with `println!`).
    pub print: Option<&'a PrintFn<'a>>,
}

impl<'a> ShardMapOptions<'a> {
    /// The defaults: no check_rep, the default timeout, printing to stdout.
    pub fn new() -> ShardMapOptions<'a> {
        ShardMapOptions::default()
    }

    /// Sets [`ShardMapOptions::check_rep`].
    pub fn check_rep(mut self, check_rep: bool) -> ShardMapOptions<'a> {
        self.check_rep = check_rep;
        self
    }

    /// Sets [`ShardMapOptions::timeout_ms`].
    pub fn timeout_ms(mut self, timeout_ms: i64) -> ShardMapOptions<'a> {
        self.timeout_ms = timeout_ms;
        self
    }

    /// Sets [`ShardMapOptions::print`].
    pub fn print(mut self, print: &'a PrintFn<'a>) -> ShardMapOptions<'a> {
        self.print = Some(print);
        self
    }
}

impl fmt::Debug for ShardMapOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardMapOptions")
            .field("check_rep", &self.check_rep)
            .field("timeout_ms", &self.timeout_ms)
            .field("print", &self.print.map(|_| "<fn>"))
            .finish()
    }
}

/// The closure of a shard_map, as the trampoline sees it.
type ShardFn<'f> = dyn Fn(&mut ShardContext) -> Result<()> + Sync + 'f;
/// A print sink of [`ShardMapOptions::print`]: (device, text).
pub type PrintFn<'f> = dyn Fn(usize, &str) + Sync + 'f;
/// spmd_shard_map or spmd_shard_map_text, whose arguments differ only in
/// the type `S` of the specs (handles or strings).
type ShardMapEntry<S> = unsafe extern "C" fn(
    *const sys::spmd_mesh,
    sys::spmd_shard_fn,
    *mut c_void,
    usize,
    *const *mut sys::spmd_array,
    *const S,
    usize,
    *const S,
    *const sys::spmd_shard_map_options,
    *mut *mut sys::spmd_array,
) -> sys::spmd_status;

/// A partition spec as [`Mesh::shard_map`] takes it: a [`Spec`], or its
/// text as [`Spec::parse`] reads it ("x", "(x, y), None", "P('x')", "" for
/// P()). Implemented for `Spec`, `str`, `String` and references to them, so
/// the specs of one call are `&["x"]` or `&[&spec]`.
pub trait IntoSpec: spec_arg::Sealed {
    #[doc(hidden)]
    fn spec_arg(&self) -> spec_arg::SpecArg<'_>;
}

mod spec_arg {
    /// What an [`IntoSpec`](super::IntoSpec) is.
    pub enum SpecArg<'a> {
        Spec(&'a crate::Spec),
        Text(&'a str),
    }

    pub trait Sealed {}
    impl Sealed for crate::Spec {}
    impl Sealed for str {}
    impl Sealed for String {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}
use spec_arg::SpecArg;

impl IntoSpec for Spec {
    fn spec_arg(&self) -> SpecArg<'_> {
        SpecArg::Spec(self)
    }
}

impl IntoSpec for str {
    fn spec_arg(&self) -> SpecArg<'_> {
        SpecArg::Text(self)
    }
}

impl IntoSpec for String {
    fn spec_arg(&self) -> SpecArg<'_> {
        SpecArg::Text(self)
    }
}

impl<T: IntoSpec + ?Sized> IntoSpec for &T {
    fn spec_arg(&self) -> SpecArg<'_> {
        (**self).spec_arg()
    }
}

thread_local! {
    /// Whether this thread runs a shard_map closure: its panics are caught
    /// and reported in the shard_map's error, not by the panic hook.
    static IN_CLOSURE: Cell<bool> = const { Cell::new(false) };
    /// Where the closure's last panic happened ("src/main.rs:10:5").
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Wraps the process's panic hook, once, so that a panic inside a
/// shard_map closure prints nothing (no message and backtrace per device):
/// the hook notes where it happened, and the trampoline puts that and the
/// message in the device's error. Panics elsewhere reach the previous hook
/// unchanged. A hook set later with `std::panic::set_hook` replaces this
/// one; such panics are then printed again, and still reported.
fn quiet_closure_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CLOSURE.try_with(Cell::get).unwrap_or(false) {
                let at = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                let _ = PANIC_AT.try_with(|p| *p.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Marks this thread as running a closure until dropped (restoring the
/// previous mark, so nested calls stay marked).
struct InClosure {
    was: bool,
}

impl InClosure {
    fn enter() -> InClosure {
        let _ = PANIC_AT.try_with(|p| p.borrow_mut().take());
        InClosure { was: IN_CLOSURE.with(|c| c.replace(true)) }
    }

    /// Where the last panic on this thread happened, if the hook saw it.
    fn panic_location(&self) -> Option<String> {
        PANIC_AT.try_with(|p| p.borrow_mut().take()).ok().flatten()
    }
}

impl Drop for InClosure {
    fn drop(&mut self) {
        let _ = IN_CLOSURE.try_with(|c| c.set(self.was));
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_string()
    }
}

fn message_c(text: &str) -> CString {
    CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

/// The per-device callback handed to C: runs the closure, turning a
/// returned error or a panic into this device's error (spmd_ctx_error), so
/// no panic unwinds through C.
unsafe extern "C" fn shard_trampoline(ctx: *mut sys::spmd_ctx, user_data: *mut c_void) -> sys::spmd_status {
    // SAFETY: user_data is the &&ShardFn that run_shard_map passed, alive
    // for the whole shard_map; ctx is this callback's context.
    let f: &&ShardFn<'_> = &*(user_data as *const &ShardFn<'_>);
    let marked = InClosure::enter();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut context = ShardContext { ctx, _not_send: PhantomData };
        f(&mut context)
    }));
    let (status, message) = match outcome {
        Ok(Ok(())) => return sys::SPMD_OK,
        Ok(Err(e)) => (e.status, e.message),
        Err(payload) => {
            let at = marked.panic_location().map(|at| format!(" at {at}")).unwrap_or_default();
            (Status::Callback, format!("shard_map closure panicked{at}: {}", panic_text(&*payload)))
        }
    };
    drop(marked);
    let message = message_c(&message);
    sys::spmd_ctx_error(ctx, status.to_raw(), message.as_ptr())
}

unsafe extern "C" fn print_trampoline(device: c_int, text: *const c_char, user_data: *mut c_void) {
    let text = from_c(text);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if user_data.is_null() {
            let out = std::io::stdout();
            let mut out = out.lock();
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        } else {
            // SAFETY: user_data is the &&PrintFn that run_shard_map passed.
            let f: &&PrintFn<'_> = &*(user_data as *const &PrintFn<'_>);
            f(usize::try_from(device).unwrap_or(usize::MAX), &text);
        }
    }));
}

impl Mesh {
    /// shard_map(f, mesh, in_specs, out_specs)(*inputs): runs `f` on every
    /// device of the mesh at once, each seeing its blocks of the inputs
    /// (resharded to `in_specs` as needed), and assembles the outputs each
    /// device sets by `out_specs`.
    ///
    /// `f` runs concurrently on the library's device threads, hence
    /// `Fn + Sync`. A device fails by returning an `Err` (its status and
    /// message reach the caller, tagged with the device) or by panicking
    /// (caught: [`Status::Callback`] with the panic's message); either
    /// fails the shard_map. The panic is reported there, not printed by the
    /// panic hook on every device thread.
    ///
    /// The specs are [`Spec`]s or their text ([`IntoSpec`]): `&["x"]`,
    /// `&[""]` for P(), `&[&spec]`. One slice holds one kind; a call
    /// without inputs names its type (`&[] as &[&str]`).
    ///
    /// ```no_run
    /// # fn main() -> spmd::Result<()> {
    /// use spmd::{Array, DType, Mesh, Runtime, Sharding};
    /// let rt = Runtime::new()?;
    /// let mesh = Mesh::new(&rt, &[4], &["x"])?;
    /// let x = Array::arange(&Sharding::named_text(&mesh, "x")?, DType::F32, &[8], 0.0, 1.0)?;
    /// let out = mesh.shard_map(&[&x], &["x"], &[""], |ctx| {
    ///     let block = ctx.input(0)?;
    ///     let mut sum = ctx.alloc(DType::F32, &[])?;
    ///     sum.as_mut_slice::<f32>()?[0] = block.as_slice::<f32>()?.iter().sum();
    ///     let total = ctx.psum(&sum, "x")?;
    ///     ctx.set_output(0, &total)
    /// })?;
    /// assert_eq!(out[0].to_host::<f32>()?, vec![28.0]);
    /// # Ok(()) }
    /// ```
    pub fn shard_map<I, O, F>(&self, inputs: &[&Array], in_specs: &[I], out_specs: &[O], f: F) -> Result<Vec<Array>>
    where
        I: IntoSpec,
        O: IntoSpec,
        F: Fn(&mut ShardContext) -> Result<()> + Sync,
    {
        self.shard_map_with(inputs, in_specs, out_specs, &ShardMapOptions::new(), f)
    }

    /// [`Mesh::shard_map`] with options: `&ShardMapOptions::new().check_rep(true)`.
    pub fn shard_map_with<I, O, F>(
        &self,
        inputs: &[&Array],
        in_specs: &[I],
        out_specs: &[O],
        options: &ShardMapOptions<'_>,
        f: F,
    ) -> Result<Vec<Array>>
    where
        I: IntoSpec,
        O: IntoSpec,
        F: Fn(&mut ShardContext) -> Result<()> + Sync,
    {
        let ins: Vec<SpecArg<'_>> = in_specs.iter().map(|s| s.spec_arg()).collect();
        let outs: Vec<SpecArg<'_>> = out_specs.iter().map(|s| s.spec_arg()).collect();
        if let (Some(ins), Some(outs)) = (all_text(&ins), all_text(&outs)) {
            // All text: the library parses them (spmd_shard_map_text).
            return self.shard_map_text(inputs, &ins, &outs, options, f);
        }
        let parsed_ins = parse_specs("in_specs", &ins)?;
        let parsed_outs = parse_specs("out_specs", &outs)?;
        let ins = spec_ptrs(&ins, &parsed_ins);
        let outs = spec_ptrs(&outs, &parsed_outs);
        self.run_shard_map(sys::spmd_shard_map, inputs, &ins, &outs, options, &f)
    }

    /// [`Mesh::shard_map_with`] with the specs as text ("x", "(x, y), None",
    /// "P('x')", "" for P()), which [`Mesh::shard_map_with`] also takes.
    pub fn shard_map_text<F>(
        &self,
        inputs: &[&Array],
        in_specs: &[&str],
        out_specs: &[&str],
        options: &ShardMapOptions<'_>,
        f: F,
    ) -> Result<Vec<Array>>
    where
        F: Fn(&mut ShardContext) -> Result<()> + Sync,
    {
        let ins = CStrings::new("Mesh::shard_map_text: in_specs", in_specs)?;
        let outs = CStrings::new("Mesh::shard_map_text: out_specs", out_specs)?;
        self.run_shard_map(sys::spmd_shard_map_text, inputs, ins.ptrs(), outs.ptrs(), options, &f)
    }

    /// Runs `entry` with the trampolines, `f` and the options, and takes the
    /// outputs (one per out spec).
    fn run_shard_map<S>(
        &self,
        entry: ShardMapEntry<S>,
        inputs: &[&Array],
        in_specs: &[S],
        out_specs: &[S],
        options: &ShardMapOptions<'_>,
        f: &ShardFn<'_>,
    ) -> Result<Vec<Array>> {
        if inputs.len() != in_specs.len() {
            return Err(Error::invalid(format!("shard_map: {} inputs but {} in_specs", inputs.len(), in_specs.len())));
        }
        if crate::program::recording_on_this_thread() {
            return Err(Error::invalid(
                "shard_map: inside Program::record: a shard_map records into a program from C only (the library \
                 would call the closure at every run of the program, after this call returns); call it outside \
                 the recording",
            ));
        }
        quiet_closure_panics();
        let mut o = init_struct(sys::spmd_shard_map_options_init)?;
        o.check_rep = options.check_rep as i32;
        o.timeout_ms = options.timeout_ms;
        o.print_fn = Some(print_trampoline);
        o.print_user_data =
            options.print.as_ref().map_or(std::ptr::null_mut(), |p| p as *const &PrintFn<'_> as *mut c_void);
        let arrays: Vec<*mut sys::spmd_array> = inputs.iter().map(|a| a.as_ptr()).collect();
        let mut outputs: Vec<*mut sys::spmd_array> = vec![std::ptr::null_mut(); out_specs.len()];
        let ud = &f as *const &ShardFn<'_> as *mut c_void;
        // SAFETY: every slice holds its count of live handles or strings;
        // options, f and the print sink outlive the call; outputs has room
        // for n_out arrays.
        check(unsafe {
            entry(
                self.as_ptr(),
                Some(shard_trampoline),
                ud,
                arrays.len(),
                ptr_or_null(&arrays),
                ptr_or_null(in_specs),
                out_specs.len(),
                ptr_or_null(out_specs),
                &o,
                mut_ptr_or_null(&mut outputs),
            )
        })?;
        // SAFETY: on success, n_out new arrays the caller owns.
        Ok(outputs.into_iter().map(|p| unsafe { Array::from_raw(p) }).collect())
    }
}

/// The texts of `args` when every one is text.
fn all_text<'a>(args: &[SpecArg<'a>]) -> Option<Vec<&'a str>> {
    args.iter().map(|a| if let SpecArg::Text(t) = a { Some(*t) } else { None }).collect()
}

/// The specs given as text among `args`, parsed (`None` for the others);
/// the error names the argument and its index.
fn parse_specs(what: &str, args: &[SpecArg<'_>]) -> Result<Vec<Option<Spec>>> {
    let parse = |(i, a): (usize, &SpecArg<'_>)| match a {
        SpecArg::Spec(_) => Ok(None),
        SpecArg::Text(t) => Spec::parse(t)
            .map(Some)
            .map_err(|e| Error::new(e.status, format!("Mesh::shard_map: {what}[{i}]: {}", e.message))),
    };
    args.iter().enumerate().map(parse).collect()
}

/// The spec handles of `args`, the parsed ones from `parsed`.
fn spec_ptrs(args: &[SpecArg<'_>], parsed: &[Option<Spec>]) -> Vec<*const sys::spmd_spec> {
    let ptr = |(a, p): (&SpecArg<'_>, &Option<Spec>)| match (a, p) {
        (SpecArg::Spec(s), _) => s.as_ptr() as *const _,
        (_, Some(s)) => s.as_ptr() as *const _,
        (SpecArg::Text(_), None) => std::ptr::null(),
    };
    args.iter().zip(parsed).map(ptr).collect()
}

/// The per-device view a shard_map closure receives (`spmd_ctx`).
///
/// Valid only inside the closure call and only on its thread: it is neither
/// `Send` nor `Sync`, and the closure gets it as `&mut`, so it cannot
/// escape. The [`Block`]s it gives borrow it.
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// fn escape(ctx: &mut spmd::ShardContext) {
///     needs_send(ctx); // error: `*mut spmd_ctx` cannot be sent between threads safely
/// }
/// ```
pub struct ShardContext {
    ctx: *mut sys::spmd_ctx,
    _not_send: PhantomData<*mut ()>,
}

/// The mesh a shard_map runs over, borrowed from the context (not
/// destroyed when dropped).
pub struct MeshRef<'c> {
    mesh: ManuallyDrop<Mesh>,
    _ctx: PhantomData<&'c ShardContext>,
}

impl Deref for MeshRef<'_> {
    type Target = Mesh;
    fn deref(&self) -> &Mesh {
        &self.mesh
    }
}

/// Runs a call that fills a `spmd_block` made by `spmd_block_init`.
fn out_block(call: impl FnOnce(*mut sys::spmd_block) -> sys::spmd_status) -> Result<sys::spmd_block> {
    let mut b = init_struct(sys::spmd_block_init)?;
    check(call(&mut b))?;
    Ok(b)
}

impl ShardContext {
    /// The global id of this device.
    pub fn device_id(&self) -> Result<usize> {
        // SAFETY: our live context, on its thread.
        from_c_size(out_value(|d| unsafe { sys::spmd_ctx_device_id(self.ctx, d) })?)
    }

    /// The mesh of the shard_map.
    pub fn mesh(&self) -> Result<MeshRef<'_>> {
        let mut m: *const sys::spmd_mesh = std::ptr::null();
        // SAFETY: the mesh is borrowed for the shard_map; never destroyed here.
        check(unsafe { sys::spmd_ctx_mesh(self.ctx, &mut m) })?;
        Ok(MeshRef { mesh: ManuallyDrop::new(unsafe { Mesh::from_raw(m as *mut _) }), _ctx: PhantomData })
    }

    /// The queue this device's work goes to, for the closure's own kernels:
    /// on the cuda platform the device's `cudaStream_t` (cast the pointer to
    /// it), `None` on platforms whose work is not queued (cpu, sim). Kernels
    /// queued on it run after the inputs are ready and before any use of the
    /// blocks they write (collectives, outputs): the way to compute on
    /// [`MemoryKind::Device`] blocks, through [`Block::as_ptr`].
    pub fn stream(&self) -> Result<Option<NonNull<c_void>>> {
        let mut s: *mut c_void = std::ptr::null_mut();
        // SAFETY: our live context, valid out pointer.
        check(unsafe { sys::spmd_ctx_stream(self.ctx, &mut s) })?;
        Ok(NonNull::new(s))
    }

    /// jax.lax.axis_index(axes): this device's index over `axes` ("x",
    /// "(x, y)", "()").
    pub fn axis_index(&self, axes: &str) -> Result<usize> {
        let c = c_string("ShardContext::axis_index", axes)?;
        // SAFETY: our live context; valid string and out pointer.
        from_c_size(out_value(|i| unsafe { sys::spmd_ctx_axis_index(self.ctx, c.as_ptr(), i) })?)
    }

    /// jax.lax.axis_size(axes).
    pub fn axis_size(&self, axes: &str) -> Result<usize> {
        let c = c_string("ShardContext::axis_size", axes)?;
        // SAFETY: our live context; valid string and out pointer.
        from_c_size(out_value(|n| unsafe { sys::spmd_ctx_axis_size(self.ctx, c.as_ptr(), n) })?)
    }

    /// Number of inputs.
    pub fn input_count(&self) -> Result<usize> {
        // SAFETY: our live context, valid out pointer.
        out_value(|n| unsafe { sys::spmd_ctx_input_count(self.ctx, n) })
    }

    /// This device's block of input `index` (read-only).
    pub fn input(&self, index: usize) -> Result<Block<'_>> {
        // SAFETY: our live context; the block initialised by spmd_block_init.
        Ok(Block::new(out_block(|b| unsafe { sys::spmd_ctx_input(self.ctx, index, b) })?, false, Origin::Input(index)))
    }

    /// A new zero-filled, writable block on this device, owned by the
    /// context.
    pub fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<Block<'_>> {
        let shape = c_sizes("ShardContext::alloc: shape", shape)?;
        // SAFETY: shape holds ndim sizes; the block initialised by spmd_block_init.
        let b = out_block(|b| unsafe {
            sys::spmd_ctx_alloc(self.ctx, dtype.to_raw(), shape.len(), ptr_or_null(&shape), b)
        })?;
        Ok(Block::new(b, true, Origin::Alloc))
    }

    /// A new block holding a copy of `data` in `shape`, written by the host:
    /// an error where the context's blocks are device memory
    /// ([`MemoryKind::Device`]).
    pub fn alloc_from<T: Element>(&self, shape: &[usize], data: &[T]) -> Result<Block<'_>> {
        let mut b = self.alloc(T::DTYPE, shape)?;
        b.host_memory("ShardContext::alloc_from")?;
        let dst = b.as_mut_slice::<T>()?;
        if dst.len() != data.len() {
            return Err(Error::invalid(format!(
                "ShardContext::alloc_from: shape {shape:?} holds {} elements, data {}",
                dst.len(),
                data.len()
            )));
        }
        dst.copy_from_slice(data);
        Ok(b)
    }

    /// The block as an [`Array`] on this device alone, so that the ops
    /// ([`crate::ops`], the methods and operators of [`Array`]) apply to it
    /// and run this device's own kernels; [`ShardContext::block`] turns a
    /// result back into a block. An input's block is shared with the array,
    /// any other block copied.
    pub fn array(&self, block: &Block<'_>) -> Result<Array> {
        // SAFETY: our live context; the block is one of this context's.
        Array::from_call(|out| unsafe { sys::spmd_ctx_array(self.ctx, &block.raw, out) })
    }

    /// An array on this device alone (from [`ShardContext::array`] and ops on
    /// such arrays) as a block of the context, ready to read and read-only:
    /// for [`ShardContext::set_output`] or a collective.
    pub fn block(&self, array: &Array) -> Result<Block<'_>> {
        // SAFETY: our live context and array; the block initialised by spmd_block_init.
        let b = out_block(|b| unsafe { sys::spmd_ctx_block(self.ctx, array.as_ptr(), b) })?;
        Ok(Block::new(b, false, Origin::Result("ShardContext::block")))
    }

    /// Sets this device's block of output `index`.
    pub fn set_output(&self, index: usize, block: &Block<'_>) -> Result<()> {
        // SAFETY: our live context; the block is one of this context's.
        check(unsafe { sys::spmd_ctx_set_output(self.ctx, index, &block.raw) })
    }

    /// jax.debug.print: hands `text` to the print sink with this device's id.
    pub fn print(&self, text: &str) -> Result<()> {
        let c = c_string("ShardContext::print", text)?;
        // SAFETY: our live context, valid string.
        check(unsafe { sys::spmd_ctx_print(self.ctx, c.as_ptr()) })
    }

    /// Formatted [`ShardContext::print`]: `ctx.printf(format_args!("({},)", n))`,
    /// or [`debug_print!`](crate::debug_print)`(ctx, "({},)", n)` (the
    /// binding formats with Rust's `format!` machinery instead of C's
    /// variadic spmd_ctx_printf).
    pub fn printf(&self, args: fmt::Arguments<'_>) -> Result<()> {
        self.print(&fmt::format(args))
    }

    /// Runs a collective on `x`. Peers may still read `x` after this
    /// device's call returns, so `x` becomes read-only from now on.
    fn collective(
        &self,
        what: &'static str,
        x: &Block<'_>,
        axes: &str,
        call: impl FnOnce(*const sys::spmd_block, *const c_char, *mut sys::spmd_block) -> sys::spmd_status,
    ) -> Result<Block<'_>> {
        let axes = c_string(what, axes)?;
        x.writable.set(false);
        let out = out_block(|out| call(&x.raw, axes.as_ptr(), out))?;
        // A result sharing x's memory (a collective over "()") is read-only too.
        let writable = out.data != x.raw.data || x.is_empty();
        Ok(Block::new(out, writable, Origin::Result(what)))
    }

    /// jax.lax.psum: the sum of x over each group of `axes`.
    pub fn psum(&self, x: &Block<'_>, axes: &str) -> Result<Block<'_>> {
        // SAFETY: our live context; valid blocks and string.
        self.collective("ShardContext::psum", x, axes, |x, a, out| unsafe { sys::spmd_ctx_psum(self.ctx, x, a, out) })
    }

    /// jax.lax.pmean.
    pub fn pmean(&self, x: &Block<'_>, axes: &str) -> Result<Block<'_>> {
        // SAFETY: as psum.
        self.collective("ShardContext::pmean", x, axes, |x, a, out| unsafe { sys::spmd_ctx_pmean(self.ctx, x, a, out) })
    }

    /// jax.lax.pmax.
    pub fn pmax(&self, x: &Block<'_>, axes: &str) -> Result<Block<'_>> {
        // SAFETY: as psum.
        self.collective("ShardContext::pmax", x, axes, |x, a, out| unsafe { sys::spmd_ctx_pmax(self.ctx, x, a, out) })
    }

    /// jax.lax.pmin.
    pub fn pmin(&self, x: &Block<'_>, axes: &str) -> Result<Block<'_>> {
        // SAFETY: as psum.
        self.collective("ShardContext::pmin", x, axes, |x, a, out| unsafe { sys::spmd_ctx_pmin(self.ctx, x, a, out) })
    }

    /// jax.lax.all_gather(x, axes, axis=axis, tiled=tiled).
    pub fn all_gather(&self, x: &Block<'_>, axes: &str, axis: isize, tiled: bool) -> Result<Block<'_>> {
        // SAFETY: as psum.
        self.collective("ShardContext::all_gather", x, axes, |x, a, out| unsafe {
            sys::spmd_ctx_all_gather(self.ctx, x, a, axis as i64, tiled as i32, out)
        })
    }

    /// jax.lax.psum_scatter(x, axes, scatter_dimension=dim, tiled=tiled).
    pub fn psum_scatter(&self, x: &Block<'_>, axes: &str, scatter_dimension: isize, tiled: bool) -> Result<Block<'_>> {
        // SAFETY: as psum.
        self.collective("ShardContext::psum_scatter", x, axes, |x, a, out| unsafe {
            sys::spmd_ctx_psum_scatter(self.ctx, x, a, scatter_dimension as i64, tiled as i32, out)
        })
    }

    /// jax.lax.all_to_all(x, axes, split_axis, concat_axis, tiled=tiled).
    pub fn all_to_all(
        &self,
        x: &Block<'_>,
        axes: &str,
        split_axis: isize,
        concat_axis: isize,
        tiled: bool,
    ) -> Result<Block<'_>> {
        // SAFETY: as psum.
        self.collective("ShardContext::all_to_all", x, axes, |x, a, out| unsafe {
            sys::spmd_ctx_all_to_all(self.ctx, x, a, split_axis as i64, concat_axis as i64, tiled as i32, out)
        })
    }

    /// jax.lax.ppermute(x, axes, perm): (source, dest) pairs of axis indices.
    pub fn ppermute(&self, x: &Block<'_>, axes: &str, pairs: &[(usize, usize)]) -> Result<Block<'_>> {
        let flat: Vec<usize> = pairs.iter().flat_map(|&(s, d)| [s, d]).collect();
        let flat = c_sizes("ShardContext::ppermute: pairs", &flat)?;
        // SAFETY: flat holds 2*npairs values.
        self.collective("ShardContext::ppermute", x, axes, |x, a, out| unsafe {
            sys::spmd_ctx_ppermute(self.ctx, x, a, pairs.len(), ptr_or_null(&flat), out)
        })
    }
}

/// Where a block came from, to name it in errors.
#[derive(Debug, Clone, Copy)]
enum Origin {
    Input(usize),
    Alloc,
    Result(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Input(i) => write!(f, "the block of input {i}"),
            Origin::Alloc => f.write_str("the block from ShardContext::alloc"),
            Origin::Result(what) => write!(f, "the result of {what}"),
        }
    }
}

/// A dense row-major local block on one device (`spmd_block`), borrowed
/// from its [`ShardContext`]: its memory lives until the shard_map returns,
/// and the borrow keeps the block inside the closure call.
///
/// Input blocks are read-only; blocks from [`ShardContext::alloc`] and from
/// collectives are writable until they are passed to a collective (whose
/// peers may still read them afterwards). The slices need host memory
/// ([`Block::memory_kind`]); device memory is reached through
/// [`Block::as_ptr`] and [`ShardContext::stream`].
pub struct Block<'c> {
    raw: sys::spmd_block,
    /// The local shape as `usize`s (the C struct holds `int64_t`s).
    shape: [usize; MAX_NDIM],
    writable: Cell<bool>,
    origin: Origin,
    _ctx: PhantomData<&'c ShardContext>,
}

impl<'c> Block<'c> {
    fn new(raw: sys::spmd_block, writable: bool, origin: Origin) -> Block<'c> {
        let mut shape = [0usize; MAX_NDIM];
        for (s, &r) in shape.iter_mut().zip(&raw.shape[..raw.ndim.min(MAX_NDIM)]) {
            *s = usize::try_from(r).unwrap_or(0);
        }
        Block { raw, shape, writable: Cell::new(writable), origin, _ctx: PhantomData }
    }

    /// Where the data lies: [`MemoryKind::Host`] (cpu) and
    /// [`MemoryKind::HostMapped`] (sim; cuda with mapped callback memory)
    /// are host memory the slices read and write; [`MemoryKind::Device`]
    /// (cuda) is device memory only kernels on [`ShardContext::stream`] may
    /// touch. `None` for a value this binding does not know.
    pub fn memory_kind(&self) -> Option<MemoryKind> {
        MemoryKind::from_raw(self.raw.memory_kind)
    }

    /// The address of the data, of the block's [`Block::memory_kind`] (a
    /// device pointer for kernels on [`ShardContext::stream`] when
    /// [`MemoryKind::Device`]); possibly NULL for an empty block. Valid
    /// while the block is; writing through it follows
    /// [`Block::as_mut_slice`]'s rules ([`Block::is_writable`]).
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.data
    }

    /// The element type.
    pub fn dtype(&self) -> Result<DType> {
        DType::from_raw_checked(self.raw.dtype)
    }

    /// The local shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.raw.ndim.min(MAX_NDIM)]
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape().iter().product()
    }

    /// Whether the block holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether [`Block::as_mut_slice`] may write it.
    pub fn is_writable(&self) -> bool {
        self.writable.get()
    }

    /// Refuses a block host code must not touch: a device pointer read as a
    /// slice would fault, or read another allocation's bytes.
    fn host_memory(&self, what: &str) -> Result<()> {
        let kind = match self.memory_kind() {
            Some(kind) if kind.is_host_addressable() => return Ok(()),
            Some(MemoryKind::Device) => "device memory".to_string(),
            _ => format!("memory of kind {} (not host memory)", self.raw.memory_kind),
        };
        Err(Error::invalid(format!(
            "{what}: {} is {kind}, which host code must not touch: queue kernels on ShardContext::stream \
             with Block::as_ptr, or ask for mapped callback memory \
             (RuntimeBuilder::callback_memory(MemoryKind::HostMapped), or SPMD_CALLBACK_MEMORY=mapped)",
            self.origin
        )))
    }

    /// The number of elements, once the block is known to be host memory
    /// holding `want` at a non-NULL pointer aligned for T.
    fn checked<T>(&self, want: DType, what: &str) -> Result<usize> {
        self.host_memory(&format!("Block::{what}"))?;
        let have = self.dtype()?;
        if have != want {
            return Err(Error::invalid(format!("Block::{what}: the block holds {have}, not {want}")));
        }
        let n = self.len();
        if n > 0 && (self.raw.data.is_null() || (self.raw.data as usize) % std::mem::align_of::<T>() != 0) {
            return Err(Error::new(Status::Internal, format!("Block::{what}: misaligned or NULL block data")));
        }
        Ok(n)
    }

    /// [`Block::checked`] for an element type, whose values are checked too.
    fn elements<T: Element>(&self, what: &str) -> Result<usize> {
        let n = self.checked::<T>(T::DTYPE, what)?;
        // SAFETY: n elements of T at an aligned non-NULL pointer, alive while
        // the context is.
        let bytes = unsafe { std::slice::from_raw_parts(self.data::<u8>(n), n * size_of::<T>()) };
        if !T::valid_bytes(bytes) {
            return Err(Error::new(Status::Internal, format!("Block::{what}: invalid bool bytes")));
        }
        Ok(n)
    }

    /// [`Block::checked`] for the raw bits of a float16 or bfloat16 block.
    fn half(&self, what: &str) -> Result<usize> {
        let d = self.dtype()?;
        if !d.is_half() {
            return Err(Error::invalid(format!("Block::{what}: {d} is not float16 or bfloat16")));
        }
        self.checked::<u16>(d, what)
    }

    fn check_writable(&self, what: &str) -> Result<()> {
        if !self.writable.get() {
            return Err(Error::invalid(format!(
                "Block::{what}: the block is read-only (an input, or passed to a collective)"
            )));
        }
        Ok(())
    }

    /// The data as a pointer to `n` checked elements of T: dangling (never
    /// read) when `n` is 0, as a slice needs a non-NULL pointer.
    fn data<T>(&self, n: usize) -> *mut T {
        if n == 0 {
            NonNull::dangling().as_ptr()
        } else {
            self.raw.data as *mut T
        }
    }

    /// The elements, for T of the block's dtype.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        let n = self.elements::<T>("as_slice")?;
        // SAFETY: n checked elements of T, alive while the context is;
        // nothing writes them while &self is held (as_mut_slice needs
        // &mut self, and aliasing results are read-only).
        Ok(unsafe { std::slice::from_raw_parts(self.data(n), n) })
    }

    /// The elements, writable: blocks from alloc and collectives only.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        let n = self.elements::<T>("as_mut_slice")?;
        self.check_writable("as_mut_slice")?;
        // SAFETY: as as_slice, and &mut self makes this the only view.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data(n), n) })
    }

    /// The raw bits of a float16 or bfloat16 block.
    pub fn as_bits(&self) -> Result<&[u16]> {
        let n = self.half("as_bits")?;
        // SAFETY: as as_slice.
        Ok(unsafe { std::slice::from_raw_parts(self.data(n), n) })
    }

    /// The raw bits of a writable float16 or bfloat16 block.
    pub fn as_mut_bits(&mut self) -> Result<&mut [u16]> {
        let n = self.half("as_mut_bits")?;
        self.check_writable("as_mut_bits")?;
        // SAFETY: as as_mut_slice.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data(n), n) })
    }
}

impl fmt::Debug for Block<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Block")
            .field("dtype", &self.dtype().ok())
            .field("shape", &self.shape())
            .field("writable", &self.is_writable())
            .field("memory_kind", &self.memory_kind())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block made by hand over host memory that reads fine, saying it is
    /// of `kind`: only the memory kind check can refuse it. No GPU needed.
    fn block_over<T>(data: &mut [T], dtype: DType, kind: sys::spmd_memory_kind) -> Block<'static> {
        let mut raw = init_struct(sys::spmd_block_init).unwrap();
        raw.data = data.as_mut_ptr() as *mut c_void;
        raw.dtype = dtype.to_raw();
        raw.ndim = 1;
        raw.shape[0] = data.len() as i64;
        raw.memory_kind = kind;
        Block::new(raw, true, Origin::Input(1))
    }

    fn assert_device_refusal(e: Error, what: &str) {
        assert_eq!(e.status, Status::InvalidArgument, "{e}");
        for part in
            [what, "the block of input 1 is device memory", "ShardContext::stream", "SPMD_CALLBACK_MEMORY=mapped"]
        {
            assert!(e.message.contains(part), "{:?} does not say {:?}", e.message, part);
        }
    }

    #[test]
    fn device_blocks_are_never_host_slices() {
        let mut data = [1.0f32, 2.0, 3.0, 4.0];
        let mut b = block_over(&mut data, DType::F32, sys::SPMD_MEMORY_DEVICE);
        assert_eq!(b.memory_kind(), Some(MemoryKind::Device));
        assert_eq!(b.as_ptr(), data.as_mut_ptr() as *mut c_void);
        assert_device_refusal(b.as_slice::<f32>().unwrap_err(), "Block::as_slice");
        assert_device_refusal(b.as_mut_slice::<f32>().unwrap_err(), "Block::as_mut_slice");
        // The kind is checked first: a wrong type does not hide it.
        assert_device_refusal(b.as_slice::<i32>().unwrap_err(), "Block::as_slice");

        let mut bits = [0x3c00u16; 4];
        let mut h = block_over(&mut bits, DType::F16, sys::SPMD_MEMORY_DEVICE);
        assert_device_refusal(h.as_bits().unwrap_err(), "Block::as_bits");
        assert_device_refusal(h.as_mut_bits().unwrap_err(), "Block::as_mut_bits");
        assert_eq!(bits, [0x3c00; 4]);
    }

    #[test]
    fn host_and_mapped_blocks_are_slices() {
        for kind in [sys::SPMD_MEMORY_HOST, sys::SPMD_MEMORY_HOST_MAPPED] {
            let mut data = [1.0f32, 2.0, 3.0, 4.0];
            let mut b = block_over(&mut data, DType::F32, kind);
            assert!(b.memory_kind().unwrap().is_host_addressable());
            assert_eq!(b.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
            b.as_mut_slice::<f32>().unwrap()[3] = 5.0;
            assert_eq!(data[3], 5.0);
        }
    }

    #[test]
    fn blocks_of_unknown_memory_are_not_host_slices() {
        for kind in [sys::SPMD_MEMORY_DEFAULT, 7] {
            let mut data = [1.0f32];
            let b = block_over(&mut data, DType::F32, kind);
            let e = b.as_slice::<f32>().unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument);
            assert!(e.message.contains(&format!("memory of kind {kind} (not host memory)")), "{e}");
        }
    }

    #[test]
    fn memory_kinds_round_trip() {
        for kind in [MemoryKind::Default, MemoryKind::Device, MemoryKind::HostMapped, MemoryKind::Host] {
            assert_eq!(MemoryKind::from_raw(kind.to_raw()), Some(kind));
        }
        assert_eq!(MemoryKind::from_raw(7), None);
        assert!(!MemoryKind::Device.is_host_addressable() && !MemoryKind::Default.is_host_addressable());
    }
}
