//go:build !linux

package runtime

import (
	"os"
	"time"
)

// Elsewhere than Linux the memo is off: every start hashes every module.
func fileIdentity(os.FileInfo) (string, bool) { return "", false }

func changeTime(os.FileInfo) (time.Time, bool) { return time.Time{}, false }
