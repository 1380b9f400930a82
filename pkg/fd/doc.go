// Package fd holds failure detectors. They read no clock: every call takes
// the caller's notion of now, so the same detector works under the real
// driver and in the simulator.
//
// Timeout is the classic detector of the election lectures: a process is
// suspected when nothing was heard from it for longer than a fixed bound
// (Schaffernicht, Topic V: choose the bound t > 2·MDT + MHT). PhiAccrual (Hayashibara et
// al.) instead reports a suspicion level that grows with the silence,
// measured against the observed distribution of inter-arrival times.
package fd
