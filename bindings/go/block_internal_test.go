package spmd

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/libspmd/libspmd/bindings/go/internal/capi"
)

// No GPU is needed to check that device memory is never read as a host
// slice: these blocks say MemoryDevice over host memory that would read
// fine, so only the memory kind check can refuse them.

// refusal is the error BlockData panics with, or nil.
func refusal(b *Block) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = r.(error)
		}
	}()
	BlockData[float32](b)
	return nil
}

func wantDeviceRefusal(t *testing.T, err error, origin string) {
	t.Helper()
	if err == nil {
		t.Fatal("BlockData made a host slice of device memory")
	}
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("refusal %q is not ErrInvalidArgument", err)
	}
	for _, part := range []string{"BlockData", origin, "device memory", "Stream", "SPMD_CALLBACK_MEMORY=mapped"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("refusal %q does not say %q", err, part)
		}
	}
}

func TestBlockDataRefusesDeviceMemory(t *testing.T) {
	data := []float32{1, 2, 3, 4}
	b := &Block{ctx: &ShardContext{}, dtype: F32, shape: []int{4}, data: unsafe.Pointer(&data[0]),
		kind: MemoryDevice, origin: "the block of input 1"}
	wantDeviceRefusal(t, refusal(b), "the block of input 1")
	// An empty device block is refused too: the kind, not the size, decides.
	b.shape = []int{0}
	wantDeviceRefusal(t, refusal(b), "the block of input 1")

	b.shape = []int{4}
	for _, kind := range []MemoryKind{MemoryHost, MemoryHostMapped} {
		b.kind = kind
		if err := refusal(b); err != nil {
			t.Fatalf("%v memory refused: %v", kind, err)
		}
		if got := BlockData[float32](b); len(got) != 4 || got[3] != 4 {
			t.Errorf("%v memory read %v", kind, got)
		}
	}
	b.kind = MemoryDefault // unknown is not host memory
	if refusal(b) == nil {
		t.Error("a block of unknown memory read as a host slice")
	}
}

// The kind comes from the spmd_block libspmd fills: a descriptor saying
// SPMD_MEMORY_DEVICE makes a block BlockData refuses.
func TestBlockFromDeviceDescriptorIsRefused(t *testing.T) {
	d := capi.NewSpmd_block()
	defer capi.DeleteSpmd_block(d)
	if err := check("test", capi.Spmd_block_init(d, capi.SizeofBlock)); err != nil {
		t.Fatal(err)
	}
	d.SetDtype(capi.Enum_SS_spmd_dtype(F32))
	d.SetNdim(1)
	shape := [MaxNDim]int64{4}
	d.SetShape(&shape[0])
	d.SetMemory_kind(capi.SPMD_MEMORY_DEVICE)
	c := &ShardContext{}
	b := c.blockOf(d, "the result of Psum")
	if b.MemoryKind() != MemoryDevice || b.Size() != 4 {
		t.Fatalf("a %v block of %d elements", b.MemoryKind(), b.Size())
	}
	wantDeviceRefusal(t, refusal(b), "the result of Psum")
}
