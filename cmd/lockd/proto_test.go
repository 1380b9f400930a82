package main

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
	for _, r := range []reply{
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
		var keys map[string]json.RawMessage
		if json.Unmarshal(line, &keys) == nil {
			for k := range keys {
				for _, known := range []string{"event", "name", "token", "client", "node", "ms", "until_ns", "reason", "error", "coordinator", "term", "status"} {
					if k != known && strings.EqualFold(k, known) {
						return
					}
				}
			}
		}
		var want, got reply
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
		r := request{Op: op, Name: name, NonBlock: nonblock}
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
	for _, r := range []reply{
		{Event: "acquired", Name: "db", Token: 8589934593, Client: 4, MS: 2000},
		{Event: "valid", Name: "db", Token: 8589934593, MS: 499, UntilNS: 1795344837553558000},
		{Event: "busy", Name: "cron-job"},
		{Event: "lost", Name: "L", Token: 3, Reason: "lease ran out"},
	} {
		b, _ := json.Marshal(r)
		var got reply
		if !got.parsePlain(b) || !reflect.DeepEqual(got, r) {
			t.Errorf("%s: plain path gave %+v", b, got)
		}
	}
}
