package daemon

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// reloadStopper counts certificate reloads and stops at once.
type reloadStopper struct{ reloads chan struct{} }

func (r reloadStopper) Close(context.Context) error    { return nil }
func (r reloadStopper) ShutdownTimeout() time.Duration { return time.Second }
func (r reloadStopper) ReloadCertificates() error {
	r.reloads <- struct{}{}
	return nil
}

// TestSIGHUPReloadsCertificates: SIGHUP calls ReloadCertificates once per
// signal, also one that arrives while the node starts (SIGHUP's default
// action would kill the process), and leaves the process running until
// SIGTERM.
func TestSIGHUPReloadsCertificates(t *testing.T) {
	r := reloadStopper{reloads: make(chan struct{}, 4)}
	done := make(chan error, 1)
	go func() {
		done <- runUntilSignal(func(context.Context) (stopper, error) {
			// While starting.
			return r, syscall.Kill(os.Getpid(), syscall.SIGHUP)
		})
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-r.reloads:
		case err := <-done:
			t.Fatalf("%s: runUntilSignal returned %v", what, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no reload", what)
		}
	}
	wait("SIGHUP during the start")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait("SIGHUP once running")
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runUntilSignal = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runUntilSignal did not return after SIGTERM")
	}
	if n := len(r.reloads); n != 0 {
		t.Fatalf("%d extra reloads", n)
	}
}
