// Package cowmap is a map read on the request path without a lock: readers
// load an immutable map, and an addition copies it whole under a mutex.
// That suits a map that stops growing early (metric series of closed
// label sets, the SQL texts guests send), read far more often than added
// to.
package cowmap

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map; its zero value is empty and ready.
type Map[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serializes additions
}

// Load returns the current map (nil when empty), not to be modified. A
// reader that holds a key in another form indexes it directly (m[string(b)]
// allocates nothing).
func (c *Map[K, V]) Load() map[K]V {
	if p := c.m.Load(); p != nil {
		return *p
	}
	return nil
}

// Get returns k's value, adding create(k) on first sight (Add, no limit).
func (c *Map[K, V]) Get(k K, create func(K) V) V {
	if v, ok := c.Load()[k]; ok {
		return v
	}
	return c.Add(k, create, 0)
}

// Add returns k's value, storing create(k) when k has none. With limit >
// 0, a map that already holds limit entries is left as it is and
// create(k) is returned without being stored.
func (c *Map[K, V]) Add(k K, create func(K) V, limit int) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.Load()
	if v, ok := old[k]; ok {
		return v
	}
	v := create(k)
	if limit > 0 && len(old) >= limit {
		return v
	}
	next := make(map[K]V, len(old)+1)
	maps.Copy(next, old)
	next[k] = v
	c.m.Store(&next)
	return v
}
