//go:build linux

package harness

import "syscall"

// sysProcAttr puts a child in its own process group (so Stop can signal the
// whole group) and asks the kernel to SIGKILL it when the thread that started
// it dies, so a crashed test binary leaves no orphan apiserver.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
