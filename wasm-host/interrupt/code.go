package interrupt

// This file handles the code section: it finds the function bodies, has
// them walked (decode.go), and writes them back with the check at each
// loop start and function indices renumbered.

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// body is one function body of the code section: its bytes, how many
// edits walking it found and how many bytes they add.
type body struct {
	start, end  int // wasm[start:end]: locals and instructions
	edits, grow int
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

// rewriteCode appends the code section wasm[i:end] with w's edits made:
// check inserted at the start of every loop body, function indices
// renumbered. It walks every body first, to know each one's new size, then
// writes sizes and copies the bytes between edits.
func rewriteCode(out, wasm []byte, i, end int, w *walker, check []byte) ([]byte, error) {
	bodies, err := codeBodies(wasm, i, end)
	if err != nil {
		return out, err
	}
	edits, err := walkBodies(wasm, bodies, int(w.shift), w)
	if err != nil {
		return out, err
	}
	size := lenU32(uint32(len(bodies)))
	for _, b := range bodies {
		grown := b.end - b.start + b.grow
		size += lenU32(uint32(grown)) + grown
	}
	out = append(out, secCode)
	out = appendU32(out, uint32(size))
	out = appendU32(out, uint32(len(bodies)))
	for _, b := range bodies {
		out = appendU32(out, uint32(b.end-b.start+b.grow))
		out = applyEdits(out, wasm, b.start, b.end, edits[:b.edits], check)
		edits = edits[b.edits:]
	}
	return out, nil
}

// applyEdits appends wasm[from:to] with the edits made (see walker.edits):
// check inserted, function indices renumbered. A renumbered index keeps
// its width, so a padded LEB128 stays padded, unless it needs one more
// byte.
func applyEdits(out, wasm []byte, from, to int, edits []int, check []byte) []byte {
	for _, e := range edits {
		at := e >> 1
		out = append(out, wasm[from:at]...)
		if e&1 == editCheck {
			out = append(out, check...)
			from = at
			continue
		}
		v, next, _ := readU32(wasm, at, to) // the walk read it: well formed
		out = appendU32Width(out, v+1, next-at)
		from = next
	}
	return append(out, wasm[from:to]...)
}

// verifyCode checks that the code section wasm[i:end] is what Instrument
// makes with check (whose global.sets are at setAt): every loop body
// starts with the check, and nothing else sets the budget global.
func verifyCode(wasm []byte, i, end, importedFuncs, budget int, check []byte, setAt [2]int) error {
	bodies, err := codeBodies(wasm, i, end)
	if err != nil {
		return err
	}
	w := newWalker()
	w.guard, w.setAt = budget, setAt
	edits, err := walkBodies(wasm, bodies, importedFuncs, &w)
	if err != nil {
		return err
	}
	if budget == noGuard && len(edits) > 0 {
		return fmt.Errorf("the module has loops but no budget global (its last global is not a defined mutable i32)")
	}
	for _, e := range edits {
		if at := e >> 1; !bytes.HasPrefix(wasm[at:end], check) {
			return fmt.Errorf("the loop body at offset %d does not start with the check", at)
		}
	}
	return nil
}

// parallelBytes is the size of code from which walkBodies splits the work
// across goroutines: walking is serial within a body (each instruction's
// length depends on the one before), but bodies are independent, and a
// host compiling its modules at start waits for this.
const parallelBytes = 64 << 10

// walkBodies walks every body with a copy of w, sets its edit count and
// growth, and returns the edits of all bodies in order. The first body is
// function first (for error messages). A large code section is split into
// runs of consecutive bodies of about equal size, one goroutine each; the
// error reported is the one of the first failing body, as a serial walk
// would.
func walkBodies(wasm []byte, bodies []body, first int, w *walker) ([]int, error) {
	if len(bodies) == 0 {
		return nil, nil
	}
	total := bodies[len(bodies)-1].end - bodies[0].start
	parts := 1
	if total >= parallelBytes {
		parts = min(runtime.GOMAXPROCS(0), 4, len(bodies))
	}
	if parts == 1 {
		r := w.fresh()
		err := walkRun(wasm, bodies, first, &r)
		return r.edits, err
	}
	type run struct {
		w   walker
		err error
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
		r, part, f := &runs[p], bodies[from:to], first+from
		r.w = w.fresh()
		wg.Go(func() { r.err = walkRun(wasm, part, f, &r.w) })
		from = to
		if from == len(bodies) {
			runs = runs[:p+1]
			break
		}
	}
	wg.Wait()
	n := 0
	for _, r := range runs {
		if r.err != nil {
			return nil, r.err
		}
		n += len(r.w.edits)
	}
	edits := make([]int, 0, n)
	for _, r := range runs {
		edits = append(edits, r.w.edits...)
	}
	return edits, nil
}

// walkRun walks consecutive bodies, the first being function first (for
// error messages), recording their edits in w.
func walkRun(wasm []byte, bodies []body, first int, w *walker) error {
	for f := range bodies {
		b := &bodies[f]
		// Locals: a count of entries, each a count and a value type.
		entries, k, err := readU32(wasm, b.start, b.end)
		if err != nil {
			return fmt.Errorf("function %d: locals: %w", first+f, err)
		}
		for e := uint32(0); e < entries; e++ {
			if k, err = skipLEB(wasm, k, b.end, 5); err != nil {
				return fmt.Errorf("function %d: locals: %w", first+f, err)
			}
			if k >= b.end || !isValType(wasm[k]) {
				return fmt.Errorf("function %d: local of unknown type", first+f)
			}
			k++
		}
		edits, grow := len(w.edits), w.grow
		next, err := walk(wasm, k, b.end, w)
		if err != nil {
			return fmt.Errorf("function %d: %w", first+f, err)
		}
		if next != b.end {
			return fmt.Errorf("function %d: bytes after the final end at offset %d", first+f, next)
		}
		b.edits, b.grow = len(w.edits)-edits, w.grow-grow
	}
	return nil
}
