//go:build !linux

package childproc

import "os/exec"

// DieWithParent does nothing where the kernel has no parent-death signal:
// stop the children yourself.
func DieWithParent(cmd *exec.Cmd) {}

// StopWithParent does nothing where the kernel has no parent-death signal.
func StopWithParent(cmd *exec.Cmd) {}
