package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/flowmon/flowmon/record/connlog"
)

// ReadFlowLog counts every line of a flow log (conn.log JSON lines, as
// `flowmon replay --flows-out` and `flowmon run` write them) into t;
// name is the log's name in errors, which give the line.
func ReadFlowLog(r io.Reader, name string, t *Tops) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var rec connlog.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("read flow log %s:%d: %w", name, n, err)
		}
		t.AddLine(&rec)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read flow log %s: %w", name, err)
	}
	return nil
}
