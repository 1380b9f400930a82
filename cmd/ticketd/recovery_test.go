package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/ticketd"
)

// TestEveryMemberServesAfterStalls: five members, all stopped (SIGSTOP)
// for about two promise lengths, twice in a row; the pool ends and is
// founded again. After the second stall every member's first process
// must be back in the core (it serves: the majority refound lets a
// member stay there only under a lease) within ticket.RecoveryBound
// for the pool's round and margin, plus the scheduling delay measured
// meanwhile, and a client of each member gets a ticket.
func TestEveryMemberServesAfterStalls(t *testing.T) {
	const round, killGrace = 100 * time.Millisecond, 300 * time.Millisecond
	c := startPool(t, 5, 5, "--round", round.String())
	c.waitSettled(5)
	cfg := ticket.Config{Round: round, Margin: killGrace + 4*cli.CheckEvery + 50*time.Millisecond, Stretch: ticketd.Stretch}
	bound := ticket.RecoveryBound(cfg)
	promise := time.Duration(float64((38*round + cfg.Margin)) * 1.02)
	for stall := 1; stall <= 2; stall++ {
		for m := 1; m <= 5; m++ {
			c.Ctl("pause", fmt.Sprint(m))
		}
		// The stall itself (the fault, not a wait for anything).
		time.Sleep(2 * promise)
		for m := 1; m <= 5; m++ {
			c.Ctl("resume", fmt.Sprint(m))
		}
		if stall == 1 {
			time.Sleep(time.Second) // a second in which probes and promises start
		}
	}
	healed := time.Now()
	served := map[int]time.Duration{}
	var late time.Duration // the slowest status answer: the host's scheduling delay
	for len(served) < 5 && time.Since(healed) < 2*bound+time.Minute {
		for m := 1; m <= 5; m++ {
			if _, ok := served[m]; ok {
				continue
			}
			t0 := time.Now()
			out, err := exec.Command(ticketdBin, "status", "--socket", c.sock(m)).Output()
			late = max(late, time.Since(t0))
			if err == nil && strings.Contains(string(out), "slot 0 id ") && inCore(string(out)) {
				served[m] = time.Since(healed)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	slack := 5*time.Second + 20*late
	var worst time.Duration
	for _, d := range served {
		worst = max(worst, d)
	}
	if len(served) < 5 || worst > bound+slack {
		t.Fatalf("members back in the core after %v (bound %v, slack %v): %v\n%s", worst, bound, slack, served, c.statuses())
	}
	for m := 1; m <= 5; m++ {
		c.run(m, c.Dir+"/witness", 10*time.Millisecond, "--timeout", "60s").served(t, fmt.Sprintf("a client of member %d", m))
	}
	probes, refounds := c.refounding(1, 2, 3, 4, 5)
	if refounds == 0 {
		t.Fatalf("no refound after two stalls of every member: the test did not end the pool\n%s", c.statuses())
	}
	t.Logf("every member back in the core %v after the second stall (bound %v, scheduling slack %v; %d probes, %d refounds): %v",
		worst, bound, slack, probes, refounds, served)
}

// inCore: the status's first slot holds a ticket as a coordinator.
func inCore(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if strings.HasPrefix(line, "slot 0 id ") && strings.Contains(line+" ", " coordinator ticket ") {
			return true
		}
	}
	return false
}
