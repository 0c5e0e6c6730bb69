package interrupt

import (
	"testing"

	"decisiongateway/testkit/testenv"
)

// Bytes that are not a module with data segment names give 0: restore all.
func TestReadOnlyEndOfWhatIsNoModule(t *testing.T) {
	wasm := testenv.Wasm(t, "testguests/testguest.wasm")
	for name, b := range map[string][]byte{
		"nothing":   nil,
		"header":    wasm[:8],
		"truncated": wasm[:len(wasm)/2],
		"garbage":   append(append([]byte(nil), wasm[:8]...), 0x0b, 0xff, 0xff, 0xff, 0xff, 0x7f),
	} {
		if got := ReadOnlyEnd(b); got != 0 {
			t.Errorf("%s: %d, want 0", name, got)
		}
	}
}

// Instrumenting keeps the data segments and their names, so a module's
// instrumented form, which is all a host reads on a restart
// (runtime.Engine.CompileFile), tells the same read-only end.
func TestInstrumentedModuleHasTheSameReadOnlyEnd(t *testing.T) {
	for _, rel := range []string{"testguests/testguest.wasm", "functions/decide.wasm"} {
		wasm := testenv.Wasm(t, rel)
		out, err := Instrument(wasm)
		if err != nil {
			t.Fatal(err)
		}
		want := ReadOnlyEnd(wasm)
		if want == 0 {
			t.Fatalf("%s: no read-only end found in the module itself", rel)
		}
		if got := ReadOnlyEnd(out); got != want {
			t.Errorf("%s: instrumented %d, module %d", rel, got, want)
		}
	}
}
