package fd

import (
	"math"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Timeout suspects a peer after Bound of silence. Peers never heard from are
// suspected only after Bound has passed since Start was called for them.
type Timeout struct {
	Bound time.Duration
	last  map[node.ID]time.Time
}

// NewTimeout returns a detector with the given bound.
func NewTimeout(bound time.Duration) *Timeout {
	return &Timeout{Bound: bound, last: map[node.ID]time.Time{}}
}

// Heard records a sign of life from id at now.
func (t *Timeout) Heard(id node.ID, now time.Time) {
	if prev, ok := t.last[id]; !ok || now.After(prev) {
		t.last[id] = now
	}
}

// Forget drops id: it is neither trusted nor suspected until heard again.
func (t *Timeout) Forget(id node.ID) { delete(t.last, id) }

// Suspected reports whether id has been silent for more than Bound. A peer
// never heard from is suspected.
func (t *Timeout) Suspected(id node.ID, now time.Time) bool {
	last, ok := t.last[id]
	return !ok || now.Sub(last) > t.Bound
}

// Deadline is when id becomes suspected if nothing more is heard; the zero
// time if it was never heard from.
func (t *Timeout) Deadline(id node.ID) time.Time {
	last, ok := t.last[id]
	if !ok {
		return time.Time{}
	}
	return last.Add(t.Bound + 1)
}

// PhiAccrual computes φ = −log10(P(a heartbeat arrives later than now)),
// assuming normally distributed inter-arrival times over a sliding window.
type PhiAccrual struct {
	// Window is how many inter-arrival samples are kept (default 100).
	Window int
	// MinStdDev floors the standard deviation so a perfectly regular
	// sender does not make φ explode on the first jitter (default 10ms).
	MinStdDev time.Duration
	peers     map[node.ID]*phiState
}

type phiState struct {
	last    time.Time
	samples []float64 // seconds
	next    int
}

// NewPhiAccrual returns a detector with the default window and floor.
func NewPhiAccrual() *PhiAccrual {
	return &PhiAccrual{Window: 100, MinStdDev: 10 * time.Millisecond, peers: map[node.ID]*phiState{}}
}

// Heard records a heartbeat from id at now.
func (p *PhiAccrual) Heard(id node.ID, now time.Time) {
	st := p.peers[id]
	if st == nil {
		p.peers[id] = &phiState{last: now}
		return
	}
	gap := now.Sub(st.last).Seconds()
	if gap <= 0 {
		return
	}
	st.last = now
	if len(st.samples) < p.Window {
		st.samples = append(st.samples, gap)
	} else {
		st.samples[st.next] = gap
		st.next = (st.next + 1) % p.Window
	}
}

// Phi returns the suspicion level of id at now: 0 when just heard, about 1
// when the silence is as long as a 10%-tail arrival, 3 for a 0.1% tail. A
// peer never heard from, or heard only once, has φ = +Inf.
func (p *PhiAccrual) Phi(id node.ID, now time.Time) float64 {
	st := p.peers[id]
	if st == nil || len(st.samples) == 0 {
		return math.Inf(1)
	}
	var mean, sq float64
	for _, s := range st.samples {
		mean += s
	}
	mean /= float64(len(st.samples))
	for _, s := range st.samples {
		sq += (s - mean) * (s - mean)
	}
	std := math.Max(math.Sqrt(sq/float64(len(st.samples))), p.MinStdDev.Seconds())
	elapsed := now.Sub(st.last).Seconds()
	// P(X > elapsed) for X ~ N(mean, std), via the complementary error function.
	tail := 0.5 * math.Erfc((elapsed-mean)/(std*math.Sqrt2))
	if tail <= 0 {
		return math.Inf(1)
	}
	return -math.Log10(tail)
}

// Suspected reports whether φ(id) exceeds threshold (8 is a common choice).
func (p *PhiAccrual) Suspected(id node.ID, now time.Time, threshold float64) bool {
	return p.Phi(id, now) > threshold
}

// Health is a process's score of its own timeliness, the "local health
// awareness" of Lifeguard (Dadgar et al., "Lifeguard: Local Health
// Awareness for More Accurate Failure Detection", 2018, §3.1): a process
// whose own timers fire late, or whose own inbound frames arrive in a
// burst, cannot tell a silent peer from its own starvation, so instead of
// suspecting others it raises its score, which stretches the timeouts it
// suspects by (Scale). The score decays by one for every Decay without a
// new sign of trouble.
//
// Like the detectors it reads no clock: the caller passes every timestamp.
// The zero value is disabled (Max 0): Scale returns its argument.
type Health struct {
	// Max caps the score; timeouts stretch up to (1+Max)×.
	Max int
	// Slack is how late a timer may fire before it counts as a sign of
	// trouble (scheduling jitter on a healthy host is well below it).
	Slack time.Duration
	// Decay is how long the process must run without a new sign of
	// trouble before the score drops by one.
	Decay time.Duration

	score int
	since time.Time // when the score last changed (decay runs from here)
}

// NewHealth returns a score capped at max, counting lateness above slack,
// decaying by one per decay.
func NewHealth(max int, slack, decay time.Duration) *Health {
	return &Health{Max: max, Slack: slack, Decay: decay}
}

// Late records that at now the process ran late by lateness (a timer fired
// that much after the time it was asked for). Lateness above Slack raises
// the score by one; Late reports whether it did.
func (h *Health) Late(now time.Time, lateness time.Duration) bool {
	if lateness <= h.Slack {
		return false
	}
	h.Trouble(now)
	return true
}

// Trouble raises the score by one (up to Max): a sign at now that this
// process, not its peers, is slow.
func (h *Health) Trouble(now time.Time) {
	if h.Max <= 0 {
		return
	}
	h.decay(now)
	if h.score < h.Max {
		h.score++
	}
	h.since = now
}

// Score is the score at now, after decay.
func (h *Health) Score(now time.Time) int {
	h.decay(now)
	return h.score
}

// Scale stretches a timeout by the score at now: d·(1+score).
func (h *Health) Scale(d time.Duration, now time.Time) time.Duration {
	return d * time.Duration(1+h.Score(now))
}

func (h *Health) decay(now time.Time) {
	if h.score == 0 || h.Decay <= 0 {
		return
	}
	steps := int(now.Sub(h.since) / h.Decay)
	if steps <= 0 {
		return
	}
	if steps >= h.score {
		h.score = 0
		h.since = now
		return
	}
	h.score -= steps
	h.since = h.since.Add(time.Duration(steps) * h.Decay)
}
