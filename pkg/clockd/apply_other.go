//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le))

package clockd

import (
	"errors"
	"time"
)

func newKernelClock(time.Duration) (localClock, error) {
	return nil, errors.New("--apply is implemented for 64-bit Linux only")
}
