package pub

func TestOnly() {}

type TestOptions struct{ A int }
