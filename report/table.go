package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTables prints the tables as aligned text, nfdump -s's way: the
// flows, the originators, the responders and the responder ports, each by
// bytes and by packets, with each row's share of the total.
func WriteTables(w io.Writer, tt *TopTables) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%d flows, %d packets, %d bytes", tt.Total.Flows, tt.Total.Packets, tt.Total.Bytes)
	if tt.Interim > 0 {
		fmt.Fprintf(w, " (%d interim records left out)", tt.Interim)
	}
	fmt.Fprintln(w)
	for _, ft := range tt.Flows {
		fmt.Fprintf(w, "\ntop %d flows by %s\n", len(ft.Rows), ft.By)
		fmt.Fprintln(tw, "uid\tproto\torig\tresp\tstate\tduration\tpackets\tbytes\t")
		for _, c := range ft.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.3f\t%d\t%d\t\n", c.UID, c.Proto, hostPort(c.Orig.String(), c.OrigPort),
				hostPort(c.Resp.String(), c.RespPort), c.State, c.Duration, c.Packets, c.Bytes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, g := range []struct {
		what, column string
		tables       [2]KeyTable
	}{{"originators", "id.orig_h", tt.Src}, {"responders", "id.resp_h", tt.Dst}, {"responder ports", "proto/id.resp_p", tt.Ports}} {
		for _, kt := range g.tables {
			fmt.Fprintf(w, "\ntop %d %s by %s", len(kt.Rows), g.what, kt.By)
			if !kt.Exact {
				fmt.Fprintf(w, " (approximate: more than %d keys; each figure over by at most its err)", kt.Keys)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(tw, "%s\tflows\t(%%)\tpackets\t(%%)\tbytes\t(%%)\t", g.column)
			if !kt.Exact {
				fmt.Fprint(tw, "err\t")
			}
			fmt.Fprintln(tw)
			for _, r := range kt.Rows {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%d\t%s\t", r.Key, r.Flows, share(r.Flows, tt.Total.Flows),
					r.Packets, share(r.Packets, tt.Total.Packets), r.Bytes, share(r.Bytes, tt.Total.Bytes))
				if !kt.Exact {
					fmt.Fprintf(tw, "%d\t", r.Err)
				}
				fmt.Fprintln(tw)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func hostPort(h string, p uint16) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(int(p))
	}
	return h + ":" + strconv.Itoa(int(p))
}

// share spells part as a percentage of whole.
func share(part, whole uint64) string {
	if whole == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64)
}
