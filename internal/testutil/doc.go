// Package testutil holds, in its subpackages, what only tests and
// benchmarks use: the real captures beside the checkout (sharedpcaps),
// skips and tools by environment (testgate, bpftest), network namespaces
// (netnstest), golden files (goldentest), headless Chromium (headless),
// thread CPU time (cputime), the test command's report (testreport) and
// others. No production package imports them.
package testutil
