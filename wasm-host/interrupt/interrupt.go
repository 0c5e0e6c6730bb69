// Package interrupt lets the host stop a guest that never returns, without
// wazero's close-on-context-done.
//
// With wazero's WithCloseOnContextDone(true), the compiler puts an exit to
// Go at every loop back-edge of guest code: an indirect call through a
// trampoline that checks whether the module was closed (wazero issue
// #2466). A CPU profile of the gateway put about 36% of its time there.
//
// Instrument rewrites a module before it is compiled instead: it adds one
// mutable i32 global, exported as ExportName and initially 0, and puts
//
//	global.get $interrupt
//	if
//	  unreachable
//	end
//
// at the start of every loop body. Each iteration then costs one load and a
// branch that is never taken, with no call: measured on a tight guest loop,
// 1.15x the time of no check at all against 8x with close-on-context-done,
// and on the config route 1.1x against 2x (BenchmarkGuestCall). The host
// instruments each module once, before compiling it: about half a
// millisecond for the largest route module (BenchmarkInstrument), little
// beside compiling it. The host arms a watchdog per
// call, context.AfterFunc(ctx, func() { global.Set(1) }) on the instance's
// exported api.MutableGlobal, and runs the runtime without
// close-on-context-done. When the context ends, the guest traps at its next
// back-edge with wazero's "unreachable" error, and the host discards the
// instance (ctx.Err() tells a deadline from a guest fault). Setting the
// global from another goroutine is a plain store that the guest's next load
// sees: wazero's compiler loads the global afresh at every loop header
// and has no pass that hoists loads out of loops
// (TestInterruptStopsALoopAlreadyRunning sets it under a running loop).
//
// The watchdog must not outlive the call that armed it: stop it when the
// call returns, and discard the instance when stop reports the function had
// already run, since the global is then 1 and the instance would trap at its
// next loop.
//
// The watchdog needs a free P. Guest machine code has no Go preemption
// points, so a spinning guest keeps its P until it traps; the exit to Go of
// close-on-context-done was one at every back-edge, the check is not. If as
// many guests spin as GOMAXPROCS allows, no goroutine runs, timers and
// watchdogs included, and the host stalls (with GOMAXPROCS=1 a single
// spinning guest is enough). The host must keep a P free, for example by
// letting at most GOMAXPROCS-1 guest calls run guest code at once.
//
// What the check does not cover:
//   - A guest blocked in a host call (an import, WASI's poll_oneoff) runs no
//     guest loop; cancelling that call is the host's job, through the ctx it
//     receives.
//   - Recursion without loops ends in stack exhaustion, which wazero turns
//     into a trap; it is not stopped at the deadline, but it does stop.
//   - Tail calls could cycle without a loop, so modules using them are
//     refused (TinyGo does not emit them).
package interrupt

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ExportName is the name under which an instrumented module exports its
// interrupt global: a mutable i32, 0 while the guest may run; the host sets
// it to 1 to make the guest trap at its next loop iteration.
const ExportName = "gateway_interrupt"

// Section ids, and the order non-custom sections must appear in. The tag
// section (13, exception handling) sits between memory and global.
const (
	secCustom = 0
	secImport = 2
	secGlobal = 6
	secExport = 7
	secCode   = 10
)

var sectionRank = [...]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// droppedCustom are custom sections that hold offsets into the code
// section, which instrumenting shifts: DWARF, source maps, relocations,
// code metadata. The name section holds indices only and is kept.
var droppedCustom = []struct {
	name   string
	prefix bool
}{
	{".debug_", true},
	{"reloc.", true},
	{"metadata.code.", true},
	{"sourceMappingURL", false},
	{"external_debug_info", false},
}

func dropCustom(name string) bool {
	for _, d := range droppedCustom {
		if name == d.name || d.prefix && strings.HasPrefix(name, d.name) {
			return true
		}
	}
	return false
}

var header = []byte("\x00asm\x01\x00\x00\x00")

// globalType of a global: its value type and mutability bytes.
type globalType struct{ val, mut byte }

