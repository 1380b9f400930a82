package docs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// documented reads docs/metrics.md's tables: metric name → type, by
// section ("all", "elect", ...).
func documented(t *testing.T) map[string]map[string]string {
	b, err := os.ReadFile("metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	section := ""
	row := regexp.MustCompile("^\\| `(roundtable_[a-z_]+)` \\| ([a-z]+) \\|")
	for _, line := range strings.Split(string(b), "\n") {
		if m := regexp.MustCompile(`^<!-- metrics: ([a-z]+) -->`).FindStringSubmatch(line); m != nil {
			section = m[1]
			out[section] = map[string]string{}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && section != "" {
			out[section][m[1]] = m[2]
		}
	}
	if len(out["all"]) == 0 {
		t.Fatal("docs/metrics.md: no table under <!-- metrics: all -->")
	}
	return out
}

// member is one started daemon with its --metrics address.
type member struct {
	cmd     *exec.Cmd
	metrics string // host:port
	stdin   io.WriteCloser
}

// startMember starts bin args... with --metrics 127.0.0.1:0 and learns the
// endpoint's address from its "metrics addr=" log line.
func startMember(t *testing.T, dir string, bin string, args ...string) *member {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--metrics", "127.0.0.1:0")...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", filepath.Base(bin), time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &member{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s %v:\n%s", bin, args, b)
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer log.Close()
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`metrics addr=http://([^/]+)/metrics`)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case m.metrics = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v: no metrics address logged within 30s", bin, args)
	}
	return m
}

func (m *member) get(t *testing.T, path string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + m.metrics + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitStatus polls path until it answers code (and a body containing
// each of want), for at most limit.
func (m *member) waitStatus(t *testing.T, path string, code int, limit time.Duration, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got, body := m.get(t, path)
		if got == code && !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(body, w) }) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %q after %v, want %d", path, got, strings.TrimSpace(body), limit, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scrapedNames are the metric names of a /metrics answer, histogram
// series (_bucket, _sum, _count) under their histogram's name.
func scrapedNames(t *testing.T, body string, histograms map[string]bool) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, suf); base != name && histograms[base] {
				name = base
			}
		}
		names[name] = true
		if !strings.Contains(line, `tool="`) || !strings.Contains(line, `member="`) {
			t.Errorf("series without tool and member labels: %s", line)
		}
	}
	return names
}

// checkNames: what the scrape shows is what docs/metrics.md lists for the
// tool, no more and no less.
func checkNames(t *testing.T, docs map[string]map[string]string, tool, body string) {
	t.Helper()
	for _, e := range nameDiff(t, docs, tool, body) {
		t.Errorf("%s: %s", tool, e)
	}
}

func nameDiff(t *testing.T, docs map[string]map[string]string, tool, body string) []string {
	want := map[string]string{}
	for _, sec := range []string{"all", tool} {
		for n, typ := range docs[sec] {
			want[n] = typ
		}
	}
	hist := map[string]bool{}
	for n, typ := range want {
		if typ == "histogram" {
			hist[n] = true
		}
	}
	got := scrapedNames(t, body, hist)
	var diff []string
	for n := range want {
		if !got[n] {
			diff = append(diff, n+" is in docs/metrics.md but not in the scrape")
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			diff = append(diff, n+" is in the scrape but not in docs/metrics.md")
		}
	}
	// Every family has a # TYPE line, and it says what the docs say.
	typed := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			typed[f[2]] = f[3]
		}
	}
	for n := range got {
		switch typ, ok := typed[n]; {
		case !ok:
			diff = append(diff, n+" has no # TYPE line")
		case want[n] != "" && typ != want[n]:
			diff = append(diff, n+" is a "+typ+" in the scrape but a "+want[n]+" in docs/metrics.md")
		}
	}
	slices.Sort(diff)
	return diff
}

// The check catches a name missing either way (a planted mismatch).
func TestNameDiffCatchesMismatch(t *testing.T) {
	docs := map[string]map[string]string{"all": {"roundtable_a_total": "counter"},
		"x": {"roundtable_x_seconds": "histogram", "roundtable_x_gone": "gauge"}}
	body := `# TYPE roundtable_a_total gauge
roundtable_a_total{tool="x",member="1"} 3
# TYPE roundtable_x_seconds histogram
roundtable_x_seconds_bucket{tool="x",member="1",le="+Inf"} 0
roundtable_x_seconds_sum{tool="x",member="1"} 0
roundtable_x_seconds_count{tool="x",member="1"} 0
roundtable_x_new{tool="x",member="1"} 1
`
	got := nameDiff(t, docs, "x", body)
	want := []string{"roundtable_a_total is a gauge in the scrape but a counter in docs/metrics.md",
		"roundtable_x_gone is in docs/metrics.md but not in the scrape",
		"roundtable_x_new has no # TYPE line",
		"roundtable_x_new is in the scrape but not in docs/metrics.md"}
	if !slices.Equal(got, want) {
		t.Errorf("nameDiff = %q, want %q", got, want)
	}
}

