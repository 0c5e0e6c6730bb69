package interrupt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

func instantiateNamed(tb testing.TB, rt wazero.Runtime, wasm []byte, name string) api.Module {
	tb.Helper()
	ctx := context.Background()
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(name))
	if err != nil {
		tb.Fatal(err)
	}
	return mod
}

// checkHandResults calls every function of handModule with handWant's
// arguments and compares the results.
func checkHandResults(t *testing.T, mod api.Module) {
	t.Helper()
	for name, cases := range handWant() {
		for k := 0; k < len(cases); k += 2 {
			got, err := mod.ExportedFunction(name).Call(context.Background(), cases[k]...)
			if err != nil {
				t.Errorf("%s%v: %v", name, cases[k], err)
				continue
			}
			if !slices.Equal(got, cases[k+1]) {
				t.Errorf("%s%v = %v, want %v", name, cases[k], got, cases[k+1])
			}
		}
	}
}

func mustInstrument(tb testing.TB, wasm []byte) []byte {
	tb.Helper()
	out, err := Instrument(wasm)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// sec is one section of a module as the tests see it.
type sec struct {
	id      byte
	name    string // custom sections
	content []byte // after the name for custom sections
	at      int    // offset of content in the module
}

func sectionsOf(tb testing.TB, wasm []byte) []sec {
	tb.Helper()
	var out []sec
	for i := len(header); i < len(wasm); {
		size, j, err := readU32(wasm, i+1, len(wasm))
		if err != nil || j+int(size) > len(wasm) {
			tb.Fatalf("section at %d: bad size", i)
		}
		s := sec{id: wasm[i], content: wasm[j : j+int(size)], at: j}
		if s.id == secCustom {
			n, k, _ := readU32(s.content, 0, len(s.content))
			s.name, s.content, s.at = string(s.content[k:k+int(n)]), s.content[k+int(n):], j+k+int(n)
		}
		out = append(out, s)
		i = j + int(size)
	}
	return out
}

// yieldAndBudget returns the function index of the yield import of an
// instrumented module and the index of its last global, the budget.
func yieldAndBudget(tb testing.TB, wasm []byte) (yield, budget uint32) {
	tb.Helper()
	m := &instrumenter{wasm: wasm, w: newWalker()}
	found := false
	for _, s := range sectionsOf(tb, wasm) {
		end := s.at + len(s.content)
		switch s.id {
		case secType:
			if err := m.types(s.at, end); err != nil {
				tb.Fatal(err)
			}
		case secImport:
			y, err := m.imports(s.at, end)
			if err != nil || y < 0 {
				tb.Fatalf("no yield import (%v)", err)
			}
			yield, found = uint32(y), true
		case secGlobal:
			n, k, _ := readU32(wasm, s.at, end)
			w := newWalker()
			var err error
			if m.globals, err = definedGlobals(wasm, k, end, n, m.globals, &w); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if !found || len(m.globals) == 0 {
		tb.Fatalf("yield import found %v, %d globals", found, len(m.globals))
	}
	return yield, uint32(len(m.globals) - 1)
}

// loopStarts walks every function body and returns, per body, the offsets
// (within the module) where loop bodies begin.
func loopStarts(tb testing.TB, wasm []byte) [][]int {
	tb.Helper()
	var per [][]int
	for _, s := range sectionsOf(tb, wasm) {
		if s.id != secCode {
			continue
		}
		n, i, _ := readU32(wasm, s.at, s.at+len(s.content))
		for f := uint32(0); f < n; f++ {
			size, start, _ := readU32(wasm, i, len(wasm))
			stop := start + int(size)
			entries, k, _ := readU32(wasm, start, stop)
			for e := uint32(0); e < entries; e++ {
				k, _ = skipLEB(wasm, k, stop, 5)
				k++
			}
			w := newWalker()
			next, err := walk(wasm, k, stop, &w)
			if err != nil || next != stop {
				tb.Fatalf("body %d: walk ends at %d of %d: %v", f, next, stop, err)
			}
			var loops []int
			for _, e := range w.edits {
				loops = append(loops, e>>1)
			}
			per = append(per, loops)
			i = stop
		}
	}
	return per
}

// checkEveryLoopChecks asserts that out is in instrumented: as many bodies
// and loops, each loop body starting with the check.
func checkEveryLoopChecks(t *testing.T, in, out []byte) {
	t.Helper()
	yield, budget := yieldAndBudget(t, out)
	check, _ := appendCheck(nil, budget, yield)
	before, after := loopStarts(t, in), loopStarts(t, out)
	if len(before) != len(after) {
		t.Fatalf("%d bodies before, %d after", len(before), len(after))
	}
	total := 0
	for f := range before {
		if len(before[f]) != len(after[f]) {
			t.Fatalf("body %d: %d loops before, %d after", f, len(before[f]), len(after[f]))
		}
		for _, at := range after[f] {
			if !bytes.HasPrefix(out[at:], check) {
				t.Fatalf("body %d: loop at %d starts % x, want % x", f, at, out[at:at+len(check)], check)
			}
		}
		total += len(before[f])
	}
	t.Logf("%d loops in %d bodies; check % x", total, len(before), check)
}

// functionNames reads the name section's function names.
func functionNames(tb testing.TB, wasm []byte) (names map[uint32]string, subsections []byte) {
	tb.Helper()
	names = map[uint32]string{}
	for _, s := range sectionsOf(tb, wasm) {
		if s.id != secCustom || s.name != "name" {
			continue
		}
		c := s.content
		for i := 0; i < len(c); {
			id := c[i]
			size, j, _ := readU32(c, i+1, len(c))
			subsections = append(subsections, id)
			if id == 1 {
				n, k, _ := readU32(c, j, len(c))
				for range n {
					var f uint32
					var name []byte
					f, k, _ = readU32(c, k, len(c))
					name, k, _ = readName(c, k, len(c))
					names[f] = string(name)
				}
			}
			i = j + int(size)
		}
	}
	return names, subsections
}

func TestHandModuleComputesTheSameWhenInstrumented(t *testing.T) {
	in := handModule()
	out := mustInstrument(t, in)
	checkEveryLoopChecks(t, in, out)
	// One function import before yield; one imported and four defined
	// globals before the budget.
	if yield, budget := yieldAndBudget(t, out); yield != 1 || budget != handGlobals {
		t.Fatalf("yield is function %d, budget global %d; want 1, %d", yield, budget, handGlobals)
	}
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, out) // runs the start function
	checkHandResults(t, mod)
}

func TestFunctionIndicesAreRenumbered(t *testing.T) {
	// The results above show calls, ref.func, the element segments, the
	// funcref global, exports and the start function point where they
	// did. Here: what results cannot show.
	in := handModule()
	out := mustInstrument(t, in)
	moved := func(f int) uint32 {
		if f >= 1 {
			return uint32(f + 1)
		}
		return uint32(f)
	}

	// call 127 takes a byte more as call 128; the padded call stays five
	// bytes.
	for _, want := range [][]byte{
		cat(op(call), u32(farFunc+1), op(i32Add)),
		cat(op(call), []byte{0x80, 0x81, 0x80, 0x80, 0x00}, op(i32Add)),
	} {
		if !bytes.Contains(out, want) {
			t.Errorf("no % x in the instrumented module", want)
		}
	}

	// The name section: function names follow their functions, the
	// import has none, label names are gone.
	names, subs := functionNames(t, out)
	if !bytes.Equal(subs, []byte{0, 1, 2}) {
		t.Errorf("name subsections %v, want 0 1 2", subs)
	}
	if _, ok := names[1]; ok || len(names) != funcCount {
		t.Errorf("%d names, yield named %q", len(names), names[1])
	}
	for f := range funcCount {
		if got := names[moved(f)]; got != funcName(f) {
			t.Errorf("function %d (was %d) is named %q, want %q", moved(f), f, got, funcName(f))
		}
	}

	// wazero reads the same: each export's function has its own name, and
	// yield is imported.
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range append(slices.Clone(handFuncs), "far") {
		f := 1 + i
		if name == "far" {
			f = farFunc
		}
		if got := cm.ExportedFunctions()[name].Name(); got != funcName(f) {
			t.Errorf("export %s: function named %q, want %q", name, got, funcName(f))
		}
	}
	var imported []string
	for _, d := range cm.ImportedFunctions() {
		m, n, _ := d.Import()
		imported = append(imported, m+"."+n)
		if n == YieldImport && (len(d.ParamTypes()) != 0 || !slices.Equal(d.ResultTypes(), []api.ValueType{api.ValueTypeI32})) {
			t.Errorf("yield has type %v -> %v", d.ParamTypes(), d.ResultTypes())
		}
	}
	if !slices.Equal(imported, []string{"env.add1", YieldModule + "." + YieldImport}) {
		t.Errorf("imported functions %v", imported)
	}
}

func TestYieldsOnceEveryBudgetIterations(t *testing.T) {
	// With a fresh budget of 0, a loop iteration yields when the budget is
	// 0 and counts it down otherwise: with yield returning n, the first
	// iteration yields and then every (n+1)-th. The start function's loop
	// runs 3 iterations; sum(n) n+1 of its outer loop and n(n+1)/2 of its
	// inner one.
	const n = 300
	iterations := 3 + (n + 1) + n*(n+1)/2
	for _, budget := range []uint32{0, 1, 9, DefaultBudget} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			var yields atomic.Int64
			rt := newHostRuntime(t, host{budget: budget, onYield: func() { yields.Add(1) }})
			instantiateNamed(t, rt, envModule(), "env")
			mod := instantiate(t, rt, mustInstrument(t, handModule()))
			if _, err := mod.ExportedFunction("sum").Call(context.Background(), n); err != nil {
				t.Fatal(err)
			}
			per := int64(budget) + 1
			if want := (int64(iterations) + per - 1) / per; yields.Load() != want {
				t.Fatalf("%d yields for %d iterations, want %d", yields.Load(), iterations, want)
			}
		})
	}
}

