package dedup

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a Dedup. Zero fields take the defaults of
// DefaultConfig; Validate checks the result.
type Config struct {
	// Window is how long a packet is remembered (default 50 ms: capture
	// duplicates arrive microseconds to milliseconds apart).
	Window time.Duration
	// PacketsPerWindow is the expected number of packets in one Window
	// (default 50000, i.e. 1 Mpps).
	PacketsPerWindow uint64
	// FPRate is the target rate of unique packets wrongly dropped
	// (default 1e-6).
	FPRate float64
	// FBF selects the paper's Forgetful Bloom Filter (filters/fbf) for the
	// duplicate window instead of the fingerprint table (filters/recent),
	// which checks a packet in less than half the time (one cache line
	// against three); Past and Standard shape the FBF. The table holds
	// fingerprints of 25 bits, so it takes FPRate down to
	// recent.FalsePositiveBound (4.5e-7); lower ones need the FBF.
	FBF bool
	// Past is the FBF's N (default 1).
	Past int
	// PayloadBytes is how many captured payload bytes enter the
	// fingerprint (default 32, at most MaxPayloadBytes).
	PayloadBytes int
	// Standard selects standard Bloom filters for the FBF instead of the
	// (faster, slightly larger) cache-blocked ones.
	Standard bool
	// Retrans configures the optional retransmission window.
	Retrans RetransConfig
}

// RetransConfig configures the TCP retransmission window.
type RetransConfig struct {
	Enabled bool
	// Window is how long a segment is remembered (default 3 s).
	Window time.Duration
	// PacketsPerWindow defaults to the main window's rate over this window.
	PacketsPerWindow uint64
	// FPRate is the target rate of segments wrongly marked (default 1e-4).
	FPRate float64
}

// MaxPayloadBytes bounds Config.PayloadBytes.
const MaxPayloadBytes = 64

// ErrInvalidConfig is returned (wrapped) by Validate and New.
var ErrInvalidConfig = errors.New("invalid dedup config")

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Window: 50 * time.Millisecond, PacketsPerWindow: 50_000, FPRate: 1e-6, Past: 1, PayloadBytes: 32}
}

// WithDefaults returns c with its zero fields filled.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.PacketsPerWindow == 0 {
		c.PacketsPerWindow = d.PacketsPerWindow
	}
	if c.FPRate == 0 {
		c.FPRate = d.FPRate
	}
	if c.Past == 0 {
		c.Past = d.Past
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = d.PayloadBytes
	}
	if r := &c.Retrans; r.Enabled {
		if r.Window == 0 {
			r.Window = 3 * time.Second
		}
		if r.PacketsPerWindow == 0 && c.Window > 0 {
			r.PacketsPerWindow = uint64(float64(c.PacketsPerWindow) * float64(r.Window) / float64(c.Window))
		}
		if r.FPRate == 0 {
			r.FPRate = 1e-4
		}
	}
	return c
}

// Share returns the configuration of one of workers Dedups that split the
// traffic by flow hash (a packet and its duplicates have the same flow
// hash, so they meet in the same Dedup): each sees about 1/workers of the
// packets and is sized for that share of PacketsPerWindow, and of the
// retransmission window's. Defaults are filled; for one worker the result
// is c.WithDefaults(). Flows are not equal, so a shard holding more than
// its share of the traffic runs above FPRate in proportion.
func (c Config) Share(workers int) Config {
	c = c.WithDefaults()
	if workers <= 1 {
		return c
	}
	w := uint64(workers)
	c.PacketsPerWindow = max(1, (c.PacketsPerWindow+w-1)/w)
	if c.Retrans.Enabled {
		c.Retrans.PacketsPerWindow = max(1, (c.Retrans.PacketsPerWindow+w-1)/w)
	}
	return c
}

// Validate checks c (after WithDefaults) and reports every broken rule.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrInvalidConfig)...))
	}
	if c.Window <= 0 {
		bad("window %v must be > 0", c.Window)
	}
	if c.PacketsPerWindow == 0 {
		bad("packets per window must be > 0")
	}
	if !(c.FPRate > 0 && c.FPRate < 1) {
		bad("fp rate %g must be in (0, 1)", c.FPRate)
	}
	if c.Past < 1 || c.Past > 62 {
		bad("past filters %d must be in [1, 62]", c.Past)
	}
	if c.Window > 0 && c.Past >= 1 && c.Window/time.Duration(c.Past+1) <= 0 {
		bad("window %v too short for %d past filters", c.Window, c.Past)
	}
	if c.PayloadBytes < 0 || c.PayloadBytes > MaxPayloadBytes {
		bad("payload bytes %d must be in [0, %d]", c.PayloadBytes, MaxPayloadBytes)
	}
	if r := c.Retrans; r.Enabled {
		if r.Window <= c.Window {
			bad("retransmission window %v must be longer than the window %v", r.Window, c.Window)
		}
		if r.PacketsPerWindow == 0 {
			bad("retransmission packets per window must be > 0")
		}
		if !(r.FPRate > 0 && r.FPRate < 1) {
			bad("retransmission fp rate %g must be in (0, 1)", r.FPRate)
		}
	}
	return errors.Join(errs...)
}
