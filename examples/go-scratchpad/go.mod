module tidemark.example/go-scratchpad

go 1.22