// freeUDP returns n loopback UDP addresses free at the time of asking.
func freeUDP(t *testing.T, n int) []string {
	var out []string
	var conns []net.PacketConn
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		out = append(out, c.LocalAddr().String())
	}
	for _, c := range conns {
		c.Close()
	}
	return out
}

func peerList(addrs []string) string {
	var ps []string
	for i, a := range addrs {
		ps = append(ps, fmt.Sprintf("%d=%s", i+1, a))
	}
	return strings.Join(ps, ",")
}

// ready is how long a cluster on a loaded host may take to come up.
const ready = 30 * time.Second

func TestMetricsElect(t *testing.T) {
	bin, _ := buildTools(t)
	docs := documented(t)
	dir := t.TempDir()
	peers := peerList(freeUDP(t, 3))
	var ms []*member
	for i := 1; i <= 3; i++ {
		ms = append(ms, startMember(t, dir, bin+"/elect", "run", "--id", fmt.Sprint(i), "--peers", peers))
	}
	for _, m := range ms {
		m.waitStatus(t, "/readyz", 200, ready)
		if code, body := m.get(t, "/healthz"); code != 200 {
			t.Fatalf("/healthz: %d %s", code, body)
		}
	}
	_, body := ms[0].get(t, "/metrics")
	checkNames(t, docs, "elect", body)
	if !regexp.MustCompile(`(?m)^roundtable_elect_leader_changes_total\{[^}]*\} [1-9]`).MatchString(body) {
		t.Errorf("no leader change counted:\n%s", body)
	}
	// The leader (3, under bully) holds a lease: some of it remains.
	lease := regexp.MustCompile(`(?m)^roundtable_elect_lease_remaining_seconds\{[^}]*\} (\S+)$`)
	deadline := time.Now().Add(ready)
	for {
		_, body := ms[2].get(t, "/metrics")
		if m := lease.FindStringSubmatch(body); m != nil && m[1] != "0" && strings.Contains(body, "roundtable_elect_is_leader{tool=\"elect\",member=\"3\"} 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader shows no lease remaining:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMetricsElectAloneNotReady(t *testing.T) {
	bin, _ := buildTools(t)
	dir := t.TempDir()
	// A member of three alone: no majority, no leader.
	peers := peerList(freeUDP(t, 3))
	m := startMember(t, dir, bin+"/elect", "run", "--id", "1", "--peers", peers)
	m.waitStatus(t, "/healthz", 200, ready)
	// The election timeout is 200ms: for 2s of answers, well past it, the
	// member leads (bully) but without the majority a lease needs.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if code, body := m.get(t, "/readyz"); code != 503 {
			t.Fatalf("a lone member of three: /readyz %d %q, want 503", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.waitStatus(t, "/readyz", 503, ready, "no majority")
}

func TestMetricsLockd(t *testing.T) {
	bin, _ := buildTools(t)
	docs := documented(t)
	dir := t.TempDir()
	peers := peerList(freeUDP(t, 3))
	var ms []*member
	for i := 1; i <= 3; i++ {
		ms = append(ms, startMember(t, dir, bin+"/lockd", "serve", "--id", fmt.Sprint(i), "--peers", peers,
			"--socket", filepath.Join(dir, fmt.Sprintf("l%d.sock", i))))
	}
	for _, m := range ms {
		m.waitStatus(t, "/readyz", 200, ready)
	}
	run := exec.Command(bin+"/lockd", "run", "--socket", filepath.Join(dir, "l1.sock"), "--timeout", "20s", "job", "--", "true")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("lockd run: %v\n%s", err, out)
	}
	_, body := ms[0].get(t, "/metrics")
	checkNames(t, docs, "lockd", body)
	for _, want := range []string{
		`(?m)^roundtable_lockd_grants_total\{[^}]*\} 1$`,
		`(?m)^roundtable_lockd_token\{[^}]*\} [1-9]`,
		`(?m)^roundtable_lockd_acquire_wait_seconds_count\{[^}]*\} 1$`,
		`(?m)^roundtable_lockd_hold_seconds_bucket\{[^}]*le="\+Inf"\} 1$`,
	} {
		if !regexp.MustCompile(want).MatchString(body) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
	// Every peer stopped: member 1 has no quorum, and says so.
	for _, m := range ms[1:] {
		_ = m.cmd.Process.Signal(syscall.SIGSTOP)
	}
	body = ms[0].waitStatus(t, "/readyz", 503, ready)
	if !strings.Contains(body, "no quorum") {
		t.Errorf("/readyz with every peer stopped: %q, want no quorum", body)
	}
	if code, _ := ms[0].get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz of a running member without quorum: %d, want 200", code)
	}
	for _, m := range ms[1:] {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
	}
	ms[0].waitStatus(t, "/readyz", 200, ready)
}

func TestMetricsTicketd(t *testing.T) {
	bin, _ := buildTools(t)
	docs := documented(t)
	dir := t.TempDir()
	addrs := freeUDP(t, 2)
	a := startMember(t, dir, bin+"/ticketd", "serve", "--id", "1", "--bind", addrs[0], "--tickets", "3",
		"--socket", filepath.Join(dir, "t1.sock"))
	a.waitStatus(t, "/readyz", 200, ready)
	b := startMember(t, dir, bin+"/ticketd", "serve", "--id", "2", "--bind", addrs[1], "--join", addrs[0],
		"--socket", filepath.Join(dir, "t2.sock"))
	b.waitStatus(t, "/readyz", 200, ready)
	_, body := b.get(t, "/metrics")
	checkNames(t, docs, "ticketd", body)
	if !regexp.MustCompile(`(?m)^roundtable_ticketd_tickets\{[^}]*\} 3$`).MatchString(body) {
		t.Errorf("pool size not 3:\n%s", body)
	}
}

func TestMetricsTicketdNotInPool(t *testing.T) {
	bin, _ := buildTools(t)
	dir := t.TempDir()
	addrs := freeUDP(t, 2)
	// --join an address where nobody answers: the member looks for the
	// pool and is not ready meanwhile.
	m := startMember(t, dir, bin+"/ticketd", "serve", "--id", "2", "--bind", addrs[0], "--join", addrs[1],
		"--socket", filepath.Join(dir, "t.sock"))
	m.waitStatus(t, "/readyz", 503, ready, "has not found the ticket pool")
}

func TestMetricsMcast(t *testing.T) {
	bin, _ := buildTools(t)
	docs := documented(t)
	dir := t.TempDir()
	peers := peerList(freeUDP(t, 2))
	var ms []*member
	for i := 1; i <= 2; i++ {
		ms = append(ms, startMember(t, dir, bin+"/mcast", "run", "--views", "--id", fmt.Sprint(i), "--peers", peers))
	}
	for _, m := range ms {
		m.waitStatus(t, "/readyz", 200, ready)
	}
	_, body := ms[0].get(t, "/metrics")
	checkNames(t, docs, "mcast", body)
	if !regexp.MustCompile(`(?m)^roundtable_mcast_views_installed_total\{[^}]*\} [1-9]`).MatchString(body) {
		t.Errorf("no view counted:\n%s", body)
	}
	// A line multicast by member 1 is a delivery at member 2.
	if _, err := io.WriteString(ms[0].stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	delivered := regexp.MustCompile(`(?m)^roundtable_mcast_deliveries_total\{[^}]*\} [1-9]`)
	deadline := time.Now().Add(ready)
	for {
		if _, body := ms[1].get(t, "/metrics"); delivered.MatchString(body) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no delivery counted at member 2:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMetricsClocksync(t *testing.T) {
	bin, _ := buildTools(t)
	docs := documented(t)
	dir := t.TempDir()
	addrs := freeUDP(t, 2)
	up := startMember(t, dir, bin+"/clocksync", "serve", "--bind", addrs[0], "--stratum", "1")
	up.waitStatus(t, "/readyz", 200, ready)
	// Following an upstream that does not answer: alive, not synchronised.
	down := startMember(t, dir, bin+"/clocksync", "serve", "--bind", addrs[1], "--upstream", freeUDP(t, 1)[0], "--poll", "50ms")
	down.waitStatus(t, "/healthz", 200, ready)
	if code, body := down.get(t, "/readyz"); code != 503 || !strings.Contains(body, "not synchronised") {
		t.Errorf("/readyz of a server whose upstream is silent: %d %q", code, body)
	}
	_, body := up.get(t, "/metrics")
	checkNames(t, docs, "clocksync", body)
	if !regexp.MustCompile(`(?m)^roundtable_clocksync_stratum\{[^}]*\} 1$`).MatchString(body) {
		t.Errorf("stratum not 1:\n%s", body)
	}
	peers := peerList(freeUDP(t, 2))
	var bs []*member
	for i := 1; i <= 2; i++ {
		bs = append(bs, startMember(t, dir, bin+"/clocksync", "berkeley", "--id", fmt.Sprint(i), "--peers", peers))
	}
	bs[0].waitStatus(t, "/readyz", 200, ready)
	_, body = bs[0].get(t, "/metrics")
	checkNames(t, docs, "clocksync", body)
}

func TestMetricsFlagErrors(t *testing.T) {
	bin, _ := buildTools(t)
	for _, bad := range []string{"nonsense", "127.0.0.1:"} {
		cmd := exec.Command(bin+"/elect", "run", "--id", "1", "--peers", "1=127.0.0.1:1", "--metrics", bad)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 64 || !strings.Contains(string(out), "--metrics") {
			t.Errorf("--metrics %q: %v %s, want exit 64 naming --metrics", bad, err, out)
		}
	}
	// Taken: exit 69.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(bin+"/elect", "run", "--id", "1", "--peers", "1="+freeUDP(t, 1)[0], "--metrics", ln.Addr().String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 69 {
		t.Errorf("--metrics on a taken port: %v %s, want exit 69", err, out)
	}
}
