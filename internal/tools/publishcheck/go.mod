// The publish check: its own module so that golang.org/x/mod stays out of
// the root module's requirements, and so that the root module's zip omits it.
module github.com/kdlbs/acp-go-sdk/internal/tools/publishcheck

go 1.26.0

require golang.org/x/mod v0.43.0
