//go:build !linux

package child

import "os/exec"

func tie(*exec.Cmd) {}
