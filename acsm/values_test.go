package acsm

import "testing"

func TestMachineSizes(t *testing.T) {
	t.Logf("zeek values %d, flags values %d", zeekMachine.values, flagsMachine.values)
	if zeekMachine.values > 4096 {
		t.Fatalf("zeek machine has %d values, more than kbf's greedy encoder takes", zeekMachine.values)
	}
}
