package main

import "testing"

// TestChangRobertsBackups: with claims backed up on two members, the two
// best members are SIGKILLed at once; the election that follows passes
// claims through both dead members, and the three left agree on the best
// of them.
func TestChangRobertsBackups(t *testing.T) {
	c := startCluster(t, 5, "--algo", "chang-roberts", "--backups", "2")
	all := []int{1, 2, 3, 4, 5}
	t1 := c.waitAgree(all, 5, 0)
	c.ctl("kill", "5")
	c.ctl("kill", "4")
	c.waitAgree([]int{1, 2, 3}, 3, t1)
	c.check()
}
