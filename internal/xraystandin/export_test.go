package xraystandin

// ParseForFuzz exposes the datagram parser to the fuzz target without a
// socket round trip per input.
func ParseForFuzz(datagram []byte) (Document, bool) {
	doc, _, err := parseDatagram(datagram)
	return doc, err == nil
}
