package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanHelperEnv makes the test binary a supervisor that keeps a spare
// watchdog (WarmWatch) and, with "leased", a leased command whose shell
// starts a background job; it prints the PIDs and waits to be killed.
const orphanHelperEnv = "RT_TEST_ORPHAN_SUPERVISOR"

func init() {
	mode, ok := os.LookupEnv(orphanHelperEnv)
	if _, watchdog := os.LookupEnv(watchdogEnv); !ok || watchdog {
		return // not the helper, or its watchdog (TestMain runs that)
	}
	WarmWatch()
	spareMu.Lock()
	w := spare
	spareMu.Unlock()
	<-w.ready
	<-w.guarding
	fmt.Printf("spare %d\n", w.wd.Process.Pid)
	if mode == "leased" {
		c, err := StartLeased([]string{"sh", "-c", `sleep 60 & echo "job $!"; wait`}, nil, time.Now().Add(time.Minute))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("watchdog %d\n", c.pgid)
	}
	select {}
}

// TestSupervisorKilledLeavesNoWatchdog: a supervisor killed with SIGKILL
// leaves no watchdog behind. A spare (WarmWatch), never armed, exits at
// the end of its input; an armed one ends its group, the command's
// background job included, then exits. The watchdog no longer dies with
// its supervisor (no Pdeathsig): the end of its input is what tells it.
func TestSupervisorKilledLeavesNoWatchdog(t *testing.T) {
	for _, mode := range []string{"spare", "leased"} {
		t.Run(mode, func(t *testing.T) {
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			h := exec.Command(self)
			h.Env = append(os.Environ(), orphanHelperEnv+"="+mode)
			out, _ := h.StdoutPipe()
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			pids := map[string]int{}
			sc := bufio.NewScanner(out)
			want := map[string]int{"spare": 1, "leased": 3}[mode]
			for len(pids) < want && sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 2 && f[0] != "error" {
					pids[f[0]], _ = strconv.Atoi(f[1])
				} else {
					t.Fatalf("helper: %q", sc.Text())
				}
			}
			if len(pids) < want {
				h.Process.Kill()
				h.Wait()
				t.Fatalf("helper said only %v", pids)
			}
			t.Cleanup(func() {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
			})
			h.Process.Kill()
			h.Wait()
			// A failure deadline, not a timing verdict: each must go.
			for what, p := range pids {
				for end := time.Now().Add(20 * time.Second); !procGone(p); time.Sleep(5 * time.Millisecond) {
					if time.Now().After(end) {
						t.Fatalf("the %s (%d) outlived its SIGKILLed supervisor", what, p)
					}
				}
			}
		})
	}
}

// procGone reports whether pid has exited (gone, or a zombie).
func procGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] == "Z"
}
