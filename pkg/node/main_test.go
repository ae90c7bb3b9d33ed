package node_test

import (
	"os"
	"testing"

	"github.com/locuscache/locus/pkg/node/nodetest"
)

func TestMain(m *testing.M) {
	nodetest.RunIfDaemon() // process tests re-execute this binary as the daemon
	code := m.Run()
	nodetest.RemoveBuilds()
	os.Exit(code)
}