func TestCancelStopsALoopAlreadyRunning(t *testing.T) {
	// count adds 1 to memory[0] at every iteration. Waiting for the count to
	// move proves the guest is inside the loop before the context ends.
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, mustInstrument(t, handModule()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("count").Call(ctx)
		done <- err
	}()
	for {
		if n, _ := mod.Memory().ReadUint32Le(0); n > 1000 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("count returned before the cancel: %v", err)
		default:
			runtime.Gosched()
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestMissingSectionsAreAdded(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    []byte
		ids   []byte
		calls string // an export to call, returning 7
	}{
		{"empty module", header, []byte{1, 2, 6}, ""},
		// No global, export or code-adjacent sections to append to; an
		// imported global, so the budget is global 1; no () -> i32 type;
		// a start section, which must follow the global section; no
		// function imports, so the start function moves to 1.
		{"no () -> i32, no global section", module(
			section(1, vec(funcType(nil, nil))),
			section(2, vec(cat(str("env"), str("g"), op(0x03, i32, 0x00)))),
			section(3, vec(u32(0))),
			section(8, u32(0)),
			section(10, vec(fbody(nil, op(globalGet, 0, drop, loop, empty, end)))),
		), []byte{1, 2, 3, 6, 8, 10}, ""},
		// () -> i32 already there, no import section.
		{"no import section", module(
			section(1, vec(funcType(nil, op(i32)))),
			section(3, vec(u32(0))),
			section(7, vec(export("f", 0x00, 0))),
			section(10, vec(fbody(nil, op(loop, empty, end), i32c(7)))),
		), []byte{1, 2, 3, 6, 7, 10}, "f"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := mustInstrument(t, c.in)
			var ids []byte
			for _, s := range sectionsOf(t, out) {
				ids = append(ids, s.id)
			}
			if !bytes.Equal(ids, c.ids) {
				t.Fatalf("sections %v, want %v", ids, c.ids)
			}
			if len(c.in) > len(header) {
				checkEveryLoopChecks(t, c.in, out)
			}
			rt := newRuntime(t, false)
			instantiateNamed(t, rt, envModule(), "env")
			mod := instantiate(t, rt, out) // runs the start function
			if c.calls != "" {
				if got, err := mod.ExportedFunction(c.calls).Call(context.Background()); err != nil || got[0] != 7 {
					t.Fatalf("%s() = %v, %v", c.calls, got, err)
				}
			}
		})
	}
	// The existing () -> i32 is reused: the type section is unchanged.
	in := module(section(1, vec(funcType(op(i32), nil), funcType(nil, op(i32)))))
	if got := sectionsOf(t, mustInstrument(t, in))[0]; !bytes.Equal(got.content, sectionsOf(t, in)[0].content) {
		t.Fatal("the type section changed though it has () -> i32")
	}
}

