package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Scenario drives a package's machines through a transcript: a text file
// of commands, each followed by the output it must produce, in the format
// of cockroachdb/datadriven (as etcd-io/raft's interaction tests use it):
//
//	# comment lines say what the scenario shows
//	add 3
//	----
//	+0s 1: boot 1
//	...
//
// A command line is followed by a line "----" and the expected output, up
// to a blank line. Output is one line per thing that happened, stamped with
// the virtual time since the start: "+1ms 1->2 TYPE fields" when node 2 is
// handed node 1's message, "+1ms 1->3 TYPE fields lost" when a send is lost
// (a cut, a crashed receiver; a cut loses what is sent after it, not what
// is already in flight), "+2ms 2: EVENT" when a machine reports an event, boots or
// crashes. Runs are deterministic: the same file gives the same output.
//
// The commands every scenario understands:
//
//	add N                 start N more nodes (IDs continue from the highest)
//	tick D                advance virtual time by D (a Go duration), delivering what is due
//	deliver A->B          hand every message in flight from A to B to B now (* for any node)
//	drop A->B             lose every message in flight from A to B (* for any node)
//	step-until-quiet      run until no message is in flight (timers fire as they come due)
//	crash N, restart N    crash node N; start it again in a new incarnation
//	pause N, resume N     freeze node N (SIGSTOP) and let it go on
//	cut 1,2/3             partition the nodes into groups; "cut 1->2" cuts one way
//	isolate N             cut N off from everyone
//	heal                  remove every cut
//	status                one line per node: up, paused or crashed, and the package's Status
//	hide TYPE...          stop printing messages of these types (show TYPE... prints them again)
//
// A package adds its own (for example "acquire 2 lockA") in Commands.
type Scenario[M any] struct {
	Codec wire.Codec[M]
	// Machine builds id's machine in its incarnation-th life (1 for the
	// first); peers are the nodes of the simulation, id included, when it
	// boots.
	Machine func(id node.ID, peers []node.ID, incarnation int, rng *rand.Rand) node.Machine[M]
	// Options configure the simulation; zero latencies mean 1ms on every
	// link, so that transcripts read in steps.
	Options Options
	// Format writes a message as "TYPE fields"; nil means FormatMsg.
	Format func(M) string
	// Event writes an event; "" leaves it out (a lease renewed on every
	// heartbeat, say). nil: its String method.
	Event func(node.Event) string
	// Status describes a running machine for the status command.
	Status func(s *Sim[M], id node.ID, m node.Machine[M]) string
	// Setup is called once the simulation exists (at the first add), to
	// install checkers (Sim.OnEvent, Sim.Invariant).
	Setup func(r *Run[M])
	// Commands are the package's own commands, by name. An error they
	// return is printed as the command's output ("error: ...").
	Commands map[string]func(r *Run[M], args []string) error
}

// Run is one scenario being played.
type Run[M any] struct {
	// Sim is nil until the first add.
	Sim    *Sim[M]
	sc     *Scenario[M]
	out    []string
	hidden map[string]bool
	failed bool
}

// Printf adds a line to the current command's output, stamped with the
// virtual time.
func (r *Run[M]) Printf(format string, args ...any) {
	at := time.Duration(0)
	if r.Sim != nil {
		at = r.Sim.Now().Sub(r.Sim.opts.Start)
	}
	r.out = append(r.out, fmt.Sprintf("+%v ", at)+fmt.Sprintf(format, args...))
}

// Inject hands node id a local request.
func (r *Run[M]) Inject(id node.ID, msg M) error {
	if r.Sim == nil {
		return fmt.Errorf("no nodes yet (add N first)")
	}
	if !r.Sim.Alive(id) {
		return fmt.Errorf("node %d is not running", id)
	}
	before := r.Sim.Stats.Rejected
	r.Sim.Inject(id, msg)
	if r.Sim.Stats.Rejected != before {
		return fmt.Errorf("node %d rejected the request", id)
	}
	return nil
}

// ID parses a node ID that must be in the simulation.
func (r *Run[M]) ID(s string) (node.ID, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("%q is not a node ID", s)
	}
	id := node.ID(v)
	if r.Sim == nil || !slices.Contains(r.Sim.ids, id) {
		return 0, fmt.Errorf("no node %d", id)
	}
	return id, nil
}

