// Package interrupt lets the host stop a guest that never returns, without
// wazero's close-on-context-done, and without letting a spinning guest
// stall the Go runtime.
//
// With wazero's WithCloseOnContextDone(true), the compiler puts an exit to
// Go at every loop back-edge of guest code: an indirect call through a
// trampoline that checks whether the module was closed (wazero issue
// #2466). A CPU profile of the gateway put about 36% of its time there.
//
// Checking a flag in the loops instead is not enough. Guest machine code
// has no Go preemption points: a goroutine running guest code keeps its P,
// and neither the scheduler nor the garbage collector can take it back. A
// garbage collection must stop the world, and waits for that goroutine
// for as long as the guest spins, while every other goroutine, the
// watchdog that would set the flag included, waits for the collection:
// the host hangs. With GOMAXPROCS guests spinning, nothing else runs even
// without a collection. So the guest must come back to Go on its own, and
// often.
//
// Instrument rewrites a module before it is compiled. It adds a function
// import, YieldModule.YieldImport of type () -> i32, after the module's
// function imports; a mutable i32 global, the budget, initially 0 and not
// exported; and at the start of every loop body
//
//	global.get $budget
//	i32.eqz
//	if
//	  call $yield
//	  global.set $budget
//	else
//	  global.get $budget
//	  i32.const 1
//	  i32.sub
//	  global.set $budget
//	end
//
// so the guest calls the host's yield at its first loop iteration and then
// after every N further iterations, N being what yield returned, all loops
// of the instance counting down the one budget. (WebAssembly branches
// backwards only to a loop's start, so every cycle within a function
// passes a check.) A call to a Go host function runs Go code, whose
// function prologues are preemption points: the scheduler and the
// collector get the P back there, and yield itself is where the deadline
// is enforced. No watchdog goroutine is needed. With every P running a
// guest, the timer that ends a deadline's context waits for the
// scheduler's time slice (10 ms) like any goroutine, then the guest stops
// at its next yield.
//
// Adding an import moves every defined function's index up by one, so
// Instrument renumbers the indices that refer to them: call and ref.func
// immediates, element segments, function exports, the start function,
// global initializers and the name section's function and local names
// (label names, which the inserted if would shift, are dropped).
//
// The host's side, for every runtime that runs instrumented modules:
//   - Export YieldModule.YieldImport, () -> i32, from the host module, to
//     instantiation as well (a reactor's _initialize runs loops).
//   - In it, look at the context it is given (the one the export, or
//     InstantiateModule, was called with). When it is done, panic with
//     context.Cause(ctx) or ctx.Err(): wazero returns the panic from the
//     guest call as an error wrapping that value, so errors.Is(err,
//     context.DeadlineExceeded) holds; the guest stopped in the middle of
//     its work, so discard the instance. Otherwise return the budget, the
//     loop iterations until the next yield, an unsigned i32: DefaultBudget
//     unless measured otherwise (0 makes every iteration yield; a large
//     budget delays collections and stops in proportion).
//   - Give InstantiateModule a context with a deadline too, if a module's
//     start function or _initialize may loop long.
//   - Run the runtime without close-on-context-done.
//
// The cost, measured on a shared 2-core machine (BenchmarkGuestCall,
// medians, with DefaultBudget): a tight guest loop runs in 1.004–1.007x the
// time of no check at all, against 8.5x with close-on-context-done; the
// config route in 1.03–1.05x against 2.4–2.6x. That was an AMD EPYC. On an
// Intel Xeon the same loop runs in 1.38–1.43x and a byte search (scan) in
// 1.22–1.37x (close-on-context-done 8.5–10.7x), and a 60 KB decision spent
// a tenth to a fifth more CPU with the checks than without
// (wasm-host/loadbench/MEASUREMENTS.md). Two other forms of the check were
// built and measured there, and both were slower: the count kept in a
// local of each function that loops (handed to the global around calls and
// at exits), which takes the global's load and store off the loop; and the
// locals a function writes kept in scratch globals around the yield call,
// so that none lives across it. The machine code says why: with a call in
// the loop, wazero's allocator keeps every value live across it on the
// stack for the whole loop (its own context pointers too), reloading and
// storing them each iteration; where the count lives changes nothing.
// Instrumenting the largest route module (decide.wasm, 372 KB) takes
// 0.5–0.8 ms (BenchmarkInstrument), little beside compiling it.
//
// What the budget does not cover:
//   - A guest blocked in a host call (an import, WASI's poll_oneoff) runs no
//     guest loop; cancelling that call is the host's job, through the ctx it
//     receives.
//   - Recursion without loops ends in stack exhaustion, which wazero turns
//     into a trap; it is not stopped at the deadline, but it does stop.
//   - Tail calls could cycle without a loop, so modules using them are
//     refused (TinyGo does not emit them).
//   - One instruction can take long: memory.fill or memory.copy over a
//     large memory runs to its end before the next check.
package interrupt

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

