package spmd

import (
	"runtime"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// PRNGKey is a key of jax.random's default generator (threefry2x32): the
// two words of JAX's uint32[2] key data, in order. A plain value.
type PRNGKey [2]uint32

// Key is jax.random.PRNGKey(seed): {seed >> 32, seed & 0xffffffff}.
// Seeds below 2^32 give JAX's key in either precision mode; a negative
// int64 seed converted to uint64 gives JAX's key under jax_enable_x64.
func Key(seed uint64) (PRNGKey, error) {
	k, err := get("Key", func(k *[2]uint32) error { return capi.Spmd_random_key(seed, k) })
	return PRNGKey(k), err
}

// Split is jax.random.split(key, n): n new keys (key i is the same for
// every n > i).
func (k PRNGKey) Split(n int) ([]PRNGKey, error) {
	if n < 0 {
		return nil, invalid("PRNGKey.Split", "n: %d is negative", n)
	}
	out := make([][2]uint32, n)
	if err := check("PRNGKey.Split", capi.Spmd_random_split(k.words(), out)); err != nil {
		return nil, err
	}
	keys := make([]PRNGKey, n)
	for i := range out {
		keys[i] = PRNGKey(out[i])
	}
	return keys, nil
}

// FoldIn is jax.random.fold_in(key, data) (JAX converts data to uint32
// first: pass uint32(d) for a negative int).
func (k PRNGKey) FoldIn(data uint32) (PRNGKey, error) {
	out, err := get("PRNGKey.FoldIn", func(out *[2]uint32) error { return capi.Spmd_random_fold_in(k.words(), uint(data), out) })
	return PRNGKey(out), err
}

// words is the key as libspmd's spmd_key (a copy: k is a value).
func (k PRNGKey) words() *[2]uint32 { return (*[2]uint32)(&k) }

// Bits is jax.random.bits(key, shape, dtype) laid out by sharding: uniform
// random bits, bit-exact with JAX. dtype is U8, U16, U32, I32 (uint32 bit
// patterns) or I64 (uint64 bits, as under x64). Each device computes only its block; the
// values do not depend on the sharding.
func Bits(sharding *Sharding, key PRNGKey, dtype DType, shape []int) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("Bits", newArray, func(h *uintptr) error {
		return capi.Spmd_random_bits(sharding.handle(), key.words(), dtypeC(dtype), int64s(shape), h)
	})
}

// Uniform is jax.random.uniform(key, shape, dtype, minval, maxval): floats
// (F32, F64, F16 or BF16) in [minval, maxval), bit-exact with JAX on CPU.
func Uniform(sharding *Sharding, key PRNGKey, dtype DType, shape []int, minval, maxval float64) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("Uniform", newArray, func(h *uintptr) error {
		return capi.Spmd_random_uniform(sharding.handle(), key.words(), dtypeC(dtype), int64s(shape), minval, maxval, h)
	})
}

// Normal is jax.random.normal(key, shape, dtype): standard normal floats,
// computed as JAX does.
func Normal(sharding *Sharding, key PRNGKey, dtype DType, shape []int) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("Normal", newArray, func(h *uintptr) error {
		return capi.Spmd_random_normal(sharding.handle(), key.words(), dtypeC(dtype), int64s(shape), h)
	})
}

// TruncatedNormal is jax.random.truncated_normal(key, lower, upper, shape,
// dtype): standard normal floats in (lower, upper); infinite bounds are
// allowed. ErrInvalidArgument unless lower < upper.
func TruncatedNormal(sharding *Sharding, key PRNGKey, dtype DType, shape []int, lower, upper float64) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("TruncatedNormal", newArray, func(h *uintptr) error {
		return capi.Spmd_random_truncated_normal(sharding.handle(), key.words(), dtypeC(dtype), int64s(shape), lower, upper, h)
	})
}

// Keys as arrays (experimental: spmd/experimental/random.h, which may
// change in any release). The draws above read their key when called, so
// recorded into a Program they would draw the same numbers at every Run.
// KeyData makes a key an array, jax.random.key_data's uint32[2], and the
// draws below read their key from such an array: given an input of Record,
// they record the draw, and each Run draws from the key data bound to that
// input, as a function under jax.jit draws from the key it is passed.
// Outside programs they give what Bits, Uniform, Normal and TruncatedNormal
// give for the same key, bit for bit. FoldInFrom and SplitFrom derive key
// data from key data as FoldIn and Split derive keys, so that a program
// derives each step's keys from the one it is given.

