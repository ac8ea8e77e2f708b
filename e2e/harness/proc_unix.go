//go:build unix && !linux

package harness

import "syscall"

// sysProcAttr puts a child in its own process group. Pdeathsig is Linux-only;
// elsewhere a crashed test can leave the child running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
