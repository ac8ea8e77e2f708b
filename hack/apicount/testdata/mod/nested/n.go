package nested

func Nested() {}

type NestedOptions struct{ A int }
