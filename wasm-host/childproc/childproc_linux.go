package childproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel send cmd's process SIGKILL when its parent
// dies, however it dies (PR_SET_PDEATHSIG). Call it before cmd.Start. The
// signal follows the parent thread that started the child: Go keeps its
// threads for the life of the process unless a goroutine locked to one
// with runtime.LockOSThread returns, which the callers here never do.
func DieWithParent(cmd *exec.Cmd) { onParentDeath(cmd, syscall.SIGKILL) }

// StopWithParent is DieWithParent with SIGTERM, for a child that stops its
// own children when asked to (wrangler dev stops its workerd): SIGKILL
// would leave those running.
func StopWithParent(cmd *exec.Cmd) { onParentDeath(cmd, syscall.SIGTERM) }

func onParentDeath(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
}
