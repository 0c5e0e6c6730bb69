package interrupt

import (
	"bytes"
	"strings"
)

// secData is the data section's id.
const secData = 11

// ReadOnlyEnd returns where a module's read-only data ends in its linear
// memory: the highest end of its active data segments named ".rodata" or
// ".rodata.N" in the name section, which the linker places below the
// writable ones. Go code never writes there (string literals, constant
// tables, type data), so the host's reset between calls need not put it
// back (wasm-host/runtime, arena.go). It returns 0, meaning "restore
// everything", for a module without data segment names, one whose read-only
// segments do not all lie below the others, or bytes it cannot decode.
//
// It lives here because this package is the host's decoder of module
// binaries: the sections, LEB128 numbers and names are read as Instrument
// reads them.
func ReadOnlyEnd(wasm []byte) uint32 {
	if len(wasm) < len(header) || !bytes.Equal(wasm[:len(header)], header) {
		return 0
	}
	var segs []dataSegment
	names := map[uint32]string{}
	for i := len(header); i < len(wasm); {
		id := wasm[i]
		size, body, err := readU32(wasm, i+1, len(wasm))
		end := body + int(size)
		if err != nil || end > len(wasm) {
			return 0
		}
		i = end
		switch id {
		case secData:
			if segs, err = dataSegments(wasm, body, end, segs[:0]); err != nil {
				return 0
			}
		case secCustom:
			n, k, err := readU32(wasm, body, end)
			if err != nil || int(n) > end-k {
				return 0
			}
			if string(wasm[k:k+int(n)]) == "name" {
				if err := dataNames(wasm, k+int(n), end, names); err != nil {
					return 0
				}
			}
		}
	}
	var roEnd, lowestOther uint64 = 0, 1 << 32
	for idx, s := range segs {
		if !s.active {
			continue
		}
		if name := names[uint32(idx)]; name == ".rodata" || strings.HasPrefix(name, ".rodata.") {
			roEnd = max(roEnd, s.end)
		} else {
			lowestOther = min(lowestOther, s.at)
		}
	}
	if roEnd == 0 || roEnd > lowestOther || roEnd >= 1<<32 {
		return 0
	}
	return uint32(roEnd)
}

// dataSegment is where a data segment goes in memory; a passive one has no
// place but keeps its index.
type dataSegment struct {
	at, end uint64
	active  bool
}

// dataSegments appends the data section's segments in index order. An
// active segment's offset must be an i32.const.
func dataSegments(wasm []byte, i, end int, segs []dataSegment) ([]dataSegment, error) {
	n, i, err := readU32(wasm, i, end)
	for ; n > 0 && err == nil; n-- {
		var flags uint32
		if flags, i, err = readU32(wasm, i, end); err != nil {
			break
		}
		if flags == 2 { // active, with a memory index
			if _, i, err = readU32(wasm, i, end); err != nil {
				break
			}
		}
		var at int32
		active := flags != 1
		if active {
			if i >= end || wasm[i] != 0x41 { // i32.const
				return segs, errTruncated
			}
			if at, i, err = readS32(wasm, i+1, end); err != nil {
				break
			}
			if i >= end || wasm[i] != 0x0B { // end
				return segs, errTruncated
			}
			i++
		}
		var l uint32
		if l, i, err = readU32(wasm, i, end); err != nil {
			break
		}
		if int(l) > end-i {
			return segs, errTruncated
		}
		i += int(l)
		from := uint64(uint32(at))
		segs = append(segs, dataSegment{at: from, end: from + uint64(l), active: active})
	}
	return segs, err
}

// dataNames reads the name section's data segment names (subsection 9).
func dataNames(wasm []byte, i, end int, names map[uint32]string) error {
	for i < end {
		id := wasm[i]
		size, j, err := readU32(wasm, i+1, end)
		if err != nil || int(size) > end-j {
			return errTruncated
		}
		i = j + int(size)
		if id != 9 {
			continue
		}
		n, k, err := readU32(wasm, j, i)
		for ; n > 0 && err == nil; n-- {
			var idx, l uint32
			if idx, k, err = readU32(wasm, k, i); err != nil {
				break
			}
			if l, k, err = readU32(wasm, k, i); err != nil || int(l) > i-k {
				return errTruncated
			}
			names[idx] = string(wasm[k : k+int(l)])
			k += int(l)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
