package mutex

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// bench runs machines in one goroutine: every message is delivered at
// once, in order, and the virtual clock moves only when the caller says.
type bench struct {
	t     testing.TB
	now   time.Time
	ms    map[node.ID]Machine
	ids   []node.ID
	wake  map[node.ID]time.Time
	queue []node.Envelope[Msg]
	grant map[string]bool // "id/client/name" → granted and not yet released
	// onReady, if set, sees every Ready.
	onReady func(node.ID, node.Ready[Msg])
	// drop, if set, drops the messages it returns true for (a full socket).
	drop func(node.Envelope[Msg]) bool
}

func newBench(t testing.TB, algo Algo, n int, lease time.Duration) *bench {
	b := &bench{t: t, now: time.Unix(1_000_000, 0), ms: map[node.ID]Machine{}, wake: map[node.ID]time.Time{},
		grant: map[string]bool{}}
	for i := 1; i <= n; i++ {
		b.ids = append(b.ids, node.ID(i))
	}
	for _, id := range b.ids {
		m, err := New(Config{ID: id, Peers: b.ids, Algo: algo, Lease: lease, Rand: rand.New(rand.NewPCG(uint64(id), 1))})
		if err != nil {
			t.Fatal(err)
		}
		b.ms[id] = m
		m.Tick(b.now)
		b.collect(id)
	}
	b.settle()
	return b
}

func (b *bench) collect(id node.ID) {
	rd := b.ms[id].Ready()
	if b.onReady != nil {
		b.onReady(id, rd)
	}
	for _, env := range rd.Msgs {
		if b.drop == nil || !b.drop(env) {
			b.queue = append(b.queue, env)
		}
	}
	b.wake[id] = rd.Wake
	for _, ev := range rd.Events {
		switch e := ev.(type) {
		case GrantEvent:
			b.grant[fmt.Sprintf("%d/%d/%s", id, e.Client, e.Name)] = true
		case LostEvent:
			b.t.Fatalf("lost %s: %s", e.Name, e.Reason)
		}
	}
}

// settle delivers messages and runs due ticks until nothing is left at
// the current instant.
func (b *bench) settle() {
	for {
		for len(b.queue) > 0 {
			env := b.queue[0]
			b.queue = b.queue[1:]
			if err := b.ms[env.To].Step(b.now, env); err != nil {
				b.t.Fatal(err)
			}
			b.collect(env.To)
		}
		ticked := false
		for _, id := range b.ids {
			if w := b.wake[id]; !w.IsZero() && !w.After(b.now) {
				b.ms[id].Tick(b.now)
				b.collect(id)
				ticked = true
			}
		}
		if !ticked && len(b.queue) == 0 {
			return
		}
	}
}

// advance moves the clock by d in steps no longer than step.
func (b *bench) advance(d, step time.Duration) {
	for end := b.now.Add(d); b.now.Before(end); {
		b.now = b.now.Add(min(step, end.Sub(b.now)))
		b.settle()
	}
}

func (b *bench) local(id node.ID, typ MsgType, client uint64, name string) {
	b.queue = append(b.queue, node.Envelope[Msg]{From: id, To: id, Msg: Msg{Type: typ, Client: client, Name: name}})
}

