package spmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// Status is a libspmd status code (spmd_status). Values are stable across
// releases.
type Status int

// The status codes.
const (
	StatusOK              Status = 0 // success
	StatusInvalidArgument Status = 1 // a bad value, a nil or a closed object
	StatusOutOfRange      Status = 2 // an index past the end (shard, device)
	StatusOutOfMemory     Status = 3 // an allocation failed
	StatusUnsupported     Status = 4 // valid, but not built in or not available
	StatusTimeout         Status = 5 // a peer never reached a collective
	StatusCallback        Status = 6 // a user callback reported failure
	StatusInternal        Status = 7 // a bug in libspmd
)

// String is libspmd's static name of the status ("invalid argument"),
// "unknown status" for a value that is none.
func (s Status) String() string { return capi.Spmd_status_string(int(s)) }

// Error is a failed libspmd call: its status and a message that names the
// Go function or method that failed, then the argument and the problem
// ("ShardContext.SetOutput: index: 3 is past the last output (1)").
// libspmd's own messages name the C function; the binding puts the Go
// name in its place.
type Error struct {
	Status  Status
	Message string
}

// Error formats the error as "spmd: <status>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return "spmd: " + e.Status.String()
	}
	return "spmd: " + e.Status.String() + ": " + e.Message
}

// Is reports whether target is a sentinel (an *Error without a message) of
// the same status, so errors.Is(err, ErrInvalidArgument) holds for every
// invalid-argument failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// The sentinel errors, one per failure status, for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrOutOfRange      = &Error{Status: StatusOutOfRange}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrUnsupported     = &Error{Status: StatusUnsupported}
	ErrTimeout         = &Error{Status: StatusTimeout}
	ErrCallback        = &Error{Status: StatusCallback}
	ErrInternal        = &Error{Status: StatusInternal}
)

// check turns an error of the raw layer into an *Error whose message names
// fn, the Go function or method the user called ("Array.Reshard", "Sum"),
// where libspmd's names the C function ("spmd_array_reshard: ...").
func check(fn string, err error) error {
	var ce *capi.Error
	if errors.As(err, &ce) {
		return &Error{Status: Status(ce.Status), Message: goMessage(fn, ce.Message)}
	}
	return err
}

// goMessage is libspmd's message msg in Go's terms: its leading C
// function name replaced by fn, the argument it names first by the Go
// parameter or option field (goArgs), and the C names of handle types and
// of ShardContext's methods within it (a ShardMap's error quotes the call
// that failed a device) by their Go names (goNames).
func goMessage(fn, msg string) string {
	if rest, ok := cutCName(msg); ok {
		msg = rest
	}
	end := strings.IndexAny(msg, ":[ ")
	if end > 0 {
		if g, ok := goArg(msg[:end]); ok {
			msg = g + msg[end:]
		}
	}
	for c, g := range goNames {
		if strings.Contains(msg, c) {
			msg = replaceWord(msg, c, g)
		}
	}
	return fn + ": " + msg
}

// goArg is the Go name of the C argument arg, if it differs.
func goArg(arg string) (string, bool) {
	if strings.HasPrefix(arg, "options->") {
		g, ok := goFields[strings.TrimPrefix(arg, "options->")]
		return g, ok
	}
	g, ok := goArgs[arg]
	return g, ok
}

// goArgs are the Go names of the C arguments whose names differ.
var goArgs = map[string]string{
	"axis_names": "axes",
	"device_ids": "devices",
	"device_id":  "device",
	"directory":  "dir",
	"nbytes":     "data",
	"in_specs":   "inSpecs",
	"out_specs":  "outSpecs",
	"n_inputs":   "inputs",
}

// goFields are the Go names of the fields of libspmd's option structs.
var goFields = map[string]string{
	"out_sharding":       "OutSharding",
	"donate":             "Donate",
	"platform":           "RuntimeOptions.Platform",
	"cpu_device_count":   "RuntimeOptions.DeviceCount",
	"worker_threads":     "RuntimeOptions.WorkerThreads",
	"device_cache_bytes": "RuntimeOptions.DeviceCacheBytes",
	"devices_per_gpu":    "RuntimeOptions.DevicesPerGPU",
	"callback_memory":    "RuntimeOptions.CallbackMemory",
	"distributed":        "RuntimeOptions.Distributed",
	"exact_reductions":   "RuntimeOptions.ExactReductions",
	"ascii":              "VisualizeOptions.ASCII",
	"max_width":          "VisualizeOptions.MaxWidth",
	"min_width":          "VisualizeOptions.MinWidth",
	"scale":              "VisualizeOptions.Scale",
	"axis":               "CollectiveOptions.Axis",
	"concat_axis":        "CollectiveOptions.ConcatAxis",
	"tiled":              "CollectiveOptions.Tiled",
	"pairs":              "CollectiveOptions.Pairs",
	"npairs":             "CollectiveOptions.Pairs",
	"check_rep":          "ShardMapOptions.CheckRep",
	"timeout_ms":         "Timeout",
}

