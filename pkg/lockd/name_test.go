package lockd

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, ok := range []string{"db", "backup-2026.11", "my/lock:1", "café", "锁", strings.Repeat("x", 255)} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a\nacquired b token 1", "tab\there", "cr\r", "del\x7f", "nul\x00",
		"nbsp\u00a0x", "line\u2028sep", "\xff", strings.Repeat("x", 256)} {
		if err := ValidName(bad); err == nil {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
	if _, err := CheckName([]string{"a b"}); err == nil || !strings.Contains(err.Error(), "spaces") {
		t.Errorf("CheckName: %v", err)
	}
}
