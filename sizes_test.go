package tether_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The size limits of the code (issue #22): a function longer than
// maxFuncLines, or a file with more than maxFileLines lines of code, is
// split along its seams. Tests and generated *_gen.go files are exempt.
const (
	maxFuncLines = 100 // every line from func to its closing brace
	maxFileLines = 400 // lines neither blank nor a // comment
)

// TestSizes walks the module's Go files and fails naming each function
// and file over the limits, so that they stay within them.
func TestSizes(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_gen.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		if n := codeLines(string(src)); n > maxFileLines {
			t.Errorf("%s: %d lines of code; want at most %d", path, n, maxFileLines)
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines; want at most %d", path, start.Line, funcName(fd), n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("TestSizes checked no file: is the test run from the module's root?")
	}
}

// codeLines counts the lines of src that are neither blank nor a //
// comment.
func codeLines(src string) int {
	n := 0
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}

// funcName is fd's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func TestCodeLines(t *testing.T) {
	src := "package p\n\n// doc\n\t// indented\nfunc f() {\n\n\treturn // trailing\n}\n"
	if got, want := codeLines(src), 4; got != want {
		t.Errorf("codeLines(%q) = %d; want %d", src, got, want)
	}
}
