package alerts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/rotfile"
)

// Config is the alert sinks as an operator configures them: plain data,
// from ParseConfig or built in code. Open makes the sinks.
type Config struct {
	Sinks []SinkConfig
	// Logger hears when a sink starts failing, drops rejected alerts, or
	// delivers again (not every retry); nil logs nothing. Not from YAML.
	Logger *slog.Logger

	stdout io.Writer // where stdout sinks write: os.Stdout if nil (tests set it)
}

// SinkType is a sink's kind, the type key of its YAML.
type SinkType string

// The sink types.
const (
	SinkStdout       SinkType = "stdout"
	SinkFile         SinkType = "file"
	SinkWebhook      SinkType = "webhook"
	SinkAlertmanager SinkType = "alertmanager"
)

// SinkConfig is one sink. Zero fields take their defaults (WithDefaults);
// the comment of each says which types use it.
type SinkConfig struct {
	Name string   // unique, of letters, digits, '_', '-' and '.': a metric label
	Type SinkType // required

	// Queue is how many alerts may wait (default DefaultQueue, at most
	// MaxQueue); an Alertmanager sink has a queue this size per URL.
	Queue int
	// MinBackoff and MaxBackoff bound the wait between retries (defaults
	// DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration

	Format Format // stdout, file: json (default) or text

	Path     string        // file: required
	MaxSize  int64         // file: bytes before rotating; 0 never rotates by size
	MaxAge   time.Duration // file: how long a file is written to before rotating; 0 never rotates by age
	MaxFiles int           // file: rotated files kept, path.1 ... (default 5)

	URL  string   // webhook: required, http or https
	URLs []string // alertmanager: required, each Alertmanager's base URL

	// webhook, alertmanager: Authorization: Bearer, from BearerToken or
	// from the file BearerTokenFile (read at every request); TLS; the
	// timeout of one request (default DefaultTimeout).
	BearerToken     string
	BearerTokenFile string
	TLS             TLSConfig
	Timeout         time.Duration

	// alertmanager: how often the firing alerts are posted again (default
	// DefaultResendInterval; keep it well under Alertmanager's
	// resolve_timeout, 5m by default), how many firing alerts are kept
	// (default DefaultMaxFiring), and the generatorURL of every alert.
	ResendInterval time.Duration
	MaxFiring      int
	GeneratorURL   string
}

// TLSConfig is the TLS of a webhook or Alertmanager sink.
type TLSConfig struct {
	CAFile             string // PEM certificates to trust instead of the system's
	InsecureSkipVerify bool   // trust any certificate (tests only)
}

// Bounds of a sink's settings, so that a typo cannot ask for gigabytes of
// queue or hammer an Alertmanager.
const (
	MaxQueue          = 1 << 20
	MaxMaxFiles       = 1000
	MaxMaxFiring      = 1 << 20
	MinResendInterval = time.Second
)

// DefaultMaxFiles is how many rotated files a file sink keeps by default.
const DefaultMaxFiles = 5

// WithDefaults returns c with its zero fields filled.
func (c SinkConfig) WithDefaults() SinkConfig {
	if c.Queue == 0 {
		c.Queue = DefaultQueue
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(DefaultMaxBackoff, c.MinBackoff)
	}
	switch c.Type {
	case SinkFile:
		if c.MaxFiles == 0 {
			c.MaxFiles = DefaultMaxFiles
		}
	case SinkWebhook, SinkAlertmanager:
		if c.Timeout == 0 {
			c.Timeout = DefaultTimeout
		}
		if c.Type == SinkAlertmanager && c.ResendInterval == 0 {
			c.ResendInterval = DefaultResendInterval
		}
		if c.Type == SinkAlertmanager && c.MaxFiring == 0 {
			c.MaxFiring = DefaultMaxFiring
		}
	}
	return c
}

// ErrInvalid is wrapped by every error a sinks configuration's content
// causes (each a *conferr.Error).
var ErrInvalid = errors.New("invalid sinks configuration")

// sinkIn names the sink id (sinkID) in errors (conferr.Error's In).
func sinkIn(id string) string {
	if id == "" {
		return ""
	}
	return "sink " + id
}

// problem is one broken rule of a sink: field is the YAML key it is
// about, so that ParseConfig can point at it.
type problem struct{ field, msg string }

