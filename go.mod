module github.com/kdlbs/acp-go-sdk

go 1.26.0

require (
	github.com/coder/acp-go-sdk v0.13.5
	github.com/google/go-cmp v0.7.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/sourcegraph/jsonrpc2 v0.2.3
	golang.org/x/term v0.48.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace github.com/coder/acp-go-sdk => ./sdk
