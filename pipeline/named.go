package pipeline

import (
	"sort"
	"sync"
)

// named holds what packages register by name from their init functions
// (stage types, services, input and output formats), read while a run is
// built. The zero value with a kind is ready; safe for concurrent use.
type named[V any] struct {
	kind string // names the registry in the panic on a second registration
	mu   sync.Mutex
	m    map[string]V
}

// add registers v under name; registering a name twice panics.
func (n *named[V]) add(name string, v V) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.m[name]; dup {
		panic("pipeline: " + n.kind + " registered twice: " + name)
	}
	if n.m == nil {
		n.m = map[string]V{}
	}
	n.m[name] = v
}

func (n *named[V]) get(name string) (V, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.m[name]
	return v, ok
}

// names lists the registered names, sorted.
func (n *named[V]) names() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := make([]string, 0, len(n.m))
	for k := range n.m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
