package readyourwrites

import "github.com/steadywatch/steadywatch/internal/metricsnop"

type nopRecorder = metricsnop.Nop
