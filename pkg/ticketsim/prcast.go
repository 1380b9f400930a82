package ticketsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// PrCastConfig is the traffic experiment of PrCast over partial views
// (pkg/gossip, Config.View): Processes members, each joining through one
// or two members before it, shuffle their views for Warm rounds; then
// Notices notices a round are announced by members at random for Rounds
// rounds, and the run counts the messages each member sends per round.
type PrCastConfig struct {
	Processes int
	Rounds    int // measured rounds (default 10)
	Warm      int // rounds of shuffling before measuring (default 10)
	Notices   int // notices announced per round (default 1)
	// View is each member's view size (default gossip.ViewSize(Processes)).
	View  int
	Drop  float64 // probability a message is lost
	Seed  uint64
	Round time.Duration // the gossip round (default 100 ms)
}

// PrCastResult is what the experiment measured. Per member and round:
// membership messages (shuffles and their answers) and PrCast messages
// (pushes, digests and repairs) a member sent, mean and most.
type PrCastResult struct {
	Event     string `json:"event"` // "prcast"
	Processes int    `json:"processes"`
	View      int    `json:"view"`
	Fanout    int    `json:"fanout"`
	TTL       int    `json:"ttl"`
	Rounds    int    `json:"rounds"`
	Notices   int    `json:"notices"`
	// Membership and PrCast: messages one member sent in one round.
	MembershipMean float64 `json:"membership_per_member_round"`
	MembershipMax  int     `json:"membership_max"`
	PrCastMean     float64 `json:"prcast_per_member_round"`
	PrCastMax      int     `json:"prcast_max"`
	// BytesMean is the mean payload bytes one member sent per round, both
	// kinds together.
	BytesMean float64 `json:"bytes_per_member_round"`
	// Reached is the share of (notice, member) pairs delivered within TTL
	// rounds; Full the notices every member delivered in that time;
	// SlowestRounds the longest a delivery took, in rounds.
	Reached       float64       `json:"reached"`
	Full          int           `json:"full"`
	SlowestRounds float64       `json:"slowest_rounds"`
	Elapsed       time.Duration `json:"elapsed_ns"`
}

// Text is the result in a few lines for people.
func (r PrCastResult) Text() string {
	return fmt.Sprintf(`prcast over partial views: %d members, view %d, fanout %d, TTL %d rounds; %d notices in %d rounds
per member and round: membership %.2f messages (at most %d), PrCast %.2f messages (at most %d), %.0f bytes in all
notices delivered to every member within TTL rounds: %d of %d (%.5f of member-notice pairs), slowest %.1f rounds; %v`,
		r.Processes, r.View, r.Fanout, r.TTL, r.Notices, r.Rounds,
		r.MembershipMean, r.MembershipMax, r.PrCastMean, r.PrCastMax, r.BytesMean,
		r.Full, r.Notices, r.Reached, r.SlowestRounds, r.Elapsed.Round(time.Millisecond))
}

// counted wraps a gossip machine and counts what it sends.
type counted struct {
	*gossip.Machine
	membership, prcast, bytes int
}

func (c *counted) Ready() node.Ready[gossip.Msg] {
	r := c.Machine.Ready()
	for _, e := range r.Msgs {
		switch e.Msg.Type {
		case gossip.MsgShuffle, gossip.MsgShuffleReply:
			c.membership++
			c.bytes += 3 + 6*len(e.Msg.View)
		default:
			c.prcast++
			for _, ev := range e.Msg.Events {
				c.bytes += 12 + len(ev.Payload)
			}
			c.bytes += 3 + 8*len(e.Msg.Digest)
		}
	}
	return r
}

