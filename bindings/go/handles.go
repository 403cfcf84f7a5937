package spmd

import "sync"

// Handles that getters make.
//
// libspmd's getters of objects (spmd_array_sharding, spmd_sharding_mesh,
// spmd_sharding_spec, spmd_collective_output_sharding) make a new handle
// each call, which someone must destroy. Were each Go call to hand the
// caller a new handle to Close, a chained call such as
// fmt.Println(a.Sharding()) would leak one, and finalizers would free it
// only whenever the collector runs, if ever. So such a handle belongs to
// its parent instead: made on the first call, shared by later calls, and
// freed when the parent is closed (or collected). What the getter returns
// is a borrowed view: its Close does nothing, and it is usable while the
// parent is open. A borrowed view also keeps its parent from being
// collected while the view is in use.

// ref is one libspmd handle, shared by the Go values that wrap it, and the
// handles its getters made (its children), freed with it.
type ref struct {
	id      uintptr // never changes; after free, a dead id libspmd refuses
	destroy func(uintptr)

	mu       sync.Mutex
	freed    bool
	children map[string]*ref
}

func newRef(id uintptr, destroy func(uintptr)) *ref { return &ref{id: id, destroy: destroy} }

// child is the handle getter name makes for r: made by create on the first
// call, the same one afterwards, until r is freed. Once r is freed create
// runs again and fails, libspmd refusing r's dead id (in fn's name): free
// holds the lock while it destroys, so no child outlives r.
func (r *ref) child(fn, name string, destroy func(uintptr), create func(out *uintptr) error) (*ref, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.children[name]; c != nil {
		return c, nil
	}
	id, err := get(fn, create)
	if err != nil {
		return nil, err
	}
	c := newRef(id, destroy)
	if r.children == nil {
		r.children = map[string]*ref{}
	}
	r.children[name] = c
	return c, nil
}

// free destroys r's children, then r's handle, once.
func (r *ref) free() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.children {
		c.free()
	}
	r.children = nil
	if !r.freed {
		r.freed = true
		r.destroy(r.id)
	}
}
