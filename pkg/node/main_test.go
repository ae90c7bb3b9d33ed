package node_test

import (
	"os"
	"testing"

	"github.com/locuscache/locus/pkg/node/nodetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	nodetest.RemoveBuilds()
	os.Exit(code)
}
