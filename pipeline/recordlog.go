package pipeline

import (
	"io"
	"math"
)

// With several workers, each shard writes its flow records to its own
// recordLog, tagged with the sequence number of the packet whose
// processing wrote them, and the pipeline merges the shards' logs in that
// order at sync points. So the flow log is the same bytes run after run
// for a given number of workers, where writing as the workers go would
// interleave the shards as the scheduler happens to run them. (Across
// worker counts the records are the same but their order is not: a shard
// sweeps its idle flows at its own packets' times.)

// logSyncEvery is how many packets go by between merges. A merge waits
// for every worker to finish its queued batches, a pipeline bubble of
// about a millisecond; every 2^17 packets that costs about 1% of a
// replay's time, and the records held until the merge are those of 2^17
// packets (typically a few thousand flows). Tests lower it.
var logSyncEvery uint64 = 1 << 17

// finishSeq tags the records written at the end of the replay: they follow
// every packet's records, shard by shard.
const finishSeq = math.MaxUint64

// recordLog holds a shard's flow records until the pipeline merges them.
// Records are appended in the order the shard writes them, which is the
// order of their tags.
type recordLog struct {
	seq  uint64 // tag of what is written now: the packet in hand
	buf  []byte
	recs []taggedRecord
}

type taggedRecord struct {
	seq uint64
	end int // the record is buf[previous end:end]
}

// Write appends one record: json.Encoder writes each record in one call.
func (l *recordLog) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	l.recs = append(l.recs, taggedRecord{seq: l.seq, end: len(l.buf)})
	return len(b), nil
}

func (l *recordLog) reset() {
	l.buf, l.recs = l.buf[:0], l.recs[:0]
}

// mergeRecords writes the records of logs to w in tag order, ties (the
// end-of-replay records) in shard order, and empties the logs.
func mergeRecords(w io.Writer, logs []*recordLog) error {
	next := make([]int, len(logs))
	var err error
	for {
		best := -1
		for i, l := range logs {
			if next[i] < len(l.recs) && (best < 0 || l.recs[next[i]].seq < logs[best].recs[next[best]].seq) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		l, j := logs[best], next[best]
		start := 0
		if j > 0 {
			start = l.recs[j-1].end
		}
		if err == nil {
			_, err = w.Write(l.buf[start:l.recs[j].end])
		}
		next[best]++
	}
	for _, l := range logs {
		l.reset()
	}
	return err
}
