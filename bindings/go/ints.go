package spmd

import (
	"math"
	"strconv"
)

// Shapes, axes, indices, device ids and permutations are Go ints
// everywhere in this package. libspmd takes int64_t and size_t for shapes
// and counts and C's int for device ids: the conversions happen here, at
// the cgo boundary, and refuse a value the other side cannot hold rather
// than let it wrap.

// int64s converts ints for libspmd's int64_t and size_t arrays (an int
// always fits in 64 bits); nil stays nil.
func int64s(v []int) []int64 {
	if v == nil {
		return nil
	}
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// intOf converts one value libspmd gave to int, refusing one an int
// cannot hold (on a platform of 32-bit ints).
func intOf(fn string, v int64) (int, error) {
	if int64(int(v)) != v {
		return 0, &Error{Status: StatusOutOfRange, Message: fn + ": " + itoa(v) + " does not fit in an int"}
	}
	return int(v), nil
}

// intsOf converts values libspmd gave to ints, as intOf.
func intsOf(fn string, v []int64) ([]int, error) {
	out := make([]int, len(v))
	for i, x := range v {
		n, err := intOf(fn, x)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// mustInts converts values that are known to fit (a block's shape, which
// is in memory); it is intsOf without the error.
func mustInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// cInt checks that argument arg of fn, a device id, fits C's int, which
// libspmd takes for device ids.
func cInt(fn, arg string, v int) error {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return invalid(fn, "%s: %d does not fit in a C int", arg, v)
	}
	return nil
}

// int32s converts device ids for libspmd's int arrays, checking each fits.
func int32s(fn, arg string, v []int) ([]int32, error) {
	if v == nil {
		return nil, nil
	}
	out := make([]int32, len(v))
	for i, x := range v {
		if err := cInt(fn, arg+"["+itoa(int64(i))+"]", x); err != nil {
			return nil, err
		}
		out[i] = int32(x)
	}
	return out, nil
}

// pairs64 converts (source, dest) pairs of axis indices for libspmd.
func pairs64(pairs [][2]int) [][2]int64 {
	if pairs == nil {
		return nil
	}
	out := make([][2]int64, len(pairs))
	for i, p := range pairs {
		out[i] = [2]int64{int64(p[0]), int64(p[1])}
	}
	return out
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
