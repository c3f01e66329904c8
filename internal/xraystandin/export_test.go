package xraystandin

// ParseForFuzz exposes the datagram parser to the fuzz target without a
// socket round trip per input.
func ParseForFuzz(datagram []byte) (Document, bool) {
	doc, _, err := parseDatagram(datagram)
	return doc, err == nil
}

// RulesServed is closed once the sampling API has answered its first
// GetSamplingRules (nil before ServeSampling).
func (d *Daemon) RulesServed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sampling == nil {
		return nil
	}
	return d.sampling.rulesServed
}