// Block is one command of a transcript and its expected output.
type Block struct {
	Line     int      // of the command, 1-based
	Preamble []string // comment and blank lines before the command
	Cmd      string
	Want     []string
}

// ParseTranscript reads a transcript. It returns the blocks and the lines
// after the last one (comments).
func ParseTranscript(text string) ([]Block, []string, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	var blocks []Block
	var pre []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			pre = append(pre, l)
			continue
		}
		b := Block{Line: i + 1, Preamble: pre, Cmd: strings.TrimSpace(l)}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, nil, fmt.Errorf("line %d: %q is not followed by a line \"----\"", i+1, l)
		}
		i += 2
		for ; i < len(lines) && lines[i] != ""; i++ {
			b.Want = append(b.Want, lines[i])
		}
		blocks = append(blocks, b)
		// The blank line that ends the output belongs to no preamble.
	}
	return blocks, pre, nil
}

// FormatTranscript writes blocks (with got as each one's output) and the
// trailing lines back in the transcript format.
func FormatTranscript(blocks []Block, got [][]string, trailer []string) string {
	var sb strings.Builder
	for i, b := range blocks {
		for _, l := range b.Preamble {
			sb.WriteString(l + "\n")
		}
		sb.WriteString(b.Cmd + "\n----\n")
		for _, l := range got[i] {
			sb.WriteString(l + "\n")
		}
		if i < len(blocks)-1 || len(trailer) > 0 {
			sb.WriteString("\n")
		}
	}
	for _, l := range trailer {
		sb.WriteString(l + "\n")
	}
	return sb.String()
}

// RunFile plays the transcript at path. With rewrite it writes the output
// it got back into the file. It returns the transcript as played (the
// file's comments and commands with the output this run produced) and the
// file's text; they differ when a command's output does not match.
func (sc *Scenario[M]) RunFile(path string, rewrite bool) (got, want string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	got, err = sc.Play(string(b))
	if err != nil {
		return "", "", fmt.Errorf("%s:%w", path, err)
	}
	if rewrite && got != string(b) {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			return "", "", err
		}
		return got, got, nil
	}
	return got, string(b), nil
}

// Play runs a transcript's commands and returns the transcript with the
// output they produced. A malformed file or an unknown command is an error;
// a command that fails prints "error: ..." as its output.
func (sc *Scenario[M]) Play(text string) (string, error) {
	blocks, trailer, err := ParseTranscript(text)
	if err != nil {
		return "", err
	}
	r := &Run[M]{sc: sc, hidden: map[string]bool{}}
	got := make([][]string, len(blocks))
	for i, b := range blocks {
		r.out = nil
		if err := r.exec(b.Cmd); err != nil {
			if _, unknown := err.(unknownError); unknown {
				return "", fmt.Errorf("%d: %v", b.Line, err)
			}
			r.out = append(r.out, "error: "+err.Error())
		}
		if r.Sim != nil && r.Sim.Err() != nil && !r.failed {
			r.failed = true
			r.out = append(r.out, "failed: "+r.Sim.Err().Error())
		}
		got[i] = r.out
	}
	return FormatTranscript(blocks, got, trailer), nil
}

type unknownError struct{ cmd string }

func (e unknownError) Error() string { return fmt.Sprintf("unknown command %q", e.cmd) }

func (r *Run[M]) format(typ uint8, payload []byte) (string, bool) {
	msg, err := r.sc.Codec.Unmarshal(typ, payload)
	if err != nil {
		return fmt.Sprintf("type(%d) undecodable: %v", typ, err), true
	}
	var s string
	if r.sc.Format != nil {
		s = r.sc.Format(msg)
	} else {
		s = FormatMsg(msg)
	}
	name, _, _ := strings.Cut(s, " ")
	return s, !r.hidden[name]
}