const (
	// YieldModule and YieldImport name the function import Instrument
	// adds, of type () -> i32 (see the package doc for what the host's
	// function must do).
	YieldModule = "gateway"
	YieldImport = "yield"

	// DefaultBudget is what the host's yield should return: loop
	// iterations until the next yield. A yield, a call from wazero's
	// compiled code to a Go function, costs about 10 ns, and an iteration
	// of the tightest loop about 1 ns: 1<<12 iterations make the yields
	// cost under 0.3% there. In exchange, a garbage collection's stop of
	// the world, the scheduler, and a done context wait at most 1<<12
	// iterations of the running loop: about 4 µs for the tightest, 0.4 ms
	// for a loop body of 100 ns.
	DefaultBudget = 1 << 12

	// Version names the form of Instrument's output. A host that keeps
	// instrumented modules between starts (wasm-host/runtime) keys them by
	// it, so it must change whenever the output for the same input does;
	// TestInstrumentOutputIsPinned fails until it has.
	Version = 1
)

// Section ids, and the order non-custom sections must appear in. The tag
// section (13, exception handling) sits between memory and global.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
)

var sectionRank = [...]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

var sectionName = [...]string{"custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count", "tag"}

// droppedCustom are custom sections that hold offsets into the code
// section, which instrumenting shifts, or function indices it does not
// renumber: DWARF, source maps, relocations and linking, code metadata.
var droppedCustom = []struct {
	name   string
	prefix bool
}{
	{".debug_", true},
	{"reloc.", true},
	{"linking", false},
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

var (
	// yieldFuncType is the type () -> i32.
	yieldFuncType = []byte{0x60, 0x00, 0x01, 0x7F}
	// budgetGlobal is the added global: i32, mutable, i32.const 0.
	budgetGlobal = []byte{0x7F, 0x01, 0x41, 0x00, 0x0B}
)

// globalType of a global: its value type and mutability bytes.
type globalType struct{ val, mut byte }

// An instrumenter is Instrument's state as it goes through the sections.
type instrumenter struct {
	wasm, out []byte
	// yieldTypes: the indices of the () -> i32 types; yieldType: the one
	// the import uses.
	yieldTypes []uint32
	yieldType  uint32
	// importedFuncs: the yield import's function index, and where the
	// renumbering starts.
	importedFuncs uint32
	globals       []globalType // imported, then defined
	budget        uint32       // the budget global's index
	// w holds the renumbering settings the walks of every section copy.
	w walker
	// Which of the sections Instrument must add to are written.
	typesDone, importsDone, globalsDone bool
}

// Instrument returns wasm with the yield import, the budget global, and a
// check at the start of every loop body (see the package doc). Sections
// are copied byte for byte except those that change: type (when it has no
// () -> i32), import, global, export, start, element, code, and the name
// section; the custom sections that droppedCustom lists are left out. The
// result is a new slice; wasm is not modified.
//
// A module Instrument made is returned as it is (the same slice), so
// instrumenting twice is harmless. It is recognised by its code, not only
// by its import: a module that imports YieldModule.YieldImport but has a
// loop without the check, or sets the budget global elsewhere, is an
// error, since it would not yield as it should.
//
// Any instruction Instrument cannot decode is an error: it never guesses.
// So is an index of a function or global the module does not have: once
// the import and the budget are added, it could name one of them (a
// module that sets its budget need never yield). Instrument is safe for
// concurrent use; on a large module it walks the function bodies on
// several goroutines.
func Instrument(wasm []byte) ([]byte, error) {
	if len(wasm) < len(header) || !bytes.Equal(wasm[:len(header)], header) {
		return nil, errors.New("interrupt: not a WebAssembly 1.0 binary module")
	}
	m := &instrumenter{wasm: wasm, w: newWalker()}
	m.w.shift, m.w.funcs = 0, 0
	m.out = make([]byte, 0, len(wasm)+len(wasm)/16+64)
	m.out = append(m.out, header...)

	lastRank := 0
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
			m.addMissing(r)
		}

		switch id {
		case secCustom:
			err = m.custom(start, body, end)
		case secType:
			err = m.types(body, end)
		case secImport:
			var yield int
			if yield, err = m.imports(body, end); err == nil && yield >= 0 {
				// Instrumented already, unless the name was taken by a
				// module whose loops do not yield.
				if err := m.verify(end, uint32(yield)); err != nil {
					return nil, fmt.Errorf("interrupt: the module imports %s.%s but is not instrumented: %w", YieldModule, YieldImport, err)
				}
				return wasm, nil
			}
		case secFunction:
			err = m.functions(start, body, end)
		case secTable:
			err = m.tables(start, body, end)
		case secGlobal:
			err = m.globalSection(body, end)
		case secExport:
			err = m.exports(body, end)
		case secStart:
			err = m.start(body, end)
		case secElement:
			err = m.elements(body, end)
		case secCode:
			check, _ := appendCheck(nil, m.budget, m.importedFuncs)
			w := m.w.fresh()
			w.checkLen = len(check)
			m.out, err = rewriteCode(m.out, wasm, body, end, &w, check)
		default: // memory, tag, data count, data: no function index
			m.out = append(m.out, wasm[start:end]...)
		}
		if err != nil {
			return nil, fmt.Errorf("interrupt: %s section: %w", sectionName[id], err)
		}
	}
	m.addMissing(len(sectionRank))
	return m.out, nil
}

