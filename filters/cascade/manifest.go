package cascade

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/flowmon/flowmon/filters/qf"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// The manifest is a snapshot file (internal/snapshot: magic, version,
// params, sections, CRC-32C; written to a temporary file, synced, renamed
// over MANIFEST, directory synced) whose params are the shape and whose
// sections are "levels" (below) and "qf0" (QF0's MarshalBinary at the
// last Sync or Close; empty after a merge).
const (
	manifestName    = "MANIFEST"
	manifestTag     = "CASC"
	manifestVersion = 1
	levelRecordSize = 1 + 8*6 + 4*2
)

// state is what the manifest holds besides QF0.
type state struct {
	nextGen uint64 // generation of the next level file
	merges  uint64
	levels  []levelMeta // non-empty levels, shallowest first
}

func (s *state) encode() []byte {
	b := snapshot.AppendTag(nil, manifestTag, manifestVersion)
	b = binary.LittleEndian.AppendUint64(b, s.nextGen)
	b = binary.LittleEndian.AppendUint64(b, s.merges)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s.levels)))
	for _, m := range s.levels {
		b = append(b, byte(m.level))
		for _, x := range []uint64{m.gen, uint64(m.q)<<8 | uint64(m.r), m.slots, m.entries, m.tombstones, m.dataPages} {
			b = binary.LittleEndian.AppendUint64(b, x)
		}
		b = binary.LittleEndian.AppendUint32(b, m.tableCRC)
		b = binary.LittleEndian.AppendUint32(b, m.headerCRC)
	}
	return b
}

// decodeState parses the "levels" section and checks each record against
// the shape: levels ascending, within the shape's range, with the level's
// q and r, generations below nextGen, sizes that agree.
func decodeState(b []byte, sh shape) (state, error) {
	d := snapshot.NewDecoder("cascade manifest", b)
	d.Tag(manifestTag, manifestVersion)
	var s state
	s.nextGen = d.U64()
	s.merges = d.U64()
	n := d.Count("levels", uint64(sh.maxLevel), levelRecordSize)
	for range n {
		var m levelMeta
		m.level = int(d.U8())
		m.gen = d.U64()
		qr := d.U64()
		m.q, m.r = uint(qr>>8), uint(qr&0xff)
		m.slots, m.entries, m.tombstones, m.dataPages = d.U64(), d.U64(), d.U64(), d.U64()
		m.tableCRC, m.headerCRC = d.U32(), d.U32()
		if d.Err() != nil {
			break
		}
		if err := checkRecord(m, sh, s); err != nil {
			d.Failf("level record %d: %v", len(s.levels)+1, err)
			break
		}
		s.levels = append(s.levels, m)
	}
	if err := d.Done(); err != nil {
		return state{}, err
	}
	return s, nil
}

func checkRecord(m levelMeta, sh shape, s state) error {
	q, r := sh.levelShape(m.level)
	switch {
	case m.level < 1 || m.level > sh.maxLevel:
		return fmt.Errorf("level %d outside 1..%d", m.level, sh.maxLevel)
	case len(s.levels) > 0 && m.level <= s.levels[len(s.levels)-1].level:
		return fmt.Errorf("level %d after level %d", m.level, s.levels[len(s.levels)-1].level)
	case m.q != q || m.r != r || q > qf.MaxQuotientBits:
		return fmt.Errorf("level %d has q=%d r=%d, the shape gives q=%d r=%d", m.level, m.q, m.r, q, r)
	case m.slots > 2<<q:
		return fmt.Errorf("level %d: %d slots for 2^%d", m.level, m.slots, q)
	case m.gen >= s.nextGen:
		return fmt.Errorf("level %d generation %d not below the next, %d", m.level, m.gen, s.nextGen)
	case m.slots < 1<<q || m.slots-1<<q > m.entries || m.entries > m.slots || m.tombstones > m.entries:
		return fmt.Errorf("level %d: %d slots, %d entries, %d tombstones do not agree", m.level, m.slots, m.entries, m.tombstones)
	case m.dataPages != (m.slots*uint64(m.r+3)+PageSize*8-1)/(PageSize*8):
		return fmt.Errorf("level %d: %d data pages for %d slots", m.level, m.dataPages, m.slots)
	case m.tablePages() > math.MaxInt/PageSize:
		return fmt.Errorf("level %d: %d data pages do not fit in memory here", m.level, m.dataPages)
	}
	return nil
}

// writeManifest replaces the manifest atomically.
func writeManifest(dir string, sh shape, s *state, qf0 []byte) error {
	return snapshot.Write(manifestPath(dir), snapshot.Header{Saved: time.Now(), Params: sh.params()},
		[]snapshot.Section{{Name: "levels", Data: s.encode()}, {Name: "qf0", Data: qf0}})
}