// check returns what is wrong with c, which has its defaults.
func (c *SinkConfig) check() []problem {
	var ps []problem
	add := func(field, format string, args ...any) {
		ps = append(ps, problem{field, fmt.Sprintf(format, args...)})
	}
	switch {
	case c.Name == "":
		add("name", "missing name")
	case strings.IndexFunc(c.Name, func(r rune) bool { return !nameRune(r) }) >= 0:
		add("name", "name %q may hold only letters, digits, '_', '-' and '.'", c.Name)
	}
	switch c.Type {
	case "":
		add("type", "missing type (stdout, file, webhook or alertmanager)")
	case SinkStdout, SinkFile, SinkWebhook, SinkAlertmanager:
	default:
		add("type", "unknown type %q (want stdout, file, webhook or alertmanager)", c.Type)
	}
	if c.Queue < 1 || c.Queue > MaxQueue {
		add("queue", "queue %d must be between 1 and %d", c.Queue, MaxQueue)
	}
	if c.MinBackoff <= 0 {
		add("min_backoff", "min_backoff %v must be > 0", c.MinBackoff)
	} else if c.MaxBackoff < c.MinBackoff {
		add("max_backoff", "max_backoff %v must be at least min_backoff %v", c.MaxBackoff, c.MinBackoff)
	}
	if c.Format != FormatJSON && c.Format != FormatText {
		add("format", "unknown %v", c.Format)
	}
	switch c.Type {
	case SinkFile:
		if c.Path == "" {
			add("path", "missing path")
		}
		if c.MaxSize < 0 {
			add("max_size", "max_size %d must be >= 0", c.MaxSize)
		}
		if c.MaxAge < 0 {
			add("max_age", "max_age %v must be >= 0", c.MaxAge)
		}
		if c.MaxFiles < 1 || c.MaxFiles > MaxMaxFiles {
			add("max_files", "max_files %d must be between 1 and %d", c.MaxFiles, MaxMaxFiles)
		}
	case SinkWebhook:
		if c.URL == "" {
			add("url", "missing url")
		} else if msg := checkURL(c.URL); msg != "" {
			add("url", "url %s", msg)
		}
	case SinkAlertmanager:
		if len(c.URLs) == 0 {
			add("urls", "missing urls")
		}
		seen := make(map[string]bool)
		for _, u := range c.URLs {
			if msg := checkURL(u); msg != "" {
				add("urls", "url %s", msg)
			} else if seen[u] {
				add("urls", "url %s given twice", redact(u))
			}
			seen[u] = true
		}
		if c.ResendInterval < MinResendInterval {
			add("resend_interval", "resend_interval %v must be at least %v (each resend posts every firing alert)", c.ResendInterval, MinResendInterval)
		}
		if c.MaxFiring < 1 || c.MaxFiring > MaxMaxFiring {
			add("max_firing", "max_firing %d must be between 1 and %d", c.MaxFiring, MaxMaxFiring)
		}
	}
	if c.Type == SinkWebhook || c.Type == SinkAlertmanager {
		if c.BearerToken != "" && c.BearerTokenFile != "" {
			add("bearer_token_file", "bearer_token and bearer_token_file are exclusive")
		}
		if c.Timeout <= 0 {
			add("timeout", "timeout %v must be > 0", c.Timeout)
		}
	}
	return ps
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
}

// checkURL says what is wrong with an http(s) URL, "" if nothing.
func checkURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot be parsed: %v", errors.Unwrap(err)) // s may hold a password
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%s: want http or https", u.Redacted())
	case u.Hostname() == "":
		return fmt.Sprintf("%s: no host", u.Redacted())
	}
	return ""
}

// Validate checks c with its defaults filled: every sink's settings, and
// that names are unique. The error joins a *conferr.Error per problem.
func (c Config) Validate() error {
	var errs []error
	byName := make(map[string]bool)
	for i, s := range c.Sinks {
		s = s.WithDefaults()
		id := sinkID(s.Name, i)
		for _, p := range s.check() {
			errs = append(errs, &conferr.Error{In: sinkIn(id), Msg: p.msg, Err: ErrInvalid})
		}
		if s.Name != "" && byName[s.Name] {
			errs = append(errs, &conferr.Error{In: sinkIn(id), Msg: fmt.Sprintf("name %q used by another sink", s.Name), Err: ErrInvalid})
		}
		byName[s.Name] = true
	}
	return errors.Join(errs...)
}

// sinkID names the i-th sink (from 0) in errors.
func sinkID(name string, i int) string {
	if name == "" {
		return fmt.Sprintf("#%d", i+1)
	}
	return name
}

// Open validates c and makes its sinks, in order; a stdout sink writes to
// os.Stdout. On error it closes the sinks it made.
func (c Config) Open() ([]Sink, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	sinks := make([]Sink, 0, len(c.Sinks))
	for _, sc := range c.Sinks {
		s, err := sc.WithDefaults().open(c.Logger, c.stdout)
		if err != nil {
			for _, s := range sinks {
				s.Close(context.Background()) // nothing queued yet: returns at once
			}
			return nil, fmt.Errorf("opening alert sink %s: %w", sc.Name, err)
		}
		sinks = append(sinks, s)
	}
	return sinks, nil
}

func (c SinkConfig) open(log *slog.Logger, stdout io.Writer) (Sink, error) {
	qo := queueOptions{size: c.Queue, minBackoff: c.MinBackoff, maxBackoff: c.MaxBackoff, log: log}
	ho := httpOptions{bearerToken: c.BearerToken, bearerTokenFile: c.BearerTokenFile,
		caFile: c.TLS.CAFile, insecure: c.TLS.InsecureSkipVerify, timeout: c.Timeout}
	switch c.Type {
	case SinkStdout:
		if stdout == nil {
			stdout = os.Stdout
		}
		return newWriterSink(c.Name, stdout, c.Format, qo), nil
	case SinkFile:
		return newFileSink(c.Name, c.Path, rotfile.Options{MaxSize: c.MaxSize, MaxAge: c.MaxAge, MaxFiles: c.MaxFiles}, c.Format, qo)
	case SinkWebhook:
		return newWebhookSink(c.Name, c.URL, ho, qo)
	case SinkAlertmanager:
		ao := amOptions{urls: c.URLs, resendEvery: c.ResendInterval, maxFiring: c.MaxFiring, generatorURL: c.GeneratorURL}
		return newAlertmanagerSink(c.Name, ao, ho, qo)
	}
	return nil, fmt.Errorf("unknown sink type %q", c.Type)
}
