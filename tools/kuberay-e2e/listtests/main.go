// Command listtests prints the leaf tests of Go test packages, named as `go test -json` names them,
// read from their source (go/ast, nothing is run):
//
//   - a top-level TestXxx(t *testing.T) with no subtests is a leaf;
//   - X.Run("literal", func(...) {...}) is a subtest, nested as the source nests it;
//   - X.Run(tc.field, func(...) {...}) (table-driven) is one subtest per `field: "literal"` entry of
//     the composite literals in the same test function.
//
// Names are rewritten as the testing package does (spaces to '_'). A Run call whose name is neither
// form, or two subtests of one parent with the same name (Go would suffix "#01"), is an error: the
// list must be exactly what the binaries run, or the runner would select tests that do not exist.
//
// Usage: listtests <module dir> <import path prefix> <package dir>...
// Output: one JSON object a line: {"package":"<import path>","binary":"<last element>.test","test":"TestX/Sub"}.
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
		names, err := packageLeaves(filepath.Join(moduleDir, pkgDir))
		if err != nil {
			fmt.Fprintf(os.Stderr, "listtests: %s: %v\n", pkgDir, err)
			os.Exit(1)
		}
		for _, n := range names {
			_ = enc.Encode(leaf{Package: path.Join(prefix, pkgDir), Binary: path.Base(pkgDir) + ".test", Test: n})
		}
	}
}

func packageLeaves(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *_test.go files in %s", dir)
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	var out []string
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
			subs, err := subtests(fset, fn.Body, fn)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", fn.Name.Name, err)
			}
			if len(subs) == 0 {
				out = append(out, fn.Name.Name)
			}
			for _, s := range subs {
				out = append(out, fn.Name.Name+"/"+s)
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

// subtests returns the leaf paths ("A/B") of the Run calls under node, nested as in the source.
func subtests(fset *token.FileSet, node ast.Node, fn *ast.FuncDecl) ([]string, error) {
	var out []string
	var firstErr error
	seen := map[string]bool{}
	ast.Inspect(node, func(n ast.Node) bool {
		if firstErr != nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Run" || len(call.Args) != 2 {
			return true
		}
		body, ok := call.Args[1].(*ast.FuncLit)
		if !ok {
			return true
		}
		names, err := runNames(call.Args[0], fn)
		if err != nil {
			firstErr = fmt.Errorf("%s: %w", fset.Position(call.Pos()), err)
			return false
		}
		children, err := subtests(fset, body.Body, fn)
		if err != nil {
			firstErr = err
			return false
		}
		for _, name := range names {
			if seen[name] {
				firstErr = fmt.Errorf("%s: two subtests named %q under one parent", fset.Position(call.Pos()), name)
				return false
			}
			seen[name] = true
			if len(children) == 0 {
				out = append(out, name)
			}
			for _, c := range children {
				out = append(out, name+"/"+c)
			}
		}
		return false // its body was walked above
	})
	return out, firstErr
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
