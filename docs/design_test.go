package docs

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/roundtable-go/roundtable/"

// mayImport is design.md's rule: the layers a package of each layer may
// import (a package's own layer included where listed).
var mayImport = map[string][]string{
	"service":    {"protocol", "runtime", "base"},
	"simulation": {"protocol", "runtime", "base"},
	"protocol":   {"protocol", "base"},
	"runtime":    {"runtime", "base"},
	"base":       {"base"},
	"test":       {"service", "simulation", "protocol", "runtime", "base", "test"},
}

// designMap reads design.md's layer table: package path (pkg/...) → layer.
func designMap(t *testing.T) map[string]string {
	f, err := os.Open("design.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `(pkg/[a-z0-9/]+)` \\| ([a-z]+) \\|")
	layers := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			if _, dup := layers[m[1]]; dup {
				t.Errorf("design.md: %s has two rows", m[1])
			}
			layers[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return layers
}

// packages lists every package under pkg/ with its imports of pkg/
// packages, as paths relative to the module (pkg/...).
func packages(t *testing.T) map[string][]string {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../pkg/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p := strings.TrimPrefix(f[0], module)
		pkgs[p] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"pkg/") {
				pkgs[p] = append(pkgs[p], strings.TrimPrefix(imp, module))
			}
		}
	}
	return pkgs
}

// checkMap returns what is wrong with the table against the tree: a
// package without a row, a row without a package, a layer the rule does
// not know, an import the rule forbids.
func checkMap(layers map[string]string, pkgs map[string][]string) []string {
	var bad []string
	for p, imps := range pkgs {
		l, ok := layers[p]
		if !ok {
			bad = append(bad, p+" is missing from design.md's layer table")
			continue
		}
		allowed, ok := mayImport[l]
		if !ok {
			bad = append(bad, p+": unknown layer "+l)
			continue
		}
		for _, imp := range imps {
			il := layers[imp]
			if il == "" {
				continue // reported as missing on its own
			}
			if !slices.Contains(allowed, il) {
				bad = append(bad, p+" ("+l+") imports "+imp+" ("+il+"): against the layer rule")
			}
			if il == "service" && l == "service" {
				bad = append(bad, p+" imports another service, "+imp)
			}
			if l == "service" && imp == "pkg/sim" {
				bad = append(bad, p+" is a service and imports the simulator")
			}
		}
	}
	for p := range layers {
		if _, ok := pkgs[p]; !ok {
			bad = append(bad, "design.md's layer table names "+p+", which does not exist")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestDesignMap keeps docs/design.md's layer table true: every package
// under pkg/ has a row, every row is a package, and every import follows
// the layer rule.
func TestDesignMap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	layers, pkgs := designMap(t), packages(t)
	if len(layers) < 20 {
		t.Fatalf("design.md's table has %d rows: the table was not found", len(layers))
	}
	for _, b := range checkMap(layers, pkgs) {
		t.Error(b)
	}
}

// TestDesignMapCatches plants each fault the check looks for in a copy of
// the real table and tree, and requires the check to report it.
func TestDesignMapCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	layers, pkgs := designMap(t), packages(t)
	clone := func() (map[string]string, map[string][]string) {
		l, p := map[string]string{}, map[string][]string{}
		for k, v := range layers {
			l[k] = v
		}
		for k, v := range pkgs {
			p[k] = slices.Clone(v)
		}
		return l, p
	}
	for _, c := range []struct {
		name  string
		plant func(map[string]string, map[string][]string)
		want  string
	}{
		{"a missing row", func(l map[string]string, _ map[string][]string) { delete(l, "pkg/coords") },
			"pkg/coords is missing"},
		{"a new package without a row", func(_ map[string]string, p map[string][]string) { p["pkg/resource"] = nil },
			"pkg/resource is missing"},
		{"a row for no package", func(l map[string]string, _ map[string][]string) { l["pkg/util"] = "base" },
			"names pkg/util, which does not exist"},
		{"a protocol importing the driver", func(_ map[string]string, p map[string][]string) {
			p["pkg/election"] = append(p["pkg/election"], "pkg/driver")
		}, "pkg/election (protocol) imports pkg/driver (runtime)"},
		{"a service importing the simulator", func(_ map[string]string, p map[string][]string) {
			p["pkg/electd"] = append(p["pkg/electd"], "pkg/sim")
		}, "pkg/electd is a service and imports the simulator"},
		{"a service importing another", func(_ map[string]string, p map[string][]string) {
			p["pkg/electd"] = append(p["pkg/electd"], "pkg/lockd")
		}, "pkg/electd imports another service"},
		{"the runtime importing a protocol", func(_ map[string]string, p map[string][]string) {
			p["pkg/cli"] = append(p["pkg/cli"], "pkg/election")
		}, "pkg/cli (runtime) imports pkg/election (protocol)"},
	} {
		l, p := clone()
		c.plant(l, p)
		bad := checkMap(l, p)
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, c.want) }) {
			t.Errorf("%s: the check did not report %q; it said %q", c.name, c.want, bad)
		}
	}
}
