package group

import (
	"strings"
	"testing"
)

// TestCheckViewsUnloggedSends: a member killed between sending a frame
// and writing its send line leaves deliveries of a message its log never
// shows. That is not an invented message when its log was cut short in
// that view; it is when the sender left cleanly, or in an earlier view.
func TestCheckViewsUnloggedSends(t *testing.T) {
	a, b := Member{ID: 1, Inc: 1}, Member{ID: 2, Inc: 1}
	both := []Member{a, b}
	send := func(view, seq uint64, p string) Record {
		return Record{Kind: VSend, View: view, Seq: seq, Payload: []byte(p)}
	}
	dlv := func(view uint64, from Member, seq uint64, p string) Record {
		return Record{Kind: VDeliver, View: view, Sender: from.ID, Seq: seq, Payload: []byte(p)}
	}
	view := func(v uint64, ms ...Member) Record { return Record{Kind: VView, View: v, Members: ms} }
	for _, c := range []struct {
		name  string
		a     []Record
		final bool   // a ended cleanly in its view
		want  string // "" for no violation
	}{
		{"killed after sending", []Record{view(1, both...), send(1, 1, "x"), dlv(1, a, 1, "x")}, false, ""},
		{"left cleanly", []Record{view(1, both...), send(1, 1, "x"), dlv(1, a, 1, "x")}, true, "never sent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := map[Member][]Record{
				a: c.a,
				b: {view(1, both...), dlv(1, a, 1, "x"), dlv(1, a, 2, "y")},
			}
			final := map[Member]bool{b: true, a: c.final}
			err := CheckViews(false, logs, final)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("a cut-short log's later send is judged invented: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want a violation saying %q", err, c.want)
			}
		})
	}
}
