package main

import (
	"io"
	"log/slog"

	"github.com/flowmon/flowmon/agent/config"
)

// logFormatUsage is --log-format's usage, run's and replay's.
const logFormatUsage = "how log lines on stderr are written: text (slog's key=value) or json (one object a line)"

// newLogger returns the logger of a command's log lines on w, in format
// (config.LogText or config.LogJSON; checked before).
func newLogger(w io.Writer, format string) *slog.Logger {
	if format == config.LogJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
