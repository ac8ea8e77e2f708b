module github.com/steadywatch/steadywatch/hack

go 1.26.0
