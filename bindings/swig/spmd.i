/* The one interface every binding is made from.
 *
 * SWIG reads the public headers through this file. Its Go module turns them
 * into the raw layer of the Go package (bindings/go); its XML module gives
 * the parse that bindings/gen turns into Rust's spmd-sys and Julia's
 * LibSPMD. The idiomatic layer of each language is written by hand on top.
 *
 *   swig -go -cgo -intgosize 64 -I<include> -I<build>/include spmd.i
 *   swig -xml -I<include> -I<build>/include -o spmd.xml spmd.i
 *
 * Typemaps shared by every language module are here; those of one language
 * sit in its own section below, guarded by SWIG's language macro. Nothing
 * in this file changes what the C API means: a binding that needs another
 * shape of call builds it in its idiomatic layer.
 */
%module spmd

%{
#include "spmd/spmd.h"
%}

%include <stdint.i>

/* ---- Go: SWIG's Go module (bindings/go/README.md) -------------------- */
#ifdef SWIGGO
#endif /* SWIGGO */

/* ---- The headers, in the order spmd/spmd.h includes them. ------------ */
%include "spmd/export.h"
%include "spmd/version.h"
%include "spmd/status.h"
%include "spmd/handles.h"
%include "spmd/dtype.h"
%include "spmd/runtime.h"
%include "spmd/mesh.h"
%include "spmd/spec.h"
%include "spmd/sharding.h"
%include "spmd/array.h"
%include "spmd/format.h"
%include "spmd/random.h"
%include "spmd/visualize.h"
%include "spmd/shard_map.h"
%include "spmd/collective.h"
%include "spmd/ops.h"
