// Command listtests prints the leaf tests of Go test packages, named as `go test -json` names them,
// read from their source (go/ast, nothing is run):
//
//   - a top-level TestXxx(t *testing.T) with no subtests is a leaf;
//   - X.Run("literal", func(...) {...}) and X.T().Run(...) are subtests of the test X stands for: a
//     *testing.T parameter (the top-level test's, or an enclosing subtest's), or a variable bound by
//     `X := With(t)` (KubeRay's support.With) to one. That is the parent at run time, which is not
//     always the lexical one: KubeRay's auth test calls test.T().Run inside a subtest, so those are
//     subtests of the top-level test, and they run only when their lexical parent runs: such a test
//     function is one unit, run whole (`unit` below is its name);
//   - X.Run(tc.field, func(...) {...}) (table-driven) is one subtest per `field: "literal"` entry of
//     the composite literals in the same test function.
//
// Names are rewritten as the testing package does (spaces to '_'). A Run call whose name is neither
// form, a receiver bound to no test, or two subtests of one parent with the same name (Go would suffix
// "#01"), is an error: the list must be exactly what the binaries run, or the runner would select
// tests that do not exist.
//
// Usage: listtests <module dir> <import path prefix> <package dir>...
// Output: one JSON object a line: {"package":"<import path>","binary":"<last element>.test","test":"TestX/Sub",
// "unit":"<the test to run to run it: itself, or its whole top-level test>"}.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

type leaf struct {
	Package string `json:"package"`
	Binary  string `json:"binary"`
	Test    string `json:"test"`
	Unit    string `json:"unit"`
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: listtests <module dir> <import path prefix> <package dir>...")
		os.Exit(2)
	}
	moduleDir, prefix := os.Args[1], os.Args[2]
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, pkgDir := range os.Args[3:] {
		leaves, err := packageLeaves(filepath.Join(moduleDir, pkgDir))
		if err != nil {
			fmt.Fprintf(os.Stderr, "listtests: %s: %v\n", pkgDir, err)
			os.Exit(1)
		}
		for _, l := range leaves {
			l.Package, l.Binary = path.Join(prefix, pkgDir), path.Base(pkgDir)+".test"
			_ = enc.Encode(l)
		}
	}
}

func packageLeaves(dir string) ([]leaf, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *_test.go files in %s", dir)
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	var out []leaf
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestFunc(fn) {
				continue
			}
			root := &node{name: fn.Name.Name}
			w := &walker{fset: fset, fn: fn, lexical: []*node{root}}
			w.scopes = []map[string][]*node{{paramName(fn.Type): {root}}}
			w.walk(fn.Body)
			if w.err != nil {
				return nil, fmt.Errorf("%s: %w", fn.Name.Name, w.err)
			}
			for _, name := range root.leaves("") {
				unit := name
				if w.crossed {
					unit = root.name
				}
				out = append(out, leaf{Test: name, Unit: unit})
			}
		}
	}
	return out, nil
}

