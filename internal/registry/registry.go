// Package registry holds what packages register by name from their init
// functions (stage types, services, formats, environments, dataset
// loaders), read while a run or a command is built.
package registry

import (
	"slices"
	"sync"
)

// Named maps names to values. The zero value with a Kind is ready; it is
// safe for concurrent use.
type Named[V any] struct {
	// Kind names the registry in the panic on a second registration, with
	// its package: "pipeline: stage", "env: loader".
	Kind string
	mu   sync.Mutex
	m    map[string]V
}

// Add registers v under name. Registering a name twice panics: two
// packages claiming one name is a programming error.
func (n *Named[V]) Add(name string, v V) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.m[name]; dup {
		panic(n.Kind + " registered twice: " + name)
	}
	if n.m == nil {
		n.m = map[string]V{}
	}
	n.m[name] = v
}

// Get returns the value registered under name.
func (n *Named[V]) Get(name string) (V, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.m[name]
	return v, ok
}

// Names lists the registered names, sorted.
func (n *Named[V]) Names() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := make([]string, 0, len(n.m))
	for k := range n.m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}