// Instrument returns wasm with the interrupt global and a check at the
// start of every loop body. Every section is copied byte for byte except
// the global, export and code sections (and the custom sections that
// droppedCustom lists, which are left out). The result is a new slice;
// wasm is not modified.
//
// A module Instrument made is returned as it is (the same slice), so
// instrumenting twice is harmless. It is recognised by its code, not only
// by its export: a module that exports ExportName but has a loop without
// the check, or sets that global, is an error, since its global would not
// stop it.
//
// Any instruction Instrument cannot decode is an error: it never guesses.
// Instrument is safe for concurrent use; on a large module it walks the
// function bodies on several goroutines.
func Instrument(wasm []byte) ([]byte, error) {
	if len(wasm) < len(header) || !bytes.Equal(wasm[:len(header)], header) {
		return nil, errors.New("interrupt: not a WebAssembly 1.0 binary module")
	}
	out := make([]byte, 0, len(wasm)+len(wasm)/16+64)
	out = append(out, header...)

	var (
		globals                []globalType // imported, then defined
		importedFuncs          int
		index                  uint32 // the new global's index
		globalDone, exportDone bool
		lastRank               int
	)
	// addGlobal and addExport write the two sections when the module has
	// none, just before the first section that must follow them.
	addGlobal := func() {
		index = uint32(len(globals))
		out = append(out, secGlobal)
		out = appendU32(out, uint32(1+len(newGlobal)))
		out = appendU32(out, 1)
		out = append(out, newGlobal...)
		globalDone = true
	}
	addExport := func() {
		entry := appendExport(nil, index)
		out = append(out, secExport)
		out = appendU32(out, uint32(1+len(entry)))
		out = appendU32(out, 1)
		out = append(out, entry...)
		exportDone = true
	}

	for i := len(header); i < len(wasm); {
		start := i
		id := wasm[i]
		size, j, err := readU32(wasm, i+1, len(wasm))
		if err != nil {
			return nil, fmt.Errorf("interrupt: section at %d: size: %w", start, err)
		}
		body, end := j, j+int(size)
		if end > len(wasm) || end < body {
			return nil, fmt.Errorf("interrupt: section %d at %d: %w", id, start, errTruncated)
		}
		i = end

		if id != secCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				return nil, fmt.Errorf("interrupt: unknown section id %d at %d", id, start)
			}
			r := sectionRank[id]
			if r <= lastRank {
				return nil, fmt.Errorf("interrupt: section %d at %d out of order", id, start)
			}
			lastRank = r
			if !globalDone && r > sectionRank[secGlobal] {
				addGlobal()
			}
			if !exportDone && r > sectionRank[secExport] {
				addExport()
			}
		}

		switch id {
		case secCustom:
			n, k, err := readU32(wasm, body, end)
			if err != nil || int(n) > end-k {
				return nil, fmt.Errorf("interrupt: custom section at %d: bad name", start)
			}
			if dropCustom(string(wasm[k : k+int(n)])) {
				continue
			}
			out = append(out, wasm[start:end]...)
		case secImport:
			if globals, importedFuncs, err = imports(wasm, body, end); err != nil {
				return nil, fmt.Errorf("interrupt: import section: %w", err)
			}
			out = append(out, wasm[start:end]...)
		case secGlobal:
			n, k, err := readU32(wasm, body, end)
			if err != nil {
				return nil, fmt.Errorf("interrupt: global section: %w", err)
			}
			if globals, err = definedGlobals(wasm, k, end, n, globals); err != nil {
				return nil, fmt.Errorf("interrupt: global section: %w", err)
			}
			index = uint32(len(globals))
			out = append(out, secGlobal)
			out = appendU32(out, uint32(lenU32(n+1)+(end-k)+len(newGlobal)))
			out = appendU32(out, n+1)
			out = append(out, wasm[k:end]...)
			out = append(out, newGlobal...)
			globalDone = true
		case secExport:
			n, k, err := readU32(wasm, body, end)
			if err != nil {
				return nil, fmt.Errorf("interrupt: export section: %w", err)
			}
			kind, idx, found, err := findExport(wasm, k, end, n)
			if err != nil {
				return nil, fmt.Errorf("interrupt: export section: %w", err)
			}
			if found {
				if kind != 0x03 || int(idx) >= len(globals) || globals[idx] != (globalType{0x7F, 0x01}) {
					return nil, fmt.Errorf("interrupt: the module exports %s, but not as a mutable i32 global", ExportName)
				}
				// Instrumented already, unless the name was taken by a
				// module whose loops do not check it.
				if err := checkInstrumented(wasm, end, idx, importedFuncs); err != nil {
					return nil, fmt.Errorf("interrupt: the module exports %s but is not instrumented: %w", ExportName, err)
				}
				return wasm, nil
			}
			entry := appendExport(nil, index)
			out = append(out, secExport)
			out = appendU32(out, uint32(lenU32(n+1)+(end-k)+len(entry)))
			out = appendU32(out, n+1)
			out = append(out, wasm[k:end]...)
			out = append(out, entry...)
			exportDone = true
		case secCode:
			if out, err = rewriteCode(out, wasm, body, end, importedFuncs, appendCheck(nil, index)); err != nil {
				return nil, fmt.Errorf("interrupt: code section: %w", err)
			}
		default:
			out = append(out, wasm[start:end]...)
		}
	}
	if !globalDone {
		addGlobal()
	}
	if !exportDone {
		addExport()
	}
	return out, nil
}

