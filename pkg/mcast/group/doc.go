// Package group is the dynamic group of reliable multicast: Group is one
// member of a group whose membership changes (Nita-Rotaru's CS7610 notes,
// "group membership", "virtual synchrony"):
//
//   - Views change by the leader-based protocol: phase I, the acting
//     leader (the most senior member it does not suspect) proposes a
//     ballot; members stop sending and delivering and answer with what
//     they received (MsgAck). Phase II, once every unsuspected member and a
//     majority of the view answered, it commits the next view and the cut
//     (MsgCommit); members fetch what they lack up to the cut (MsgReady); the
//     leader installs once every survivor is ready (MsgInstall). A leader
//     that fails is replaced by the next member, which adopts the highest
//     change any member accepted (the seed's three-phase case). A view
//     changes only with a majority of it (primary component).
//   - Virtual synchrony: the members that go from a view to the same next
//     one deliver the same messages in the former, each in its sending
//     view.
//   - Total orders: TotalSequencer (the view's leader numbers messages,
//     MsgOrder; Nita-Rotaru's fixed sequencer, group_sequencer.go),
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
// Gaps the seeds leave, filled here: heartbeats (MsgStatus every Period,
// every 2·Period with TOTEM, whose token carries the same news)
// carry what a member received and drive retransmission, garbage
// collection and failure detection (silence for Suspect); a member resends
// what a status shows missing only if it held it at a heartbeat half a
// Period before (the status may have crossed it on the way), unless the
// status asks at once: its sender saw a gap in the addressee's messages
// and names the ones missing, each again only half a Period later, and
// the addressee answers with those of its own (askGap; on links that
// reorder every overtaking frame shows a gap); a change that
// waits 4·Suspect without a majority reports MinorityEvent; a member
// removed from the group joins again under a new incarnation (Nita-Rotaru's
// CS7610 notes, "A Membership Protocol": a process taken for crashed
// rejoins with another identifier), and says why (RemovedEvent.Cause);
// an incarnation ends when its process is heard as a later one (its
// frames, its join, its merge probe), so a view member whose process has
// been heard so is suspected at once, and the change that swaps the new
// incarnation in does not wait Suspect for an answer the old one can never
// give (TestRejoinReplacesSupersededIncarnation: 24 ms against 172 ms);
// MsgGone names the incarnation whose frame it answers, and a later
// incarnation of the same process ignores it (TestGoneForEarlierIncarnation:
// a stale frame of the earlier one no longer throws the live one out); the
// leader takes in only a joiner it hears directly, and only while it
// does (a join not heard for Suspect is dropped; not with EVS, whose
// joins are passed on as before, group_data.go's onJoin): every member must hear
// every other (heartbeats drive retransmission and suspicion), and a
// joiner taken in through a relay by a leader that cannot hear it was
// suspected Suspect after each install and taken in again, a view per
// ~170 ms cycle, for as long as the network stayed half cut. A member
// asked by a joiner answers with the acting leader's name instead of
// relaying the join, so a joiner that knew one member only asks the
// leader itself; one the leader cannot hear waits outside the group, its
// status naming the leader and the member that named it, and is taken in
// once the leader hears it: no churn, and a clear answer to "why am I
// not in?" (TestRelayedJoinerWaits: one view in 3 s of a half-cut
// network, against 29 views and 15 removals when relayed joins are
// taken; TestSingleContactJoiner); a member
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
// # Extended virtual synchrony: views numbered alike
//
// With Config.EVS two components may give their views the same number
// (group_evs.go), so a frame that named its view by number only would be
// taken by a member of the other component's view of that number from
// any sender that view lists with the frame's incarnation (group_data.go's
// handle). That is harmless for a survivor of a change: a leader
// installs only once every survivor is ready, so a survivor listed in a
// view has installed it. It is not for a joiner: with EVS a leader takes
// every join it hears (onJoin), and a joiner installs the first install
// that names it (onInstall), so a joiner two components took in with
// views numbered alike is listed in both and has installed one. Two such
// joiners split across the two views are each listed in the other's view
// as the other sees it: each would take the other's data, order and
// status frames for its own view's, deliver the other component's
// messages in its view and relay them to its component. So a view is
// named on the wire as CheckViews names it, by its number and its leader
// (Members[0], an incarnation): every frame a member sends in its view
// carries the view's leader (Msg.Lead, the codec's last field, absent
// from an older sender's frames, which are taken as before), and handle
// drops a frame of its view's number that names another leader
// (TestEVSSameNumberForeignFrames: none, against 8 deliveries of the
// other component's message with the planted bugViewByNumber). The
// random schedules of TestSimGroups had not shown it (seeds 1..200 of
// every order's /evs): it takes two joiners, each heard by two
// components that number alike, each hearing the install of another.
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
// frames (frame: MsgToken, MsgOrder, MsgPrio, MsgFinal), on a status (onStatus,
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
// constructor. New, ParseTotal, TotalNames and the CLI's --total take
// it from there. TestOrderLayout checks that shape: no code outside the
// table tests which order runs, and each order's type and constant are in
// its own file. Add it to TestSimGroups' orders and to a transcript.
//
// # What it shares with pkg/mcast
//
// pkg/mcast is the fixed group. This package takes from it only what both
// groups share: the message a sender multicasts (mcast.Item), the payload
// limit and the wire bounds, mcast.Cost and the window's events
// (mcast.DoneEvent, mcast.RoomEvent, mcast.ErrFull), and the checkers'
// counterexamples (mcast.Violation, mcast.Evidence).
package group