// isTestFunc: func TestXxx(t *testing.T), as `go test` finds them.
func isTestFunc(fn *ast.FuncDecl) bool {
	name := fn.Name.Name
	if !strings.HasPrefix(name, "Test") || (len(name) > 4 && unicode.IsLower(rune(name[4]))) {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// node is a test or subtest; a Run inside a table-driven subtest's body adds one under each row.
type node struct {
	name     string
	children []*node
}

func (n *node) leaves(prefix string) []string {
	full := n.name
	if prefix != "" {
		full = prefix + "/" + n.name
	}
	if len(n.children) == 0 {
		return []string{full}
	}
	var out []string
	for _, c := range n.children {
		out = append(out, c.leaves(full)...)
	}
	return out
}

func (n *node) add(name string) (*node, error) {
	for _, c := range n.children {
		if c.name == name {
			return nil, fmt.Errorf("two subtests named %q under %s", name, n.name)
		}
	}
	c := &node{name: name}
	n.children = append(n.children, c)
	return c, nil
}

// walker resolves each Run call's receiver to the tests it stands for, innermost binding first.
type walker struct {
	fset   *token.FileSet
	fn     *ast.FuncDecl
	scopes []map[string][]*node
	// the tests whose body is being walked: a Run's lexical parents
	lexical []*node
	// a Run's parent at run time is not its lexical one
	crossed bool
	err     error
}

func (w *walker) lookup(name string) []*node {
	for i := len(w.scopes) - 1; i >= 0; i-- {
		if n, ok := w.scopes[i][name]; ok {
			return n
		}
	}
	return nil
}

func (w *walker) fail(pos token.Pos, format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("%s: %s", w.fset.Position(pos), fmt.Sprintf(format, args...))
	}
}

func (w *walker) walk(body ast.Node) {
	ast.Inspect(body, func(n ast.Node) bool {
		if w.err != nil {
			return false
		}
		switch x := n.(type) {
		case *ast.AssignStmt:
			// test := With(t): test stands for what t stands for.
			if len(x.Lhs) == 1 && len(x.Rhs) == 1 {
				lhs, ok1 := x.Lhs[0].(*ast.Ident)
				call, ok2 := x.Rhs[0].(*ast.CallExpr)
				if ok1 && ok2 && calleeName(call.Fun) == "With" && len(call.Args) == 1 {
					if arg, ok := call.Args[0].(*ast.Ident); ok {
						if tests := w.lookup(arg.Name); tests != nil {
							w.scopes[len(w.scopes)-1][lhs.Name] = tests
						}
					}
				}
			}
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Run" || len(x.Args) != 2 {
				return true
			}
			body, ok := x.Args[1].(*ast.FuncLit)
			if !ok {
				return true
			}
			recv := receiverIdent(sel.X)
			if recv == nil {
				w.fail(x.Pos(), "a Run whose receiver is not t or test.T()")
				return false
			}
			parents := w.lookup(recv.Name)
			if parents == nil {
				w.fail(x.Pos(), "%s is bound to no test", recv.Name)
				return false
			}
			names, err := runNames(x.Args[0], w.fn)
			if err != nil {
				w.fail(x.Pos(), "%v", err)
				return false
			}
			if !sameNodes(parents, w.lexical) {
				w.crossed = true
			}
			var subs []*node
			for _, p := range parents {
				for _, name := range names {
					c, err := p.add(name)
					if err != nil {
						w.fail(x.Pos(), "%v", err)
						return false
					}
					subs = append(subs, c)
				}
			}
			w.scopes = append(w.scopes, map[string][]*node{paramName(body.Type): subs})
			outer := w.lexical
			w.lexical = subs
			w.walk(body.Body)
			w.lexical = outer
			w.scopes = w.scopes[:len(w.scopes)-1]
			return false // its body was walked above, in its own scope
		}
		return true
	})
}

// sameNodes: whether a Run's parents are its lexical parents.
func sameNodes(parents, lexical []*node) bool {
	if len(parents) != len(lexical) {
		return false
	}
	for i := range parents {
		if parents[i] != lexical[i] {
			return false
		}
	}
	return true
}

// paramName: the name of a func(t *testing.T)'s parameter ("" for none or "_").
func paramName(ft *ast.FuncType) string {
	if ft.Params == nil || len(ft.Params.List) != 1 || len(ft.Params.List[0].Names) != 1 {
		return ""
	}
	if n := ft.Params.List[0].Names[0].Name; n != "_" {
		return n
	}
	return ""
}

// receiverIdent: t for t.Run, test for test.T().Run.
func receiverIdent(e ast.Expr) *ast.Ident {
	switch x := e.(type) {
	case *ast.Ident:
		return x
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "T" && len(x.Args) == 0 {
			if id, ok := sel.X.(*ast.Ident); ok {
				return id
			}
		}
	}
	return nil
}

func calleeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}

// runNames: the names a Run call's first argument takes, rewritten as the testing package does.
func runNames(arg ast.Expr, fn *ast.FuncDecl) ([]string, error) {
	switch a := arg.(type) {
	case *ast.BasicLit:
		s, err := stringLit(a)
		if err != nil {
			return nil, err
		}
		return []string{rewrite(s)}, nil
	case *ast.SelectorExpr:
		field := a.Sel.Name
		var names []string
		var err error
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok || err != nil {
				return err == nil
			}
			if key, ok := kv.Key.(*ast.Ident); ok && key.Name == field {
				lit, ok := kv.Value.(*ast.BasicLit)
				if !ok {
					err = fmt.Errorf("table field %s is not a string literal", field)
					return false
				}
				var s string
				if s, err = stringLit(lit); err == nil {
					names = append(names, rewrite(s))
				}
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no %s: \"...\" entries for a table-driven Run", field)
		}
		return names, nil
	default:
		return nil, fmt.Errorf("a Run name that is neither a string literal nor a table field")
	}
}

func stringLit(lit *ast.BasicLit) (string, error) {
	if lit.Kind != token.STRING {
		return "", fmt.Errorf("%s is not a string", lit.Value)
	}
	return strconv.Unquote(lit.Value)
}

// rewrite is testing's rewrite (match.go): spaces become '_', unprintable runes are escaped.
func rewrite(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			b.WriteByte('_')
		case !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
