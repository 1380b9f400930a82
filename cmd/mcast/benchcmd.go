package main

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

var benchFlags = cli.WithEnv(tool, append(append(cli.NodeFlags(), groupFlags...),
	orderFlag,
	&ucli.IntFlag{Name: "size", Value: 64, Usage: "message size in bytes (at least 20: sequence, send time, checksum)"},
	&ucli.IntFlag{Name: "count", Value: 100000, Usage: "messages this member sends"},
	&ucli.IntFlag{Name: "rate", Usage: "messages per second this member sends (0: as fast as the group takes them)"},
	lingerFlag,
	realtimeFlag,
))

// benchCommand is 'mcast bench': a flood in the style of corosync's
// cpghum, on the same member as 'mcast run'.
func benchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "bench",
		Usage: "flood the group with numbered, checksummed messages and report throughput and latency",
		Description: `Runs one member that sends --count messages of --size bytes (at --rate per
second, or as fast as the group takes them) while delivering everyone
else's. Each message carries its sequence number, its send time and a
CRC-32 of the rest; every delivery is checked (sequence per sender,
checksum). At the end the member prints what it sent and delivered,
messages/s and MB/s delivered, and the latency percentiles (delivery time
minus send time, so members must share a clock: one host, or synchronised
ones), and the one-way UDP latency on loopback measured beside it; in a
fixed group also the copies it sent again (repairs, relays, and its own
messages past the window, which go when a digest asks) and the copies it
got twice. Run it on every member at once.

With --rate, message k is due k/rate seconds after the start, by the
clock alone (on Linux a timerfd the member wakes for, as a writer into
'mcast run' wakes it), never by when the member happens to wake for a
frame; a message is stamped when it is handed to the member, and sends
that fell behind go out together.

With --order total the members form a dynamic group in that total order
(--total) first; sending, and the clock, start once every member in
--peers (or --start-with) is in the view.

Examples:
   mcast bench --id 1 --peers @peers.txt --count 200000 --size 64
   mcast bench --id 1 --peers @peers.txt --order total --total totem --count 100000
   mcast bench --id 2 --peers @peers.txt --rate 1000 --count 5000 --json`,
		Flags:  benchFlags,
		Action: bench,
	}
}