// newGlobal is the added global: i32, mutable, initialised by i32.const 0.
var newGlobal = []byte{0x7F, 0x01, 0x41, 0x00, 0x0B}

func appendExport(b []byte, index uint32) []byte {
	b = appendU32(b, uint32(len(ExportName)))
	b = append(b, ExportName...)
	b = append(b, 0x03) // global
	return appendU32(b, index)
}

// appendCheck appends the loop-start check: global.get index; if (empty);
// unreachable; end.
func appendCheck(b []byte, index uint32) []byte {
	b = append(b, 0x23)
	b = appendU32(b, index)
	return append(b, 0x04, 0x40, 0x00, 0x0B)
}

// skipName steps over a name (a length and that many bytes).
func skipName(b []byte, i, end int) (int, error) {
	n, i, err := readU32(b, i, end)
	if err != nil {
		return i, err
	}
	if int(n) > end-i {
		return i, errTruncated
	}
	return i + int(n), nil
}

// skipLimits steps over table or memory limits: a flag byte, a minimum and,
// when bit 0 of the flag is set, a maximum. Memory64 limits are 64-bit.
func skipLimits(b []byte, i, end int) (int, error) {
	if i >= end {
		return i, errTruncated
	}
	flags := b[i]
	if flags > 0x07 {
		return i, fmt.Errorf("unknown limits flags 0x%02x", flags)
	}
	i, err := skipLEB(b, i+1, end, 10)
	if err == nil && flags&1 != 0 {
		i, err = skipLEB(b, i, end, 10)
	}
	return i, err
}

// imports returns the types of the imported globals, in order (the defined
// globals, the added one among them, are indexed after these), and the
// number of imported functions (for error messages).
func imports(b []byte, i, end int) (globals []globalType, funcs int, err error) {
	n, i, err := readU32(b, i, end)
	if err != nil {
		return nil, 0, err
	}
	for k := uint32(0); k < n; k++ {
		if i, err = skipName(b, i, end); err != nil { // module
			return nil, 0, err
		}
		if i, err = skipName(b, i, end); err != nil { // name
			return nil, 0, err
		}
		if i >= end {
			return nil, 0, errTruncated
		}
		kind := b[i]
		i++
		switch kind {
		case 0x00: // function: type index
			funcs++
			i, err = skipLEB(b, i, end, 5)
		case 0x01: // table: reference type, limits
			if i >= end || !isValType(b[i]) {
				return nil, 0, errors.New("table import of unknown type")
			}
			i, err = skipLimits(b, i+1, end)
		case 0x02: // memory: limits
			i, err = skipLimits(b, i, end)
		case 0x03: // global: value type, mutability
			if i+2 > end || !isValType(b[i]) {
				return nil, 0, errors.New("global import of unknown type")
			}
			globals = append(globals, globalType{b[i], b[i+1]})
			i += 2
		case 0x04: // tag: attribute, type index
			i, err = skipLEB(b, i+1, end, 5)
		default:
			return nil, 0, fmt.Errorf("unknown import kind 0x%02x", kind)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if i != end {
		return nil, 0, errors.New("trailing bytes")
	}
	return globals, funcs, nil
}

// definedGlobals appends the types of the n globals the section defines.
func definedGlobals(b []byte, i, end int, n uint32, globals []globalType) ([]globalType, error) {
	var err error
	for k := uint32(0); k < n; k++ {
		if i+2 > end || !isValType(b[i]) {
			return nil, fmt.Errorf("global %d: unknown type", k)
		}
		globals = append(globals, globalType{b[i], b[i+1]})
		if i, _, err = walk(b, i+2, end, noGuard, nil); err != nil {
			return nil, fmt.Errorf("global %d: initializer: %w", k, err)
		}
	}
	if i != end {
		return nil, errors.New("trailing bytes")
	}
	return globals, nil
}

// findExport looks for ExportName among the n exports and returns its kind
// and index.
func findExport(b []byte, i, end int, n uint32) (kind byte, index uint32, found bool, err error) {
	for k := uint32(0); k < n; k++ {
		var l uint32
		if l, i, err = readU32(b, i, end); err != nil {
			return
		}
		if int(l) > end-i {
			err = errTruncated
			return
		}
		name := b[i : i+int(l)]
		i += int(l)
		if i >= end {
			err = errTruncated
			return
		}
		kind = b[i]
		if index, i, err = readU32(b, i+1, end); err != nil {
			return
		}
		if string(name) == ExportName {
			return kind, index, true, nil
		}
	}
	if i != end {
		err = errors.New("trailing bytes")
	}
	return 0, 0, false, err
}
