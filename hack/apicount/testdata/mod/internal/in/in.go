package in

type Opts struct{ A, B, C int }

func Internal() {}