// KeyData is jax.random.key_data(key): the key's two words as a uint32[2]
// array laid out by sharding (a replicated one, normally; its spec names
// at most one dimension). Experimental.
func KeyData(sharding *Sharding, key PRNGKey) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	return made("KeyData", newArray, func(h *uintptr) error {
		return capi.Spmd_x_random_key_data(sharding.handle(), key.words(), h)
	})
}

// drawFrom runs call, a draw from the key data key, and wraps the new
// array, a value of the program being recorded when key is one (derived).
func drawFrom(fn string, sharding *Sharding, key *Array, call func(out *uintptr) error) (*Array, error) {
	defer runtime.KeepAlive(sharding)
	defer runtime.KeepAlive(key)
	a, err := made(fn, newArray, call)
	return derived(a, err, key)
}

// BitsFrom is Bits with the key read from key, a uint32[2] array of key
// data (KeyData; any layout). ErrInvalidArgument for a key of another
// dtype or shape, or on another runtime (the message names key).
// Experimental.
func BitsFrom(sharding *Sharding, key *Array, dtype DType, shape []int) (*Array, error) {
	return drawFrom("BitsFrom", sharding, key, func(h *uintptr) error {
		return capi.Spmd_x_random_bits_from(sharding.handle(), key.handle(), dtypeC(dtype), int64s(shape), h)
	})
}

// UniformFrom is Uniform with the key read from key, as BitsFrom.
// Experimental.
func UniformFrom(sharding *Sharding, key *Array, dtype DType, shape []int, minval, maxval float64) (*Array, error) {
	return drawFrom("UniformFrom", sharding, key, func(h *uintptr) error {
		return capi.Spmd_x_random_uniform_from(sharding.handle(), key.handle(), dtypeC(dtype), int64s(shape), minval, maxval, h)
	})
}

// NormalFrom is Normal with the key read from key, as BitsFrom.
// Experimental.
func NormalFrom(sharding *Sharding, key *Array, dtype DType, shape []int) (*Array, error) {
	return drawFrom("NormalFrom", sharding, key, func(h *uintptr) error {
		return capi.Spmd_x_random_normal_from(sharding.handle(), key.handle(), dtypeC(dtype), int64s(shape), h)
	})
}

// TruncatedNormalFrom is TruncatedNormal with the key read from key, as
// BitsFrom. Experimental.
func TruncatedNormalFrom(sharding *Sharding, key *Array, dtype DType, shape []int, lower, upper float64) (*Array, error) {
	return drawFrom("TruncatedNormalFrom", sharding, key, func(h *uintptr) error {
		return capi.Spmd_x_random_truncated_normal_from(sharding.handle(), key.handle(), dtypeC(dtype), int64s(shape), lower, upper, h)
	})
}

// FoldInFrom is FoldIn on key data: jax.random.fold_in(key, data) with key
// a uint32[2] array of key data (KeyData), the new key's data laid out as
// key. Given a value of Record, it records itself, so that a program
// derives a key from the one each Run is given. ErrInvalidArgument for a
// key of another dtype or shape (the message names key). Experimental.
func FoldInFrom(key *Array, data uint32) (*Array, error) {
	defer runtime.KeepAlive(key)
	a, err := made("FoldInFrom", newArray, func(h *uintptr) error {
		return capi.Spmd_x_random_fold_in_from(key.handle(), uint(data), h)
	})
	return derived(a, err, key)
}

// SplitFrom is Split on key data: the data of jax.random.split(key, n)'s n
// keys, each a uint32[2] array laid out as key, ready for a draw (JAX's
// split gives one (n, 2) array). Given a value of Record, it records
// itself as one step of n results. ErrInvalidArgument for a negative n or
// a key of another dtype or shape (the message names key). Experimental.
func SplitFrom(key *Array, n int) ([]*Array, error) {
	const fn = "SplitFrom"
	defer runtime.KeepAlive(key)
	if n < 0 {
		return nil, invalid(fn, "n: %d is negative", n)
	}
	hs := make([]uintptr, n)
	if err := check(fn, capi.Spmd_x_random_split_from(key.handle(), hs)); err != nil {
		return nil, err
	}
	keys := make([]*Array, n)
	for i, h := range hs {
		// A value of key's recording when key is one: Record closes it.
		keys[i], _ = derived(newArray(h), nil, key)
	}
	return keys, nil
}