// addMissing writes the type, import and global sections, which the
// instrumented module needs, if the module has none and the next section
// (of rank r) must follow them.
func (m *instrumenter) addMissing(r int) {
	if !m.typesDone && r > sectionRank[secType] {
		m.yieldType = 0
		m.out = appendSection(m.out, secType, 1, nil, 0, 0, nil, yieldFuncType)
		m.typesDone = true
	}
	if !m.importsDone && r > sectionRank[secImport] {
		m.out = appendSection(m.out, secImport, 1, nil, 0, 0, nil, m.yieldImport())
		m.importsDone = true
	}
	if !m.globalsDone && r > sectionRank[secGlobal] {
		m.budget = uint32(len(m.globals))
		m.w.globals = m.budget
		m.out = appendSection(m.out, secGlobal, 1, nil, 0, 0, nil, budgetGlobal)
		m.globalsDone = true
	}
}

// appendSection appends a section: its id and size, then count (unless
// negative), wasm[from:to] with w's edits made (w may be nil), and extra.
func appendSection(out []byte, id byte, count int64, wasm []byte, from, to int, w *walker, extra []byte) []byte {
	var edits []int
	size := to - from + len(extra)
	if w != nil {
		edits, size = w.edits, size+w.grow
	}
	if count >= 0 {
		size += lenU32(uint32(count))
	}
	out = append(out, id)
	out = appendU32(out, uint32(size))
	if count >= 0 {
		out = appendU32(out, uint32(count))
	}
	out = applyEdits(out, wasm, from, to, edits, nil)
	return append(out, extra...)
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

// yieldImport is the added import's entry.
func (m *instrumenter) yieldImport() []byte {
	b := appendName(nil, YieldModule)
	b = appendName(b, YieldImport)
	b = append(b, 0x00)
	return appendU32(b, m.yieldType)
}

// appendCheck appends the loop-start check (see the package doc) and
// returns the offsets of its two global.set instructions from its start.
func appendCheck(b []byte, budget, yield uint32) ([]byte, [2]int) {
	start := len(b)
	var set [2]int
	b = append(b, 0x23) // global.get
	b = appendU32(b, budget)
	b = append(b, 0x45, 0x04, 0x40, 0x10) // i32.eqz; if (empty); call
	b = appendU32(b, yield)
	set[0] = len(b) - start
	b = append(b, 0x24) // global.set
	b = appendU32(b, budget)
	b = append(b, 0x05, 0x23) // else; global.get
	b = appendU32(b, budget)
	b = append(b, 0x41, 0x01, 0x6B) // i32.const 1; i32.sub
	set[1] = len(b) - start
	b = append(b, 0x24) // global.set
	b = appendU32(b, budget)
	return append(b, 0x0B), set // end
}

// custom copies a custom section, renumbers the name section, or drops the
// section.
func (m *instrumenter) custom(start, body, end int) error {
	n, k, err := readU32(m.wasm, body, end)
	if err != nil || int(n) > end-k {
		return errors.New("bad name")
	}
	name := string(m.wasm[k : k+int(n)])
	switch {
	case dropCustom(name):
	case name == "name":
		// Before the import section, where renumbering starts is not
		// known yet: such a name section is dropped, like a malformed
		// one. Names only make stack traces readable.
		if !m.importsDone {
			return nil
		}
		content, ok := renumberNames(m.wasm, k+int(n), end, &m.w)
		if !ok {
			return nil
		}
		m.out = append(m.out, secCustom)
		m.out = appendU32(m.out, uint32(lenU32(n)+int(n)+len(content)))
		m.out = append(m.out, m.wasm[body:k+int(n)]...)
		m.out = append(m.out, content...)
	default:
		m.out = append(m.out, m.wasm[start:end]...)
	}
	return nil
}

// renumberNames returns the name section's subsections wasm[i:end] with
// function indices renumbered, and false if they are malformed. Label
// names (subsection 3) are dropped: they index blocks, and the check adds
// one per loop.
func renumberNames(wasm []byte, i, end int, cfg *walker) ([]byte, bool) {
	var out []byte
	for i < end {
		id := wasm[i]
		size, j, err := readU32(wasm, i+1, end)
		if err != nil || int(size) > end-j {
			return nil, false
		}
		sub := j + int(size)
		w := cfg.fresh()
		switch id {
		case 1, 2: // function names; local names (per function)
			n, k, err := readU32(wasm, j, sub)
			for e := uint32(0); e < n && err == nil; e++ {
				if k, err = w.funcIndex(wasm, k, sub); err != nil {
					break
				}
				if id == 1 {
					k, err = skipName(wasm, k, sub)
					continue
				}
				var locals uint32
				locals, k, err = readU32(wasm, k, sub)
				for l := uint32(0); l < locals && err == nil; l++ {
					if k, err = skipLEB(wasm, k, sub, 5); err == nil {
						k, err = skipName(wasm, k, sub)
					}
				}
			}
			if err != nil || k != sub {
				return nil, false
			}
		case 3:
			i = sub
			continue
		}
		out = append(out, id)
		out = appendU32(out, uint32(int(size)+w.grow))
		out = applyEdits(out, wasm, j, sub, w.edits, nil)
		i = sub
	}
	return out, true
}

// types notes the () -> i32 types, and appends one if there is none.
func (m *instrumenter) types(i, end int) error {
	n, k, err := readU32(m.wasm, i, end)
	if err != nil {
		return err
	}
	if int(n) > end-k {
		return errTruncated
	}
	from := k
	for t := uint32(0); t < n; t++ {
		if k >= end {
			return errTruncated
		}
		if m.wasm[k] != 0x60 {
			return fmt.Errorf("type %d: form 0x%02x is not a function type", t, m.wasm[k])
		}
		k++
		var counts [2]uint32
		for p := range counts {
			if counts[p], k, err = readU32(m.wasm, k, end); err != nil {
				return fmt.Errorf("type %d: %w", t, err)
			}
			if int(counts[p]) > end-k {
				return fmt.Errorf("type %d: %w", t, errTruncated)
			}
			for v := uint32(0); v < counts[p]; v++ {
				if !isValType(m.wasm[k]) {
					return fmt.Errorf("type %d: unknown value type 0x%02x", t, m.wasm[k])
				}
				k++
			}
		}
		if counts == [2]uint32{0, 1} && m.wasm[k-1] == 0x7F {
			m.yieldTypes = append(m.yieldTypes, t)
		}
	}
	if k != end {
		return errors.New("trailing bytes")
	}
	m.typesDone = true
	if len(m.yieldTypes) > 0 {
		m.yieldType = m.yieldTypes[0]
		m.out = appendSection(m.out, secType, int64(n), m.wasm, from, end, nil, nil)
		return nil
	}
	m.yieldType = n
	m.out = appendSection(m.out, secType, int64(n)+1, m.wasm, from, end, nil, yieldFuncType)
	return nil
}

// imports notes the imported functions and globals and appends the yield
// import. If the module imports it already, imports writes nothing and
// returns its function index; otherwise -1.
func (m *instrumenter) imports(i, end int) (yield int, err error) {
	b := m.wasm
	n, k, err := readU32(b, i, end)
	if err != nil {
		return -1, err
	}
	if int(n) > end-k {
		return -1, errTruncated
	}
	from := k
	yield = -1
	for e := uint32(0); e < n; e++ {
		var module, name []byte
		if module, k, err = readName(b, k, end); err != nil {
			return -1, err
		}
		if name, k, err = readName(b, k, end); err != nil {
			return -1, err
		}
		isYield := string(module) == YieldModule && string(name) == YieldImport
		if k >= end {
			return -1, errTruncated
		}
		kind := b[k]
		k++
		if isYield && kind != 0x00 {
			return -1, fmt.Errorf("%s.%s is imported, but not as a function", YieldModule, YieldImport)
		}
		switch kind {
		case 0x00: // function: type index
			var t uint32
			if t, k, err = readU32(b, k, end); err != nil {
				return -1, err
			}
			if isYield && yield < 0 {
				if !containsU32(m.yieldTypes, t) {
					return -1, fmt.Errorf("%s.%s is imported with type %d, not () -> i32", YieldModule, YieldImport, t)
				}
				yield = int(m.importedFuncs)
			}
			m.importedFuncs++
		case 0x01: // table: reference type, limits
			if k >= end || b[k] != 0x70 && b[k] != 0x6F {
				return -1, errors.New("table import of unknown type")
			}
			k, err = skipLimits(b, k+1, end)
		case 0x02: // memory: limits
			k, err = skipLimits(b, k, end)
		case 0x03: // global: value type, mutability
			if k+2 > end || !isValType(b[k]) {
				return -1, errors.New("global import of unknown type")
			}
			m.globals = append(m.globals, globalType{b[k], b[k+1]})
			k += 2
		case 0x04: // tag: attribute, type index
			k, err = skipLEB(b, k+1, end, 5)
		default:
			return -1, fmt.Errorf("unknown import kind 0x%02x", kind)
		}
		if err != nil {
			return -1, err
		}
	}
	if k != end {
		return -1, errors.New("trailing bytes")
	}
	if yield >= 0 {
		return yield, nil
	}
	m.w.shift, m.w.funcs = m.importedFuncs, m.importedFuncs
	m.importsDone = true
	m.out = appendSection(m.out, secImport, int64(n)+1, b, from, end, nil, m.yieldImport())
	return -1, nil
}

func containsU32(s []uint32, v uint32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// functions counts the defined functions, for the range check of indices.
func (m *instrumenter) functions(start, i, end int) error {
	n, k, err := readU32(m.wasm, i, end)
	if err != nil {
		return err
	}
	if int(n) > end-k {
		return errTruncated
	}
	if uint64(m.w.funcs)+uint64(n) >= uint64(noShift) {
		return errors.New("too many functions")
	}
	m.w.funcs += n
	m.out = append(m.out, m.wasm[start:end]...)
	return nil
}

// tables refuses tables with an initializer expression (function
// references proposal), which could hold a ref.func.
func (m *instrumenter) tables(start, i, end int) error {
	n, k, err := readU32(m.wasm, i, end)
	if err != nil {
		return err
	}
	for t := uint32(0); t < n; t++ {
		if k >= end {
			return errTruncated
		}
		switch m.wasm[k] {
		case 0x70, 0x6F:
		case 0x40:
			return fmt.Errorf("table %d: initializer expressions are not supported", t)
		default:
			return fmt.Errorf("table %d: unknown reference type 0x%02x", t, m.wasm[k])
		}
		if k, err = skipLimits(m.wasm, k+1, end); err != nil {
			return err
		}
	}
	if k != end {
		return errors.New("trailing bytes")
	}
	m.out = append(m.out, m.wasm[start:end]...)
	return nil
}

// globalSection appends the budget global, after renumbering the ref.func
// indices of the initializers.
func (m *instrumenter) globalSection(i, end int) error {
	n, k, err := readU32(m.wasm, i, end)
	if err != nil {
		return err
	}
	w := m.w.fresh()
	if m.globals, err = definedGlobals(m.wasm, k, end, n, m.globals, &w); err != nil {
		return err
	}
	m.budget = uint32(len(m.globals))
	m.w.globals = m.budget
	m.globalsDone = true
	m.out = appendSection(m.out, secGlobal, int64(n)+1, m.wasm, k, end, &w, budgetGlobal)
	return nil
}

// exports renumbers the function exports.
func (m *instrumenter) exports(i, end int) error {
	b := m.wasm
	n, k, err := readU32(b, i, end)
	if err != nil {
		return err
	}
	w := m.w.fresh()
	for e := uint32(0); e < n; e++ {
		if k, err = skipName(b, k, end); err != nil {
			return err
		}
		if k >= end {
			return errTruncated
		}
		switch kind := b[k]; {
		case kind == 0x00:
			k, err = w.funcIndex(b, k+1, end)
		case kind == 0x03:
			var g uint32
			if g, k, err = readU32(b, k+1, end); err == nil && g >= m.budget {
				err = fmt.Errorf("global index %d out of range (%d globals)", g, m.budget)
			}
		case kind <= 0x04: // table, memory, tag
			_, k, err = readU32(b, k+1, end)
		default:
			return fmt.Errorf("export %d: unknown kind 0x%02x", e, kind)
		}
		if err != nil {
			return fmt.Errorf("export %d: %w", e, err)
		}
	}
	if k != end {
		return errors.New("trailing bytes")
	}
	m.out = appendSection(m.out, secExport, -1, b, i, end, &w, nil)
	return nil
}

// start renumbers the start function.
func (m *instrumenter) start(i, end int) error {
	w := m.w.fresh()
	k, err := w.funcIndex(m.wasm, i, end)
	if err != nil {
		return err
	}
	if k != end {
		return errors.New("trailing bytes")
	}
	m.out = appendSection(m.out, secStart, -1, m.wasm, i, end, &w, nil)
	return nil
}

// elements renumbers the function indices of element segments, in all
// eight forms: flags bit 0 passive or declarative, bit 1 an explicit table
// index (active) or declarative (not active), bit 2 items as expressions
// instead of function indices.
func (m *instrumenter) elements(i, end int) error {
	b := m.wasm
	n, k, err := readU32(b, i, end)
	if err != nil {
		return err
	}
	w := m.w.fresh()
	for s := uint32(0); s < n && err == nil; s++ {
		var flags uint32
		if flags, k, err = readU32(b, k, end); err != nil {
			break
		}
		if flags > 7 {
			return fmt.Errorf("segment %d: unknown flags %d", s, flags)
		}
		active := flags&1 == 0
		if active && flags&2 != 0 { // table index
			if k, err = skipLEB(b, k, end, 5); err != nil {
				break
			}
		}
		if active { // offset
			if k, err = w.constExpr(b, k, end); err != nil {
				break
			}
		}
		if flags&3 != 0 { // an element kind or a reference type
			if k >= end {
				err = errTruncated
				break
			}
			if c := b[k]; flags&4 == 0 && c != 0x00 || flags&4 != 0 && c != 0x70 && c != 0x6F {
				return fmt.Errorf("segment %d: unknown element type 0x%02x", s, c)
			}
			k++
		}
		var items uint32
		if items, k, err = readU32(b, k, end); err != nil {
			break
		}
		if int(items) > end-k {
			err = errTruncated
			break
		}
		for e := uint32(0); e < items && err == nil; e++ {
			if flags&4 == 0 {
				k, err = w.funcIndex(b, k, end)
			} else {
				k, err = w.constExpr(b, k, end)
			}
		}
		if err != nil {
			return fmt.Errorf("segment %d: %w", s, err)
		}
	}
	if err != nil {
		return err
	}
	if k != end {
		return errors.New("trailing bytes")
	}
	m.out = appendSection(m.out, secElement, -1, b, i, end, &w, nil)
	return nil
}

// verify checks that the sections from wasm[i:] are what Instrument makes
// of a module, yield being the function index of the yield import: every
// loop body starts with the check, which calls yield and counts down the
// last global, a defined mutable i32; and nothing else sets that global.
func (m *instrumenter) verify(i int, yield uint32) error {
	b := m.wasm
	globals, imported := m.globals, len(m.globals)
	for i < len(b) {
		id := b[i]
		size, j, err := readU32(b, i+1, len(b))
		if err != nil || int(size) > len(b)-j {
			return fmt.Errorf("section at %d: %w", i, errTruncated)
		}
		i = j + int(size)
		switch id {
		case secGlobal:
			n, k, err := readU32(b, j, i)
			if err != nil {
				return err
			}
			w := newWalker()
			if globals, err = definedGlobals(b, k, i, n, globals, &w); err != nil {
				return err
			}
		case secCode:
			budget := len(globals) - 1
			if budget < imported || globals[budget] != (globalType{0x7F, 0x01}) {
				budget = noGuard
			}
			check, setAt := appendCheck(nil, uint32(budget), yield)
			return verifyCode(b, j, i, int(m.importedFuncs), budget, check, setAt)
		}
	}
	return nil
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

// readName returns a name's bytes and the offset after it.
func readName(b []byte, i, end int) ([]byte, int, error) {
	n, i, err := readU32(b, i, end)
	if err != nil {
		return nil, i, err
	}
	if int(n) > end-i {
		return nil, i, errTruncated
	}
	return b[i : i+int(n)], i + int(n), nil
}

// definedGlobals appends the types of the n globals the section defines,
// walking their initializers with w.
func definedGlobals(b []byte, i, end int, n uint32, globals []globalType, w *walker) ([]globalType, error) {
	var err error
	for k := uint32(0); k < n; k++ {
		if i+2 > end || !isValType(b[i]) {
			return nil, fmt.Errorf("global %d: unknown type", k)
		}
		globals = append(globals, globalType{b[i], b[i+1]})
		if i, err = w.constExpr(b, i+2, end); err != nil {
			return nil, fmt.Errorf("global %d: initializer: %w", k, err)
		}
	}
	if i != end {
		return nil, errors.New("trailing bytes")
	}
	return globals, nil
}
