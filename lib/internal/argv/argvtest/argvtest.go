// Package argvtest holds lib/internal/argv's parser to kong: the check each
// tool's differential test and fuzz target run.
package argvtest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tether-sh/tether/lib/internal/argv"
)

// KongParse parses args into g with kong (help and errors discarded) and
// returns the selected command's path ("claim", "" for a tool without
// commands); ok is false when kong refused args or served --help.
type KongParse[G any] func(g *G, args []string) (cmd string, ok bool)

// Check fails t if argv.Parse accepts args but kong parses them otherwise
// or not at all: another command, or any field of the grammar struct
// different. It reports whether argv.Parse accepted them.
func Check[G, E any](t testing.TB, root *argv.Node[G, E], kong KongParse[G], args []string) bool {
	t.Helper()
	var fast G
	node, ok := argv.Parse(root, &fast, args)
	if !ok {
		return false
	}
	var slow G
	cmd, kongOK := kong(&slow, args)
	if !kongOK {
		t.Fatalf("argv.Parse(%q) accepted %q; kong refuses it", args, node.Name)
	}
	if want := lastWord(cmd, root.Name); node.Name != want {
		t.Fatalf("argv.Parse(%q) = %q; kong parses %q", args, node.Name, want)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("argv.Parse(%q) = %+v;\nkong parses %+v", args, fast, slow)
	}
	return true
}

// lastWord is the selected command's name in kong's ctx.Command() ("claim
// <job>", "" at the root).
func lastWord(cmd, root string) string {
	name := root
	for _, w := range strings.Fields(cmd) {
		if !strings.HasPrefix(w, "<") {
			name = w
		}
	}
	return name
}
