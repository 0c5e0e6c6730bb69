package interrupt

// This file handles the code section: it finds the function bodies, has
// them walked (decode.go), and writes them back with the check at each
// loop start.

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// body is one function body of the code section: its bytes and how many
// loops it has.
type body struct {
	start, end int // wasm[start:end]: locals and instructions
	loops      int
}

// codeBodies returns the function bodies of the code section wasm[i:end].
func codeBodies(wasm []byte, i, end int) ([]body, error) {
	n, i, err := readU32(wasm, i, end)
	if err != nil {
		return nil, err
	}
	if int(n) > end-i {
		return nil, errTruncated
	}
	bodies := make([]body, n)
	for f := range bodies {
		s, j, err := readU32(wasm, i, end)
		if err != nil {
			return nil, fmt.Errorf("body %d: size: %w", f, err)
		}
		if int(s) > end-j {
			return nil, fmt.Errorf("body %d: %w", f, errTruncated)
		}
		bodies[f] = body{start: j, end: j + int(s)}
		i = j + int(s)
	}
	if i != end {
		return nil, errors.New("trailing bytes")
	}
	return bodies, nil
}

// rewriteCode appends the code section wasm[i:end] with check inserted at
// the start of every loop body. It walks every body first, to know each
// one's new size, then writes sizes and copies the bytes between insertion
// points.
func rewriteCode(out, wasm []byte, i, end, importedFuncs int, check []byte) ([]byte, error) {
	bodies, err := codeBodies(wasm, i, end)
	if err != nil {
		return out, err
	}
	loops, err := walkBodies(wasm, bodies, importedFuncs, noGuard)
	if err != nil {
		return out, err
	}
	size := lenU32(uint32(len(bodies)))
	for _, b := range bodies {
		grown := b.end - b.start + b.loops*len(check)
		size += lenU32(uint32(grown)) + grown
	}
	out = append(out, secCode)
	out = appendU32(out, uint32(size))
	out = appendU32(out, uint32(len(bodies)))
	for _, b := range bodies {
		out = appendU32(out, uint32(b.end-b.start+b.loops*len(check)))
		from := b.start
		for _, ins := range loops[:b.loops] {
			out = append(out, wasm[from:ins]...)
			out = append(out, check...)
			from = ins
		}
		out = append(out, wasm[from:b.end]...)
		loops = loops[b.loops:]
	}
	return out, nil
}

// checkInstrumented reports whether the code section among the sections
// from wasm[i:] is what Instrument makes with the global index: every loop
// body starts with the check, and no instruction sets the global.
func checkInstrumented(wasm []byte, i int, index uint32, importedFuncs int) error {
	for i < len(wasm) {
		id := wasm[i]
		size, j, err := readU32(wasm, i+1, len(wasm))
		if err != nil || int(size) > len(wasm)-j {
			return fmt.Errorf("section at %d: %w", i, errTruncated)
		}
		i = j + int(size)
		if id != secCode {
			continue
		}
		bodies, err := codeBodies(wasm, j, i)
		if err != nil {
			return err
		}
		loops, err := walkBodies(wasm, bodies, importedFuncs, int(index))
		if err != nil {
			return err
		}
		check := appendCheck(nil, index)
		for _, at := range loops {
			if !bytes.HasPrefix(wasm[at:], check) {
				return fmt.Errorf("the loop body at offset %d does not start with the check", at)
			}
		}
	}
	return nil
}

// parallelBytes is the size of code from which walkBodies splits the work
// across goroutines: walking is serial within a body (each instruction's
// length depends on the one before), but bodies are independent, and a
// host compiling its modules at start waits for this.
const parallelBytes = 64 << 10

// walkBodies walks every body, sets its loop count, and returns the loop
// offsets of all bodies in order. A large code section is split into runs
// of consecutive bodies of about equal size, one goroutine each; the error
// reported is the one of the first failing body, as a serial walk would.
func walkBodies(wasm []byte, bodies []body, importedFuncs, guard int) ([]int, error) {
	if len(bodies) == 0 {
		return nil, nil
	}
	total := bodies[len(bodies)-1].end - bodies[0].start
	parts := 1
	if total >= parallelBytes {
		parts = min(runtime.GOMAXPROCS(0), 4, len(bodies))
	}
	if parts == 1 {
		return walkRun(wasm, bodies, importedFuncs, guard, nil)
	}
	type run struct {
		loops []int
		err   error
	}
	runs := make([]run, parts)
	var wg sync.WaitGroup
	from := 0
	for p := range runs {
		// Up to the first body that ends past the p+1-th share of bytes.
		to := len(bodies)
		if p < parts-1 {
			limit := bodies[0].start + total*(p+1)/parts
			to = from + 1
			for to < len(bodies) && bodies[to-1].end < limit {
				to++
			}
		}
		r, part, first := &runs[p], bodies[from:to], importedFuncs+from
		wg.Go(func() { r.loops, r.err = walkRun(wasm, part, first, guard, nil) })
		from = to
		if from == len(bodies) {
			runs = runs[:p+1]
			break
		}
	}
	wg.Wait()
	var loops []int
	for _, r := range runs {
		if r.err != nil {
			return nil, r.err
		}
		loops = append(loops, r.loops...)
	}
	return loops, nil
}

// walkRun walks consecutive bodies, the first being function first (for
// error messages), with walk's guard.
func walkRun(wasm []byte, bodies []body, first, guard int, loops []int) ([]int, error) {
	for f := range bodies {
		b := &bodies[f]
		// Locals: a count of entries, each a count and a value type.
		entries, k, err := readU32(wasm, b.start, b.end)
		if err != nil {
			return nil, fmt.Errorf("function %d: locals: %w", first+f, err)
		}
		for e := uint32(0); e < entries; e++ {
			if k, err = skipLEB(wasm, k, b.end, 5); err != nil {
				return nil, fmt.Errorf("function %d: locals: %w", first+f, err)
			}
			if k >= b.end || !isValType(wasm[k]) {
				return nil, fmt.Errorf("function %d: local of unknown type", first+f)
			}
			k++
		}
		before := len(loops)
		var next int
		if next, loops, err = walk(wasm, k, b.end, guard, loops); err != nil {
			return nil, fmt.Errorf("function %d: %w", first+f, err)
		}
		if next != b.end {
			return nil, fmt.Errorf("function %d: bytes after the final end at offset %d", first+f, next)
		}
		b.loops = len(loops) - before
	}
	return loops, nil
}
