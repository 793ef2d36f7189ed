// Package config is the live agent's configuration (flowmon run): one
// optional YAML file, whose every key has a default so that no file at
// all is a working configuration, and flags that override it (Set).
//
// A file (every key optional; testdata/example.good.yaml has them all,
// commented):
//
//	interface: eth0              # the interface to capture on (--iface)
//	source: afpacket             # afpacket | pcap (--source)
//	afpacket:                    # a TPACKET_V3 ring per worker, in a fanout group
//	  block-size: 1MiB           # power of two, 4KiB..256MiB (bytes or a size)
//	  block-count: 64            # 1..65536; block-size × block-count at most 4GiB
//	  frame-size: 2048           # multiple of 16, 128..block-size
//	  block-timeout: 10ms        # 1ms..10s: how long a part-full block waits
//	  fanout: hash               # hash | cpu | lb
//	  promisc: true
//	  filter: "tcp or udp"       # a tcpdump expression, or tcpdump -ddd output
//	pcap:                        # the libpcap handle, when source is pcap
//	  snaplen: 262144            # 96..262144
//	  promisc: true
//	  filter: ""
//	  timeout: 10ms              # 1ms..10s
//	pipeline:                    # engine.Settings, checked by its Validate
//	  backend: dleft
//	  workers: 4                 # (--workers)
//	rules: rules.yaml            # a rules file, none, or "" for the embedded rules
//	alerting: alerting.yaml      # an alert sinks file (alerts.ParseConfig)
//	watchlists:                  # the lists watchlist rules ask about
//	  dir: /var/lib/flowmon/watchlists  # filters persist in DIR/NAME.wl; "" in memory (--watchlist-dir)
//	  lists:                     # (--watchlist NAME=FILE sets NAME's file)
//	    - name: blocked          # as the rules name it: watchlist.CheckName
//	      file: blocked.txt      # one address or CIDR prefix a line
//	history:                     # the flow history novelty rules ask
//	  dir: /var/lib/flowmon/history  # "" for none (--history-dir)
//	  horizon: 720h              # how long a pair seen is remembered; 0 for ever
//	  ram: 16MiB                 # the filter's first level, 64KiB..1TiB
//	listen: 127.0.0.1:9100       # host:port of /metrics, the API, /-/reload (--listen)
//	web:                         # as Prometheus's --web.* flags
//	  config-file: web.yml       # exporter-toolkit's TLS and basic auth (--web.config.file);
//	                             # needed (with either) for a listen beyond loopback: CheckWeb
//	  enable-lifecycle: false    # POST /-/reload, the watchlists' POST (--web.enable-lifecycle)
//	snapshot:
//	  path: /var/lib/flowmon/state.snap  # "" for none (--snapshot)
//	  max-age: 10m               # 1s..24h: an older snapshot is refused as stale
//	  interval: 1m               # also written this often while running, 0: only at the stop
//	flow-log: /var/log/flowmon/flows.jsonl  # JSON lines, - for stdout, "" for none
//	flow-log-rotation:           # the flow log's file: FILE.1, FILE.2, ... (internal/rotfile)
//	  max-size: 256MiB           # 0 (no limit) or 64KiB..1TiB: past it the file rotates
//	  max-age: 0s                # 0 (no limit) or at least 1m: how long a file is written to
//	  max-files: 10              # 1..1000 rotated files kept
//	user: flowmon                # who to become once the sockets are open (--user)
//	stop-timeout: 10s            # 1s..5m: bound on draining and the snapshot at SIGTERM
//	health:
//	  max-drop-share: 0.25       # /healthz fails when the kernel drops more over a minute
//
// Relative paths (rules, alerting, the watchlists' dir and files,
// history.dir, web.config-file, snapshot.path, flow-log) are taken
// from the file's directory, as Prometheus does, and a flag's from the
// working directory; both are made absolute, so that Effective's output
// means the same wherever it is read.
//
// Parsing is strict, as the rules and alert sinks files are: an unknown
// or repeated key, a value of the wrong type, a bad size, duration,
// address or choice, a number out of its range, a pipeline setting
// given that does nothing with the others, and a watchlist without a
// name or a file, of a name the watchlist API refuses or given twice are
// errors, every one of the file reported at once as "file:line:col: key:
// what is wrong", in the file's order; a list's key is named with its
// index, "watchlists.lists[2].name". The afpacket and pcap sections may both be given (a
// --source flag picks one); only the one used matters to the agent, but
// both are checked.
//
// Parse gives plain data; opening the capture, loading the rules and
// the sinks is the agent's. A tcpdump expression is compiled when the
// capture opens (it needs libpcap); tcpdump -ddd output is checked here
// as the capture will read it (IsBPF, capture.ParseBPF).
//
// At SIGHUP the agent reads the file again: Reloadable says whether the
// change can be taken live (rules, watchlists.lists) or needs a restart.
package config