func (r *Run[M]) watch(n Note) {
	switch n.Kind {
	case NoteDeliver, NoteLoss, NoteDrop, NoteReject:
		s, show := r.format(n.Type, n.Payload)
		if !show {
			return
		}
		switch n.Kind {
		case NoteLoss:
			s += " lost"
		case NoteDrop:
			s += " dropped"
		case NoteReject:
			s = fmt.Sprintf("%d rejects it: %v", n.To, n.Err)
			r.Printf("%s", s)
			return
		}
		r.Printf("%d->%d %s", n.From, n.To, s)
	case NoteEvent:
		s := n.Event.String()
		if r.sc.Event != nil {
			s = r.sc.Event(n.Event)
		}
		if s != "" {
			r.Printf("%d: %s", n.From, s)
		}
	case NoteBoot:
		r.Printf("%d: boot %d", n.From, n.Incarnation)
	case NoteCrash:
		r.Printf("%d: crash", n.From)
	}
}

func (r *Run[M]) add(k int) {
	var last node.ID
	if r.Sim != nil {
		last = slices.Max(r.Sim.ids)
	}
	var ids []node.ID
	for i := 1; i <= k; i++ {
		ids = append(ids, last+node.ID(i))
	}
	if r.Sim == nil {
		opts := r.sc.Options
		if opts.MinLatency == 0 && opts.MaxLatency == 0 && opts.Latency == nil {
			opts.MinLatency, opts.MaxLatency = time.Millisecond, time.Millisecond
		}
		// New boots the first nodes before Watch and Setup can be installed,
		// so the machines are built here, by Add, instead.
		r.Sim = New(opts, r.sc.Codec, r.factory)
		r.Sim.Watch = r.watch
		if r.sc.Setup != nil {
			r.sc.Setup(r)
		}
	}
	r.Sim.Add(ids...)
}

func (r *Run[M]) factory(id node.ID, inc int, rng *rand.Rand) node.Machine[M] {
	return r.sc.Machine(id, r.Sim.IDs(), inc, rng)
}

// link parses "A->B", where * stands for any node.
// Link parses a link "A->B" between two nodes of the simulation, "*" for
// any node (node.None), for a package's own commands.
func (r *Run[M]) Link(s string) (from, to node.ID, err error) {
	a, b, ok := strings.Cut(s, "->")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a link (A->B)", s)
	}
	one := func(x string) (node.ID, error) {
		if x == "*" {
			return node.None, nil
		}
		return r.ID(x)
	}
	if from, err = one(a); err == nil {
		to, err = one(b)
	}
	return from, to, err
}

