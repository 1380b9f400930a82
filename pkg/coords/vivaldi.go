package coords

import (
	"math"
	"math/rand/v2"
)

// Vivaldi is one node's state in Dabek et al.'s algorithm (Figure 3, with
// the adaptive timestep of §3.4 and height vectors of §5.3).
type Vivaldi struct {
	Pos Coord
	Err float64 // the node's error estimate, 1 at first (no confidence)

	cc, ce float64
	rng    *rand.Rand
}

// Defaults from the paper: cc = ce = 0.25.
const (
	DefaultCc = 0.25
	DefaultCe = 0.25
	minHeight = 0.01 // ms: heights stay positive, so a step can move them
)

// NewVivaldi starts a node at the origin in dims dimensions.
func NewVivaldi(dims int, rng *rand.Rand) *Vivaldi {
	return &Vivaldi{Pos: Coord{Vec: make([]float64, dims), Height: minHeight}, Err: 1, cc: DefaultCc, ce: DefaultCe, rng: rng}
}

// Update takes one round-trip sample rtt (ms, > 0) to a node at remote
// with error estimate remoteErr.
func (v *Vivaldi) Update(rtt float64, remote Coord, remoteErr float64) {
	if rtt <= 0 || math.IsNaN(rtt) || math.IsInf(rtt, 0) {
		return
	}
	// Sample weight: how much we trust ourselves against the other.
	w := v.Err / (v.Err + max(remoteErr, 1e-6))
	dist := Dist(v.Pos, remote)
	es := math.Abs(dist-rtt) / rtt
	v.Err = es*v.ce*w + v.Err*(1-v.ce*w)
	v.Err = min(max(v.Err, 1e-6), 10)
	delta := v.cc * w
	// Unit vector from remote to us in the height space: [x_i − x_j,
	// h_i + h_j] / (‖x_i − x_j‖ + h_i + h_j); a random direction when the
	// two coincide.
	diff := sub(v.Pos.Vec, remote.Vec)
	n := norm(diff)
	if n < 1e-9 {
		for i := range diff {
			diff[i] = v.rng.Float64() - 0.5
		}
		n = norm(diff)
		if n < 1e-9 {
			n = 1
		}
		dist = n + v.Pos.Height + remote.Height
	}
	h := v.Pos.Height + remote.Height
	l := n + h
	force := delta * (rtt - dist)
	for i := range v.Pos.Vec {
		v.Pos.Vec[i] += force * diff[i] / l
	}
	v.Pos.Height = max(v.Pos.Height+force*h/l, minHeight)
}
