package chaos

import (
	"encoding/json"
	"os"
)

// Result is one chaos run, as the suite writes it with -chaos.report and the
// compatibility matrix reads it.
type Result struct {
	Replay          int64          `json:"replay"` // the schedule's replay number (-chaos.schedule)
	Server          string         `json:"server"` // apiserver version
	Config          string         `json:"config"` // "ha, watch cache on", ...
	DurationSeconds float64        `json:"durationSeconds"`
	Schedule        []string       `json:"schedule"`
	FaultsByKind    map[string]int `json:"faultsByKind"`
	WriterOps       map[string]int `json:"writerOps"`
	Objects         int            `json:"objectsCreated"`
	Deleted         int            `json:"objectsDeleted"`
	Informers       []InformerRun  `json:"informers"`
}

// InformerRun is what one informer (ours or stock) did in a chaos run.
type InformerRun struct {
	Name               string         `json:"name"` // "steadywatch" or "client-go"
	Converged          bool           `json:"converged"`
	ConvergenceSeconds float64        `json:"convergenceSeconds"` // from the last fault; -1 if not converged
	StoreDiff          string         `json:"storeDiff,omitempty"`
	Regressions        int            `json:"rvRegressions"`
	DeletesObserved    int            `json:"deletesObserved"`
	DeletesNeverSeen   int            `json:"deletesNeverSeen"`
	DeletesMissed      int            `json:"deletesMissed"`
	Events             map[string]int `json:"events"`
	Relists            map[string]int `json:"relists"`
	Fallbacks          map[string]int `json:"fallbacks,omitempty"`
	WatchRestarts      map[string]int `json:"watchRestarts,omitempty"`
	Requests           map[string]int `json:"requests"` // by verb (and "streaming-list") as the proxy saw them
	GoroutinesLeft     int            `json:"goroutinesLeft"`
	// PhaseSeconds is the time spent per reflector phase during the fault
	// window (sampled every 100ms; steadywatch only).
	PhaseSeconds map[string]float64 `json:"phaseSeconds,omitempty"`
}

// Write writes r as indented JSON to path.
func (r Result) Write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadResult reads a Result written by Write.
func ReadResult(path string) (Result, error) {
	var r Result
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}