// cutCName removes a leading "spmd_name: " from msg.
func cutCName(msg string) (string, bool) {
	if !strings.HasPrefix(msg, "spmd_") {
		return msg, false
	}
	i := strings.Index(msg, ": ")
	if i < 0 || strings.IndexFunc(msg[:i], func(r rune) bool { return !isWordRune(r) }) >= 0 {
		return msg, false
	}
	return msg[i+2:], true
}

func isWordRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// replaceWord replaces old in s where it stands as a whole word.
func replaceWord(s, old, new string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		whole := (i == 0 || !isWordRune(rune(s[i-1]))) && (end == len(s) || !isWordRune(rune(s[end])))
		b.WriteString(s[:i])
		if whole {
			b.WriteString(new)
		} else {
			b.WriteString(old)
		}
		s = s[end:]
	}
}

// goNames are the Go names of the handle types and of the C functions
// libspmd's messages may quote in the middle of a message: "not a live
// spmd_array", the call that failed a device in a ShardMap, "call
// spmd_ctx_set_output", "key data is uint32[2] (spmd_x_random_key_data)".
var goNames = map[string]string{
	"spmd_runtime":          "Runtime",
	"spmd_mesh":             "Mesh",
	"spmd_spec":             "Spec",
	"spmd_sharding":         "Sharding",
	"spmd_array":            "Array",
	"spmd_collective":       "Collective",
	"spmd_ctx":              "ShardContext",
	"spmd_x_program":        "Program",
	"spmd_ctx_device_id":    "ShardContext.DeviceID",
	"spmd_ctx_mesh":         "ShardContext.Mesh",
	"spmd_ctx_stream":       "ShardContext.Stream",
	"spmd_ctx_axis_index":   "ShardContext.AxisIndex",
	"spmd_ctx_axis_size":    "ShardContext.AxisSize",
	"spmd_ctx_input_count":  "ShardContext.InputCount",
	"spmd_ctx_input":        "ShardContext.Input",
	"spmd_ctx_alloc":        "ShardContext.Alloc",
	"spmd_ctx_set_output":   "ShardContext.SetOutput",
	"spmd_ctx_print":        "ShardContext.Print",
	"spmd_ctx_error":        "ShardContext.Error",
	"spmd_ctx_psum":         "ShardContext.Psum",
	"spmd_ctx_pmean":        "ShardContext.Pmean",
	"spmd_ctx_pmax":         "ShardContext.Pmax",
	"spmd_ctx_pmin":         "ShardContext.Pmin",
	"spmd_ctx_all_gather":   "ShardContext.AllGather",
	"spmd_ctx_psum_scatter": "ShardContext.PsumScatter",
	"spmd_ctx_all_to_all":   "ShardContext.AllToAll",
	"spmd_ctx_ppermute":     "ShardContext.Ppermute",

	"spmd_x_random_key_data": "KeyData",
}

// invalid is an argument error found by the binding before calling
// libspmd, in fn.
func invalid(fn, format string, args ...any) error {
	return &Error{Status: StatusInvalidArgument, Message: fn + ": " + fmt.Sprintf(format, args...)}
}

// get runs call, which writes one value through its pointer (libspmd's out
// argument), and returns the value, or the call's error in fn.
func get[T any](fn string, call func(out *T) error) (T, error) {
	var v T
	if err := check(fn, call(&v)); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// made runs call, which creates a libspmd object and writes its handle,
// and returns the handle wrapped by wrap (the type's constructor, which
// sets the finalizer), or the call's error in fn.
func made[T any](fn string, wrap func(uintptr) *T, call func(out *uintptr) error) (*T, error) {
	h, err := get(fn, call)
	if err != nil {
		return nil, err
	}
	return wrap(h), nil
}

// filled runs call on a buffer of MaxNDim values, of which C fills the
// first n (a shape or coordinates), and returns those n.
func filled(fn string, call func(buf []int64, n *int64) error) ([]int, error) {
	buf := make([]int64, MaxNDim)
	n, err := get(fn, func(n *int64) error { return call(buf, n) })
	if err != nil {
		return nil, err
	}
	return intsOf(fn, buf[:n])
}

// list reads count() values one by one with at.
func list[T any](count func() (int, error), at func(int) (T, error)) ([]T, error) {
	n, err := count()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		if out[i], err = at(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// handles lists the handles of objects (0 for a nil one), for the C
// arrays of handles (inputs, specs, operands).
func handles[T interface{ handle() uintptr }](objects []T) []uintptr {
	hs := make([]uintptr, len(objects))
	for i, o := range objects {
		hs[i] = o.handle()
	}
	return hs
}

// boolOf converts libspmd's 0/1 flags.
func boolOf(v int) bool { return v != 0 }

func cBool(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stringOr is what String methods print when the call fails.
func stringOr(s string, err error) string {
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return s
}
