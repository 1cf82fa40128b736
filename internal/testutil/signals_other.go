//go:build !linux

package testutil

import (
	"errors"
	"os"
)

// ignoredSignals is Linux-only: elsewhere the tests run as started.
func ignoredSignals() ([]os.Signal, error) {
	return nil, errors.New("ignored signals are only read on Linux")
}
