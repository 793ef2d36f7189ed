package conferr

import (
	"errors"
	"testing"
)

func TestError(t *testing.T) {
	cause := errors.New("cause")
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{File: "rules.yaml", Line: 12, Col: 5, In: `rule "syn-flood"`, Msg: "window must be > 0"}, `rules.yaml:12:5: rule "syn-flood": window must be > 0`},
		{Error{File: "flowmon.yaml", Line: 3, Col: 3, Key: "afpacket.block-size", Msg: "3000 must be a power of two"}, "flowmon.yaml:3:3: afpacket.block-size: 3000 must be a power of two"},
		{Error{File: "sinks.yaml", Line: 4, In: "sink #2", Key: "url", Msg: "no host"}, "sinks.yaml:4: sink #2: url: no host"},
		{Error{File: "sinks.yaml", Col: 4, Msg: "bad"}, "sinks.yaml: bad"},
		{Error{Key: "--workers", Msg: "0 must be between 1 and 256"}, "--workers: 0 must be between 1 and 256"},
		{Error{Key: "filter", Err: cause}, "filter: cause"},
		{Error{Msg: "m", Err: cause}, "m"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
	if e := (&Error{Err: cause}); !errors.Is(e, cause) {
		t.Errorf("%v does not wrap its Err", e)
	}
}

func TestJoin(t *testing.T) {
	if err := Join(nil); err != nil {
		t.Errorf("Join(nil) = %#v", err)
	}
	sentinel := errors.New("invalid")
	err := Join([]*Error{
		{File: "f", Line: 3, Col: 1, Msg: "c"},
		{File: "f", Line: 1, Col: 9, Msg: "b", Err: sentinel},
		{File: "f", Msg: "a"},
		{File: "f", Line: 1, Col: 2, Msg: "a2"},
	})
	if got, want := err.Error(), "f: a\nf:1:2: a2\nf:1:9: b\nf:3:1: c"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != 4 {
		t.Errorf("errors.As(Errors): %v", es)
	}
	var e *Error
	if !errors.As(err, &e) || e.Msg != "a" {
		t.Errorf("errors.As(*Error) found %v, want the first", e)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%v: errors.Is does not look into each", err)
	}
}
