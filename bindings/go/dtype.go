package spmd

import "github.com/libspmd/libspmd/bindings/go/internal/capi"

// DType is an element type (spmd_dtype). Values are stable across releases;
// 0 is never a valid type.
type DType int

// The element types, after NumPy's short names.
const (
	DTypeInvalid DType = 0  // no type; never valid in a call
	F32          DType = 1  // float32
	F64          DType = 2  // float64
	F16          DType = 3  // IEEE binary16, stored as uint16 bits
	BF16         DType = 4  // bfloat16, stored as uint16 bits
	I32          DType = 5  // int32
	I64          DType = 6  // int64
	U8           DType = 7  // uint8
	Bool         DType = 8  // bool, one byte holding 0 or 1
	I8           DType = 9  // int8
	I16          DType = 10 // int16
	U16          DType = 11 // uint16
	U32          DType = 12 // uint32
)

// Size is the bytes per element, 0 for an invalid type.
func (d DType) Size() int { return int(capi.Spmd_dtype_size(dtypeC(d))) }

// String is the JAX/NumPy name ("float32", "bfloat16", "bool"), "" for an
// invalid type.
func (d DType) String() string { return capi.Spmd_dtype_name(dtypeC(d)) }

// ParseDType is the type whose JAX/NumPy name is name, the inverse of
// String; ErrInvalidArgument (listing the names) for any other name.
func ParseDType(name string) (DType, error) {
	d, err := get("ParseDType", func(d *int) error { return capi.Spmd_dtype_from_name(name, d) })
	return DType(d), err
}

// Element is a Go type whose values an array of the matching DType holds:
// float32 (F32), float64 (F64), int8 (I8), int16 (I16), int32 (I32), int64
// (I64), uint8 (U8), uint16 (U16), uint32 (U32) and bool (Bool).
type Element interface {
	float32 | float64 | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | bool
}

// HostElement is what FromHostAs and ToHostAs take: an Element, uint16
// among them also standing for the bit patterns of F16 and BF16 elements.
type HostElement interface {
	Element
}

// DTypeOf is the DType of the Element type T.
func DTypeOf[T Element]() DType {
	var zero T
	return dtypeOf(zero)
}

// dtypeOf is the DType of a value of an Element type, DTypeInvalid for a
// value of any other type.
func dtypeOf(v any) DType {
	switch v.(type) {
	case float32:
		return F32
	case float64:
		return F64
	case int32:
		return I32
	case int64:
		return I64
	case uint8:
		return U8
	case int8:
		return I8
	case int16:
		return I16
	case uint16:
		return U16
	case uint32:
		return U32
	case bool:
		return Bool
	}
	return DTypeInvalid
}

func dtypeC(d DType) capi.Enum_SS_spmd_dtype { return capi.Enum_SS_spmd_dtype(d) }
