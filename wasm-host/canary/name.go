package canary

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A module names the function it is. `make build` (scripts/build-functions.sh)
// appends a WebAssembly custom section named NameSection whose contents are
// the function's name ("decide"), which no runtime executes. A release
// checks it, so that a module of another function (models.wasm released as
// decide) is refused before a single caller gets it: every function speaks
// the same ABI, and such a module would compile, load and even pass its
// canary analysis while answering decisions with something else.
const NameSection = "gateway.function"

// DeclaredFunction returns the function name a module declares in its
// NameSection, and false when it has none or is not a WebAssembly binary.
func DeclaredFunction(wasm []byte) (string, bool) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return "", false
	}
	rest := wasm[8:]
	for len(rest) > 0 {
		id := rest[0]
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || size > uint64(len(rest)-1-n) {
			return "", false
		}
		body := rest[1+n : 1+n+int(size)]
		rest = rest[1+n+int(size):]
		if id != 0 {
			continue
		}
		nameLen, m := binary.Uvarint(body)
		if m <= 0 || nameLen > uint64(len(body)-m) {
			return "", false
		}
		if string(body[m:m+int(nameLen)]) == NameSection {
			return string(body[m+int(nameLen):]), true
		}
	}
	return "", false
}

// CheckFunction refuses wasm as a release of function unless the module
// declares that it is function.
func CheckFunction(function string, wasm []byte) error {
	if _, ok := DeclaredFunction(wasm); !ok {
		return errors.New("the module does not say which function it is (no " + NameSection + " section): release a module that `make build` made")
	}
	return CheckNotAnother(function, wasm)
}

// CheckNotAnother refuses wasm only when it names another function. A host
// loading a release uses it: a module released before modules named their
// function (no section) keeps being served across the upgrade, and only a
// new release must name its own (CheckFunction, release canary).
func CheckNotAnother(function string, wasm []byte) error {
	if declared, ok := DeclaredFunction(wasm); ok && declared != function {
		return fmt.Errorf("the module is the %q function, not %q", declared, function)
	}
	return nil
}
