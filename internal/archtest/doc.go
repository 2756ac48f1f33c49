// Package archtest checks that the project's documents and its code agree
// where a test can tell:
//
//   - seglog's packages import one another only as the rules table in
//     ARCHITECTURE.md allows: the test reads that table (between the
//     "archtest:rules" markers) and the import declarations of every Go
//     file in the module, test files included, and fails on an import the
//     table does not allow and on a package that has no rule;
//   - the graph drawn in ARCHITECTURE.md (between the "archtest:graph"
//     markers) is what the code imports, line by line, for every package
//     outside internal/, and every arrow points down the layer diagram
//     (between the "archtest:layers" markers);
//   - the program in README.md is the body of storage's Example, which
//     go test compiles, runs and checks, and README shows its output.
//
// The package has no non-test code; make test runs it with every package.
package archtest
