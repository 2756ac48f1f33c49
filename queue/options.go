package queue

import (
	"errors"
	"fmt"
	"time"
)

// Defaults and limits of Options.
const (
	// DefaultLeaseTimeout is how long an item handed out by Open stays
	// leased before it is handed out again.
	DefaultLeaseTimeout = 30 * time.Second
	// DefaultSweepInterval is the period of the expiry sweep.
	DefaultSweepInterval = time.Second
	// DefaultWindow is the default Options.Window.
	DefaultWindow = 1024
	// MaxWindow is the largest Options.Window. The confirmed-above set is
	// committed as the position's metadata (see the package doc); with at
	// most MaxWindow items in flight its encoding stays under the offsets
	// store's default metadata limit of 4096 bytes.
	MaxWindow = 2000
)

// Options configure a Queue. The zero value is usable.
type Options struct {
	// LeaseTimeout is how long an item handed out by Open stays leased:
	// unconfirmed at the deadline, it is handed out again. Default 30s.
	LeaseTimeout time.Duration
	// SweepInterval is the period of the background expiry sweep (see
	// Sweep). Default 1s; negative: no background sweep (Sweep can still
	// be called).
	SweepInterval time.Duration
	// Window caps the items in flight: read from the log at or above the
	// head and not yet confirmed (leased, waiting to be handed out again,
	// or confirmed above a head that is still open). When the window is
	// full, Get and Open wait for the head to advance. Default 1024, at
	// most MaxWindow.
	Window int
	// Clock is the time source of leases, TTLs, the sweep and the
	// timestamps Put gives items; nil is the system clock. Tests inject
	// a fake one.
	Clock Clock
}

func (o Options) withDefaults() (Options, error) {
	if o.LeaseTimeout == 0 {
		o.LeaseTimeout = DefaultLeaseTimeout
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
	switch {
	case o.LeaseTimeout < 0:
		return o, fmt.Errorf("%w: LeaseTimeout %v is negative", ErrInvalidOptions, o.LeaseTimeout)
	case o.Window < 0 || o.Window > MaxWindow:
		return o, fmt.Errorf("%w: Window %d is outside 1..%d", ErrInvalidOptions, o.Window, MaxWindow)
	}
	return o, nil
}

// Clock is the queue's source of time. Now gives the current time;
// NewTimer a timer that fires once after d (at once when d <= 0).
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's one-shot timer, like time.Timer: C delivers the time
// once it fires; Stop prevents that if it has not fired yet.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// SystemClock returns the Clock of the time package.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

// Errors. Test them with errors.Is: most are wrapped with context.
var (
	// ErrClosed is returned by operations on a closed Queue, and by a
	// Get or Open that was waiting when Close was called.
	ErrClosed = errors.New("queue: closed")
	// ErrUnknownLease is returned by Confirm and Abort for a lease that is
	// not open: never handed out by this Queue, or already confirmed or
	// aborted (a second Confirm of one lease returns it).
	ErrUnknownLease = errors.New("queue: unknown lease")
	// ErrLeaseExpired is returned by Confirm and Abort for a lease whose
	// deadline has passed: its item is (or will be) handed out again and
	// the confirmation does not count. Expired leases are remembered for
	// Confirm and Abort to say so (the last 4096 of them); older ones get
	// ErrUnknownLease.
	ErrLeaseExpired = errors.New("queue: lease expired")
	// ErrInvalidOptions reports Options or arguments that cannot be used.
	ErrInvalidOptions = errors.New("queue: invalid options")
	// ErrCorrupt is wrapped by the error of New when the committed
	// position's metadata is neither empty nor a queue's encoding of the
	// confirmed-above set (see the package doc, Position).
	ErrCorrupt = errors.New("queue: corrupt committed state")
)
