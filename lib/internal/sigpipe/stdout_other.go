//go:build !unix

package sigpipe

import "os"

// Stdout returns os.Stdout after Survive: elsewhere than Unix there is no
// SIGPIPE to keep away from.
func Stdout() *os.File {
	Survive()
	return os.Stdout
}

// Stderr returns os.Stderr after Survive.
func Stderr() *os.File {
	Survive()
	return os.Stderr
}
