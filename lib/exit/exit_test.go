package exit

import (
	"errors"
	"testing"
)

func TestCode(t *testing.T) {
	if got := Code(nil, 3); got != 0 {
		t.Errorf("Code(nil) = %d; want 0", got)
	}
	if got := Code(errors.New("x"), 3); got != 3 {
		t.Errorf("Code(plain) = %d; want fallback 3", got)
	}
	wrapped := Errorf(125, "outer: %w", Errorf(2, "inner"))
	if got := Code(wrapped, 3); got != 125 {
		t.Errorf("Code(wrapped) = %d; want 125", got)
	}
}