func TestInstrumentingTwiceChangesNothing(t *testing.T) {
	once := mustInstrument(t, handModule())
	twice := mustInstrument(t, once)
	if &twice[0] != &once[0] || len(twice) != len(once) {
		t.Fatal("an instrumented module was instrumented again")
	}
}

func TestDWARFIsDroppedNamesAreKept(t *testing.T) {
	var names []string
	for _, s := range sectionsOf(t, mustInstrument(t, handModule())) {
		if s.id == secCustom {
			names = append(names, s.name)
		}
	}
	if !slices.Equal(names, []string{"name"}) {
		t.Fatalf("custom sections %q, want only the name section", names)
	}
}

func TestYieldImportOnAnUninstrumentedModuleIsAnError(t *testing.T) {
	// A module may import its own gateway.yield. Returned unchanged, its
	// loops would not call it, or it could reset the budget; so the import
	// counts as "instrumented already" only when the code says so.
	yieldAs := func(desc ...byte) []byte { return cat(str(YieldModule), str(YieldImport), desc) }
	mod := func(imp, globals []byte, code ...[]byte) []byte {
		return module(
			section(1, vec(funcType(nil, nil), funcType(nil, op(i32)))),
			section(2, vec(imp)),
			section(3, vec(u32(0))),
			section(6, globals),
			section(10, vec(fbody(nil, code...))),
		)
	}
	imp := yieldAs(0x00, 1)
	budget := vec(cat(op(i32, 0x01), i32c(0), op(end)))
	check, _ := appendCheck(nil, 0, 0)
	otherCheck, _ := appendCheck(nil, 0, 1)
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"a loop without the check", mod(imp, budget, op(loop, empty, end)), "does not start with the check"},
		{"the check, then a reset", mod(imp, budget, op(loop, empty), check, i32c(0), op(globalSet, 0, end)), "outside a check"},
		{"a check calling another function", mod(imp, budget, op(loop, empty), otherCheck, op(end)), "does not start with the check"},
		{"no budget global", mod(imp, vec(cat(op(i32, 0x00), i32c(0), op(end))), op(loop, empty), check, op(end)), "no budget global"},
		{"yield of another type", mod(yieldAs(0x00, 0), budget, op(loop, empty), check, op(end)), "not () -> i32"},
		{"yield as a global", mod(yieldAs(0x03, i32, 0x00), budget, op(loop, empty), check, op(end)), "not as a function"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Instrument(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
	// The same module with the check and no reset is taken as it is.
	in := mod(imp, budget, op(loop, empty), check, op(end))
	if out, err := Instrument(in); err != nil || &out[0] != &in[0] {
		t.Fatalf("err = %v, changed %v", err, err == nil && !bytes.Equal(out, in))
	}
}

// oneBody is a module with one () -> () function whose body is code.
func oneBody(code ...[]byte) []byte {
	return module(
		section(1, vec(funcType(nil, nil))),
		section(3, vec(u32(0))),
		section(10, vec(fbody(nil, code...))),
	)
}

func TestUnknownOpcodeIsAnError(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		want string
	}{
		{"unassigned", op(0xFF), "unknown opcode 0xff"},
		{"legacy try", op(0x06, empty, end), "unknown opcode 0x06"},
		{"try_table", op(0x1F, empty, 0, end), "unknown opcode 0x1f"},
		{"atomics", op(0xFE, 0x03, 0), "unknown opcode 0xfe"},
		{"GC prefix", op(0xFB, 0x00), "unknown opcode 0xfb"},
		{"call_ref", op(0x14, 0), "unknown opcode 0x14"},
		{"past the 0xfc table", op(prefixFC, 18), "unknown opcode 0xfc 18"},
		{"SIMD", op(0xFD, 12), "SIMD"},
		{"tail call", op(0x12, 0), "tail calls"},
		{"typed ref.null", op(refNull, 0x63), "heap type"},
		{"GC block type", op(block, 0x64, 0x70, end), "block type"},
		{"select of a GC type", op(selectT, 1, 0x63), "value type"},
		{"multi-memory load", op(i32Load, 0x42, 0, 0), "multi-memory"},
		{"LEB swallows the end", op(i32Const, 0x80, 0x80), "truncated"},
		{"LEB too long", op(i32Const, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), "too long"},
		{"end missing", op(end, 0x01), "bytes after the final end"},
		{"call past the functions", op(call, 1), "function index 1 out of range"},
		{"ref.func past the functions", op(refFunc, 0x80, 0x01, drop), "function index 128 out of range"},
		// Global 0 does not exist, but would be the budget: a module could
		// set it and never yield.
		{"global.set past the globals", cat(i32c(0), op(globalSet, 0)), "global index 0 out of range"},
		{"global.get past the globals", op(globalGet, 0, drop), "global index 0 out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Instrument(oneBody(c.code))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q (out %d bytes)", err, c.want, len(out))
			}
		})
	}
}

