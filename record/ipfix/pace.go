package ipfix

import "time"

// paceBurst is how many records' worth of time a pacer lets go out at
// once, at its rate: 20 ms, a few dozen messages at the default rate,
// well within a collector's default socket buffer (about 200 KiB) yet
// long enough that the sleeps between bursts are not mostly the timer's
// slack.
const paceBurst = 20 * time.Millisecond

// pacer spaces a UDP collector's messages to a rate of data records a
// second: a token bucket of records holding paceBurst's worth, a message
// that finds too few tokens sleeping until they have come in. A UDP
// collector reads its socket at its own pace and the kernel drops what
// overflows its buffer without telling the sender; a message at a time
// sent no faster than the collector reads is what keeps the buffer from
// overflowing. Not safe for concurrent use: each collector's goroutine
// has its own.
type pacer struct {
	rate, burst, tokens float64
	last                time.Time
	timer               *time.Timer
}

func newPacer(rate int) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	burst := max(float64(rate)*paceBurst.Seconds(), 1)
	return &pacer{rate: float64(rate), burst: burst, tokens: burst, timer: t}
}

// wait takes n records' tokens, sleeping first if they are not there; it
// reports false when stop is closed meanwhile.
func (p *pacer) wait(n uint32, stop <-chan struct{}) bool {
	now := time.Now()
	if !p.last.IsZero() {
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	}
	p.last = now
	p.tokens -= float64(n)
	if p.tokens >= 0 {
		return true
	}
	p.timer.Reset(time.Duration(-p.tokens / p.rate * float64(time.Second)))
	select {
	case <-p.timer.C:
		return true
	case <-stop:
		p.timer.Stop()
		return false
	}
}
