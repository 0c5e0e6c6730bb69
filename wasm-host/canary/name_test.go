package canary

import (
	"strings"
	"testing"
)

// module is a WebAssembly binary with the given sections (id, contents).
func module(sections ...[2]string) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s[0][0], byte(len(s[1])))
		b = append(b, s[1]...)
	}
	return b
}

func custom(name, payload string) [2]string {
	return [2]string{"\x00", string(rune(len(name))) + name + payload}
}

func TestDeclaredFunctionReadsTheNameSection(t *testing.T) {
	typeSection := [2]string{"\x01", "\x01\x60\x00\x00"}
	for _, c := range []struct {
		name string
		wasm []byte
		want string
		ok   bool
	}{
		{"after other sections", module(typeSection, custom("producers", "x"), custom(NameSection, "decide")), "decide", true},
		{"first", module(custom(NameSection, "models"), typeSection), "models", true},
		{"none", module(typeSection, custom("name", "decide")), "", false},
		{"not wasm", []byte("hello, world"), "", false},
		{"cut short", module(typeSection, custom(NameSection, "decide"))[:20], "", false},
		{"empty", nil, "", false},
	} {
		got, ok := DeclaredFunction(c.wasm)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
	named := module(custom(NameSection, "models"))
	if err := CheckFunction("models", named); err != nil {
		t.Errorf("its own name: %v", err)
	}
	if err := CheckFunction("decide", named); err == nil || !strings.Contains(err.Error(), `the module is the "models" function, not "decide"`) {
		t.Errorf("another function's module: %v", err)
	}
	if err := CheckFunction("decide", module(typeSection)); err == nil || !strings.Contains(err.Error(), "does not say which function") {
		t.Errorf("an unnamed module: %v", err)
	}
	// A host loading a release refuses another function's module only: one
	// released before modules were named is served across the upgrade.
	if err := CheckNotAnother("decide", module(typeSection)); err != nil {
		t.Errorf("an unnamed module, loaded by a host: %v", err)
	}
	if err := CheckNotAnother("decide", named); err == nil {
		t.Error("another function's module, loaded by a host: accepted")
	}
}
