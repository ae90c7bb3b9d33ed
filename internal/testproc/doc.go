// Package testproc runs the child processes of tests: a daemon under test
// (the cache node, the scheduler) or a real server a test talks to
// (versitygw), or a stand-in for a hung one (Blackhole: a listener that
// accepts and never answers). It is test support with the standard library
// only.
// LookPath finds a tool in PATH or where go install puts it.
//
// Start launches an *exec.Cmd with its stdout and stderr captured in a
// SyncBuffer, waits until a readiness probe passes (HTTPReady polls a URL),
// and registers a cleanup that kills the process when the test ends and
// logs its output if the test failed. It fails the test, with the output,
// when the process exits before it is ready or is not ready in time. Launch
// and Proc.WaitReady are the same steps without a testing.TB, for a caller
// that retries (a free port taken by someone else before the server binds
// it).
//
//	p := testproc.Start(t, exec.Command(bin, args...), testproc.Options{
//		Name:  "node n1",
//		Ready: testproc.HTTPReady(nil, "http://"+addr+"/readyz", http.StatusOK),
//	})
//	p.Signal(syscall.SIGTERM)
//	code, err := p.Wait(30 * time.Second)
//
// Reexec is the helper-process pattern for daemons: TestMain calls
// Reexec.RunIf with the daemon's main, so that the test binary, started
// again with the Reexec's environment variable set, runs the daemon
// instead of the tests; Binary then hands out the test binary itself
// (nothing to build, and the daemon is compiled with the test's flags,
// -race included). Without RunIf, Binary builds the daemon's package once
// per test binary with go build.
//
// Threading: a Proc's methods are safe to call from any goroutine; Start,
// Launch and Binary may be called from parallel tests. RunIf runs in
// TestMain, before any test.
package testproc
