package group

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sources are the package's non-test Go files, by name.
func sources(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		src[n] = string(b)
	}
	return src
}

// orderLayout checks the shape doc.go promises ("Adding a total order"):
// outside group_order.go (the registration table) no code tests which
// order a group runs (a comparison or switch on a Total, or a use of a
// Total constant other than its declaration), and each registered order's
// type is declared in group_<name>.go, with its Total constant.
func orderLayout(src map[string]string) []string {
	var bad []string
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for name, s := range src {
		f, err := parser.ParseFile(fset, name, s, 0)
		if err != nil {
			return []string{err.Error()}
		}
		files[name] = f
	}
	consts := map[string]string{} // the Total constants -> the file declaring them
	for name, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, sp := range gd.Specs {
					if vs := sp.(*ast.ValueSpec); vs.Type != nil {
						if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Total" {
							for _, n := range vs.Names {
								consts[n.Name] = name
							}
						}
					}
				}
			}
		}
	}
	isTotal := func(e ast.Expr) bool {
		s, ok := e.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "Total"
	}
	declared := map[string]string{} // type or constant name -> file
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	}) {
		f := files[name]
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				declared[n.Name.Name] = name
			case *ast.ValueSpec:
				if _, ok := consts[n.Names[0].Name]; ok {
					return false // a declaration is not a use
				}
			}
			if name == "group_order.go" {
				return true
			}
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ || n.Op == token.GTR || n.Op == token.LSS || n.Op == token.GEQ || n.Op == token.LEQ) && (isTotal(n.X) || isTotal(n.Y)) {
					bad = append(bad, fmt.Sprintf("%v: tests the group's Total (a hook of totalOrder instead)", fset.Position(n.Pos())))
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isTotal(n.Tag) {
					bad = append(bad, fmt.Sprintf("%v: switches on the group's Total (a hook of totalOrder instead)", fset.Position(n.Pos())))
				}
			case *ast.Ident:
				if _, ok := consts[n.Name]; ok {
					bad = append(bad, fmt.Sprintf("%v: names %s outside the registration table", fset.Position(n.Pos()), n.Name))
				}
			}
			return true
		})
	}
	for _, o := range orders {
		if o.total == TotalNone {
			continue
		}
		file := "group_" + o.name + ".go"
		typ := reflect.TypeOf(o.make(&Group{})).Elem().Name()
		if declared[typ] != file {
			bad = append(bad, fmt.Sprintf("order %s: its type %s is declared in %q, not %s", o.name, typ, declared[typ], file))
		}
		if !slices.Contains(slices.Collect(maps.Values(consts)), file) {
			bad = append(bad, fmt.Sprintf("order %s: no Total constant is declared in %s", o.name, file))
		}
	}
	return bad
}

// TestOrderLayout: the total orders are one shape (doc.go, "Adding a total
// order").
func TestOrderLayout(t *testing.T) {
	for _, b := range orderLayout(sources(t)) {
		t.Error(b)
	}
}

// TestOrderLayoutCatches plants what the layout check looks for in a copy
// of the package's files and requires it to be reported.
func TestOrderLayoutCatches(t *testing.T) {
	for _, c := range []struct {
		name, file, old, new, want string
	}{
		{"a comparison", "group_data.go", "func (g *Group) deliver() {\n", "func (g *Group) deliver() {\n\tif g.cfg.Total == 3 {\n\t\treturn\n\t}\n", "tests the group's Total"},
		{"a switch", "group.go", "func (g *Group) beat() time.Duration {\n", "func (g *Group) beat() time.Duration {\n\tswitch g.cfg.Total {\n\t}\n", "switches on the group's Total"},
		{"a constant", "group_data.go", "func (g *Group) deliver() {\n", "func (g *Group) deliver() {\n\t_ = TotalTotem\n", "names TotalTotem outside"},
		{"a type elsewhere", "group_lamport.go", "type lamportOrder struct {", "type lamportOrderMoved struct {", "its type lamportOrder is declared in \"\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := sources(t)
			if !strings.Contains(src[c.file], c.old) {
				t.Fatalf("%s no longer has %q to plant at", c.file, c.old)
			}
			src[c.file] = strings.Replace(src[c.file], c.old, c.new, 1)
			if c.name == "a type elsewhere" {
				src["group_other.go"] = "package mcast\n\ntype lamportOrder struct{ fifoOrder }\n"
				src[c.file] = strings.ReplaceAll(src[c.file], "lamportOrder", "lamportOrderMoved")
				c.want = "its type lamportOrder is declared in \"group_other.go\""
			}
			bad := orderLayout(src)
			if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, c.want) }) {
				t.Errorf("not reported (want %q): %q", c.want, bad)
			}
		})
	}
}

// TestOrderRegistry: every registered order has a name ParseTotal takes
// back, the CLI's list has them all, and New refuses an order that
// is not registered.
func TestOrderRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range orders {
		if seen[o.name] {
			t.Errorf("order name %q registered twice", o.name)
		}
		seen[o.name] = true
		if o.total.String() != o.name {
			t.Errorf("%d.String() = %q, want %q", o.total, o.total.String(), o.name)
		}
		if o.total == TotalNone {
			continue
		}
		if got, ok := ParseTotal(o.name); !ok || got != o.total {
			t.Errorf("ParseTotal(%q) = %v, %v", o.name, got, ok)
		}
		if !slices.Contains(TotalNames(), o.name) || !strings.Contains(TotalUsage(), o.name+" ("+o.summary+")") {
			t.Errorf("order %s missing from TotalNames %v or TotalUsage %q", o.name, TotalNames(), TotalUsage())
		}
	}
	if _, ok := ParseTotal("none"); ok {
		t.Error("ParseTotal takes none, which is not a total order")
	}
	if _, err := New(Config{ID: 1, Found: true, Total: Total(len(orders) + 7)}); err == nil {
		t.Error("New took an order that is not registered")
	}
}
