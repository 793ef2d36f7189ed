package ipfix

import "encoding/binary"

// The protocol's numbers this package uses (RFC 7011 §3, IANA's IPFIX
// information elements, RFC 5103 §6).
const (
	Version = 10

	HeaderLen    = 16 // the message header
	SetHeaderLen = 4

	TemplateSetID = 2
	// TemplateIPv4 and TemplateIPv6 are the data sets' IDs (the first
	// 256 are the protocol's).
	TemplateIPv4 = 256
	TemplateIPv6 = 257

	// ReversePEN is the enterprise number of RFC 5103's reverse
	// elements.
	ReversePEN = 29305
	// EnterpriseBit marks an element ID followed by an enterprise number.
	EnterpriseBit = 0x8000
	// VarLen is the template length of a variable-length element.
	VarLen = 0xffff

	// MaxMessage is the largest message the 16-bit length allows.
	MaxMessage = 0xffff
)

// Information element IDs (IANA).
const (
	ieOctetDeltaCount          = 1
	iePacketDeltaCount         = 2
	ieProtocolIdentifier       = 4
	ieTCPControlBits           = 6
	ieSourceTransportPort      = 7
	ieSourceIPv4Address        = 8
	ieIngressInterface         = 10
	ieDestinationTransportPort = 11
	ieDestinationIPv4Address   = 12
	ieSourceIPv6Address        = 27
	ieDestinationIPv6Address   = 28
	ieICMPTypeCodeIPv4         = 32
	ieFlowEndReason            = 136
	ieICMPTypeCodeIPv6         = 139
	ieFlowStartMilliseconds    = 152
	ieFlowEndMilliseconds      = 153
)

// The elements flowmon defines under an operator's enterprise number
// (Options.EnterpriseNumber).
const (
	IEConnState  = 1
	IEHistory    = 2
	IEConfidence = 3
)

// flowEndReason values (IANA).
const (
	EndIdleTimeout = 0x01
	EndOfFlow      = 0x03
)

// kind says what a field holds, and how to encode it, for the data
// record encoder's switch.
type kind uint8

const (
	kSrcAddr kind = iota
	kDstAddr
	kSrcPort
	kDstPort
	kICMPTypeCode
	kProto
	kFlags
	kStart
	kEnd
	kPackets
	kOctets
	kEndReason
	kIngress
	kRevPackets
	kRevOctets
	kRevFlags
	kConnState
	kHistory
	kConfidence
)

// field is one field specifier of a template, with what it holds.
type field struct {
	id     uint16 // without the enterprise bit
	length uint16 // VarLen: variable
	pen    uint32 // 0: none
	kind   kind
}

// template is one template: its ID, fields, and the length of its
// records without their variable-length fields' content (their length
// octets counted).
type template struct {
	id     uint16
	fields []field
	fixed  int
	hasVar bool
}

// templateOptions are what shape the templates.
type templateOptions struct {
	biflow     bool
	enterprise uint32 // 0: none
	ingress    bool
}

// newTemplate builds the template of one family (v6: IPv6).
func newTemplate(o templateOptions, v6 bool) template {
	t := template{id: TemplateIPv4}
	addrLen := uint16(4)
	src, dst, icmp := uint16(ieSourceIPv4Address), uint16(ieDestinationIPv4Address), uint16(ieICMPTypeCodeIPv4)
	if v6 {
		t.id, addrLen = TemplateIPv6, 16
		src, dst, icmp = ieSourceIPv6Address, ieDestinationIPv6Address, ieICMPTypeCodeIPv6
	}
	add := func(id, length uint16, pen uint32, k kind) {
		t.fields = append(t.fields, field{id: id, length: length, pen: pen, kind: k})
		if length == VarLen {
			t.fixed++ // the length octet of a short value
			t.hasVar = true
		} else {
			t.fixed += int(length)
		}
	}
	add(src, addrLen, 0, kSrcAddr)
	add(dst, addrLen, 0, kDstAddr)
	add(ieSourceTransportPort, 2, 0, kSrcPort)
	add(ieDestinationTransportPort, 2, 0, kDstPort)
	add(icmp, 2, 0, kICMPTypeCode)
	add(ieProtocolIdentifier, 1, 0, kProto)
	add(ieTCPControlBits, 2, 0, kFlags)
	add(ieFlowStartMilliseconds, 8, 0, kStart)
	add(ieFlowEndMilliseconds, 8, 0, kEnd)
	add(iePacketDeltaCount, 8, 0, kPackets)
	add(ieOctetDeltaCount, 8, 0, kOctets)
	add(ieFlowEndReason, 1, 0, kEndReason)
	if o.ingress {
		add(ieIngressInterface, 4, 0, kIngress)
	}
	if o.biflow {
		add(iePacketDeltaCount, 8, ReversePEN, kRevPackets)
		add(ieOctetDeltaCount, 8, ReversePEN, kRevOctets)
		add(ieTCPControlBits, 2, ReversePEN, kRevFlags)
	}
	if o.enterprise != 0 {
		add(IEConnState, VarLen, o.enterprise, kConnState)
		add(IEHistory, VarLen, o.enterprise, kHistory)
		add(IEConfidence, 4, o.enterprise, kConfidence)
	}
	return t
}

// recordLen is the length of the template record: its header and
// specifiers.
func (t *template) recordLen() int {
	n := 4
	for _, f := range t.fields {
		n += 4
		if f.pen != 0 {
			n += 4
		}
	}
	return n
}

// appendRecord appends the template record.
func (t *template) appendRecord(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, t.id)
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.fields)))
	for _, f := range t.fields {
		id := f.id
		if f.pen != 0 {
			id |= EnterpriseBit
		}
		b = binary.BigEndian.AppendUint16(b, id)
		b = binary.BigEndian.AppendUint16(b, f.length)
		if f.pen != 0 {
			b = binary.BigEndian.AppendUint32(b, f.pen)
		}
	}
	return b
}

// appendVarLen appends v as a variable-length element's value: a length
// octet, or 255 and a 2-byte length from 255 bytes on (RFC 7011 §7).
// Values longer than 65535 bytes are cut.
func appendVarLen(b, v []byte) []byte {
	if len(v) < 255 {
		b = append(b, byte(len(v)))
		return append(b, v...)
	}
	if len(v) > 0xffff {
		v = v[:0xffff]
	}
	b = append(b, 255)
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}