// SimulatePrCast runs the experiment.
func SimulatePrCast(cfg PrCastConfig) (PrCastResult, error) {
	start := time.Now()
	if cfg.Processes < 2 || cfg.Processes > 1<<20 {
		return PrCastResult{}, fmt.Errorf("--processes %d: want 2 to %d", cfg.Processes, 1<<20)
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 10
	}
	if cfg.Warm <= 0 {
		cfg.Warm = 10
	}
	if cfg.Notices <= 0 {
		cfg.Notices = 1
	}
	if cfg.View <= 0 {
		cfg.View = gossip.ViewSize(cfg.Processes)
	}
	if cfg.Round <= 0 {
		cfg.Round = 100 * time.Millisecond
	}
	if cfg.Drop < 0 || cfg.Drop >= 1 {
		return PrCastResult{}, errors.New("drop: want a probability from 0 to below 1")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 36))
	ids := make([]node.ID, cfg.Processes)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	// Contacts: one or two members that joined before (a --join address).
	contacts := make([][]node.ID, len(ids))
	for i := 1; i < len(ids); i++ {
		for range 1 + rng.IntN(2) {
			contacts[i] = append(contacts[i], ids[rng.IntN(i)])
		}
	}
	machines := make([]*counted, len(ids))
	var newErr error
	s := sim.New[gossip.Msg](sim.Options{Seed: cfg.Seed, MinLatency: time.Millisecond, MaxLatency: 5 * time.Millisecond, Drop: cfg.Drop},
		gossip.Codec{Fam: wire.FamilyTicket}, func(id node.ID, _ int, mr *rand.Rand) node.Machine[gossip.Msg] {
			g, err := gossip.New(gossip.Config{ID: id, Peers: contacts[id-1], Rand: mr, View: cfg.View, Period: cfg.Round})
			if err != nil {
				newErr = err
				g, _ = gossip.New(gossip.Config{ID: id, Peers: []node.ID{id}, Rand: mr})
			}
			machines[id-1] = &counted{Machine: g}
			return machines[id-1]
		}, ids...)
	if newErr != nil {
		return PrCastResult{}, newErr
	}
	reach := gossip.NewReach()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if d, ok := ev.(gossip.DeliverEvent); ok {
			reach.Deliver(at, id, d)
		}
		return nil
	}
	if err := s.RunFor(time.Duration(cfg.Warm) * cfg.Round); err != nil {
		return PrCastResult{}, err
	}
	res := PrCastResult{Event: "prcast", Processes: cfg.Processes, View: cfg.View, Rounds: cfg.Rounds}
	probe, _ := gossip.New(gossip.Config{ID: 1, Rand: rand.New(rand.NewPCG(0, 0)), View: cfg.View})
	res.Fanout, res.TTL = probe.Fanout(), probe.TTL()
	seqs := map[node.ID]uint64{}
	var members, prcasts, bytes, samples int
	before := make([]counted, len(machines))
	for round := 0; round < cfg.Rounds+res.TTL+1; round++ {
		measure := round < cfg.Rounds
		if measure {
			for range cfg.Notices {
				origin := ids[rng.IntN(len(ids))]
				at := s.Now().Add(time.Duration(rng.Int64N(int64(cfg.Round))))
				body, _ := json.Marshal(ticket.Notice{Event: "taken", Ticket: uint32(rng.IntN(1000)), By: uint32(origin), Epoch: uint64(round + 1), AtNS: at.UnixNano()})
				s.At(at, func() {
					seqs[origin]++
					reach.Broadcast(s.Now(), origin, seqs[origin])
					s.Inject(origin, gossip.Msg{Type: gossip.MsgBroadcast, Events: []gossip.Event{{Payload: body}}})
				})
				res.Notices++
			}
			for i, m := range machines {
				before[i] = counted{membership: m.membership, prcast: m.prcast, bytes: m.bytes}
			}
		}
		if err := s.RunFor(cfg.Round); err != nil {
			return res, err
		}
		if !measure {
			continue
		}
		for i, m := range machines {
			mb, pc := m.membership-before[i].membership, m.prcast-before[i].prcast
			members += mb
			prcasts += pc
			bytes += m.bytes - before[i].bytes
			res.MembershipMax = max(res.MembershipMax, mb)
			res.PrCastMax = max(res.PrCastMax, pc)
			samples++
		}
	}
	res.MembershipMean = float64(members) / float64(samples)
	res.PrCastMean = float64(prcasts) / float64(samples)
	res.BytesMean = float64(bytes) / float64(samples)
	rep := reach.Report(ids, time.Duration(res.TTL)*cfg.Round)
	res.Reached, res.Full = rep.Fraction, rep.Full
	res.SlowestRounds = float64(rep.Slowest) / float64(cfg.Round)
	res.Elapsed = time.Since(start)
	return res, nil
}
