package ticket

// bugHeldVouch: a process counts an ALIVE or UPDATE before it checks its
// support, so one that wakes from a pause takes the vouches waiting in
// its socket as fresh although its support ran out while it slept
// (doc.go, "Liveness": support is checked before every message). Only a
// driver that hands a resumed process its queued messages before its
// first tick shows it (sim.Options.HeldFirst). Tests only.
const bugHeldVouch bug = 128

// heldVouchBug reports whether the planted bugHeldVouch skips the support
// check before a message of type t.
func (m *Machine) heldVouchBug(t MsgType) bool {
	return m.cfg.bug == bugHeldVouch && (t == MsgAlive || t == MsgUpdate)
}
