package clocksync

import (
	"fmt"
	"strconv"
)

func itoa(v uint64) string                      { return strconv.FormatUint(v, 10) }
func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
