package app

import (
	"context"
	"log/slog"
)

// jobsLogger is the job queue's (River's) logger: log's handler, tagged component=jobs, for
// warnings and errors only. River's info lines are its routine: a count of the jobs each
// queue ran, every 5 seconds while any runs, which the workflows' schedule ticks keep
// doing on an idle server. They were most of what `make run` printed after its banner, and
// every replica's log in production; a job's failure is logged by River as a warning or an
// error, and by the workers themselves.
func jobsLogger(log *slog.Logger) *slog.Logger {
	return slog.New(atLeast{Handler: log.Handler(), min: slog.LevelWarn}).With(slog.String("component", "jobs"))
}

// atLeast passes on the records of level min and above.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min && h.Handler.Enabled(ctx, level)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{Handler: h.Handler.WithGroup(name), min: h.min}
}
