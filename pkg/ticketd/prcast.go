package ticketd

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// PrCast (seed 000 §2): the members tell each other who took, released
// and reclaimed which ticket through pkg/gossip's push-pull broadcast,
// carried in control frames of the members' first slots (so authenticated
// like the rest). Delivery is with high probability, in no order; it is
// for people and scripts watching the pool (`ticketd watch`), never for
// safety, which rests on pkg/ticket alone.

// ctlGossip + a gossip message type is a control type (book.go's list
// goes below it).
const ctlGossip = ctlWant + 16

// Notice is one PrCast event: "taken T by M epoch E" (a member lent
// ticket T to a local command under epoch E), "released T by M epoch E"
// (the command is done), "excluded T..U by M" (member M's core process
// excluded failed processes and reclaimed tickets T down to U), "lost T
// by M epoch E" (the command was stopped: its member lost the ticket),
// "refounded 0..N−1 by M epoch E" (the pool had ended and member M
// founded it again, its epochs starting above E; refound.go).
type Notice struct {
	Event   string `json:"event"`
	Ticket  uint32 `json:"ticket"`
	Through uint32 `json:"through,omitempty"` // excluded: the last ticket of the range
	By      uint32 `json:"by"`                // the member
	Epoch   uint64 `json:"epoch,omitempty"`
	AtNS    int64  `json:"at_ns"` // the member's clock when it happened
}

func (n Notice) String() string {
	switch n.Event {
	case "excluded":
		return fmt.Sprintf("excluded %d..%d by %d", n.Ticket, n.Through, n.By)
	case "refounded":
		return fmt.Sprintf("refounded %d..%d by %d epoch %d", n.Ticket, n.Through, n.By, n.Epoch)
	default:
		return fmt.Sprintf("%s %d by %d epoch %d", n.Event, n.Ticket, n.By, n.Epoch)
	}
}

type prcast struct {
	g        *gossip.Machine
	peers    []node.ID
	watchers map[*session]bool
	codec    gossip.Codec
}

func (d *daemon) startPrCast() error {
	g, err := gossip.New(gossip.Config{ID: d.mb.ID, Peers: []node.ID{d.mb.ID},
		Rand: rand.New(rand.NewPCG(uint64(d.mb.ID), uint64(time.Now().UnixNano())))})
	if err != nil {
		return err
	}
	d.pc = &prcast{g: g, watchers: map[*session]bool{}, codec: gossip.Codec{Fam: wire.FamilyControl}}
	d.pc.g.Tick(time.Now())
	return nil
}

// announce broadcasts a notice (and shows it to local watchers, through
// the broadcast's own delivery).
func (d *daemon) announce(n Notice) {
	n.By, n.AtNS = uint32(d.mb.ID), time.Now().UnixNano()
	body, _ := json.Marshal(n)
	req := node.Envelope[gossip.Msg]{From: d.mb.ID, To: d.mb.ID, Msg: gossip.Msg{Type: gossip.MsgBroadcast, Events: []gossip.Event{{Payload: body}}}}
	if err := d.pc.g.Step(time.Now(), req); err != nil {
		d.mb.Log.Warn("prcast", "err", err)
		return
	}
	d.watchersSee(n)
	d.flushPrCast()
}

// tickPrCast runs a gossip round when due, with the members the book
// knows as the group.
func (d *daemon) tickPrCast() {
	ids := []node.ID{d.mb.ID}
	for _, id := range d.bk.others() {
		if id <= MaxMemberID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, d.pc.peers) {
		d.pc.peers = ids
		d.pc.g.SetPeers(ids)
	}
	d.pc.g.Tick(time.Now())
	d.flushPrCast()
}

// prcastFrame handles a gossip control frame (on the daemon goroutine).
func (d *daemon) prcastFrame(from node.ID, typ uint8, body []byte) {
	msg, err := d.pc.codec.Unmarshal(typ-ctlGossip, body)
	if err != nil {
		return
	}
	if err := d.pc.g.Step(time.Now(), node.Envelope[gossip.Msg]{From: from, To: d.mb.ID, Msg: msg}); err != nil {
		return
	}
	d.flushPrCast()
}

func (d *daemon) flushPrCast() {
	r := d.pc.g.Ready()
	for _, e := range r.Msgs {
		typ, body, err := d.pc.codec.Marshal(e.Msg)
		if err == nil {
			_ = d.slots[0].drv.SendControl(e.To, ctlGossip+typ, body)
		}
	}
	for _, ev := range r.Events {
		if del, ok := ev.(gossip.DeliverEvent); ok && del.Origin != d.mb.ID {
			var n Notice
			if json.Unmarshal(del.Payload, &n) == nil && n.Event != "" {
				n.By = uint32(del.Origin) // what the frame's sender vouches for
				d.watchersSee(n)
				if n.Event == "refounded" {
					d.rf.frozenUntil = time.Time{} // there is a pool to join again
				}
			}
		}
	}
}

func (d *daemon) watchersSee(n Notice) {
	for s := range d.pc.watchers {
		s.cn.Send(n)
	}
}
