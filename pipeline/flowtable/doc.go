// Package flowtable is a shard's exact table of open flows: per flow its
// key, the state the ACSM answered, its packets in the flow counter's
// window and, when records are written, its first and last packet, its
// packets each way and its conn.log fields as Zeek keeps them; and the
// record written when the flow ends, times out or is pushed out at the
// table's cap.
//
// A table is driven by one goroutine (its shard's), takes no lock, and
// allocates nothing a packet: its arrays are mapped outside the Go heap
// at their largest when it is made (slots.go has the layout and its bytes
// a flow). The caller runs the ACSM first and hands Packet its event; it
// prefetches ahead of a batch with PrefetchHome and PrefetchFlow.
package flowtable
