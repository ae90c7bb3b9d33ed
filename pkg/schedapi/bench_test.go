package schedapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// The codec against its baseline, encoding/json, in one run (report
// ratios: the machine is shared):
//
//	go test ./pkg/schedapi -run '^$' -bench Codec -benchtime 2s

func benchBatch(n int) (PlaceBatchRequest, PlaceBatchResponse) {
	req := PlaceBatchRequest{Job: "etl-2026-01-01", WaitMS: 3000}
	resp := PlaceBatchResponse{Placements: make([]Placement, 0, n)}
	for i := range n {
		uri := fmt.Sprintf("s3://warehouse/db/events/date=2026-01-%02d/part-%05d.parquet", i%28+1, i/8)
		req.Tasks = append(req.Tasks, BatchTask{Task: fmt.Sprintf("stage-1/task-%05d", i), Split: Split{URI: uri, Offset: int64(i%8) * 64 << 20, Length: 64 << 20}})
		node := fmt.Sprintf("cache-%d", i%24)
		resp.Placements = append(resp.Placements, Placement{Task: req.Tasks[i].Task, Node: node, Address: node + ".locus:7070",
			HTTPAddress: node + ".locus:7080", Rack: fmt.Sprintf("rack-%d", i%4), Locality: "DATA_LOCAL", Owner: node, RingEpoch: 0xec2547d288b721f2, WaitedMS: int64(i % 50)})
	}
	return req, resp
}

func BenchmarkCodec(b *testing.B) {
	req, resp := benchBatch(1000)
	reqBody, _ := json.Marshal(req)
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(resp)
	respBody := buf.Bytes()

	b.Run("decode-place-batch-request/schedapi", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(reqBody)))
		for b.Loop() {
			if _, err := DecodePlaceBatchRequest(reqBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-place-batch-request/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(reqBody)))
		for b.Loop() {
			var r PlaceBatchRequest
			if err := DecodeJSON(bytes.NewReader(reqBody), &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-place-batch-response/schedapi", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(respBody)))
		dst := make([]byte, 0, len(respBody))
		for b.Loop() {
			dst = AppendPlaceBatchResponse(dst[:0], &resp)
		}
	})
	b.Run("encode-place-batch-response/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(respBody)))
		var w bytes.Buffer
		for b.Loop() {
			w.Reset()
			if err := json.NewEncoder(&w).Encode(&resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-place-batch-response/schedapi", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(respBody)))
		for b.Loop() {
			if _, err := DecodePlaceBatchResponse(respBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-place-batch-response/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(respBody)))
		for b.Loop() {
			var r PlaceBatchResponse
			if err := json.Unmarshal(respBody, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
