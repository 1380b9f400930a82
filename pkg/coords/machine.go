package coords

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Algo selects the positioning algorithm.
type Algo uint8

const (
	AlgoVivaldi Algo = 1
	AlgoGNP     Algo = 2
)

func (a Algo) String() string {
	if a == AlgoGNP {
		return "gnp"
	}
	return "vivaldi"
}

// ParseAlgo parses "vivaldi" or "gnp".
func ParseAlgo(s string) (Algo, error) {
	switch s {
	case "vivaldi":
		return AlgoVivaldi, nil
	case "gnp":
		return AlgoGNP, nil
	}
	return 0, fmt.Errorf("coords: unknown algorithm %q (want vivaldi or gnp)", s)
}

// GNPDims is GNP's default dimension: Tanenbaum ch. 6 gives 6 or 7; 7 keeps
// 99.9% of pairs of ordinary hosts within a factor 2 on the synthetic
// plane with access links (TestGNPDimensionsAllPairs).
const GNPDims = 7

// Config configures a Machine. Zero values mean the default.
type Config struct {
	ID    node.ID
	Peers []node.ID // every member, this one included
	Algo  Algo      // default Vivaldi
	// Dims: Vivaldi default 2 (plus a height, Dabek et al. §5.3); GNP
	// default GNPDims, but never more than the landmarks allow (one fewer
	// than their count).
	Dims int
	// Landmarks (GNP): at least Dims+1 (Tanenbaum ch. 6: a node needs d+1
	// landmarks to place itself in d dimensions); default the first
	// min(Dims+5, n) members by ID. The first of them fits the landmarks'
	// positions for everyone.
	Landmarks []node.ID
	// Interval: one ping every Interval, to the members in turn. Default
	// 20ms.
	Interval time.Duration
	// Window: a member's round trip is the median of its last Window
	// samples (queueing only ever adds). Default 5.
	Window int
	// End: when the machine reports its coordinates (CoordsEvent).
	End  time.Time
	Rand *rand.Rand
}

// Machine measures round trips to the other members and positions this
// one (node.Machine; no I/O).
type Machine struct {
	cfg      Config
	others   []node.ID
	next     int
	seq      uint64
	nextPing time.Time
	samples  map[node.ID][]float64 // ms
	pos      map[node.ID]Coord     // what members said of themselves
	viv      *Vivaldi
	// GNP
	rows     map[node.ID]map[node.ID]float64 // landmark → its round trips to the others (ms)
	placed   []Placed                        // the landmarks' fitted positions
	gnpPos   Coord
	fittedAt time.Time
	reported bool
	out      []node.Envelope[Msg]
	events   []node.Event
}

// PeerEvent is one other member as this one sees it at Config.End: the
// measured round trip and the one its coordinates predict (0: none yet).
type PeerEvent struct {
	Event     string  `json:"event"` // "peer"
	ID        node.ID `json:"id"`
	Measured  float64 `json:"measured_ms"`
	Predicted float64 `json:"predicted_ms"`
}

func (e PeerEvent) Kind() string { return "peer" }
func (e PeerEvent) String() string {
	return fmt.Sprintf("peer %d measured %.2fms predicted %.2fms", e.ID, e.Measured, e.Predicted)
}

// CoordsEvent reports this member's coordinates at Config.End; a
// PeerEvent per other member follows.
type CoordsEvent struct {
	Event string  `json:"event"` // "coords"
	ID    node.ID `json:"id"`
	Algo  string  `json:"algo"`
	Pos   Coord   `json:"coord"`
	Err   float64 `json:"error"` // Vivaldi's own estimate; GNP: the median relative error to the landmarks
}

func (e CoordsEvent) Kind() string { return "coords" }
func (e CoordsEvent) String() string {
	return fmt.Sprintf("coords %s height %.2f error %.3f", vecString(e.Pos.Vec), e.Pos.Height, e.Err)
}

func vecString(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, ",")
}

