package interrupt

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strings"
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

// interruptIndex reads the index ExportName refers to from the export
// section.
func interruptIndex(tb testing.TB, wasm []byte) uint32 {
	tb.Helper()
	for _, s := range sectionsOf(tb, wasm) {
		if s.id != secExport {
			continue
		}
		n, i, _ := readU32(s.content, 0, len(s.content))
		kind, index, found, err := findExport(s.content, i, len(s.content), n)
		if err != nil || !found || kind != 0x03 {
			tb.Fatalf("export %s: kind %d found %v err %v", ExportName, kind, found, err)
		}
		return index
	}
	tb.Fatal("no export section")
	return 0
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
			next, loops, err := walk(wasm, k, stop, noGuard, nil)
			if err != nil || next != stop {
				tb.Fatalf("body %d: walk ends at %d of %d: %v", f, next, stop, err)
			}
			per = append(per, loops)
			i = stop
		}
	}
	return per
}

// checkEveryLoopChecks asserts that out is in instrumented with one check
// at the start of each loop body, and nothing else changed in the bodies.
func checkEveryLoopChecks(t *testing.T, in, out []byte) {
	t.Helper()
	check := appendCheck(nil, interruptIndex(t, out))
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

func TestHandModuleComputesTheSameWhenInstrumented(t *testing.T) {
	in := handModule()
	out := mustInstrument(t, in)
	checkEveryLoopChecks(t, in, out)
	// One import and two defined globals before it: the added global is
	// index 3, whatever the count of defined globals alone would say.
	if got := interruptIndex(t, out); got != 3 {
		t.Fatalf("interrupt global index %d, want 3", got)
	}
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, out)
	if g := interruptOf(t, mod); g.Get() != 0 {
		t.Fatalf("interrupt starts at %d", g.Get())
	}
	checkHandResults(t, mod)
}

func TestInterruptStopsALoopAlreadyRunning(t *testing.T) {
	// count adds 1 to memory[0] at every iteration. Waiting for the count to
	// move proves the guest is inside the loop before the global is set, so
	// the trap shows the compiled loop reloads the global every iteration
	// (a load hoisted out of the loop would make the call never return).
	needFreeP(t)
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, mustInstrument(t, handModule()))
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("count").Call(context.Background())
		done <- err
	}()
	for {
		if n, _ := mod.Memory().ReadUint32Le(0); n > 1000 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("count returned before the interrupt: %v", err)
		default:
			runtime.Gosched()
		}
	}
	interruptOf(t, mod).Set(1)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v, want the unreachable trap", err)
	}
}

func TestSpinWithoutInterruptIsNotTrapped(t *testing.T) {
	// The other side of the check: the global at 0 lets every loop run.
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, mustInstrument(t, handModule()))
	if got, err := mod.ExportedFunction("sum").Call(context.Background(), 2000); err != nil || len(got) != 1 {
		t.Fatalf("sum(2000) = %v, %v", got, err)
	}
	interruptOf(t, mod).Set(1)
	if _, err := mod.ExportedFunction("spin").Call(context.Background()); err == nil {
		t.Fatal("spin returned with the interrupt set")
	}
}

func TestMissingGlobalAndExportSectionsAreAddedInOrder(t *testing.T) {
	// No global, export or code-adjacent sections to append to; an imported
	// global, so the added one is index 1; a start section, which must
	// follow the export section.
	in := module(
		section(1, vec(funcType(nil, nil))),
		section(2, vec(cat(str("env"), str("g"), op(0x03, i32, 0x00)))),
		section(3, vec(u32(0))),
		section(8, u32(0)),
		section(10, vec(fbody(nil, op(globalGet, 0, drop, loop, empty, end)))),
	)
	out := mustInstrument(t, in)
	var ids []byte
	for _, s := range sectionsOf(t, out) {
		ids = append(ids, s.id)
	}
	if want := []byte{1, 2, 3, 6, 7, 8, 10}; !bytes.Equal(ids, want) {
		t.Fatalf("sections %v, want %v", ids, want)
	}
	if got := interruptIndex(t, out); got != 1 {
		t.Fatalf("interrupt global index %d, want 1", got)
	}
	checkEveryLoopChecks(t, in, out)
	rt := newRuntime(t, false)
	instantiateNamed(t, rt, envModule(), "env")
	mod := instantiate(t, rt, out) // runs the start function
	if g := interruptOf(t, mod); g.Get() != 0 {
		t.Fatalf("interrupt = %d", g.Get())
	}
}

func TestEmptyModuleGetsTheGlobal(t *testing.T) {
	out := mustInstrument(t, header)
	mod := instantiate(t, newRuntime(t, false), out)
	interruptOf(t, mod).Set(1)
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

func TestExportNameTakenByAnotherKindIsAnError(t *testing.T) {
	in := module(
		section(1, vec(funcType(nil, nil))),
		section(3, vec(u32(0))),
		section(7, vec(export(ExportName, 0x00, 0))),
		section(10, vec(fbody(nil))),
	)
	if _, err := Instrument(in); err == nil || !strings.Contains(err.Error(), "not as a mutable i32 global") {
		t.Fatalf("err = %v", err)
	}
}

func TestExportNameOnAnUninstrumentedModuleIsAnError(t *testing.T) {
	// A module may export its own gateway_interrupt. Returned unchanged,
	// its loops would not check it, or it could reset the global; so the
	// name counts as "instrumented already" only when the code says so.
	check := appendCheck(nil, 0)
	for _, c := range []struct {
		name string
		code []byte
		want string
	}{
		{"a loop without the check", op(loop, empty, end), "does not start with the check"},
		{"the check, then a reset", cat(op(loop, empty), check, i32c(0), op(0x24, 0, end)), "global.set of the interrupt global"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := module(
				section(1, vec(funcType(nil, nil))),
				section(3, vec(u32(0))),
				section(6, vec(cat(op(i32, 0x01), i32c(0), op(end)))),
				section(7, vec(export(ExportName, 0x03, 0))),
				section(10, vec(fbody(nil, c.code))),
			)
			if _, err := Instrument(in); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
	// The same module with the check and no reset is taken as it is.
	in := module(
		section(1, vec(funcType(nil, nil))),
		section(3, vec(u32(0))),
		section(6, vec(cat(op(i32, 0x01), i32c(0), op(end)))),
		section(7, vec(export(ExportName, 0x03, 0))),
		section(10, vec(fbody(nil, op(loop, empty), check, op(end)))),
	)
	if out, err := Instrument(in); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("err = %v, changed %v", err, !bytes.Equal(out, in))
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
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Instrument(oneBody(c.code))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q (out %d bytes)", err, c.want, len(out))
			}
		})
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
