package lister

// Name is the name this ListerWatcher's logs and metrics carry
// (Options.Name, or derived from Options.Resource: "v1/configmaps").
func (lw *ListerWatcher) Name() string { return lw.l.o.Name }
