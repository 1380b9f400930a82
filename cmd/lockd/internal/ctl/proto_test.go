package ctl

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzReplyParse: the client's reply parser agrees with json.Unmarshal on
// every input: both fail, or both give the same reply. (json.Unmarshal
// also matches keys case-insensitively; inputs with such keys are left
// out, since the daemon writes its keys exactly.)
func FuzzReplyParse(f *testing.F) {
	for _, r := range []Reply{
		{Event: "acquired", Name: "db", Token: 8589934593, MS: 2000, UntilNS: 1795344837553558000},
		{Event: "busy", Name: "x\"y\\z\u00e9\n"},
		{Event: "lost", Name: "L", Token: 3, Reason: "lease ran out"},
		{Event: "coordinator", Coordinator: 3, Term: 7},
		{Event: "status", Status: json.RawMessage(`{"id":1,"locks":[{"name":"a"}]}`)},
		{Event: "error", Error: "bad"},
	} {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte(`{"event":"acquired","token":"12"}`))
	f.Add([]byte(`{"event":null,"token":null,"extra":[1,{"a":2}]}`))
	f.Add([]byte(`{"token":-1}`))
	f.Add([]byte(`{"node":4294967296}`))
	f.Add([]byte(`{"EVENT":"x"}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if foldedKey(line, "event", "name", "token", "client", "node", "ms", "until_ns", "reason", "error", "coordinator", "term", "status") {
			return
		}
		var want, got Reply
		werr := json.Unmarshal(line, &want)
		gerr := got.parse(line)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: json.Unmarshal error %v, parse error %v", line, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: json.Unmarshal %+v, parse %+v", line, want, got)
		}
	})
}

// FuzzRequestJSON: a request written without reflection is byte for byte
// what encoding/json writes.
func FuzzRequestJSON(f *testing.F) {
	f.Add("acquire", "db", true)
	f.Add("release", "a\"b<c>&\u2028\xff", false)
	f.Add("status", "", false)
	f.Fuzz(func(t *testing.T, op, name string, nonblock bool) {
		r := Request{Op: op, Name: name, NonBlock: nonblock}
		want, _ := json.Marshal(r)
		want = append(want, '\n')
		if got := r.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("%+v: wrote %q, encoding/json writes %q", r, got, want)
		}
	})
}

// TestPlainReplies: the daemon's grant, busy, valid and lost lines take
// the one-pass path (parsePlain), not only encoding/json's.
func TestPlainReplies(t *testing.T) {
	for _, r := range []Reply{
		{Event: "acquired", Name: "db", Token: 8589934593, Client: 4, MS: 2000},
		{Event: "valid", Name: "db", Token: 8589934593, MS: 499, UntilNS: 1795344837553558000},
		{Event: "busy", Name: "cron-job"},
		{Event: "lost", Name: "L", Token: 3, Reason: "lease ran out"},
	} {
		b, _ := json.Marshal(r)
		var got Reply
		if !got.parsePlain(b) || !reflect.DeepEqual(got, r) {
			t.Errorf("%s: plain path gave %+v", b, got)
		}
	}
	for _, q := range []Request{{Op: "acquire", Name: "db", NonBlock: true}, {Op: "release", Name: "db"}} {
		var got Request
		if b := q.appendJSON(nil); !got.parsePlain(b[:len(b)-1]) || got != q {
			t.Errorf("%s: plain path gave %+v", b, got)
		}
	}
}

// FuzzRequestParse: the daemon's request reader agrees with
// json.Unmarshal (keys differing only in case left out, as for replies).
func FuzzRequestParse(f *testing.F) {
	for _, q := range []Request{{Op: "acquire", Name: "db", NonBlock: true}, {Op: "release", Name: "x y"}, {Op: "status"}} {
		b, _ := json.Marshal(q)
		f.Add(b)
	}
	f.Add([]byte(`{"op":"acquire","nonblock":1}`))
	f.Add([]byte(`{"op":"acquire","nonblock":null,"name":"\u00e9"}`))
	f.Add([]byte(`{"OP":"watch"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if foldedKey(line, "op", "name", "nonblock") {
			return
		}
		var want Request
		werr := json.Unmarshal(line, &want)
		var got Request
		if !got.parsePlain(line) {
			return // read by json.Unmarshal itself
		}
		if werr != nil || got != want {
			t.Fatalf("%q: json.Unmarshal %+v (error %v), plain %+v", line, want, werr, got)
		}
	})
}

// FuzzReplyJSON: a reply written without reflection is byte for byte
// what encoding/json's Encoder writes.
func FuzzReplyJSON(f *testing.F) {
	f.Add("acquired", "db", uint64(8589934593), uint64(2), uint32(0), int64(1000), int64(1795344837553558000), "", "", uint32(0), uint64(0))
	f.Add("lost", "a<b>&\"c\"\xff", uint64(3), uint64(0), uint32(4), int64(-5), int64(0), "lease ran out", "", uint32(1), uint64(7))
	f.Fuzz(func(t *testing.T, event, name string, token, client uint64, node uint32, ms, until int64, reason, errText string, coord uint32, term uint64) {
		r := Reply{Event: event, Name: name, Token: token, Client: client, Node: node, MS: ms, UntilNS: until, Reason: reason, Error: errText, Coordinator: coord, Term: term}
		var want strings.Builder
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON(nil); string(got) != want.String() {
			t.Fatalf("%+v: wrote %q, encoding/json writes %q", r, got, want.String())
		}
	})
}

// foldedKey: line is an object with a key that equals one of known only
// when case is ignored (json.Unmarshal takes those; the daemon never
// writes them).
func foldedKey(line []byte, known ...string) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(line, &keys) != nil {
		return false
	}
	for k := range keys {
		for _, kn := range known {
			if k != kn && strings.EqualFold(k, kn) {
				return true
			}
		}
	}
	return false
}