// New returns a Machine.
func New(cfg Config) (*Machine, error) {
	if cfg.Algo == 0 {
		cfg.Algo = AlgoVivaldi
	}
	if cfg.Dims <= 0 && cfg.Algo == AlgoGNP {
		// Tanenbaum ch. 6, after Szymaniak et al. 2004: with well-chosen
		// landmarks the dimension can be as small as 6 or 7 with
		// predictions within a factor 2 for arbitrary nodes.
		l := len(cfg.Landmarks)
		if l == 0 {
			l = min(GNPDims+5, len(cfg.Peers))
		}
		cfg.Dims = max(1, min(GNPDims, l-1))
	}
	if cfg.Dims <= 0 {
		cfg.Dims = 2
	}
	if cfg.Dims > maxDims {
		return nil, fmt.Errorf("coords: at most %d dimensions", maxDims)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	if cfg.Window <= 0 {
		cfg.Window = 5
	}
	if cfg.Rand == nil {
		return nil, errors.New("coords: Config.Rand is required")
	}
	peers := slices.Sorted(slices.Values(cfg.Peers))
	peers = slices.Compact(peers)
	if !slices.Contains(peers, cfg.ID) || len(peers) < 2 {
		return nil, fmt.Errorf("coords: id %d must be one of at least two members", cfg.ID)
	}
	if cfg.Algo == AlgoGNP {
		if len(cfg.Landmarks) == 0 {
			cfg.Landmarks = peers[:min(cfg.Dims+5, len(peers))]
		}
		if len(cfg.Landmarks) < cfg.Dims+1 || len(cfg.Landmarks) > maxLandmarks {
			return nil, fmt.Errorf("coords: GNP in %d dimensions needs %d to %d landmarks, not %d", cfg.Dims, cfg.Dims+1, maxLandmarks, len(cfg.Landmarks))
		}
		for _, l := range cfg.Landmarks {
			if !slices.Contains(peers, l) {
				return nil, fmt.Errorf("coords: landmark %d is not a member", l)
			}
		}
	}
	m := &Machine{cfg: cfg, samples: map[node.ID][]float64{}, pos: map[node.ID]Coord{},
		viv: NewVivaldi(cfg.Dims, cfg.Rand), rows: map[node.ID]map[node.ID]float64{}}
	for _, p := range peers {
		if p != cfg.ID {
			m.others = append(m.others, p)
		}
	}
	m.cfg.Rand.Shuffle(len(m.others), func(i, j int) { m.others[i], m.others[j] = m.others[j], m.others[i] })
	return m, nil
}

func (m *Machine) landmark(id node.ID) bool { return slices.Contains(m.cfg.Landmarks, id) }
func (m *Machine) fitter() node.ID {
	if len(m.cfg.Landmarks) == 0 {
		return node.None
	}
	return slices.Min(m.cfg.Landmarks)
}

// rtt is the filtered round trip to p (ms; 0: none yet).
func (m *Machine) rtt(p node.ID) float64 {
	s := m.samples[p]
	if len(s) == 0 {
		return 0
	}
	return Quantile(s, 0.5)
}

// Position is this member's current coordinates.
func (m *Machine) Position() Coord {
	if m.cfg.Algo == AlgoGNP {
		return m.gnpPos
	}
	return m.viv.Pos
}

// Tick implements node.Machine.
func (m *Machine) Tick(now time.Time) {
	if !m.cfg.End.IsZero() && !now.Before(m.cfg.End) && !m.reported {
		m.reported = true
		m.report()
	}
	if now.Before(m.nextPing) {
		return
	}
	m.nextPing = now.Add(m.cfg.Interval)
	p := m.others[m.next%len(m.others)]
	m.next++
	m.seq++
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: p, Msg: Msg{Type: MsgPing, Seq: m.seq, EchoNS: now.UnixNano()}})
	if m.cfg.Algo == AlgoGNP {
		m.gnp(now)
	}
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	if !slices.Contains(m.others, in.From) {
		return fmt.Errorf("coords: message from %d, not a member", in.From)
	}
	switch in.Msg.Type {
	case MsgPing:
		pong := Msg{Type: MsgPong, Seq: in.Msg.Seq, EchoNS: in.Msg.EchoNS, Pos: m.Position(), Err: m.viv.Err}
		if m.cfg.Algo == AlgoGNP && m.landmark(m.cfg.ID) {
			for _, l := range m.cfg.Landmarks {
				if r := m.rtt(l); l != m.cfg.ID && r > 0 {
					pong.Row = append(pong.Row, RowEntry{ID: l, RTT: uint64(r * 1000)})
				}
			}
			if m.cfg.ID == m.fitter() {
				pong.Landmarks = m.placed
			}
		}
		m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: in.From, Msg: pong})
	case MsgPong:
		rtt := float64(now.UnixNano()-in.Msg.EchoNS) / 1e6
		if rtt <= 0 || rtt > 60_000 || len(in.Msg.Pos.Vec) != m.cfg.Dims && len(in.Msg.Pos.Vec) != 0 {
			return fmt.Errorf("coords: pong from %d with round trip %.3fms or %d dimensions", in.From, rtt, len(in.Msg.Pos.Vec))
		}
		s := append(m.samples[in.From], rtt)
		if len(s) > m.cfg.Window {
			s = s[len(s)-m.cfg.Window:]
		}
		m.samples[in.From] = s
		if len(in.Msg.Pos.Vec) == m.cfg.Dims {
			m.pos[in.From] = in.Msg.Pos
		}
		if m.cfg.Algo == AlgoVivaldi && len(in.Msg.Pos.Vec) == m.cfg.Dims {
			m.viv.Update(m.rtt(in.From), in.Msg.Pos, in.Msg.Err)
		}
		if m.cfg.Algo == AlgoGNP {
			if m.landmark(in.From) && len(in.Msg.Row) > 0 {
				row := map[node.ID]float64{}
				for _, r := range in.Msg.Row {
					row[r.ID] = float64(r.RTT) / 1000
				}
				m.rows[in.From] = row
			}
			if in.From == m.fitter() && m.cfg.ID != m.fitter() && len(in.Msg.Landmarks) == len(m.cfg.Landmarks) {
				m.placed = in.Msg.Landmarks
			}
		}
	default:
		return fmt.Errorf("coords: message type %d", in.Msg.Type)
	}
	return nil
}

