package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/locuscache/locus/pkg/gateway"
	"github.com/locuscache/locus/pkg/origin/origintest"
)

// A gateway over an origin without a cache (StoreBackend); a cache node
// passes itself as the Backend instead.
func Example() {
	store := origintest.NewMemStore()
	store.Put("s3://lake/t/part-0.parquet", []byte("PAR1...PAR1"))

	gw, err := gateway.New(gateway.Config{Backend: gateway.StoreBackend{Store: store}})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/lake/t/part-0.parquet", nil)
	req.Header.Set("Range", "bytes=-4")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status, res.Header.Get("Content-Range"), string(body))

	res, err = http.Get(srv.URL + "/lake/missing")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.Status)
	// Output:
	// 206 Partial Content bytes 7-10/11 PAR1
	// 404 Not Found
}

func ExampleParseRange() {
	for _, h := range []string{"bytes=0-99", "bytes=-10", "bytes=900-", "bytes=0-1,5-6", "bytes=2000-", "bytes=9-5"} {
		r, ok, err := gateway.ParseRange(h, 1000)
		fmt.Println(h, r, ok, err)
	}
	// Output:
	// bytes=0-99 {0 100} true <nil>
	// bytes=-10 {990 10} true <nil>
	// bytes=900- {900 100} true <nil>
	// bytes=0-1,5-6 {0 0} false <nil>
	// bytes=2000- {0 0} false gateway: range not satisfiable
	// bytes=9-5 {0 0} false gateway: malformed Range header
}