// acquire takes name for client on daemon id and waits (in virtual time)
// for the grant.
func (b *bench) acquire(id node.ID, client uint64, name string) {
	b.local(id, LocalAcquire, client, name)
	b.settle()
	key := fmt.Sprintf("%d/%d/%s", id, client, name)
	for i := 0; !b.grant[key]; i++ {
		if i > 100_000 {
			b.t.Fatalf("%s: no grant", key)
		}
		b.advance(time.Millisecond, time.Millisecond)
	}
	delete(b.grant, key)
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHeldLocks: acquisitions (acquire, grant, release) per second of
// machine time on a 3-daemon cluster while other clients hold 10 or 10,000
// locks. The client runs on a follower, so every acquisition is messages
// to and from the coordinator; the virtual clock moves 1 µs per
// acquisition, so the holders' renewals (a lease's worth of work per
// holder, whatever the rate of acquisitions) stay out of the figure: it
// is the work per message.
func BenchmarkHeldLocks(b *testing.B) {
	for _, algo := range []Algo{Central, RicartAgrawala} {
		for _, held := range []int{10, 10_000} {
			b.Run(fmt.Sprintf("%v/held=%d", algo, held), func(b *testing.B) {
				w := newBench(b, algo, 3, time.Second)
				w.advance(2*time.Second, 5*time.Millisecond) // a coordinator, and its takeover wait
				for i := 0; i < held; i++ {
					w.local(2, LocalAcquire, 1, fmt.Sprintf("held-%05d", i))
				}
				for i := 0; len(w.grant) < held; i++ {
					if i > 10_000 {
						b.Fatalf("%d of %d held", len(w.grant), held)
					}
					w.advance(time.Millisecond, time.Millisecond)
				}
				clear(w.grant)
				b.ResetTimer()
				start, cpu := time.Now(), cpuTime()
				for i := 0; i < b.N; i++ {
					w.acquire(1, 2, "bench")
					w.local(1, LocalRelease, 2, "bench")
					w.now = w.now.Add(time.Microsecond)
					w.settle()
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acq/s")
				// Per second of this process's CPU time as well: on a busy
				// machine the wall clock also counts the time spent waiting
				// for a core.
				b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "acq/cpu-s")
			})
		}
	}
}

// TestCentralTenThousandLocksPaced: a member holding 10,000 locks with
// 255-byte names keeps them all over three leases, and never sends more
// than renewBurst bytes of renewals at one Tick, however the
// batching draws the renewals together.
func TestCentralTenThousandLocksPaced(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 locks")
	}
	w := newBench(t, Central, 3, time.Second)
	w.advance(2*time.Second, 5*time.Millisecond)
	const n = 10_000
	for i := 0; i < n; i++ {
		w.local(2, LocalAcquire, 1, fmt.Sprintf("%0255d", i))
	}
	for i := 0; len(w.grant) < n; i++ {
		if i > 10_000 {
			t.Fatalf("%d of %d held", len(w.grant), n)
		}
		w.advance(time.Millisecond, time.Millisecond)
	}
	most := 0
	w.onReady = func(id node.ID, rd node.Ready[Msg]) {
		if id != 2 {
			return
		}
		size := 0
		for _, env := range rd.Msgs {
			if env.Msg.Type == MsgRenew {
				for _, r := range env.Msg.Locks {
					size += len(r.Name) + 4*binary.MaxVarintLen64
				}
			}
		}
		most = max(most, size)
	}
	w.advance(3*time.Second, time.Millisecond) // a loss fails the test (bench.collect)
	if most > renewBurst {
		t.Fatalf("%d bytes of renewals at once, more than %d", most, renewBurst)
	}
	var held int
	for _, h := range w.ms[2].Holdings(w.now) {
		if h.Client == 1 {
			held++
		}
	}
	if held != n {
		t.Fatalf("%d of %d locks held after three leases", held, n)
	}
	t.Logf("at most %d bytes of renewals at one wake-up", most)
}

// TestCentralTenThousandLocksLateTicks: a member starved of CPU, whose
// timers fire only every 30 ms of a 1 s lease, cannot send every renewal
// of 10,000 locks with 255-byte names at once (renewBurst per Tick
// carries about 70% of them). Each lock's renewal waits its turn, longest
// due first, so all keep their leases; served in the order the locks were
// made, the last ones were put off at every tick until they were lost.
func TestCentralTenThousandLocksLateTicks(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 locks")
	}
	w := newBench(t, Central, 3, time.Second)
	w.advance(2*time.Second, 5*time.Millisecond)
	const n = 10_000
	for i := 0; i < n; i++ {
		w.local(2, LocalAcquire, 1, fmt.Sprintf("%0255d", i))
	}
	for i := 0; len(w.grant) < n; i++ {
		if i > 10_000 {
			t.Fatalf("%d of %d held", len(w.grant), n)
		}
		w.advance(time.Millisecond, time.Millisecond)
	}
	w.advance(3*time.Second, 30*time.Millisecond) // a loss fails the test (bench.collect)
	var held int
	for _, h := range w.ms[2].Holdings(w.now) {
		if h.Client == 1 && h.Until.Sub(w.now) > time.Second/2 {
			held++
		}
	}
	if held != n {
		t.Fatalf("%d of %d locks held with half a lease to go after three leases", held, n)
	}
}

// TestCentralRenewalsLostInBursts: the coordinator's socket takes only
// the first frames of each burst of renewals and drops the rest, as a
// starved coordinator's full receive buffer does. A renewal lost leaves
// its lock nearer its lease's end, so it goes at the head of the next
// burst: all 3,000 locks keep their leases. Sent in order of their next
// renewal instead, the same locks fell at a burst's tail again and again
// and ran out.
func TestCentralRenewalsLostInBursts(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 locks")
	}
	w := newBench(t, Central, 3, time.Second)
	w.advance(2*time.Second, 5*time.Millisecond)
	const n = 3_000
	for i := 0; i < n; i++ {
		w.local(2, LocalAcquire, 1, fmt.Sprintf("%0255d", i))
	}
	for i := 0; len(w.grant) < n; i++ {
		if i > 10_000 {
			t.Fatalf("%d of %d held", len(w.grant), n)
		}
		w.advance(time.Millisecond, time.Millisecond)
	}
	// From now on, of the member's renewal frames sent at one instant,
	// the coordinator takes the first five only.
	var at time.Time
	frames := 0
	w.drop = func(env node.Envelope[Msg]) bool {
		if env.Msg.Type != MsgRenew || env.From == env.To {
			return false
		}
		if !w.now.Equal(at) {
			at, frames = w.now, 0
		}
		frames++
		return frames > 5
	}
	w.advance(4*time.Second, 30*time.Millisecond) // a loss fails the test (bench.collect)
	var held int
	for _, h := range w.ms[2].Holdings(w.now) {
		if h.Client == 1 {
			held++
		}
	}
	if held != n {
		t.Fatalf("%d of %d locks held after four leases of lost renewals", held, n)
	}
}
