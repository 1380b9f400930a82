// Package mcast is reliable multicast over a fixed group, as a pure state
// machine, with three delivery guarantees (Nita-Rotaru's CS7610 notes,
// "Reliable multicast"; Tanenbaum & van Steen §6.2–6.3):
//
//   - Unordered: integrity (a correct member delivers a message at most
//     once, and only as its sender sent it), validity (a correct member
//     delivers its own messages) and agreement (what one correct member
//     delivers, all correct members deliver).
//   - FIFO: the seed's algorithm. Each sender numbers its messages
//     (S_G^p, carried with each); a receiver delivers sender q's message S
//     when S = R_G^q + 1, holds it back when S is larger, drops it when
//     smaller.
//   - Causal: the seed's vector clocks, one per group. A sender increments
//     its own entry and sends the whole vector; a receiver i holds a
//     message from j back until V_j[j] = V_i[j] + 1 and V_j[k] ≤ V_i[k] for
//     every k ≠ j, then delivers it and increments V_i[j].
//
// # Reliability over lossy links (the seeds assume reliable channels)
//
// Every member sends every Period a digest to every other member: per
// sender, how many messages it has received without a gap (Recv) and
// delivered (Deliv). A member that holds messages another lacks sends them,
// whoever their sender was: that relays a crashed sender's messages to the
// members it did not reach, which is what agreement needs (a sender that
// crashes mid-multicast is the seed's "naïve approach" failure). A message
// that arrives after a gap makes the receiver send its digest at once, so
// a loss costs about one round trip, not a Period. A message is forgotten
// once every member's digest shows it received (and this member has
// delivered it). Members that stay silent (Suspect) keep messages alive up
// to Keep held messages; past that, what every unsuspected member has is
// forgotten, and counted as "abandoned" (a member that comes back after
// that can no longer get them: part 2's views handle members that leave).
//
// # Fault model
//
// Loss, duplication, reordering, partitions that heal, paused members and
// crashes (crashed members stay down: a member that restarts must join
// under a new ID; part 2 adds membership). Check judges a run from the
// members' logs: integrity, the order, and agreement among the members that
// did not crash, with happens-before rebuilt from the logs.
//
// # Dynamic groups (Group)
//
// Group is one member of a group whose membership changes (Nita-Rotaru's CS7610 notes,
// "group membership", "virtual synchrony"):
//
//   - Views change by the leader-based protocol: phase I, the acting
//     leader (the most senior member it does not suspect) proposes a
//     ballot; members stop sending and delivering and answer with what
//     they received (GAck). Phase II, once every unsuspected member and a
//     majority of the view answered, it commits the next view and the cut
//     (GCommit); members fetch what they lack up to the cut (GReady); the
//     leader installs once every survivor is ready (GInstall). A leader
//     that fails is replaced by the next member, which adopts the highest
//     change any member accepted (the seed's three-phase case). A view
//     changes only with a majority of it (primary component).
//   - Virtual synchrony: the members that go from a view to the same next
//     one deliver the same messages in the former, each in its sending
//     view.
//   - Total orders: TotalSequencer (the view's leader numbers messages,
//     GOrder; Nita-Rotaru's fixed sequencer, group_sequencer.go),
//     TotalLamport (Tanenbaum ch. 6, §6.3.1: Lamport times,
//     acknowledgements to all, deliver the head once everyone is past it,
//     group_lamport.go), TotalISIS (Nita-Rotaru's CS7610 notes: proposed and agreed
//     priorities, group_isis.go) and TotalTotem (Nita-Rotaru's CS7610 notes: a token ring
//     whose holder numbers what it sends, group_totem.go). What any member
//     delivered in a view is a prefix of that view's order, so a view
//     change delivers the rest of the cut in the same order.
//   - Safe delivery (Config.Safe; TOTEM and Spread in Nita-Rotaru's CS7610 notes): deliver
//     once every member's status shows the message received (with TOTEM,
//     once the token's aru has passed its position); at a view
//     change the rest follows a TransitionalEvent (extended virtual
//     synchrony). A member's status stays at its first answer to a view
//     change while it lasts, so nothing it receives later counts as held.
//
// Gaps the seeds leave, filled here: heartbeats (GStatus every Period,
// every 2·Period with TOTEM, whose token carries the same news)
// carry what a member received and drive retransmission, garbage
// collection and failure detection (silence for Suspect); a member resends
// what a status shows missing only if it held it at a heartbeat half a
// Period before (the status may have crossed it on the way), unless the
// status asks at once (its sender saw a gap); a change that
// waits 4·Suspect without a majority reports MinorityEvent; a member
// removed from the group joins again under a new incarnation (Nita-Rotaru's
// CS7610 notes, "A Membership Protocol": a process taken for crashed
// rejoins with another identifier), and says why (RemovedEvent.Cause);
// an incarnation ends when its process is heard as a later one (its
// frames, its join, its merge probe), so a view member whose process has
// been heard so is suspected at once, and the change that swaps the new
// incarnation in does not wait Suspect for an answer the old one can never
// give (TestRejoinReplacesSupersededIncarnation: 24 ms against 172 ms);
// GGone names the incarnation whose frame it answers, and a later
// incarnation of the same process ignores it (TestGoneForEarlierIncarnation:
// a stale frame of the earlier one no longer throws the live one out); a member
// that leaves re-sends the install until the next view's members and the
// change's survivors confirm it (or Suspect passes), since nobody else
// may be left to tell them; a member removed from a view sends its
// messages past the view's cut again from its next incarnation (members
// answer a straggler with the change that ended its view, kept for the
// last 64 views), and reports what it cannot (LostEvent) and the
// messages of the view the members that stay delivered and it did not
// (MissedEvent); suspicion is
// stretched by the member's own health (Lifeguard's local health
// multiplier: ticks that come late), and silence is counted in the
// member's own running time (a member that resumes from a pause does not
// suspect everyone at once); a process is suspected only after twice the
// longest silence this member has seen it come back from, up to
// 4·Suspect (a learnt timeout, after the adaptive detectors of
// Hayashibara et al., "The φ Accrual Failure Detector", §III, and Chen,
// Toueg and Aguilera, "On the Quality of Service of Failure Detectors",
// §6), so a starved member that keeps coming back is not removed for
// each pause while a process that never paused is still suspected after
// Suspect (not with EVS, whose merges wait for suspicion and whose
// silences are mostly partitions) (TestSimRepeatedPauses: members 4 and 5 of five paused again
// and again for ½–3 Suspect over 20 s are removed 1–3 times and 3–5
// views are installed, against 50–61 and 82–92 with the flat timeout;
// a crash still gives a view without it in under 200ms); a member
// flushing a change whose leader stepped back (it suspected the acting
// leader, proposed, then heard it again) says so in its status (the
// ballot it promised), and the acting leader runs a change that takes it
// along, so no flush waits for a change nobody leads (flush-unled.txt).
// Fault model: loss, duplication, reordering,
// pauses, crashes, partitions that heal; CheckViews judges a run.
//
// # Adding a total order
//
// Each total order is one type in its own file behind the totalOrder
// interface (group_order.go), as pkg/election's algorithms are: the group
// keeps what every order shares (views and their cuts, the store, what
// each member received, retransmission, the batch of order frames,
// safe delivery's statuses) and calls the order's hooks where orders
// differ: when it sends (maySend, onSend, sent, ride), when data comes
// (stored, received, ackData, ctrlOnData, rode), on the order's own
// frames (frame: GToken, GOrder, GPrio, GFinal), on a status (onStatus,
// statusClock, finals, agreed), on heartbeats and ticks (beat, tick,
// slowBeat), when a batch of order frames goes (sendBatch), to deliver
// (deliver, safe) and at a view change (reset, start, finish), and for
// status queries (status). fifoOrder (TotalNone) gives every hook's
// default; an order embeds it, or positions (an order that is a list of
// positions, as the sequencer's and TOTEM's), and overrides what it
// changes. Safe delivery is not an order: Config.Safe holds any order's
// deliveries until safe(j, q), by default every member's status, TOTEM's
// token aru.
//
// A fifth order is a file group_<name>.go with its Total constant (the
// next number), its type and constructor, and one entry in orders
// (group_order.go): its name, a line for --total's help, and the
// constructor. NewGroup, ParseTotal, TotalNames and the CLI's --total take
// it from there. TestOrderLayout checks that shape: no code outside the
// table tests which order runs, and each order's type and constant are in
// its own file. Add it to TestSimGroups' orders and to a transcript.
package mcast
