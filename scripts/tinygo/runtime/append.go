//go:build tinygo

// The append builtin of the project's TinyGo (scripts/install-tinygo.sh
// copies this file into TinyGo's src/runtime and renames TinyGo's own
// sliceAppend out of the way). The modules are built for size (-opt=s,
// build-functions.sh), at which LLVM stops inlining TinyGo's sliceAppend:
// every append(b, c) in a loop became a call, the guests' hottest function
// on a 4 KB decision. This one is always inlined and keeps only the copy in
// line: the growth stays a call, taken when the capacity is short, and a copy
// of a known small size becomes a store.
package runtime

import "unsafe"

//go:inline
func sliceAppend(srcBuf, elemsBuf unsafe.Pointer, srcLen, srcCap, elemsLen, elemSize uintptr, layout unsafe.Pointer) (unsafe.Pointer, uintptr, uintptr) {
	newLen := srcLen + elemsLen
	if elemsLen > 0 {
		if newLen > srcCap {
			srcBuf, _, srcCap = sliceGrow(srcBuf, srcLen, srcCap, newLen, elemSize, layout)
		}
		memmove(unsafe.Add(srcBuf, srcLen*elemSize), elemsBuf, elemsLen*elemSize)
	}
	return srcBuf, newLen, srcCap
}
