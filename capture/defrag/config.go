package defrag

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// Policy says whose bytes a reassembled datagram keeps where fragments
// overlap. The hosts a monitor watches do not agree (Novak, "Target-Based
// Fragmentation Reassembly", 2005; Snort's frag3 and Suricata's defrag
// policies name them after the systems), so an evader sends overlaps that
// the monitor and the target read differently; the policy picks the
// reading.
type Policy uint8

const (
	// First keeps the bytes that arrived first: Windows, Solaris, Mac OS
	// and HP-UX 11 (Suricata's "first" and "windows"), and Zeek, whose
	// reassembler only fills holes. The default, since flowmon's records
	// are measured against Zeek's.
	First Policy = iota
	// Last keeps the bytes that arrived last: Cisco IOS (Suricata's
	// "last").
	Last
	numPolicies
)

var policyNames = [numPolicies]string{"first", "last"}

func (p Policy) String() string {
	if p < numPolicies {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// PolicyNames spells the policies for a setting's error.
const PolicyNames = "first or last"

// ErrPolicy is wrapped by ParsePolicy's error.
var ErrPolicy = errors.New("unknown overlap policy")

// ParsePolicy reads a policy by its name.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if s == n {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want %s)", ErrPolicy, s, PolicyNames)
}

// Config bounds a Reassembler. Its memory is allocated whole by New:
// about MaxDatagrams KiB for the table and MaxBytes for the data.
type Config struct {
	// MaxDatagrams is how many datagrams may be in progress at once; a
	// new one past it evicts the oldest (DropTableFull).
	MaxDatagrams int
	// MaxBytes is how many bytes of fragment data may be held, in blocks
	// of 1 KiB (a datagram holds the blocks its fragments' offsets
	// touch); a fragment past it evicts the oldest datagrams
	// (DropBytesFull). At least 64 KiB, one whole datagram.
	MaxBytes int
	// Timeout is how long, in packet time from its first fragment, a
	// datagram may take to be whole (DropTimeout).
	Timeout time.Duration
	// Policy is the overlap policy.
	Policy Policy
	// Decode decodes a whole datagram as its source decodes its frames
	// (the tunnels' ports; checksums); nil: capture.Decode's defaults.
	Decode *capture.DecodeOptions
}

// Defaults and bounds. The timeout is Linux's for IPv4 (net.ipv4.ipfrag_time,
// 30 s; Suricata holds 60 s, Zeek forever unless frag_timeout is set): a
// datagram a host's stack would have given up on is not one its
// connections saw, and a shorter hold frees the table sooner under a
// flood of fragments that never complete. MaxBytes is Linux's
// ipfrag_high_thresh (4 MiB); MaxDatagrams lets each datagram in progress
// be 4 KiB, three fragments at an Ethernet MTU.
const (
	DefaultMaxDatagrams = 1024
	DefaultMaxBytes     = 4 << 20
	DefaultTimeout      = 30 * time.Second

	MaxMaxDatagrams = 1 << 20
	MinMaxBytes     = 64 << 10
	MaxMaxBytes     = 1 << 30
	MaxTimeout      = 10 * time.Minute
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxDatagrams: DefaultMaxDatagrams, MaxBytes: DefaultMaxBytes, Timeout: DefaultTimeout, Policy: First}
}

// WithDefaults returns c with its zero fields (Policy's zero is First)
// set to the defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.MaxDatagrams == 0 {
		c.MaxDatagrams = d.MaxDatagrams
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = d.MaxBytes
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	return c
}

// Validate checks each bound and returns every error, joined.
func (c Config) Validate() error {
	var errs []error
	if c.MaxDatagrams < 1 || c.MaxDatagrams > MaxMaxDatagrams {
		errs = append(errs, fmt.Errorf("max datagrams %d must be between 1 and %d", c.MaxDatagrams, MaxMaxDatagrams))
	}
	if c.MaxBytes < MinMaxBytes || c.MaxBytes > MaxMaxBytes {
		errs = append(errs, fmt.Errorf("max bytes %d must be between %d (one whole datagram) and %d", c.MaxBytes, MinMaxBytes, MaxMaxBytes))
	}
	if c.Timeout <= 0 || c.Timeout > MaxTimeout {
		errs = append(errs, fmt.Errorf("timeout %v must be above 0 and at most %v", c.Timeout, MaxTimeout))
	}
	if c.Policy >= numPolicies {
		errs = append(errs, fmt.Errorf("policy %v must be %s", c.Policy, PolicyNames))
	}
	return errors.Join(errs...)
}
