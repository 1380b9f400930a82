package lockd

import (
	"os"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// TestMain lets Run's watchdog, which re-executes this test binary, be one.
func TestMain(m *testing.M) {
	cli.RunWatchdog()
	os.Exit(m.Run())
}