// gnp refits the landmarks (at the fitter, once a second, once every row
// is in) and places this member against them.
func (m *Machine) gnp(now time.Time) {
	lms := m.cfg.Landmarks
	if m.cfg.ID == m.fitter() && now.Sub(m.fittedAt) >= time.Second {
		mat := make([][]float64, len(lms))
		complete := true
		for a, i := range lms {
			mat[a] = make([]float64, len(lms))
			for b, j := range lms {
				if a == b {
					continue
				}
				// Both ends' measurements, averaged where both exist.
				var vs []float64
				if i == m.cfg.ID {
					vs = append(vs, m.rtt(j))
				} else if r, ok := m.rows[i][j]; ok {
					vs = append(vs, r)
				}
				if j == m.cfg.ID {
					vs = append(vs, m.rtt(i))
				} else if r, ok := m.rows[j][i]; ok {
					vs = append(vs, r)
				}
				vs = slices.DeleteFunc(vs, func(x float64) bool { return x <= 0 })
				if len(vs) == 0 {
					complete = false
					continue
				}
				mat[a][b] = meanOf(vs)
			}
		}
		if complete {
			m.fittedAt = now
			fit := FitLandmarks(mat, m.cfg.Dims, rand.New(rand.NewPCG(1, 2)))
			m.placed = make([]Placed, len(lms))
			for a, id := range lms {
				m.placed[a] = Placed{ID: id, Pos: fit[a]}
			}
		}
	}
	if len(m.placed) != len(lms) {
		return
	}
	if i := slices.IndexFunc(m.placed, func(p Placed) bool { return p.ID == m.cfg.ID }); i >= 0 {
		m.gnpPos = m.placed[i].Pos
		return
	}
	lpos := make([]Coord, len(lms))
	d := make([]float64, len(lms))
	for a, p := range m.placed {
		lpos[a], d[a] = p.Pos, m.rtt(p.ID)
	}
	m.gnpPos = Place(lpos, d, m.cfg.Rand)
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// report emits the CoordsEvent.
func (m *Machine) report() {
	ev := CoordsEvent{Event: "coords", ID: m.cfg.ID, Algo: m.cfg.Algo.String(), Pos: m.Position(), Err: m.viv.Err}
	if m.cfg.Algo == AlgoGNP {
		var errs []float64
		for _, p := range m.placed {
			if r := m.rtt(p.ID); r > 0 && p.ID != m.cfg.ID {
				errs = append(errs, RelErr(Dist(m.gnpPos, p.Pos), r))
			}
		}
		ev.Err = Quantile(errs, 0.5)
		if len(errs) == 0 {
			ev.Err = 0
		}
	}
	m.events = append(m.events, ev)
	for _, p := range slices.Sorted(slices.Values(m.others)) {
		r := PeerEvent{Event: "peer", ID: p, Measured: m.rtt(p)}
		if c, ok := m.pos[p]; ok && len(ev.Pos.Vec) == len(c.Vec) {
			r.Predicted = Dist(ev.Pos, c)
		}
		m.events = append(m.events, r)
	}
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events, Wake: m.nextPing}
	if !m.reported && !m.cfg.End.IsZero() && m.cfg.End.Before(r.Wake) {
		r.Wake = m.cfg.End
	}
	m.out, m.events = nil, nil
	return r
}

// Status describes the machine for status queries.
func (m *Machine) Status() any {
	return map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "coord": m.Position(), "error": m.viv.Err}
}
