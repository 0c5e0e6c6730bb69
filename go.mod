module decisiongateway

go 1.26.0

require (
	github.com/VictoriaMetrics/metrics v1.45.0
	github.com/gorilla/websocket v1.5.3
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/pb33f/libopenapi v0.41.8
	github.com/pb33f/libopenapi-validator v0.16.2
	github.com/prometheus/common v0.72.0
	github.com/stealthrocket/net v0.2.1
	github.com/stealthrocket/wasi-go v0.8.0
	github.com/tetratelabs/wazero v1.12.0
	github.com/tursodatabase/libsql-client-go v0.0.0-20260528064733-9d5d30a29a60
	github.com/valyala/fasthttp v1.78.0
	github.com/valyala/fastjson v1.6.10
	golang.org/x/net v0.62.0
)

require (
	github.com/antlr4-go/antlr/v4 v4.13.0 // indirect
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/basgys/goxml2json v1.1.1-0.20231018121955-e66ee54ceaad // indirect
	github.com/buger/jsonparser v1.6.1 // indirect
	github.com/coder/websocket v1.8.12 // indirect
	github.com/go-openapi/jsonpointer v1.0.2 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pb33f/go-yaml v0.1.1 // indirect
	github.com/pb33f/jsonpath v0.8.5 // indirect
	github.com/pb33f/jsonschema/v6 v6.0.3 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.2 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/stealthrocket/wazergo v0.19.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
	golang.org/x/exp v0.0.0-20240325151524-a685a6edb6d8 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// node_modules holds no Go code; keep ./... from walking it.
ignore ./wrangler-compat/node_modules