func TestUnknownSectionContentIsAnError(t *testing.T) {
	types := section(1, vec(funcType(nil, nil)))
	funcs := section(3, vec(u32(0)))
	code := section(10, vec(fbody(nil)))
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"GC type", module(section(1, vec(op(0x5E, i32, 0x00)))), "not a function type"},
		{"table initializer", module(types, section(4, vec(op(0x40, 0x00, fref, 0x00, 1, refNull, fref, end)))), "initializer"},
		{"element flags 8", module(types, funcs, section(9, vec(cat(u32(8), vec()))), code), "unknown flags 8"},
		{"element kind", module(types, funcs, section(9, vec(cat(u32(1), op(0x01), vec()))), code), "unknown element type"},
		{"export kind", module(types, funcs, section(7, vec(export("x", 0x05, 0))), code), "unknown kind"},
		{"export past the functions", module(types, funcs, section(7, vec(export("x", 0x00, 1))), code), "out of range"},
		{"start past the functions", module(types, funcs, section(8, u32(1)), code), "out of range"},
		{"export past the globals", module(types, funcs, section(7, vec(export("x", 0x03, 0))), code), "global index 0 out of range"},
		{"loop in an initializer", module(section(6, vec(cat(op(i32, 0x00, loop, empty, end), i32c(0), op(end))))), "loop in a constant expression"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Instrument(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestPaddedIndicesKeepTheirWidth(t *testing.T) {
	for _, c := range []struct {
		v     uint32
		width int
		want  []byte
	}{
		{5, 1, []byte{5}},
		{128, 1, []byte{0x80, 0x01}},
		{128, 5, []byte{0x80, 0x81, 0x80, 0x80, 0x00}},
		{1, 3, []byte{0x81, 0x80, 0x00}},
	} {
		if got := appendU32Width(nil, c.v, c.width); !bytes.Equal(got, c.want) {
			t.Errorf("%d in %d bytes: % x, want % x", c.v, c.width, got, c.want)
		}
		if v, n, err := readU32(c.want, 0, len(c.want)); v != c.v || n != len(c.want) || err != nil {
			t.Errorf("% x reads as %d (%d bytes, %v)", c.want, v, n, err)
		}
	}
}

func TestFirstBadFunctionIsReportedHoweverTheWorkIsSplit(t *testing.T) {
	// 600 bodies of 200 bytes: large enough to be walked in parallel runs.
	// Functions 100 and 500 hold an unknown opcode; the error names 100, as
	// a serial walk would.
	var bodies [][]byte
	for f := range 600 {
		code := bytes.Repeat(op(nop), 200)
		if f == 100 || f == 500 {
			code[150] = 0xFF
		}
		bodies = append(bodies, fbody(nil, code))
	}
	fs := make([][]byte, len(bodies))
	for i := range fs {
		fs[i] = u32(0)
	}
	in := module(
		section(1, vec(funcType(nil, nil))),
		section(3, vec(fs...)),
		section(10, vec(bodies...)),
	)
	for range 20 {
		if _, err := Instrument(in); err == nil || !strings.Contains(err.Error(), "function 100:") {
			t.Fatalf("err = %v, want function 100", err)
		}
	}
}

func TestCutModulesAreRefusedNotMisread(t *testing.T) {
	// Every prefix of a module is refused, or (cut between sections) is
	// instrumented into a module that instrumenting again leaves alone;
	// none panics or reads past its end.
	in := handModule()
	for n := 0; n < len(in); n++ {
		cut := slices.Clip(in[:n])
		out, err := Instrument(cut)
		if err != nil {
			continue
		}
		if again, err := Instrument(out); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("prefix %d: instrumented, but not idempotent: %v", n, err)
		}
	}
}

func FuzzInstrument(f *testing.F) {
	// Whatever the input: no panic; an output is left alone by a second
	// pass; and a module wazero accepts stays acceptable once instrumented.
	f.Add(handModule())
	f.Add(oneBody(op(loop, empty, br, 0, end)))
	f.Add(oneBody(op(block, i32), i32c(1), op(loop, empty, end, end, drop)))
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm)
		if err != nil {
			return
		}
		again, err := Instrument(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("instrumenting the output again: %v", err)
		}
		if !plausibleCounts(t, wasm) {
			return
		}
		cm, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return
		}
		cm.Close(ctx)
		cm, err = rt.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("wazero accepts the module but not its instrumented form: %v", err)
		}
		cm.Close(ctx)
	})
}

// plausibleCounts reports whether every vector section declares no more
// entries than it has bytes, and the module has no element section.
// wazero allocates what a count declares before reading the entries
// (make([]wasm.ElementSegment, count), and likewise for the vectors inside
// an element segment), so a fuzzed count in the billions stalls the fuzzer
// inside wazero, which is not what this fuzz test is about.
func plausibleCounts(tb testing.TB, wasm []byte) bool {
	for _, s := range sectionsOf(tb, wasm) {
		if s.id == 9 {
			return false
		}
		if s.id == secCustom || s.id == 8 || s.id == 12 { // start, data count: no vector
			continue
		}
		if n, _, err := readU32(s.content, 0, len(s.content)); err != nil || int(n) > len(s.content) {
			return false
		}
	}
	return true
}