func (r *Run[M]) ids(s string) ([]node.ID, error) {
	var out []node.ID
	for _, f := range strings.Split(s, ",") {
		id, err := r.ID(f)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func (r *Run[M]) exec(line string) error {
	f := strings.Fields(line)
	cmd, args := f[0], f[1:]
	if fn, ok := r.sc.Commands[cmd]; ok {
		if r.Sim == nil {
			return fmt.Errorf("no nodes yet (add N first)")
		}
		return fn(r, args)
	}
	want := func(n int, usage string) error {
		if len(args) != n {
			return fmt.Errorf("usage: %s %s", cmd, usage)
		}
		if cmd != "add" && r.Sim == nil {
			return fmt.Errorf("no nodes yet (add N first)")
		}
		return nil
	}
	oneID := func(do func(node.ID)) error {
		if err := want(1, "N"); err != nil {
			return err
		}
		id, err := r.ID(args[0])
		if err == nil {
			do(id)
		}
		return err
	}
	switch cmd {
	case "add":
		if err := want(1, "N"); err != nil {
			return err
		}
		k, err := strconv.Atoi(args[0])
		if err != nil || k < 1 || k > 1000 {
			return fmt.Errorf("add wants a count from 1 to 1000, not %q", args[0])
		}
		r.add(k)
	case "tick":
		if err := want(1, "DURATION"); err != nil {
			return err
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d < 0 {
			return fmt.Errorf("tick wants a duration such as 50ms, not %q", args[0])
		}
		r.Sim.RunFor(d)
	case "deliver", "drop":
		if err := want(1, "A->B"); err != nil {
			return err
		}
		from, to, err := r.Link(args[0])
		if err != nil {
			return err
		}
		if cmd == "deliver" {
			r.Sim.DeliverNow(from, to)
		} else {
			r.Sim.DropInFlight(from, to)
		}
	case "step-until-quiet":
		if err := want(0, ""); err != nil {
			return err
		}
		if !r.Sim.StepUntilQuiet(10_000) && r.Sim.Err() == nil {
			return fmt.Errorf("still not quiet after 10000 steps")
		}
	case "crash":
		return oneID(r.Sim.Crash)
	case "restart":
		return oneID(r.Sim.Restart)
	case "pause":
		return oneID(r.Sim.Pause)
	case "resume":
		return oneID(r.Sim.Resume)
	case "isolate":
		return oneID(r.Sim.Isolate)
	case "heal":
		if err := want(0, ""); err != nil {
			return err
		}
		r.Sim.Heal()
	case "cut":
		if err := want(1, "1,2/3 or A->B"); err != nil {
			return err
		}
		if strings.Contains(args[0], "->") {
			from, to, err := r.Link(args[0])
			if err != nil {
				return err
			}
			if from == node.None || to == node.None {
				return fmt.Errorf("cut wants two nodes, not %q", args[0])
			}
			r.Sim.Cut(from, to)
			return nil
		}
		var groups [][]node.ID
		for _, g := range strings.Split(args[0], "/") {
			ids, err := r.ids(g)
			if err != nil {
				return err
			}
			groups = append(groups, ids)
		}
		if len(groups) < 2 {
			return fmt.Errorf("cut wants groups separated by /, such as 1,2/3")
		}
		r.Sim.Partition(groups...)
	case "status":
		if err := want(0, ""); err != nil {
			return err
		}
		for _, id := range r.Sim.IDs() {
			n := r.Sim.nodes[id]
			switch {
			case !n.alive:
				r.Printf("%d: crashed", id)
			default:
				state := "up"
				if n.paused {
					state = "paused"
				}
				if r.sc.Status != nil {
					state += " " + r.sc.Status(r.Sim, id, n.m)
				}
				r.Printf("%d: %s", id, state)
			}
		}
	case "hide", "show":
		if len(args) == 0 {
			return fmt.Errorf("usage: %s TYPE...", cmd)
		}
		for _, a := range args {
			r.hidden[a] = cmd == "hide"
		}
	default:
		return unknownError{cmd}
	}
	return nil
}

// FormatMsg writes a message as "TYPE fields": TYPE is its Type field
// (by its String method), fields are the other exported fields that are
// not zero, as name=value with the name in lower case. Values are written
// the same way all the way down: structs as {name=value ...}, slices as
// [a b], byte slices as text, pointers as what they point to (never an
// address), and anything with a String method by it. A message with a
// String method is written by it.
func FormatMsg(msg any) string {
	if s, ok := msg.(fmt.Stringer); ok {
		return s.String()
	}
	v := reflect.ValueOf(msg)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return formatValue(v)
	}
	typ := v.Type().Name()
	var fields []string
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.IsExported() || fv.IsZero() {
			continue
		}
		if f.Name == "Type" {
			typ = formatValue(fv)
			continue
		}
		fields = append(fields, lowerFirst(f.Name)+"="+formatValue(fv))
	}
	return strings.Join(append([]string{typ}, fields...), " ")
}

// lowerFirst writes a field name in lower case: its first letter, or the
// whole name when it is all capitals (ID, TTL).
func lowerFirst(s string) string {
	if strings.ToUpper(s) == s {
		return strings.ToLower(s)
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

var stringer = reflect.TypeFor[fmt.Stringer]()

func formatValue(v reflect.Value) string {
	if !v.IsValid() {
		return "nil"
	}
	if v.Type().Implements(stringer) && (v.Kind() != reflect.Pointer || !v.IsNil()) && v.CanInterface() {
		return v.Interface().(fmt.Stringer).String()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		return formatValue(v.Elem())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Kind() == reflect.Slice {
				return string(v.Bytes())
			}
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.Map:
		keys := v.MapKeys()
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = formatValue(k) + ":" + formatValue(v.MapIndex(k))
		}
		slices.Sort(parts)
		return "map[" + strings.Join(parts, " ") + "]"
	case reflect.Struct:
		var fields []string
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			if f.IsExported() && !fv.IsZero() {
				fields = append(fields, lowerFirst(f.Name)+"="+formatValue(fv))
			}
		}
		return "{" + strings.Join(fields, " ") + "}"
	}
	if v.CanInterface() {
		return fmt.Sprint(v.Interface())
	}
	return fmt.Sprint(v)
}
