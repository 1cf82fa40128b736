// Package syntax holds the syntax every tether tool shares (CONTRACT.md
// §1): signal names (ParseSignal, SignalName), durations (ParseDuration,
// days included; ShortDuration, as tables and pages print them) and the escaping of the free text a diagnostic quotes
// (EscapeControl, EscapeControlChars).
//
// It is a leaf: it imports only the standard library and x/sys.
//
//	sig, err := syntax.ParseSignal("term") // unix.SIGTERM
//	d, err := syntax.ParseDuration("1.5d")
package syntax
