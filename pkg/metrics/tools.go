package metrics

import (
	"fmt"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Every member's series (docs/metrics.md).
var (
	commonCounters = []string{"roundtable_frames_sent_total", "roundtable_frames_received_total",
		"roundtable_messages_rejected_total", "roundtable_send_errors_total"}
	commonGauges = []string{"roundtable_ready", "roundtable_loop_probe_seconds"}
	// dropReasons are the driver's and the Framer's drop counters
	// (driver.Stats' dropped_* keys).
	dropReasons = []string{"malformed", "version", "cluster", "auth", "unsealed", "stale", "replay",
		"misdirected", "stranger", "wrong_family", "undecodable"}
)

// spec is one tool's series: what it pre-creates, how it reads a status
// (returning why the member is not ready, "" when it is) and what it
// counts of the machine's events.
type spec struct {
	counters, gauges, histograms []string
	lease                        bool
	read                         func(s *Server, st map[string]any) string
	event                        func(s *Server, ev node.Event)
}

// specs by tool name.
var specs = map[string]*spec{
	"elect": {
		gauges:   []string{"roundtable_elect_leader", "roundtable_elect_term", "roundtable_elect_is_leader"},
		counters: []string{"roundtable_elect_leader_changes_total"},
		lease:    true,
		read: func(s *Server, st map[string]any) string {
			leader := num(st, "leader")
			s.setGauge("roundtable_elect_leader", leader)
			s.setGauge("roundtable_elect_term", num(st, "term"))
			s.setGauge("roundtable_elect_is_leader", b2f(st["state"] == "leader"))
			s.leaseEnd.Store(0)
			if t, ok := st["lease_until"].(string); ok {
				if end, err := time.Parse(time.RFC3339Nano, t); err == nil {
					s.leaseEnd.Store(end.UnixNano())
				}
			}
			if leader == 0 {
				return fmt.Sprintf("no leader known (state %v)", st["state"])
			}
			// With leases a leader acts only while a majority backs it.
			if held, ok := st["lease"].(bool); ok && !held && st["state"] == "leader" {
				return "leading without a lease: no majority acknowledges this leader"
			}
			return ""
		},
		event: func(s *Server, ev node.Event) {
			if ev.Kind() == "leader" {
				s.Add("roundtable_elect_leader_changes_total", 1)
			}
		},
	},
	"lockd": {
		gauges:     []string{"roundtable_lockd_locks_held", "roundtable_lockd_waiters", "roundtable_lockd_token"},
		counters:   []string{"roundtable_lockd_grants_total", "roundtable_lockd_losses_total"},
		histograms: []string{"roundtable_lockd_acquire_wait_seconds", "roundtable_lockd_hold_seconds"},
		read: func(s *Server, st map[string]any) string {
			self := num(st, "id")
			held, waiting := 0, 0
			prefix := fmt.Sprintf("%d/", int64(self))
			locks, _ := st["locks"].([]any)
			for _, l := range locks {
				row, _ := l.(map[string]any)
				if num(row, "holder") == self {
					held++
				}
				queue, _ := row["queue"].([]any)
				for _, q := range queue {
					if q, _ := q.(string); strings.HasPrefix(q, prefix) {
						waiting++
					}
				}
			}
			s.setGauge("roundtable_lockd_locks_held", float64(held))
			s.setGauge("roundtable_lockd_waiters", float64(waiting))
			if q, ok := st["quorum"].(bool); ok && !q {
				return "no quorum"
			}
			// Ricart–Agrawala needs every member's answer to grant.
			if down, _ := st["down"].([]any); st["algo"] == "ricart-agrawala" && len(down) > 0 {
				return fmt.Sprintf("members down: %v", down)
			}
			return ""
		},
		event: func(s *Server, ev node.Event) {
			switch ev.Kind() {
			case "acquired":
				s.Add("roundtable_lockd_grants_total", 1)
				// Fencing tokens only grow: the gauge is the latest one
				// this member's clients were given.
				if g, ok := ev.(interface{ FenceToken() uint64 }); ok {
					s.setGauge("roundtable_lockd_token", float64(g.FenceToken()))
				}
			case "lost":
				s.Add("roundtable_lockd_losses_total", 1)
			}
		},
	},
	"ticketd": {
		// The daemon adds the pool's size (from its book: known as soon as
		// the pool is found, before this member's own process joins),
		// tickets held and free, and refounds.
		gauges:   []string{"roundtable_ticketd_epoch"},
		counters: []string{"roundtable_ticketd_exclusions_total"},
		read: func(s *Server, st map[string]any) string {
			s.setGauge("roundtable_ticketd_epoch", num(st, "epoch"))
			// The daemon adds its own condition: it has found the pool.
			if st["state"] == "excluded" {
				return "excluded from the core"
			}
			return ""
		},
		event: func(s *Server, ev node.Event) {
			if ev.Kind() == "excluded" {
				s.Add("roundtable_ticketd_exclusions_total", 1)
			}
		},
	},
	"mcast": {
		gauges: []string{"roundtable_mcast_view", "roundtable_mcast_send_queue", "roundtable_mcast_unacked",
			"roundtable_mcast_held"},
		counters: []string{"roundtable_mcast_views_installed_total", "roundtable_mcast_deliveries_total",
			"roundtable_mcast_resends_total"},
		read: func(s *Server, st map[string]any) string {
			c, _ := st["counters"].(map[string]any)
			s.set.GetOrCreateCounter(s.name("roundtable_mcast_views_installed_total")).Set(uint64(num(c, "views")))
			s.set.GetOrCreateCounter(s.name("roundtable_mcast_deliveries_total")).Set(uint64(num(c, "delivered")))
			s.set.GetOrCreateCounter(s.name("roundtable_mcast_resends_total")).Set(uint64(num(c, "retransmitted") + num(c, "repaired")))
			s.setGauge("roundtable_mcast_view", num(st, "view"))
			s.setGauge("roundtable_mcast_send_queue", num(st, "queue")+num(st, "buffer"))
			s.setGauge("roundtable_mcast_unacked", num(st, "unacked"))
			s.setGauge("roundtable_mcast_held", num(st, "held"))
			if in, ok := st["in_view"].(bool); ok {
				switch {
				case !in:
					return "not in a view"
				case st["minority"] == true:
					return "in a minority view"
				}
			}
			return ""
		},
	},
	"clocksync": {
		gauges: []string{"roundtable_clocksync_offset_seconds", "roundtable_clocksync_delay_seconds",
			"roundtable_clocksync_stratum", "roundtable_clocksync_synchronised"},
		read: func(s *Server, st map[string]any) string {
			s.setGauge("roundtable_clocksync_offset_seconds", num(st, "offset_ns")/1e9)
			s.setGauge("roundtable_clocksync_delay_seconds", num(st, "delay_ns")/1e9)
			s.setGauge("roundtable_clocksync_stratum", num(st, "stratum"))
			synced, ok := st["synced"].(bool)
			if !ok { // Berkeley and coordinates: a running member is synchronised with its group
				synced = true
			}
			s.setGauge("roundtable_clocksync_synchronised", b2f(synced))
			if !synced {
				return "not synchronised"
			}
			return ""
		},
	},
}

// num reads a number from a decoded status; 0 when absent.
func num(m map[string]any, key string) float64 {
	v, _ := m[key].(float64)
	return v
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
