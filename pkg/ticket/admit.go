package ticket

import "time"

// Joins as machine inputs. A member's processes join the core only by a
// local MsgJoin (the founder's first one founds the pool: Config.Tickets
// set; every later one asks the contacts), so the simulator drives the
// same code a service does, and the Member's refound freeze applies to
// every join. A join with nobody to ask is reported (NoContactEvent).
//
// A founder under Config.Quorum takes no other member's process in while
// the promises it founded under last (doc.go, "After a refound:
// liveness"; Member.Step). Its first process knows when they end
// (AdmitFrom); its other processes are told (MsgAdmit), since once in the
// core they coordinate tickets too and a CJOIN may reach them first.

// AdmitFrom is when this member's founding lets other members' processes
// in: zero unless it founded the pool under promises.
func (h *Member) AdmitFrom() time.Time { return h.ls.admitFrom }

// admit records when the member's first process admits other members
// again (MsgAdmit); it only moves later.
func (h *Member) admit(untilNS uint64) {
	if h.pc != nil || untilNS == 0 || untilNS > uint64(1<<63-1) {
		return
	}
	if u := time.Unix(0, int64(untilNS)); u.After(h.ls.admitFrom) {
		h.ls.admitFrom = u
	}
}

// NoContactEvent: a MsgJoin found nobody to ask (the member's address
// book holds no other process).
type NoContactEvent struct{}

func (NoContactEvent) Kind() string   { return "no-contact" }
func (NoContactEvent) String() string { return "no member known to join through" }
