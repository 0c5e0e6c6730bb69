package hostconfig

import "slices"

// Exposed returns the names of the settings a module may read through the
// config import, in their documented order. The Workers configuration
// generator (wrangler-compat/workers) writes this list into each function
// Worker, so the two hosts share one allow-list instead of two copies.
func Exposed() []string { return slices.Clone(exposed) }
