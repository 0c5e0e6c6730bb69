package runtime

import "context"

// Close releases the module's compiled code. Close the Functions made from
// it first: an instance already running finishes (wazero allows closing a
// compiled module with calls outstanding), but no new instance can be made.
// The host closes a module when a release replaces it (wasm-host/canary),
// so that rolling versions out for months does not keep every build's
// machine code alive.
func (m *Module) Close(ctx context.Context) error {
	if inst := m.spare.Swap(nil); inst != nil {
		inst.close(ctx)
	}
	return m.compiled.Close(ctx)
}
