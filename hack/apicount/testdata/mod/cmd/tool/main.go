package main

func Exported() {}

type ToolConfig struct{ A int }

func main() {}
